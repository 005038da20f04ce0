//! ListShards, MoveSection and TopSections: checking the request and the answer's shape.

use std::time::Duration;

use stadium_proto::box_office::v1 as pb;
use tonic::Request;

use super::{BoxOfficeApi, convert};
use crate::auth::{OPERATE, SCALE};
use crate::error::{Error, Result};

impl BoxOfficeApi {
    pub(super) async fn list_shards_inner(
        &self,
        request: Request<pb::ListShardsRequest>,
    ) -> Result<pb::ListShardsResponse> {
        self.caller(&request, OPERATE)?;
        let event_id = convert::id("event_id", &request.get_ref().event_id)?;
        let shards = self.office.shards_of(event_id).await?;
        let loads = self.office.shard_loads(event_id).await?;
        Ok(pb::ListShardsResponse {
            shards: shards
                .into_iter()
                .map(|(name, sections)| pb::ShardInfo {
                    claims_per_s: loads.get(&name).copied().unwrap_or(0.0),
                    name,
                    sections: sections
                        .into_iter()
                        .map(|s| pb::ShardSection {
                            section_id: u64::try_from(s.section_id).unwrap_or(0),
                            section_code: s.code,
                            held: count(s.held),
                            sold: count(s.sold),
                            blocked: count(s.blocked),
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    pub(super) async fn move_section_inner(
        &self,
        request: Request<pb::MoveSectionRequest>,
    ) -> Result<pb::MoveSectionResponse> {
        let caller = self.caller(&request, SCALE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        let section_id = i64::try_from(req.section_id)
            .ok()
            .filter(|id| *id > 0)
            .ok_or_else(|| Error::invalid("section_id", "must be a positive section id"))?;
        if req.to_shard.is_empty() || req.to_shard.len() > 63 {
            return Err(Error::invalid(
                "to_shard",
                "must name main or a configured shard",
            ));
        }
        let moved = self
            .office
            .move_section(&caller.actor, event_id, section_id, &req.to_shard)
            .await?;
        Ok(pb::MoveSectionResponse {
            from_shard: moved.from,
            to_shard: moved.to,
            seat_rows: moved.seat_rows,
            history_rows: moved.history_rows,
            fenced_ms: moved.fenced_ms,
        })
    }
}

/// The window of TopSections when the request gives none, in seconds.
const DEFAULT_WINDOW_S: u32 = 10;
/// The widest window of TopSections, in seconds (holds keeps 15 minutes of counts).
const MAX_WINDOW_S: u32 = 600;

impl BoxOfficeApi {
    pub(super) async fn top_sections_inner(
        &self,
        request: Request<pb::TopSectionsRequest>,
    ) -> Result<pb::TopSectionsResponse> {
        self.caller(&request, OPERATE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        let window_s = match req.window_s {
            0 => DEFAULT_WINDOW_S,
            s if s <= MAX_WINDOW_S => s,
            _ => {
                return Err(Error::invalid(
                    "window_s",
                    format!("must be 1..={MAX_WINDOW_S} seconds (0: {DEFAULT_WINDOW_S})"),
                ));
            }
        };
        let top = self
            .office
            .top_sections(event_id, Duration::from_secs(u64::from(window_s)))
            .await?;
        Ok(pb::TopSectionsResponse {
            window_s,
            sections: top
                .into_iter()
                .map(|s| pb::SectionLoad {
                    section_id: u64::try_from(s.section_id).unwrap_or(0),
                    section_code: s.code,
                    shard: s.shard,
                    claims_per_s: s.claims_per_s,
                    seat_taken_rate: s.seat_taken_rate,
                    p99_ms: s.p99_ms,
                    expiries_per_s: s.expiries_per_s,
                    held_claims: total(s.held_claims),
                    seat_taken_claims: total(s.seat_taken_claims),
                    refused_claims: total(s.refused_claims),
                    failed_claims: total(s.failed_claims),
                    expiries: total(s.expiries),
                    held: count(s.held),
                    sold: count(s.sold),
                    free: count(s.free),
                    lock_waits: count(s.lock_waits),
                    shed_claims: total(s.shed_claims),
                })
                .collect(),
        })
    }
}

fn total(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
