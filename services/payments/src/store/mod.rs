//! PostgreSQL access for payments (`payments.payments` with the provider of each, `payments.tickets`,
//! `payments.provider_notices`; an event's currency from the catalog). Every function
//! takes an executor or `&mut PgConnection`; the caller owns the transaction, and the
//! hot path's steps are each one statement run as its own transaction. Every state change is a conditional `UPDATE … WHERE status = …`, so of
//! two paths racing to move one payment, exactly one moves it and the other sees zero
//! rows; time comes from the database clock.

mod catalog;
mod leases;
mod notices;
mod payments;
mod providers;
pub mod statements;
mod tickets;
mod transitions;

pub use catalog::event_currency;
pub use leases::{Lease, due, postpone, release_lease, take_lease};
pub use notices::{NoticeMark, mark_notice, notice_seen};
pub use payments::{
    Cursor, NewPayment, by_hold_key, by_id, insert_comp, insert_intent, list_for_fan,
};
pub use providers::{provider_of, record_provider};
pub use tickets::{BookedSeat, ticket_valid, tickets};
pub use transitions::{
    begin_refund, capture, finish_refund, mark_abandoned, mark_declined, next_attempt,
};
