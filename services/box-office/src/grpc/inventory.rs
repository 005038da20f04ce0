//! Inventory through holds and payments: blocks, releases, comps and refunds. The
//! change happens in the other service; its audit record follows here once it did.

use serde_json::json;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::{holds::v1 as holds, payments::v1 as payments};
use tonic::Request;

use super::{BoxOfficeApi, MAX_SEATS_PER_REQUEST, convert};
use crate::auth::CHANGE;
use crate::error::{Error, Result};
use crate::store::audit::AuditEntry;

fn seat_ids(ids: &[u64]) -> Result<()> {
    if ids.is_empty() {
        return Err(Error::invalid("seat_ids", "at least one seat is required"));
    }
    if ids.len() > MAX_SEATS_PER_REQUEST {
        return Err(Error::invalid(
            "seat_ids",
            format!("at most {MAX_SEATS_PER_REQUEST} seats"),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, id) in ids.iter().enumerate() {
        if *id == 0 || *id > i64::MAX as u64 {
            return Err(Error::invalid(
                format!("seat_ids[{i}]"),
                "must be a positive seat id",
            ));
        }
        if !seen.insert(id) {
            return Err(Error::invalid(
                format!("seat_ids[{i}]"),
                format!("seat {id} is given twice"),
            ));
        }
    }
    Ok(())
}

fn section_id(id: u64) -> Result<()> {
    if id == 0 || id > i64::MAX as u64 {
        return Err(Error::invalid(
            "section_id",
            "must be a positive section id",
        ));
    }
    Ok(())
}

pub(super) fn text(field: &str, value: &str, required: bool) -> Result<String> {
    let value = value.trim();
    if required && value.is_empty() {
        return Err(Error::invalid(field, "is required"));
    }
    if value.chars().count() > 200 {
        return Err(Error::invalid(field, "must be at most 200 characters"));
    }
    Ok(value.to_owned())
}

fn uuid(field: &str, value: &str) -> Result<String> {
    uuid::Uuid::parse_str(value)
        .map(|u| u.to_string())
        .map_err(|_| Error::invalid(field, "must be a UUID"))
}

impl BoxOfficeApi {
    pub(super) async fn block_seats_inner(
        &self,
        request: Request<pb::BlockSeatsRequest>,
    ) -> Result<pb::BlockSeatsResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        section_id(req.section_id)?;
        seat_ids(&req.seat_ids)?;
        let reason = text("reason", &req.reason, true)?;
        let hold = self
            .upstream
            .block(
                &caller.token,
                holds::BlockSeatsRequest {
                    event_id: event_id.to_string(),
                    section_id: req.section_id,
                    seat_ids: req.seat_ids.clone(),
                    reason: reason.clone(),
                },
            )
            .await?;
        self.office
            .record(AuditEntry {
                actor: &caller.actor,
                action: "block_seats",
                target: format!("hold:{}", hold.hold_key),
                before: None,
                after: Some(json!({
                    "event_id": event_id,
                    "section_id": req.section_id,
                    "seat_ids": hold.seat_ids,
                    "reason": reason,
                })),
            })
            .await?;
        Ok(pb::BlockSeatsResponse {
            hold_key: hold.hold_key,
            seat_ids: hold.seat_ids,
        })
    }

    pub(super) async fn release_seats_inner(
        &self,
        request: Request<pb::ReleaseSeatsRequest>,
    ) -> Result<pb::ReleaseSeatsResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.get_ref();
        let hold_key = uuid("hold_key", &req.hold_key)?;
        let reason = text("reason", &req.reason, false)?;
        let hold = self
            .upstream
            .release(
                &caller.token,
                holds::ReleaseSeatsRequest {
                    hold_key: hold_key.clone(),
                    reason: reason.clone(),
                },
            )
            .await?;
        self.office
            .record(AuditEntry {
                actor: &caller.actor,
                action: "release_seats",
                target: format!("hold:{hold_key}"),
                before: None,
                after: Some(
                    json!({ "seat_ids": hold.seat_ids, "status": hold.status, "reason": reason }),
                ),
            })
            .await?;
        Ok(pb::ReleaseSeatsResponse {
            hold_key: hold.hold_key,
            seat_ids: hold.seat_ids,
        })
    }

    pub(super) async fn issue_comp_inner(
        &self,
        request: Request<pb::IssueCompRequest>,
    ) -> Result<pb::IssueCompResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        section_id(req.section_id)?;
        seat_ids(&req.seat_ids)?;
        let recipient = text("recipient", &req.recipient, true)?;
        let order = self
            .upstream
            .comp(
                &caller.token,
                payments::IssueCompRequest {
                    event_id: event_id.to_string(),
                    section_id: req.section_id,
                    seat_ids: req.seat_ids.clone(),
                    recipient: recipient.clone(),
                },
            )
            .await?;
        let seats: Vec<u64> = order.tickets.iter().map(|t| t.seat_id).collect();
        self.office
            .record(AuditEntry {
                actor: &caller.actor,
                action: "issue_comp",
                target: format!("order:{}", order.order_id),
                before: None,
                after: Some(json!({
                    "event_id": event_id,
                    "hold_key": order.hold_key,
                    "seat_ids": seats,
                    "recipient": recipient,
                })),
            })
            .await?;
        Ok(pb::IssueCompResponse {
            order_id: order.order_id,
            hold_key: order.hold_key,
            seat_ids: if seats.is_empty() {
                req.seat_ids.clone()
            } else {
                seats
            },
        })
    }

    pub(super) async fn refund_order_inner(
        &self,
        request: Request<pb::RefundOrderRequest>,
    ) -> Result<pb::RefundOrderResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.get_ref();
        let order_id = uuid("order_id", &req.order_id)?;
        let reason = text("reason", &req.reason, false)?;
        let before = self.upstream.order(&caller.token, &order_id).await?;
        let already = before.refund.is_some();
        let before_status = before.status;
        let order = if already {
            before
        } else {
            self.upstream
                .refund(
                    &caller.token,
                    payments::RefundOrderRequest {
                        order_id: order_id.clone(),
                        reason: reason.clone(),
                        refund_reason: payments::RefundReason::BoxOffice as i32,
                    },
                )
                .await?
        };
        let refund = order.refund.clone().unwrap_or_default();
        if !already {
            self.office
                .record(AuditEntry {
                    actor: &caller.actor,
                    action: "refund_order",
                    target: format!("order:{order_id}"),
                    before: Some(json!({ "status": before_status })),
                    after: Some(json!({
                        "status": order.status,
                        "refund_id": refund.refund_id,
                        "amount_minor": refund.amount.as_ref().map(|m| m.amount_minor),
                        "reason": reason,
                    })),
                })
                .await?;
        }
        Ok(pb::RefundOrderResponse {
            order_id: order.order_id,
            refund_id: refund.refund_id,
            amount: refund.amount,
            newly_refunded: !already,
        })
    }
}
