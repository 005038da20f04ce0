//! Reporting to the waiting room that a fan is done once their order is paid
//! (`CompleteAdmission` with the service's own admin token), so an event's cap on
//! active admitted fans (and its presale queue's) gets the place back without waiting
//! for the fan's admission token to expire.
//!
//! Best effort and off the confirm path: the report runs in its own task after the
//! order is stored; a failure is logged and changes nothing (the place returns when
//! the admission token expires). The waiting room treats repeated reports as one.

use std::time::Duration;

use stadium_kit::outbound::{Bearer, as_service};
use stadium_proto::waiting_room::v1::CompleteAdmissionRequest;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use tonic::Code;
use tonic::transport::Channel;

/// A client of the waiting room for completion reports.
#[derive(Debug, Clone)]
pub struct AdmissionReporter {
    client: WaitingRoomClient<Channel>,
    service_token: Option<Bearer>,
    timeout: Duration,
}

impl AdmissionReporter {
    /// Reports over `channel`, as the service with `service_token` (an admin token
    /// with role `service`, development only; `None` when the client certificate names
    /// payments), each call bounded by `timeout`.
    pub fn new(channel: Channel, service_token: Option<Bearer>, timeout: Duration) -> Self {
        Self {
            client: WaitingRoomClient::new(channel),
            service_token,
            timeout,
        }
    }

    /// Reports in the background that `fan_id` is done with event `event_id`: to the
    /// event's queue and to its presale's (`<event>-presale`), since the fan may have
    /// been admitted from either; a presale queue the event never had (NOT_FOUND) is
    /// no failure.
    pub fn fan_done(&self, event_id: i64, fan_id: &str) {
        let event = event_id.to_string();
        for (queue, presale) in [
            (stadium_tokens::presale_queue(&event), true),
            (event, false),
        ] {
            let mut client = self.client.clone();
            let request = as_service(
                CompleteAdmissionRequest {
                    admission_token: String::new(),
                    event_id: queue,
                    fan_id: fan_id.to_owned(),
                },
                self.service_token.as_ref(),
                Some(self.timeout),
            );
            tokio::spawn(async move {
                match client.complete_admission(request).await {
                    Err(status) if presale && status.code() == Code::NotFound => {}
                    Err(status) => tracing::warn!(
                        event_id,
                        presale,
                        code = ?status.code(),
                        message = status.message(),
                        "could not report the fan's completion to the waiting room"
                    ),
                    Ok(_) => {}
                }
            });
        }
    }
}
