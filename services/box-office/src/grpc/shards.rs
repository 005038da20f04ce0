//! ListShards and MoveSection: checking the request and the answer's shape.

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
        Ok(pb::ListShardsResponse {
            shards: shards
                .into_iter()
                .map(|(name, sections)| pb::ShardInfo {
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

fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
