//! The waiting room's public answers: `GetSigningKeys`, the public keys of admission
//! tokens, fetched when [`crate::auth::AdmissionKeys`] meets an unknown key id, and
//! `ListRevokedAdmissions`, the revoked tokens [`crate::revocations::Revocations`]
//! refuses (the calls carry no token: both are public).

use std::time::Duration;

use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_proto::waiting_room::v1::{GetSigningKeysRequest, ListRevokedAdmissionsRequest};
use tonic::transport::Channel;

use crate::auth::{JwksFuture, JwksSource};
use crate::domain::Queue;
use crate::revocations::{PageFuture, RevocationSource, RevokedPage};

/// The waiting room's `GetSigningKeys`, each call bounded by `timeout`.
#[derive(Debug, Clone)]
pub struct WaitingRoomJwks {
    client: WaitingRoomClient<Channel>,
    timeout: Duration,
}

impl WaitingRoomJwks {
    /// A source calling the waiting room over `channel` (typically lazily connected).
    pub fn new(channel: Channel, timeout: Duration) -> Self {
        Self {
            client: WaitingRoomClient::new(channel),
            timeout,
        }
    }
}

impl JwksSource for WaitingRoomJwks {
    fn fetch(&self) -> JwksFuture<'_> {
        let mut client = self.client.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let call = client.get_signing_keys(GetSigningKeysRequest {});
            match tokio::time::timeout(timeout, call).await {
                Ok(Ok(response)) => Ok(response.into_inner().jwks_json),
                Ok(Err(status)) => Err(format!("GetSigningKeys: {}", status.message())),
                Err(_) => Err(format!("GetSigningKeys: no answer within {timeout:?}")),
            }
        })
    }
}

/// The waiting room's `ListRevokedAdmissions`, each call bounded by `timeout`.
#[derive(Debug, Clone)]
pub struct WaitingRoomRevocations {
    client: WaitingRoomClient<Channel>,
    timeout: Duration,
}

impl WaitingRoomRevocations {
    /// A source calling the waiting room over `channel`.
    pub fn new(channel: Channel, timeout: Duration) -> Self {
        Self {
            client: WaitingRoomClient::new(channel),
            timeout,
        }
    }
}

impl RevocationSource for WaitingRoomRevocations {
    fn fetch(&self, queue: Queue, epoch: &str, since: u64) -> PageFuture<'_> {
        let mut client = self.client.clone();
        let timeout = self.timeout;
        let request = ListRevokedAdmissionsRequest {
            event_id: queue.to_string(),
            epoch: epoch.to_owned(),
            since_version: since,
        };
        Box::pin(async move {
            let call = client.list_revoked_admissions(request);
            let page = match tokio::time::timeout(timeout, call).await {
                Ok(Ok(response)) => response.into_inner(),
                Ok(Err(status)) => {
                    return Err(format!("ListRevokedAdmissions: {}", status.message()));
                }
                Err(_) => {
                    return Err(format!(
                        "ListRevokedAdmissions: no answer within {timeout:?}"
                    ));
                }
            };
            Ok(RevokedPage {
                epoch: page.epoch,
                version: page.version,
                full: page.full,
                more: page.more,
                revoked: page
                    .revoked
                    .into_iter()
                    .map(|r| {
                        // No expiry given: keep it as long as any admission lives.
                        let exp = r
                            .expires_at
                            .map_or(u64::MAX, |t| u64::try_from(t.seconds).unwrap_or(0));
                        (r.jti, exp)
                    })
                    .collect(),
            })
        })
    }
}
