//! Channels and presale codes, passed to holds with the caller's token (holds owns
//! them and decides every claim of their seats); each change is recorded in the audit
//! afterwards, never with a key or a code.

use serde_json::{Value, json};
use stadium_proto::holds::v1 as holds;
use tonic::Request;

use super::BoxOfficeApi;
use crate::auth::{CHANGE, Caller, OPERATE};
use crate::error::Result;
use crate::store::audit::AuditEntry;

impl BoxOfficeApi {
    async fn audit_channel(
        &self,
        caller: &Caller,
        action: &'static str,
        channel: Option<&holds::Channel>,
        after: Value,
    ) -> Result<()> {
        let id = channel.map_or(0, |c| c.channel_id);
        self.office
            .record(AuditEntry {
                actor: &caller.actor,
                action,
                target: format!("channel:{id}"),
                before: None,
                after: Some(after),
            })
            .await
    }

    pub(super) async fn create_channel_inner(
        &self,
        request: Request<holds::CreateChannelRequest>,
    ) -> Result<holds::CreateChannelResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.into_inner();
        let answer = self
            .upstream
            .create_channel(&caller.token, req.clone())
            .await?;
        let after = json!({
            "event_id": req.event_id,
            "name": req.name,
            "release_at": req.release_at.map(|t| t.seconds),
        });
        self.audit_channel(&caller, "create_channel", answer.channel.as_ref(), after)
            .await?;
        Ok(answer)
    }

    pub(super) async fn assign_channel_seats_inner(
        &self,
        request: Request<holds::AssignChannelSeatsRequest>,
    ) -> Result<holds::AssignChannelSeatsResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.into_inner();
        let answer = self
            .upstream
            .assign_channel_seats(&caller.token, req)
            .await?;
        let after = json!({ "seat_ids": answer.seat_ids });
        self.audit_channel(
            &caller,
            "assign_channel_seats",
            answer.channel.as_ref(),
            after,
        )
        .await?;
        Ok(answer)
    }

    pub(super) async fn create_presale_codes_inner(
        &self,
        request: Request<holds::CreatePresaleCodesRequest>,
    ) -> Result<holds::CreatePresaleCodesResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.into_inner();
        let answer = self
            .upstream
            .create_presale_codes(&caller.token, req)
            .await?;
        let after = json!({
            "channel_id": req.channel_id,
            "count": answer.codes.len(),
            "max_seats": req.max_seats,
            "max_seats_per_fan": req.max_seats_per_fan,
        });
        let channel = holds::Channel {
            channel_id: req.channel_id,
            ..holds::Channel::default()
        };
        self.audit_channel(&caller, "create_presale_codes", Some(&channel), after)
            .await?;
        Ok(answer)
    }

    pub(super) async fn release_channel_inner(
        &self,
        request: Request<holds::ReleaseChannelRequest>,
    ) -> Result<holds::ReleaseChannelResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.into_inner();
        let answer = self.upstream.release_channel(&caller.token, req).await?;
        let after = json!({ "released_seats": answer.released_seats });
        self.audit_channel(&caller, "release_channel", answer.channel.as_ref(), after)
            .await?;
        Ok(answer)
    }

    pub(super) async fn list_channels_inner(
        &self,
        request: Request<holds::ListChannelsRequest>,
    ) -> Result<holds::ListChannelsResponse> {
        let caller = self.caller(&request, OPERATE)?;
        self.upstream
            .list_channels(&caller.token, request.into_inner())
            .await
    }
}
