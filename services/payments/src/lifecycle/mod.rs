//! The life of a payment: the statements that move it from state to state, each
//! conditional on the state it leaves, and the lease that serialises its drivers.
//! States, transitions and their conditions: `docs/payments.md`.

mod lease;
mod transitions;

pub(crate) use lease::{Lease, release_lease, take_lease};
pub(crate) use transitions::{
    NewPayment, begin_refund, capture, finish_refund, insert_comp, insert_intent, mark_abandoned,
    mark_declined, next_attempt, record_provider,
};
