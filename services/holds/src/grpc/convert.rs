//! Wire ↔ domain conversion for the holds messages.

use stadium_proto::holds::v1 as pb;

use crate::domain::best::{BestRequest, MAX_ALSO_CATEGORIES, Target};
use crate::domain::{
    EventId, Hold, HoldKey, HoldStatus, RequestId, SeatSet, SeatSetError, SectionId,
};
use crate::error::Error;

/// Section and seats of a claim request.
pub(super) fn seats_of(section_id: u64, seat_ids: &[u64]) -> Result<(SectionId, SeatSet), Error> {
    let section = SectionId::try_from(section_id).map_err(|e| Error::invalid("section_id", e))?;
    let seats = SeatSet::from_wire(seat_ids).map_err(|e| match &e {
        SeatSetError::BadId { index, source } => {
            Error::invalid(format!("seat_ids[{index}]"), source)
        }
        SeatSetError::Repeated { index, .. } => Error::invalid(format!("seat_ids[{index}]"), &e),
        SeatSetError::Empty | SeatSetError::TooMany(_) => Error::invalid("seat_ids", &e),
    })?;
    Ok((section, seats))
}

/// Event, section and seats of an admin claim request.
pub(super) fn admin_seats(
    event_id: &str,
    section_id: u64,
    seat_ids: &[u64],
) -> Result<(EventId, SectionId, SeatSet), Error> {
    let event = EventId::try_from(event_id).map_err(|e| Error::invalid("event_id", e))?;
    let (section, seats) = seats_of(section_id, seat_ids)?;
    Ok((event, section, seats))
}

/// Longest price category code accepted, in characters (the catalog's own bound).
const MAX_CATEGORY_LEN: usize = 100;

/// A best-available request, but for the event's own limits (checked with its layout).
pub(super) fn best_request(body: &pb::ClaimBestAvailableRequest) -> Result<BestRequest, Error> {
    let event =
        EventId::try_from(body.event_id.as_str()).map_err(|e| Error::invalid("event_id", e))?;
    let target = match &body.target {
        Some(pb::claim_best_available_request::Target::SectionId(id)) => {
            Target::Section(SectionId::try_from(*id).map_err(|e| Error::invalid("section_id", e))?)
        }
        Some(pb::claim_best_available_request::Target::PriceCategory(code)) => {
            Target::Category(text("price_category", code, MAX_CATEGORY_LEN)?)
        }
        None => {
            return Err(Error::invalid(
                "target",
                "give a section_id or a price_category",
            ));
        }
    };
    if body.quantity == 0 {
        return Err(Error::invalid("quantity", "must be at least 1"));
    }
    let also_categories = also_categories(&target, &body.also_price_categories)?;
    Ok(BestRequest {
        event,
        target,
        quantity: body.quantity,
        together: body.together,
        request: request_id(&body.request_id)?,
        also_categories,
    })
}

/// The further categories of a best-available request, each bounded, in order, without
/// repeats or the target's own code.
fn also_categories(target: &Target, raw: &[String]) -> Result<Vec<String>, Error> {
    const FIELD: &str = "also_price_categories";
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let Target::Category(first) = target else {
        return Err(Error::invalid(FIELD, "only with a price_category target"));
    };
    if raw.len() > MAX_ALSO_CATEGORIES {
        return Err(Error::invalid(
            FIELD,
            format!("at most {MAX_ALSO_CATEGORIES} codes"),
        ));
    }
    let mut codes: Vec<String> = Vec::with_capacity(raw.len());
    for (i, code) in raw.iter().enumerate() {
        let code = text(&format!("{FIELD}[{i}]"), code, MAX_CATEGORY_LEN)?;
        if code != *first && !codes.contains(&code) {
            codes.push(code);
        }
    }
    Ok(codes)
}

/// The optional `request_id` of a claim: `None` when empty.
pub(super) fn request_id(raw: &str) -> Result<Option<RequestId>, Error> {
    if raw.is_empty() {
        return Ok(None);
    }
    RequestId::try_from(raw)
        .map(Some)
        .map_err(|e| Error::invalid("request_id", e))
}

/// A hold key field.
pub(super) fn hold_key(raw: &str) -> Result<HoldKey, Error> {
    HoldKey::try_from(raw).map_err(|e| Error::invalid("hold_key", e))
}

/// Shortest payment window a caller may ask for, in milliseconds.
pub(super) const MIN_PAYMENT_WINDOW_MS: u64 = 1_000;
/// Longest payment window a caller may ask for, in milliseconds (15 min).
pub(super) const MAX_PAYMENT_WINDOW_MS: u64 = 900_000;

/// The `window_ms` field of StartPayment, within
/// [`MIN_PAYMENT_WINDOW_MS`]..=[`MAX_PAYMENT_WINDOW_MS`].
pub(super) fn payment_window(raw: u64) -> Result<u32, Error> {
    if !(MIN_PAYMENT_WINDOW_MS..=MAX_PAYMENT_WINDOW_MS).contains(&raw) {
        return Err(Error::invalid(
            "window_ms",
            format!("must be within {MIN_PAYMENT_WINDOW_MS}..={MAX_PAYMENT_WINDOW_MS} ms"),
        ));
    }
    u32::try_from(raw).map_err(|_| Error::invalid("window_ms", "out of range"))
}

/// A required identifier of at most `max` characters (a fan id, as the identity
/// provider wrote it in the session's `sub`), taken exactly as given: it is compared
/// with stored ids, so trimming would make " ann" another fan than the one who claimed.
pub(super) fn identifier(field: &str, raw: &str, max: usize) -> Result<String, Error> {
    if raw.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if raw.chars().count() > max {
        return Err(Error::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(raw.to_owned())
}

/// A required free-text field of at most `max` characters.
pub(super) fn text(field: &str, raw: &str, max: usize) -> Result<String, Error> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if trimmed.chars().count() > max {
        return Err(Error::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(trimmed.to_owned())
}

/// The wire form of a hold.
pub(super) fn to_wire(hold: &Hold) -> pb::Hold {
    let status = match hold.status {
        HoldStatus::Held => pb::HoldStatus::Held,
        HoldStatus::Booked => pb::HoldStatus::Booked,
        HoldStatus::Expired => pb::HoldStatus::Expired,
        HoldStatus::Released => pb::HoldStatus::Released,
        HoldStatus::Blocked => pb::HoldStatus::Blocked,
    };
    pb::Hold {
        hold_key: hold.key.to_string(),
        event_id: hold.event.to_string(),
        section_id: hold.section.wire(),
        seat_ids: hold.seats.iter().map(|s| s.wire()).collect(),
        status: status.into(),
        expires_in_ms: hold.expires_in_ms,
        ttl_ms: hold.ttl_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::{identifier, text};

    #[test]
    fn an_identifier_is_taken_exactly_and_free_text_is_trimmed() {
        assert_eq!(identifier("fan_id", " ann ", 10).unwrap(), " ann ");
        assert_eq!(text("reason", " ann ", 10).unwrap(), "ann");
        assert!(identifier("fan_id", "", 10).is_err());
        assert!(identifier("fan_id", "elevenchars", 10).is_err());
    }
}
