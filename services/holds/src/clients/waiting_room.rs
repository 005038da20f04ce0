//! The waiting room's `GetSigningKeys`: the public keys of admission tokens, fetched
//! when [`crate::auth::AdmissionKeys`] meets an unknown key id (the call carries no
//! token: the keys are public).

use std::time::Duration;

use stadium_proto::waiting_room::v1::GetSigningKeysRequest;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use tonic::transport::Channel;

use crate::auth::{JwksFuture, JwksSource};

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
