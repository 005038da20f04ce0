//! The floors the holds service is measured against, run by `pgbench` on the same database
//! in the same run (no gRPC, no token checks, no Rust):
//!
//! - [`Script::Claim`]: the service's own claim, the one statement `holds.claim(…)`,
//!   prepared like sqlx prepares it. Its ratio is the service's overhead.
//! - [`Script::BareInsert`]: the bare 4-seat `INSERT` into `holds.seat_holds` (its
//!   table and indexes, one statement per transaction, no limits, no checks): the floor
//!   of the work a claim must do at all.
//!
//! Every transaction is a new fan with a new admission `jti`, as for the gRPC clients.
//! Blocks come from `permute` over a per-client counter, so they look random yet never
//! collide (a unique violation would abort a `pgbench` client).

use holds::store::statements::CLAIM;

use loadtest::floor::pgbench::bind;
use loadtest::floor::seed::Seeded;

/// The variables every script sets from `-D` (`event`, `clients`, `blocks`, `bps`,
/// `first_section`, `first_seat`, `seed`, `k`): the block, its section and seats, the fan.
const BLOCK: &str = r"\set k :k + 1
\set blk permute(:client_id + (:k - 1) * :clients, :blocks, :seed)
\set section :first_section + :blk / :bps
\set s0 :first_seat + :blk * 4
\set s1 :s0 + 1
\set s2 :s0 + 2
\set s3 :s0 + 3
\set fan :client_id * 1000000000 + :k
";

/// The service's claim (its own text): one statement, its own transaction.
fn claim() -> String {
    let claim = bind(
        CLAIM,
        &[
            "gen_random_uuid()",
            ":event",
            ":section",
            "ARRAY[:s0::bigint, :s1::bigint, :s2::bigint, :s3::bigint]",
            "'pgb-' || :fan::bigint",
            "'pgb-jti-' || :fan::bigint",
            "'fan'",
            "NULL",
        ],
    );
    format!("{claim};\n")
}

/// The bare insert of the same four rows under one hold key.
const BARE_INSERT: &str = "INSERT INTO holds.seat_holds \
(hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status, kind, expires_at) \
SELECT k, :event, :section, s, 'pgb-' || :fan::bigint, 'pgb-jti-' || :fan::bigint, 'held', 'fan', \
now() + interval '10 minutes' \
FROM (SELECT gen_random_uuid() AS k) AS key, \
unnest(ARRAY[:s0::bigint, :s1::bigint, :s2::bigint, :s3::bigint]) AS s;
";

/// Which floor a `pgbench` run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// The service's one-statement claim.
    Claim,
    /// The bare 4-seat insert.
    BareInsert,
}

impl Script {
    /// The script: [`BLOCK`], then the statement.
    pub fn text(self) -> String {
        let statement = match self {
            Self::Claim => claim(),
            Self::BareInsert => BARE_INSERT.to_owned(),
        };
        format!("{BLOCK}{statement}")
    }
}

/// The `-D` variables [`BLOCK`] reads, for `clients` clients on the venue of `seeded`
/// (a new `permute` seed each time).
pub fn defines(seeded: &Seeded, clients: usize) -> Vec<String> {
    let shape = seeded.shape;
    vec![
        format!("event={}", seeded.event),
        format!("clients={clients}"),
        format!("blocks={}", shape.blocks()),
        format!("bps={}", shape.blocks_per_section()),
        format!("first_section={}", seeded.first_section),
        format!("first_seat={}", seeded.first_seat),
        format!("seed={}", rand::random::<u32>()),
        "k=0".to_owned(),
    ]
}
