//! PostgreSQL reads for payments (`payments.payments` with the provider of each,
//! `payments.tickets`, `payments.provider_notices`; an event's currency from the
//! catalog), the record of applied provider notices, and the reconciler's schedule.
//! Every function takes an executor or `&mut PgConnection`; the caller owns the
//! transaction. The statements that change a payment's state or lease are not here:
//! [`crate::lifecycle`] owns them, so nothing else can move a payment. Time comes from
//! the database clock.

mod catalog;
mod notices;
mod payments;
mod providers;
mod schedule;
pub mod statements;
mod tickets;

pub use catalog::event_currency;
pub use notices::{NoticeMark, mark_notice, notice_seen};
pub use payments::{Cursor, by_hold_key, by_id, list_for_fan};
pub(crate) use payments::{PaymentRow, millis, one};
pub use providers::provider_of;
pub use schedule::{due, postpone};
pub(crate) use tickets::NewTickets;
pub use tickets::{BookedSeat, ticket_valid, tickets};
