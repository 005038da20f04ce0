//! Client-side load balancing: one channel over every replica of another service.

use tonic::transport::{Channel, Endpoint};

use crate::StartError;
use crate::tls::{Tls, endpoint};

/// A channel to another service whose replicas are at `uris` (the values of `flag`,
/// one URL per replica). Each endpoint is built by [`endpoint`], so every URL passes
/// the same scheme and TLS checks, then passed through `configure` (connect timeout,
/// request timeout, window sizes…), the same settings for every replica.
///
/// - One URL: that endpoint's lazily connected channel ([`Endpoint::connect_lazy`]).
/// - Several: [`Channel::balance_list`], tonic's client-side balancer. Each call goes
///   to one replica chosen by "power of two choices" among the replicas whose
///   connection is ready; tonic's connections report no load, so the choice is random.
///   A URL listed twice counts once.
///
/// Nothing is dialled until the first call. A replica that is down is not taken out
/// of the list: it is skipped only while a connection attempt to it is under way.
/// When the attempt fails (at once when the connection is refused, after `configure`'s
/// connect timeout when the host does not answer), the next call the balancer gives
/// it fails with `UNAVAILABLE` without reaching any replica, and a new attempt starts.
/// So while a replica is down it keeps a share of the calls, which fail fast; a
/// caller that retries `UNAVAILABLE` gets through to a replica that is up. A replica
/// is used again as soon as it accepts a connection.
///
/// Call it within a Tokio runtime: the channel's workers are spawned on it.
///
/// # Errors
/// [`StartError::Config`] naming `flag` when `uris` is empty; as [`endpoint`] for the
/// first URL whose scheme does not match the transport.
pub fn channel(
    flag: &str,
    uris: &[http::Uri],
    tls: Option<&Tls>,
    configure: impl Fn(Endpoint) -> Endpoint,
) -> Result<Channel, StartError> {
    let mut endpoints = uris
        .iter()
        .map(|uri| endpoint(flag, uri, tls).map(&configure))
        .collect::<Result<Vec<_>, _>>()?;
    match endpoints.len() {
        0 => Err(StartError::Config(format!(
            "{flag}: no URL given (one per replica)"
        ))),
        1 => Ok(endpoints.remove(0).connect_lazy()),
        _ => Ok(Channel::balance_list(endpoints.into_iter())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uris(list: &[&str]) -> Vec<http::Uri> {
        list.iter().map(|u| u.parse().unwrap()).collect()
    }

    #[tokio::test]
    async fn one_or_several_urls_make_a_channel() {
        for list in [
            &["http://127.0.0.1:1"][..],
            &["http://127.0.0.1:1", "http://127.0.0.1:2"][..],
        ] {
            assert!(channel("--holds-url", &uris(list), None, |e| e).is_ok());
        }
    }

    #[tokio::test]
    async fn no_url_or_a_wrong_scheme_names_the_flag() {
        let error = channel("--holds-url", &[], None, |e| e).unwrap_err();
        assert!(matches!(error, StartError::Config(_)), "{error}");
        assert!(error.to_string().contains("--holds-url"), "{error}");

        let mixed = uris(&["http://127.0.0.1:1", "https://127.0.0.1:2"]);
        let error = channel("--holds-url", &mixed, None, |e| e).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("--holds-url https://127.0.0.1:2/"), "{text}");
    }
}
