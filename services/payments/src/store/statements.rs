//! The texts of the confirm path's statements, public so that a benchmark runs exactly
//! what the service runs (`confirm_bench` hands them to `pgbench`). Each returns one
//! payment row of [`PAYMENT_COLUMNS`].

/// The columns every statement returns for a payment, in the order of the store's row
/// type (`currency` as text).
pub const PAYMENT_COLUMNS: &str = "payment_id, hold_key, event_id, fan_id, amount_minor, \
     currency::text AS currency, status, provider_charge_id, refund_id, refund_reason, refunded_minor, \
     refunded_at, comp_recipient, created_at, updated_at, charge_attempt, method_digest, declined";

/// The reconciler's scan (see `store::due`): `$1` how many, `$2` how long abandoned
/// payments are watched (ms). Its status condition is `payments_reconcile_idx`'s
/// predicate, so the scan reads that index in `reconcile_at` order.
pub const DUE: &str = "SELECT payment_id FROM payments.payments \
     WHERE (status IN ('pending', 'refund_pending') OR (status = 'failed' AND NOT declined)) \
       AND reconcile_at <= now() \
       AND (lease_until IS NULL OR lease_until <= now()) \
       AND (status <> 'failed' OR created_at > now() - $2 * interval '1 millisecond') \
     ORDER BY reconcile_at LIMIT $1";

/// The payment of a hold: `$1` hold key.
pub fn by_hold_key() -> String {
    format!("SELECT {PAYMENT_COLUMNS} FROM payments.payments WHERE hold_key = $1")
}

/// A new pending payment under a lease, unless the hold already has one (then no row):
/// `$1` payment id, `$2` hold key, `$3` event, `$4` fan, `$5` amount (minor units),
/// `$6` currency, `$7` lease owner, `$8` lease length (ms).
pub fn insert_intent() -> String {
    format!(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor, \
             currency, status, lease_owner, lease_until, attempts, method_digest) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, now() + $8 * interval '1 millisecond', 1, $9) \
         ON CONFLICT (hold_key) DO NOTHING RETURNING {PAYMENT_COLUMNS}"
    )
}

/// A pending (or given up) payment captured, with its tickets, in one statement (no
/// row if it had moved on): `$1` payment id, `$2` the provider's charge id, `$3..=$6`
/// the tickets as [`with_tickets`] takes them.
pub fn capture() -> String {
    with_tickets(
        &format!(
            "UPDATE payments.payments SET status = 'captured', provider_charge_id = $2, \
                 lease_owner = NULL, lease_until = NULL, updated_at = now() \
             WHERE payment_id = $1 AND status IN ('pending', 'failed') \
             RETURNING {PAYMENT_COLUMNS}"
        ),
        3,
    )
}

/// One statement that runs `payment` (a data-modifying CTE body returning
/// [`PAYMENT_COLUMNS`] for at most one payment) and issues the new tickets for the
/// payment it returned, from four arrays bound at `$first..=$first+3` (ticket ids,
/// section ids, seat ids, signed codes); the statement answers the payment row.
pub fn with_tickets(payment: &str, first: usize) -> String {
    format!(
        "WITH p AS ({payment}), \
         issued AS ( \
             INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id, \
                 seat_id, fan_id, code) \
             SELECT t.ticket_id, p.payment_id, p.event_id, t.section_id, t.seat_id, \
                    p.fan_id, t.code \
             FROM p, unnest(${}::uuid[], ${}::bigint[], ${}::bigint[], ${}::text[]) \
                 AS t(ticket_id, section_id, seat_id, code)) \
         SELECT * FROM p",
        first,
        first + 1,
        first + 2,
        first + 3
    )
}
