//! What a `SEAT_TAKEN` answer says: which of the wanted seats are unavailable now, and
//! free seats of the section offered instead ([`super::alternatives`]).

use super::alternatives::{self, SectionSeat};
use super::{SeatId, SeatSet, SectionId};

/// The taken seats among `requested` and up to `requested.len()` free seats of
/// `section` offered instead, from the section's `seats` (ascending by id) and the ids
/// of its seats with an active claim (`unavailable`, ascending).
///
/// When none of `requested` is unavailable any more (the winner released in between),
/// all of them are named: the refusal happened, and a retry may now succeed.
pub fn refusal(
    section: SectionId,
    requested: &SeatSet,
    seats: &[SectionSeat],
    unavailable: &[i64],
) -> (Vec<SeatId>, Vec<SeatId>) {
    let mut taken = Vec::new();
    let places: Vec<SectionSeat> = seats
        .iter()
        .map(|seat| {
            let id = seat.place.seat;
            let is_unavailable = unavailable.binary_search(&id.get()).is_ok();
            if is_unavailable && requested.as_slice().binary_search(&id).is_ok() {
                taken.push(id);
            }
            SectionSeat {
                available: !is_unavailable,
                ..seat.clone()
            }
        })
        .collect();
    if taken.is_empty() {
        taken = requested.as_slice().to_vec();
    }
    taken.sort_unstable();
    (taken, alternatives::offer(section, &places, requested))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::alternatives::SeatPlace;

    /// One row of `n` seats, ids 1..=n.
    fn row(n: u64) -> Vec<SectionSeat> {
        (1..=n)
            .map(|i| SectionSeat {
                place: SeatPlace {
                    seat: SeatId::try_from(i).unwrap(),
                    row: 0,
                    index: i32::try_from(i).unwrap(),
                },
                row_label: "A".into(),
                seat_label: i.to_string(),
                x: i as f64,
                y: 0.0,
                available: true,
            })
            .collect()
    }

    fn ids(list: &[u64]) -> Vec<SeatId> {
        list.iter().map(|&i| SeatId::try_from(i).unwrap()).collect()
    }

    #[test]
    fn names_the_taken_seats_and_offers_free_ones() {
        let section = SectionId::try_from(1u64).unwrap();
        let wanted = SeatSet::from_wire(&[2, 3]).unwrap();
        let (taken, offered) = refusal(section, &wanted, &row(8), &[3, 4]);
        assert_eq!(taken, ids(&[3]));
        assert_eq!(offered.len(), 2);
        assert!(
            offered.iter().all(|s| ![3, 4].contains(&s.get())),
            "{offered:?}"
        );
    }

    #[test]
    fn names_every_wanted_seat_when_none_is_taken_any_more() {
        let section = SectionId::try_from(1u64).unwrap();
        let wanted = SeatSet::from_wire(&[5, 6]).unwrap();
        let (taken, _) = refusal(section, &wanted, &row(8), &[1]);
        assert_eq!(taken, ids(&[5, 6]));
    }
}
