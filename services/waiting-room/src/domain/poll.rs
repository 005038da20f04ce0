//! When a fan should poll again (`QueueStatus.poll_after_ms`): rarely far from the
//! frontier, often near it, never after their turn, and the pre-queue spread out so it
//! does not arrive as one herd at opening.

use super::{FanId, Standing};

/// Shortest pause a waiting fan is told (unless their turn comes sooner), ms.
pub const MIN_POLL_MS: u64 = 250;
/// Longest pause a waiting fan is told, ms.
pub const MAX_POLL_MS: u64 = 60_000;
/// How long an admission waits for its fan to collect the admission token, ms, before
/// its active place is given back (the token lifetime if that is shorter). Every
/// waiting fan polls at least every [`MAX_POLL_MS`] and is handed the token by the
/// first poll after the frontier passes them, so twice that loses no fan who is still
/// there; a number whose fan has gone (left, finished, or a number re-admitted after
/// the store lost its data) holds a place under the cap for this long, not for the
/// token's whole lifetime.
pub const ADMISSION_PICKUP_MS: u64 = 2 * MAX_POLL_MS;
/// Shortest pause while a cap holds the frontier (`QueueSnapshot::held_back`), ms:
/// the next admission waits for a place to free, not for the rate, so the estimated
/// wait is only a lower bound and fans near the front must not poll it in a loop.
pub const HELD_BACK_POLL_MS: u64 = 2_000;
/// Pause while admission is paused, ms: nothing moves until an admin resumes it.
pub const PAUSED_POLL_MS: u64 = 5_000;
/// Pause after `SOLD_OUT`, ms: the queue only resumes if seats come back.
pub const SOLD_OUT_POLL_MS: u64 = 30_000;
/// When to ask again while the store restores a lost event, ms (`retry_after_ms` of
/// `QUEUE_RESTORING`): the box office configures it again within its resync interval
/// (5 s by default), so a fan asks a few times meanwhile, and each replica reads the
/// store for the event at most once per snapshot refresh however many fans ask.
pub const RESTORING_POLL_MS: u64 = 2_000;
/// Width of the pre-queue's spread after opening, ms.
pub const OPENING_SPREAD_MS: u64 = 2_000;

/// Milliseconds until `fan` should poll again, standing where `standing` says;
/// `until_opening_ms` is the time left before the sale opens (pre-queue only);
/// `held_back` says a cap holds the frontier.
pub fn poll_after_ms(
    standing: Standing,
    until_opening_ms: u64,
    held_back: bool,
    fan: &FanId,
) -> u64 {
    match standing {
        Standing::Waiting {
            estimated_wait_ms, ..
        } if held_back => (estimated_wait_ms / 2).clamp(HELD_BACK_POLL_MS, MAX_POLL_MS),
        Standing::Waiting {
            estimated_wait_ms, ..
        } => (estimated_wait_ms / 2)
            .clamp(MIN_POLL_MS, MAX_POLL_MS)
            .min(estimated_wait_ms),
        Standing::PreQueue => until_opening_ms
            .min(MAX_POLL_MS)
            .saturating_add(spread_ms(fan)),
        Standing::Paused { .. } => PAUSED_POLL_MS,
        Standing::SoldOut { .. } => SOLD_OUT_POLL_MS,
        Standing::Admitted | Standing::Closed | Standing::Cancelled => 0,
    }
}

/// A stable spread in `0..OPENING_SPREAD_MS` for `fan` (FNV-1a of the id): the same
/// fan gets the same offset from every replica.
fn spread_ms(fan: &FanId) -> u64 {
    let hash = fan
        .as_str()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    hash % OPENING_SPREAD_MS
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn fan() -> FanId {
        FanId::parse("fan-1").unwrap()
    }

    fn waiting(estimated_wait_ms: u64) -> Standing {
        Standing::Waiting {
            position: 0,
            estimated_wait_ms,
        }
    }

    #[test]
    fn each_standing_has_its_pause() {
        assert_eq!(poll_after_ms(waiting(100), 0, false, &fan()), 100);
        assert_eq!(poll_after_ms(waiting(1_000), 0, false, &fan()), 500);
        assert_eq!(
            poll_after_ms(waiting(10_000_000), 0, false, &fan()),
            MAX_POLL_MS
        );
        // A cap holds the frontier: the fan at the front does not spin on a tiny
        // estimate, since its place comes when someone is done.
        assert_eq!(
            poll_after_ms(waiting(1), 0, true, &fan()),
            HELD_BACK_POLL_MS
        );
        assert_eq!(
            poll_after_ms(waiting(600_000), 0, true, &fan()),
            MAX_POLL_MS
        );
        assert_eq!(poll_after_ms(Standing::Admitted, 0, false, &fan()), 0);
        assert_eq!(poll_after_ms(Standing::Closed, 0, false, &fan()), 0);
        assert_eq!(
            poll_after_ms(Standing::SoldOut { position: 3 }, 0, true, &fan()),
            SOLD_OUT_POLL_MS
        );
        let before_opening = poll_after_ms(Standing::PreQueue, 10_000, false, &fan());
        assert!((10_000..10_000 + OPENING_SPREAD_MS).contains(&before_opening));
        // Another fan, another offset: the pre-queue does not arrive at once.
        let offsets: std::collections::HashSet<u64> = (0..50)
            .map(|i| {
                let fan = FanId::parse(&format!("fan-{i}")).unwrap();
                poll_after_ms(Standing::PreQueue, 0, false, &fan)
            })
            .collect();
        assert!(offsets.len() > 40, "{offsets:?}");
    }

    proptest! {
        // Further back never polls sooner, and nobody is told to come back after
        // their estimated turn.
        #[test]
        fn pauses_grow_with_the_wait_and_never_pass_it(a in 0u64..10_000_000, b in 0u64..10_000_000) {
            let (near, far) = (a.min(b), a.max(b));
            let p_near = poll_after_ms(waiting(near), 0, false, &fan());
            let p_far = poll_after_ms(waiting(far), 0, false, &fan());
            prop_assert!(p_near <= p_far);
            prop_assert!(p_near <= near && p_far <= far);
        }
    }
}
