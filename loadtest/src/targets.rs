//! Where the services are ([`Targets`]) and the gRPC clients to them ([`Clients`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use stadium_proto::box_office::v1::box_office_client::BoxOfficeClient;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::seat_map::v1::seat_map_client::SeatMapClient;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use tonic::transport::{Channel, Endpoint};

use crate::error::{LoadtestError, Result};

/// Largest message the load test accepts (a 500,000-seat layout is tens of MB).
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// The gRPC endpoints of one deployment, as URLs such as `http://127.0.0.1:50051`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Targets {
    /// Waiting room service URL.
    pub waiting_room: String,
    /// Seat map service URL.
    pub seat_map: String,
    /// Holds service URL.
    pub holds: String,
    /// Payments service URL.
    pub payments: String,
    /// Box office service URL.
    pub box_office: String,
}

/// Clients of every service over lazily connected channels; cheap to clone (a clone
/// shares the channel's HTTP/2 connection).
#[derive(Debug, Clone)]
pub struct Clients {
    /// Waiting room client.
    pub waiting_room: WaitingRoomClient<Channel>,
    /// Seat map client.
    pub seat_map: SeatMapClient<Channel>,
    /// Holds client.
    pub holds: HoldsClient<Channel>,
    /// Payments client.
    pub payments: PaymentsClient<Channel>,
    /// Box office client.
    pub box_office: BoxOfficeClient<Channel>,
}

impl Targets {
    /// Clients of the five services. Nothing is dialled yet: each channel connects on
    /// its first call (and reconnects after a failure), so a service may start later.
    ///
    /// Errors: [`LoadtestError::InvalidTarget`] naming the first URL that does not parse.
    pub fn clients(&self) -> Result<Clients> {
        Ok(Clients {
            waiting_room: WaitingRoomClient::new(channel("waiting_room", &self.waiting_room)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            seat_map: SeatMapClient::new(channel("seat_map", &self.seat_map)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            holds: HoldsClient::new(channel("holds", &self.holds)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            payments: PaymentsClient::new(channel("payments", &self.payments)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            box_office: BoxOfficeClient::new(channel("box_office", &self.box_office)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        })
    }
}

/// A lazily connected channel to `url`.
fn channel(name: &'static str, url: &str) -> Result<Channel> {
    let invalid = |reason: String| LoadtestError::InvalidTarget {
        name,
        url: url.to_owned(),
        reason,
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(invalid("must start with http:// or https://".into()));
    }
    let endpoint = Endpoint::from_shared(url.to_owned())
        .map_err(|e| invalid(e.to_string()))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .http2_adaptive_window(true);
    Ok(endpoint.connect_lazy())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(url: &str) -> Targets {
        Targets {
            waiting_room: "http://127.0.0.1:1".into(),
            seat_map: "http://127.0.0.1:2".into(),
            holds: url.into(),
            payments: "http://127.0.0.1:4".into(),
            box_office: "http://127.0.0.1:5".into(),
        }
    }

    #[tokio::test]
    async fn valid_urls_give_lazy_clients() {
        assert!(targets("http://127.0.0.1:3").clients().is_ok());
    }

    #[tokio::test]
    async fn a_bad_url_names_its_target() {
        let err = targets("127.0.0.1:3").clients().unwrap_err();
        assert!(matches!(
            err,
            LoadtestError::InvalidTarget { name: "holds", .. }
        ));
    }
}
