//! The floors the payments service is measured against, run by `pgbench` on the same
//! database in the same run (no gRPC, no token checks, no Rust, no provider):
//!
//! - [`confirm`]: the service's own first confirm, its five statements each in its own
//!   transaction, as the service runs them: the payment by hold key,
//!   `holds.start_payment`, the intent, `holds.confirm_hold`, the capture with its
//!   tickets. On holds claimed before the clock, as for the gRPC clients. Its ratio is
//!   the service's overhead.
//! - [`claim_and_book`]: `holds.claim` and then those five statements: the database work
//!   of a whole claim and confirm.
//!
//! The statements are the services' own texts (`holds::store::statements`,
//! `payments::store::statements`), with each `$n` replaced by what `pgbench` can give
//! for it: a variable, a value an earlier statement answered (`\gset`), or an
//! expression where the service binds a value computed in Rust (new UUIDs; the hold key
//! `md5(fan)::uuid`, fan `pgb-<n>`, under which `confirm_bench` claims its holds).
//! Ticket codes are random strings as long as a signed code: the service's Ed25519
//! signing is CPU it spends and `pgbench` does not.
//!
//! Client `c` takes hold `n = c + (k - 1) × clients` on its `k`-th run, so no two runs
//! share a hold. A run past the last hold only sleeps 1 ms (it still counts as a
//! `pgbench` transaction, so rates come from the captured payments).

use holds::store::statements::{CLAIM, CONFIRM_HOLD, START_PAYMENT};
use payments::domain::ticket_code::{TicketClaims, TicketSigner};
use payments::store::statements::{BY_HOLD_KEY, CAPTURE, INSERT_INTENT};

use super::pgbench::bind;
use super::seed::{SEATS_PER_CLAIM, Seeded};

/// The fan of hold `n` (`pgb-<n>`).
const FAN: &str = "'pgb-' || :n::bigint";
/// Its hold key.
const KEY: &str = "md5('pgb-' || :n::bigint)::uuid";

/// `count` copies of `item`, comma-separated, inside `ARRAY[…]`.
fn array_of(item: &str, count: u64) -> String {
    let items: Vec<&str> = (0..count).map(|_| item).collect();
    format!("ARRAY[{}]", items.join(", "))
}

/// The five statements of a first confirm of hold `n`, one after the other (each ended
/// by `;` or `\gset`).
fn confirm_statements() -> String {
    let statements = [
        format!("{};", bind(BY_HOLD_KEY.trim_end(), &[KEY])),
        format!(
            "{} \\gset sp_",
            bind(START_PAYMENT, &[KEY, FAN, ":window_ms::integer"])
        ),
        format!(
            "{} \\gset pay_",
            bind(
                INSERT_INTENT.trim_end(),
                &[
                    "gen_random_uuid()",
                    KEY,
                    ":sp_event_id::bigint",
                    FAN,
                    ":sp_total_minor::bigint",
                    ":sp_currency::text",
                    "gen_random_uuid()",
                    ":lease_ms::bigint",
                    "sha256('tok_visa'::bytea)",
                ],
            )
        ),
        format!("{} \\gset ch_", bind(CONFIRM_HOLD, &[KEY, FAN])),
        format!(
            "{};",
            bind(
                CAPTURE.trim_end(),
                &[
                    ":pay_payment_id::uuid",
                    "'ch_' || :n::bigint",
                    &array_of("gen_random_uuid()", SEATS_PER_CLAIM),
                    &format!("array_fill(:ch_section_id::bigint, ARRAY[{SEATS_PER_CLAIM}])"),
                    ":ch_seat_ids",
                    &array_of(
                        "rpad('T1.' || gen_random_uuid(), :code_len, '.')",
                        SEATS_PER_CLAIM
                    ),
                ],
            )
        ),
    ];
    statements.join("\n") + "\n"
}

/// The hold counter, and the guard that sends a run past `:limit` to sleep.
fn guarded(limit: &str, body: &str) -> String {
    format!(
        "\\set k :k + 1\n\\set n :client_id + (:k - 1) * :clients\n\\if :n < :{limit}\n{body}\\else\n\\sleep 1 ms\n\\endif\n"
    )
}

/// The confirm floor: the five statements on hold `n` of the `:holds` claimed before.
pub fn confirm() -> String {
    guarded("holds", &confirm_statements())
}

/// The claim-and-book floor: a fan claims block `permute(n)` (as `claim_bench`'s floors
/// pick blocks), then the five statements confirm it.
pub fn claim_and_book() -> String {
    let claim = bind(
        CLAIM,
        &[
            KEY,
            ":event",
            ":section",
            "ARRAY[:s0::bigint, :s0::bigint + 1, :s0::bigint + 2, :s0::bigint + 3]",
            FAN,
            "'pgb-' || :n::bigint || '-jti'",
            "'fan'",
            "NULL",
        ],
    );
    let body = format!(
        "\\set blk permute(:n, :blocks, :seed)\n\\set section :first_section + :blk / :bps\n\
         \\set s0 :first_seat + :blk * {SEATS_PER_CLAIM}\n{claim};\n{}",
        confirm_statements()
    );
    guarded("blocks", &body)
}

/// The `-D` variables both scripts read: `clients`, the pre-claimed `holds`, the
/// service's payment window and lease (`window_ms`, `lease_ms`), `code_len`, and the
/// venue for [`claim_and_book`], which claims and books `blocks` blocks of it at most
/// (no more than the venue has).
pub fn defines(
    seeded: &Seeded,
    clients: usize,
    holds: usize,
    blocks: u64,
    window_ms: u64,
    lease_ms: u64,
) -> Vec<String> {
    let shape = seeded.shape;
    vec![
        "k=0".to_owned(),
        format!("clients={clients}"),
        format!("holds={holds}"),
        format!("window_ms={window_ms}"),
        format!("lease_ms={lease_ms}"),
        format!("code_len={}", code_len(seeded)),
        format!("event={}", seeded.event),
        format!("blocks={}", blocks.min(shape.blocks())),
        format!("bps={}", shape.blocks_per_section()),
        format!("first_section={}", seeded.first_section),
        format!("first_seat={}", seeded.first_seat),
        format!("seed={}", rand::random::<u32>()),
    ]
}

/// Length of a ticket code the service signs for the last seat of the venue (ids of
/// the same width as most).
fn code_len(seeded: &Seeded) -> usize {
    let (section, seats) = seeded.block(seeded.shape.blocks() - 1);
    let claims = TicketClaims {
        ticket_id: uuid::Uuid::new_v4(),
        event_id: seeded.event,
        section_id: i64::try_from(section).unwrap_or(i64::MAX),
        seat_id: seats
            .last()
            .map_or(0, |&s| i64::try_from(s).unwrap_or(i64::MAX)),
    };
    TicketSigner::from_seed(&[7; 32]).sign(&claims).len()
}

#[cfg(test)]
mod tests {
    use super::{bind, confirm};

    #[test]
    fn binds_every_parameter() {
        assert_eq!(bind("f($1, $2, $10)", &["a"; 10]), "f(a, a, a)");
        let script = confirm();
        assert!(!script.contains('$'), "{script}");
        assert_eq!(script.matches("\\gset").count(), 3);
    }
}
