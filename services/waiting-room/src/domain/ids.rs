//! Newtype identifiers, validated once where they enter the service.

use std::fmt;

pub use stadium_tokens::MAX_FAN_ID_BYTES;

/// An event id: the box office's event number, a positive decimal integer (`1` to
/// `9223372036854775807`) written without sign or leading zeros, so one event never
/// gets two queues under two spellings; or the queue of an event's presale, that number
/// followed by `-presale` ([`stadium_tokens::presale_queue`]), a queue of its own whose
/// admissions holds takes for presale-code claims only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(String);

impl EventId {
    /// Parses the wire form.
    ///
    /// # Errors
    /// A message saying what is wrong (empty, not decimal, leading zero, zero, too large).
    pub fn parse(raw: &str) -> Result<Self, String> {
        let number = stadium_tokens::presale_queue_event(raw).unwrap_or(raw);
        Self::check_number(number)?;
        Ok(Self(raw.to_owned()))
    }

    fn check_number(raw: &str) -> Result<(), String> {
        if raw.is_empty() {
            return Err("must not be empty".into());
        }
        if !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err("must be a positive decimal integer".into());
        }
        if raw.starts_with('0') {
            return Err("must not be zero or start with 0".into());
        }
        raw.parse::<i64>().map_err(|_| "is too large".to_owned())?;
        Ok(())
    }

    /// The canonical decimal form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A fan id: the `sub` of a verified fan session (1 to [`MAX_FAN_ID_BYTES`] bytes, no
/// control characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FanId(String);

impl FanId {
    /// Checks a session subject.
    ///
    /// # Errors
    /// A message saying what is wrong (empty, too long, control characters), as every
    /// service says it ([`stadium_tokens::check_fan_id`]).
    pub fn parse(raw: &str) -> Result<Self, String> {
        stadium_tokens::check_fan_id(raw)?;
        Ok(Self(raw.to_owned()))
    }

    /// The id as the session carried it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_have_one_spelling() {
        assert_eq!(EventId::parse("42").unwrap().as_str(), "42");
        assert_eq!(EventId::parse("42-presale").unwrap().as_str(), "42-presale");
        for bad in [
            "",
            "0",
            "042",
            "042-presale",
            "-presale",
            "42-presale-presale",
            "42-sale",
            "-1",
            "+1",
            "4 2",
            "1e3",
            "9223372036854775808",
        ] {
            assert!(EventId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fan_ids_are_bounded() {
        assert!(FanId::parse("fan-1").is_ok());
        assert!(FanId::parse("").is_err());
        assert!(FanId::parse("a\nb").is_err());
        assert!(FanId::parse(&"x".repeat(MAX_FAN_ID_BYTES + 1)).is_err());
    }
}
