//! Admissions taken back (a bot): through the waiting room's `RevokeAdmission` with the
//! staff member's own token, in the event's queue or its presale's; its audit record
//! follows here once the waiting room did it.

use serde_json::json;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::waiting_room::v1 as wr;
use tonic::Request;

use super::inventory::text;
use super::{BoxOfficeApi, convert};
use crate::auth::OPERATE;
use crate::error::Result;
use crate::store::audit::AuditEntry;

impl BoxOfficeApi {
    pub(super) async fn revoke_admission_inner(
        &self,
        request: Request<pb::RevokeAdmissionRequest>,
    ) -> Result<pb::RevokeAdmissionResponse> {
        let caller = self.caller(&request, OPERATE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        let reason = text("reason", &req.reason, true)?;
        let queue = if req.presale {
            stadium_tokens::presale_queue(&event_id.to_string())
        } else {
            event_id.to_string()
        };
        let revoked = self
            .upstream
            .revoke_admission(
                &caller.token,
                wr::RevokeAdmissionRequest {
                    event_id: queue,
                    fan_id: req.fan_id.clone(),
                    jti: req.jti.clone(),
                    reason: reason.clone(),
                },
            )
            .await?;
        self.office
            .record(AuditEntry {
                actor: &caller.actor,
                action: "revoke_admission",
                target: format!("event:{event_id}"),
                before: None,
                after: Some(json!({
                    "fan_id": req.fan_id,
                    "jti": revoked.jti,
                    "freed": revoked.freed,
                    "presale": req.presale,
                    "reason": reason,
                })),
            })
            .await?;
        Ok(pb::RevokeAdmissionResponse {
            freed: revoked.freed,
            jti: revoked.jti,
        })
    }
}
