//! Where the services are ([`Targets`]) and the gRPC clients to them ([`Clients`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use stadium_proto::box_office::v1::box_office_client::BoxOfficeClient;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::seat_map::v1::seat_map_client::SeatMapClient;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::error::{LoadtestError, Result};

/// Largest message the load test accepts (a 500,000-seat layout is tens of MB).
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// The gRPC endpoints of one deployment, as URLs such as `http://127.0.0.1:50051`. Each
/// target may list several URLs, comma-separated, one per replica: calls to it are
/// balanced across them.
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
    /// The certificate authority (PEM) that `https://` targets' certificates are
    /// verified against; `None` for plaintext `http://` targets.
    #[serde(default)]
    pub ca_pem: Option<String>,
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
    /// Errors: [`LoadtestError::InvalidTarget`] naming the target and the first of its
    /// URLs that does not parse.
    pub fn clients(&self) -> Result<Clients> {
        let ca = self.ca_pem.as_deref();
        Ok(Clients {
            waiting_room: WaitingRoomClient::new(channel("waiting_room", &self.waiting_room, ca)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            seat_map: SeatMapClient::new(channel("seat_map", &self.seat_map, ca)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            holds: HoldsClient::new(channel("holds", &self.holds, ca)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            payments: PaymentsClient::new(channel("payments", &self.payments, ca)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            box_office: BoxOfficeClient::new(channel("box_office", &self.box_office, ca)?)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        })
    }
}

/// HTTP/2 connection flow-control window of every channel, bytes.
const CONNECTION_WINDOW: u32 = 8 << 20;
/// HTTP/2 stream flow-control window of every channel, bytes.
const STREAM_WINDOW: u32 = 1 << 20;

/// A lazily connected channel to the target `name` at `urls`, comma-separated URLs of
/// its replicas: one endpoint each, with the same settings, and calls balanced across
/// them ([`Channel::balance_list`]) when there are several.
fn channel(name: &'static str, urls: &str, ca: Option<&str>) -> Result<Channel> {
    let mut endpoints = urls
        .split(',')
        .map(|url| endpoint(name, url, ca))
        .collect::<Result<Vec<_>>>()?;
    Ok(if endpoints.len() == 1 {
        endpoints.remove(0).connect_lazy()
    } else {
        Channel::balance_list(endpoints.into_iter())
    })
}

/// The endpoint of one replica of the target `name` at `url`; an `https://` one
/// verifies the server against `ca` (PEM).
fn endpoint(name: &'static str, url: &str, ca: Option<&str>) -> Result<Endpoint> {
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
        // Fixed, large flow-control windows rather than the adaptive ones: the adaptive
        // window starts at 64 KiB, and HTTP/2 (h2 0.4.20 and later) budgets buffered
        // small DATA frames at half the connection window. Hundreds of small gRPC
        // answers waiting on a busy client then exhausted it, and the client closed
        // the whole connection (ENHANCE_YOUR_CALM, seen as RESOURCE_EXHAUSTED and
        // CANCELLED on every call in flight).
        .initial_connection_window_size(CONNECTION_WINDOW)
        .initial_stream_window_size(STREAM_WINDOW);
    match (url.starts_with("https://"), ca) {
        (true, Some(ca)) => endpoint
            .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)))
            .map_err(|e| invalid(e.to_string())),
        (true, None) => Err(invalid(
            "an https:// target needs the certificate authority to verify it".into(),
        )),
        (false, _) => Ok(endpoint),
    }
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
            ca_pem: None,
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
        let err = targets("http://127.0.0.1:3,127.0.0.1:4")
            .clients()
            .unwrap_err();
        assert!(
            matches!(&err, LoadtestError::InvalidTarget { name: "holds", url, .. } if url == "127.0.0.1:4"),
            "{err}"
        );
    }

    /// A two-URL target dials both replicas: the balancer connects to every replica
    /// on its first call.
    #[tokio::test]
    async fn a_two_url_target_dials_both_replicas() {
        use stadium_kit::testing::loopback_listener;
        use stadium_proto::holds::v1::ReleaseHoldRequest;

        let (first, first_addr) = loopback_listener().await;
        let (second, second_addr) = loopback_listener().await;
        let mut holds = targets(&format!("http://{first_addr},http://{second_addr}"))
            .clients()
            .unwrap()
            .holds;
        // No server answers on these listeners, so the call waits; it only makes the
        // balancer dial.
        let call =
            tokio::spawn(async move { holds.release_hold(ReleaseHoldRequest::default()).await });
        let both = async { tokio::join!(first.accept(), second.accept()) };
        let (a, b) = tokio::time::timeout(Duration::from_secs(30), both)
            .await
            .expect("both replicas dialled");
        a.unwrap();
        b.unwrap();
        call.abort();
    }
}
