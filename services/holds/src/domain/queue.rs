//! The waiting-room queue an admission came from: the event's own, or the queue of its
//! presale (`42-presale`, [`stadium_tokens::presale_queue`]), whose admissions claim
//! only with a presale code or a channel's key.

use std::fmt;

use super::EventId;

/// A queue of the waiting room, as an admission token's `event_id` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Queue {
    /// The event it admits to.
    pub event: EventId,
    /// The event's presale queue rather than its own.
    pub presale: bool,
}

impl Queue {
    /// The queue an admission token's `event_id` claim names, when it admits to
    /// `event` (its own queue or its presale's); `None` for any other.
    pub fn of_admission(event: EventId, claim: &str) -> Option<Self> {
        let (named, presale) = match stadium_tokens::presale_queue_event(claim) {
            Some(number) => (number, true),
            None => (claim, false),
        };
        (EventId::try_from(named).ok() == Some(event)).then_some(Self { event, presale })
    }
}

impl fmt::Display for Queue {
    /// The waiting room's name: `42` or `42-presale`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.presale {
            f.write_str(&stadium_tokens::presale_queue(
                &self.event.get().to_string(),
            ))
        } else {
            write!(f, "{}", self.event.get())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admission_names_its_events_queue_or_its_presales() {
        let event = EventId::try_from("42").unwrap();
        let own = Queue::of_admission(event, "42").unwrap();
        assert!(!own.presale);
        assert_eq!(own.to_string(), "42");
        let presale = Queue::of_admission(event, "42-presale").unwrap();
        assert!(presale.presale);
        assert_eq!(presale.to_string(), "42-presale");
        for other in [
            "43",
            "43-presale",
            "42-presale-presale",
            "042",
            "",
            "-presale",
        ] {
            assert_eq!(Queue::of_admission(event, other), None, "{other:?}");
        }
    }
}
