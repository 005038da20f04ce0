//! SQLSTATE classification (PostgreSQL Appendix A, "PostgreSQL Error Codes").

/// A database failure the services treat specially, with the constraint it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbFailure {
    /// 23505 `unique_violation`: e.g. a seat already claimed (`seat_holds_one_active_claim`).
    UniqueViolation {
        /// The violated index or constraint, e.g. `seat_holds_one_active_claim`.
        constraint: Option<String>,
    },
    /// 23514 `check_violation`: a CHECK constraint refused the row.
    CheckViolation {
        /// The violated constraint.
        constraint: Option<String>,
    },
    /// 23503 `foreign_key_violation`: a referenced row does not exist.
    ForeignKeyViolation {
        /// The violated constraint.
        constraint: Option<String>,
    },
    /// 40001 `serialization_failure`: retry the whole transaction.
    SerializationFailure,
    /// 40P01 `deadlock_detected`: retry the whole transaction (and fix the lock order).
    DeadlockDetected,
    /// 55P03 `lock_not_available`: `NOWAIT` or `lock_timeout` gave up.
    LockNotAvailable,
    /// 57014 `query_canceled`: `statement_timeout` or a cancel request.
    QueryCanceled,
    /// The server cannot serve the session now: class 08 (connection exception) but
    /// 08P01 `protocol_violation`,
    /// 57P01 `admin_shutdown`, 57P02 `crash_shutdown`, 57P03 `cannot_connect_now` (a
    /// restart under way) or 53300 `too_many_connections`. Nothing of the statement
    /// was committed unless it was a COMMIT whose answer was lost; a new connection
    /// may succeed.
    ServerUnavailable {
        /// The five-character SQLSTATE.
        code: String,
    },
    /// SS001, raised by `holds.check_section_owned` (migration `20261210000000`): the
    /// statement wrote a row of a section this shard does not own (a stale route, or a
    /// section that moved away). Nothing was written; route anew and retry.
    SectionElsewhere {
        /// The section, from the error's DETAIL.
        section: Option<i64>,
    },
    /// SS002, raised by `holds.check_section_owned`: the section is fenced on this shard
    /// while it moves. Nothing was written; retry after the hint (and route anew).
    SectionFenced {
        /// Milliseconds until the move expects to be done, from the error's DETAIL.
        retry_after_ms: u64,
    },
    /// Any other database error, with its SQLSTATE.
    Other {
        /// The five-character SQLSTATE.
        code: String,
    },
    /// Not a database error: I/O, pool timeout, protocol, decoding.
    NotDatabase,
}

impl DbFailure {
    /// True for the failures that a whole-transaction retry may cure (40001, 40P01).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::SerializationFailure | Self::DeadlockDetected)
    }

    /// The SQLSTATE this failure stands for, for metrics labels ("none" when not a
    /// database error).
    pub fn sqlstate(&self) -> &str {
        match self {
            Self::UniqueViolation { .. } => "23505",
            Self::CheckViolation { .. } => "23514",
            Self::ForeignKeyViolation { .. } => "23503",
            Self::SerializationFailure => "40001",
            Self::DeadlockDetected => "40P01",
            Self::LockNotAvailable => "55P03",
            Self::QueryCanceled => "57014",
            Self::SectionElsewhere { .. } => "SS001",
            Self::SectionFenced { .. } => "SS002",
            Self::ServerUnavailable { code } | Self::Other { code } => code,
            Self::NotDatabase => "none",
        }
    }

    /// The constraint or index named by a 23xxx failure.
    pub fn constraint(&self) -> Option<&str> {
        match self {
            Self::UniqueViolation { constraint }
            | Self::CheckViolation { constraint }
            | Self::ForeignKeyViolation { constraint } => constraint.as_deref(),
            _ => None,
        }
    }
}

/// Classifies a sqlx error by its SQLSTATE (never by its message).
pub fn classify(error: &sqlx::Error) -> DbFailure {
    let Some(db) = error.as_database_error() else {
        return DbFailure::NotDatabase;
    };
    let constraint = db.constraint().map(str::to_owned);
    let detail = || {
        db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .and_then(sqlx::postgres::PgDatabaseError::detail)
    };
    match db.code().as_deref() {
        Some("SS001") => DbFailure::SectionElsewhere {
            section: detail().and_then(|d| d.parse().ok()),
        },
        Some("SS002") => DbFailure::SectionFenced {
            retry_after_ms: detail().and_then(|d| d.parse().ok()).unwrap_or(0),
        },
        Some("23505") => DbFailure::UniqueViolation { constraint },
        Some("23514") => DbFailure::CheckViolation { constraint },
        Some("23503") => DbFailure::ForeignKeyViolation { constraint },
        Some("40001") => DbFailure::SerializationFailure,
        Some("40P01") => DbFailure::DeadlockDetected,
        Some("55P03") => DbFailure::LockNotAvailable,
        Some("57014") => DbFailure::QueryCanceled,
        Some(code @ ("57P01" | "57P02" | "57P03" | "53300")) => DbFailure::ServerUnavailable {
            code: code.to_owned(),
        },
        // 08P01 `protocol_violation` is a client bug (a malformed message), not a
        // connection that a retry would cure.
        Some(code) if code.starts_with("08") && code != "08P01" => DbFailure::ServerUnavailable {
            code: code.to_owned(),
        },
        Some(code) => DbFailure::Other {
            code: code.to_owned(),
        },
        None => DbFailure::Other {
            code: "?????".to_owned(),
        },
    }
}
