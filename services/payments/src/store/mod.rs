//! PostgreSQL access for payments (`payments.payments`, `payments.tickets`,
//! `payments.provider_notices`; prices read from the catalog's `price_categories` and
//! `event_seats`). Every function takes `&mut PgConnection`; the caller owns the
//! transaction. Every state change is a conditional `UPDATE … WHERE status = …`, so of
//! two paths racing to move one payment, exactly one moves it and the other sees zero
//! rows; time comes from the database clock.

mod payments;

pub use payments::*;
