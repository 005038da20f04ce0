//! `shards list` and `sections move`: where an event's sections live with each
//! database's load, and moving one.

use serde_json::json;
use stadium_proto::box_office::v1 as pb;

use crate::args::ShardsCommand;
use crate::{CliError, Client, Outcome, render};

/// Runs `shards list`.
///
/// # Errors
/// [`CliError::Status`] from the box office.
pub(crate) async fn list(c: &mut Client, cmd: ShardsCommand) -> Result<Outcome, CliError> {
    let ShardsCommand::List { event } = cmd;
    let req = c.request(pb::ListShardsRequest { event_id: event })?;
    let r = c.inner.list_shards(req).await?.into_inner();
    let mut rows = Vec::new();
    for shard in &r.shards {
        let load = format!("{:.1}", shard.claims_per_s);
        if shard.sections.is_empty() {
            rows.push(vec![
                shard.name.clone(),
                load.clone(),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for s in &shard.sections {
            rows.push(vec![
                shard.name.clone(),
                load.clone(),
                s.section_code.clone(),
                s.section_id.to_string(),
                s.held.to_string(),
                s.sold.to_string(),
                s.blocked.to_string(),
            ]);
        }
    }
    let text = render::table(
        &[
            "SHARD",
            "CLAIMS/S",
            "SECTION",
            "SECTION_ID",
            "HELD",
            "SOLD",
            "BLOCKED",
        ],
        &rows,
    );
    let json = json!(
        r.shards
            .iter()
            .map(|shard| json!({
                "name": shard.name,
                "claims_per_s": shard.claims_per_s,
                "sections": shard.sections.iter().map(|s| json!({
                    "section_id": s.section_id,
                    "section_code": s.section_code,
                    "held": s.held,
                    "sold": s.sold,
                    "blocked": s.blocked,
                })).collect::<Vec<_>>(),
            }))
            .collect::<Vec<_>>()
    );
    Ok(Outcome::new(text, json))
}

/// Runs `sections move`.
///
/// # Errors
/// [`CliError::Status`] from the box office (UNAVAILABLE: run it again to finish).
pub(crate) async fn run(
    c: &mut Client,
    event: String,
    section: u64,
    to: String,
) -> Result<Outcome, CliError> {
    let req = c.request(pb::MoveSectionRequest {
        event_id: event,
        section_id: section,
        to_shard: to,
    })?;
    let r = c.inner.move_section(req).await?.into_inner();
    let text = if r.from_shard == r.to_shard && r.seat_rows == 0 && r.fenced_ms == 0 {
        format!("section {section} is on {} already\n", r.to_shard)
    } else {
        format!(
            "section {section} moved from {} to {}: {} seat rows, {} history rows; claims refused for {} ms\n",
            r.from_shard, r.to_shard, r.seat_rows, r.history_rows, r.fenced_ms
        )
    };
    let json = json!({
        "section_id": section,
        "from_shard": r.from_shard,
        "to_shard": r.to_shard,
        "seat_rows": r.seat_rows,
        "history_rows": r.history_rows,
        "fenced_ms": r.fenced_ms,
    });
    Ok(Outcome::new(text, json))
}
