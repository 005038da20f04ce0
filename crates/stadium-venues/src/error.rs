//! Import errors: every refusal names the place (JSON path or CSV line) and the problem.

use std::fmt;

use thiserror::Error;

/// What is wrong at one place of a plan.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Problem {
    /// A required field is absent (or null).
    #[error("missing field")]
    MissingField,
    /// A field has the wrong JSON type or does not parse.
    #[error("expected {expected}")]
    WrongType {
        /// What was expected, e.g. "a string" or "a number".
        expected: &'static str,
    },
    /// A seat names a category the plan does not define.
    #[error("unknown category {name:?}")]
    UnknownCategory {
        /// The name used.
        name: String,
    },
    /// A seat has no category: none on the seat, its row or its section (seats.io).
    #[error("no category on the seat, its row or its section")]
    NoCategory,
    /// A seats.io section names a zone the chart does not define.
    #[error("unknown zone {key:?}")]
    UnknownZone {
        /// The zone key used.
        key: String,
    },
    /// Two categories share a name.
    #[error("category {name:?} already defined at {first}")]
    RepeatedCategory {
        /// The repeated name.
        name: String,
        /// Where it was first defined.
        first: String,
    },
    /// Two seats share (section, row label, seat label).
    #[error("seat {section} / row {row} / seat {seat} repeats the seat at {first}")]
    RepeatedSeat {
        /// Section code.
        section: String,
        /// Row label.
        row: String,
        /// Seat label.
        seat: String,
        /// The first seat with that place.
        first: String,
    },
    /// A label or name is empty or longer than allowed.
    #[error("must be 1 to {max} characters")]
    BadLength {
        /// Maximum characters.
        max: usize,
    },
    /// A coordinate is NaN or infinite.
    #[error("not a finite number")]
    NotFinite,
    /// The CSV header is not `section,row,seat,category[,x,y]`.
    #[error("header must be section,row,seat,category[,x,y], found {found:?}")]
    BadHeader {
        /// The header found.
        found: String,
    },
    /// A CSV line has the wrong number of fields.
    #[error("expected {expected} fields, found {found}")]
    FieldCount {
        /// Fields the header announces.
        expected: usize,
        /// Fields on the line.
        found: usize,
    },
    /// A generator parameter is outside its range.
    #[error("must be between {min} and {max}")]
    OutOfRange {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// The plan has no seats at all.
    #[error("the plan has no seats")]
    NoSeats,
}

/// One problem at one place, e.g. `zones[1].rows[3].seats[7].category: missing field`
/// (pretix) or `$.subChart.sections[2].subChart.rows[5].seats[3].label: missing field`
/// (seats.io).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanIssue {
    /// JSON path (`zones[1].rows[3].seats[7].category`, `$.subChart.sections[0].label`) or
    /// CSV place (`line 12, field category`).
    pub place: String,
    /// What is wrong there.
    pub problem: Problem,
}

impl fmt::Display for PlanIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.problem)
    }
}

/// Why an import failed; nothing is stored when any of these is returned.
#[derive(Debug, Error)]
pub enum ImportError {
    /// The bytes are not well-formed JSON (or not UTF-8 CSV).
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// The parser's description.
        message: String,
    },
    /// The plan is well-formed but wrong; every issue found (up to 100) is listed.
    #[error("plan refused: {}", issues.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid {
        /// The issues, in document order.
        issues: Vec<PlanIssue>,
    },
    /// The venue name is empty or longer than 200 characters.
    #[error("venue name must be 1 to 200 characters")]
    BadName,
    /// The database failed; the transaction was rolled back.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The stored seat ids came out non-contiguous (a concurrent writer bypassed the
    /// table lock); the transaction was rolled back.
    #[error("seat ids of venue came out out of order; nothing stored")]
    SeatOrder,
}

/// Collects issues, keeping the first 100 so a wildly wrong file still answers quickly.
#[derive(Debug, Default)]
pub(crate) struct Issues(pub(crate) Vec<PlanIssue>);

impl Issues {
    pub(crate) const MAX: usize = 100;

    pub(crate) fn push(&mut self, place: impl Into<String>, problem: Problem) {
        if self.0.len() < Self::MAX {
            self.0.push(PlanIssue {
                place: place.into(),
                problem,
            });
        }
    }

    pub(crate) fn into_result<T>(self, value: T) -> Result<T, ImportError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ImportError::Invalid { issues: self.0 })
        }
    }
}
