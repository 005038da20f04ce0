//! Admission tokens the waiting room revoked (given back, taken back by staff, lost as
//! no-shows) are refused at holds within the documented bound (the copy's 1 s age
//! plus one fetch), learnt over real gRPC from a stand-in waiting room that serves
//! `ListRevokedAdmissions` and records `MarkAdmissionsUsed`; an unreachable waiting
//! room is trusted for the stale limit, then claims fail closed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use holds::WaitingRoomLinks;
use holds::auth::StaticJwks;
use holds::clients::admission_use::AdmissionUse;
use holds::clients::waiting_room::WaitingRoomRevocations;
use holds::revocations::Freshness;
use prost_types::Timestamp;
use stadium_kit::Reason;
use stadium_kit::testing::{connect, loopback_listener};
use stadium_proto::holds::v1::ClaimBestAvailableRequest;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::waiting_room::v1 as wr;
use stadium_proto::waiting_room::v1::waiting_room_server::{WaitingRoom, WaitingRoomServer};
use tokio_util::sync::CancellationToken;
use tonic::{Code, Request, Response, Status};

use crate::support::{EventSettings, Fan, TestApp, bearer, reason};

/// The waiting room's revocation set and use reports, and nothing else.
#[derive(Default)]
struct Room {
    revoked: Mutex<Vec<String>>,
    used: Mutex<Vec<(String, String)>>,
    down: AtomicBool,
    lists: AtomicU64,
}

#[derive(Clone)]
struct Fake(Arc<Room>);

fn unused<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("not part of the fake"))
}

#[tonic::async_trait]
impl WaitingRoom for Fake {
    type WatchStatusStream = futures::stream::Empty<Result<wr::WatchStatusResponse, Status>>;
    type WatchWaitingListStream =
        futures::stream::Empty<Result<wr::WatchWaitingListResponse, Status>>;

    async fn list_revoked_admissions(
        &self,
        request: Request<wr::ListRevokedAdmissionsRequest>,
    ) -> Result<Response<wr::ListRevokedAdmissionsResponse>, Status> {
        self.0.lists.fetch_add(1, Ordering::Relaxed);
        if self.0.down.load(Ordering::Relaxed) {
            return Err(Status::unavailable("down"));
        }
        let since = request.get_ref().since_version as usize;
        let revoked = self.0.revoked.lock().unwrap().clone();
        let in_an_hour = SystemTime::now() + Duration::from_secs(3600);
        let seconds = in_an_hour
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        Ok(Response::new(wr::ListRevokedAdmissionsResponse {
            epoch: "1".into(),
            version: revoked.len() as u64,
            full: since == 0,
            more: false,
            revoked: revoked
                .into_iter()
                .skip(since)
                .map(|jti| wr::RevokedAdmission {
                    jti,
                    expires_at: Some(Timestamp { seconds, nanos: 0 }),
                })
                .collect(),
        }))
    }
    async fn mark_admissions_used(
        &self,
        request: Request<wr::MarkAdmissionsUsedRequest>,
    ) -> Result<Response<wr::MarkAdmissionsUsedResponse>, Status> {
        let req = request.into_inner();
        let mut used = self.0.used.lock().unwrap();
        for jti in &req.jtis {
            used.push((req.event_id.clone(), jti.clone()));
        }
        Ok(Response::new(wr::MarkAdmissionsUsedResponse {
            marked: req.jtis.len() as u64,
        }))
    }

    async fn join(
        &self,
        _: Request<wr::JoinRequest>,
    ) -> Result<Response<wr::JoinResponse>, Status> {
        unused()
    }
    async fn get_status(
        &self,
        _: Request<wr::GetStatusRequest>,
    ) -> Result<Response<wr::GetStatusResponse>, Status> {
        unused()
    }
    async fn watch_status(
        &self,
        _: Request<wr::WatchStatusRequest>,
    ) -> Result<Response<Self::WatchStatusStream>, Status> {
        unused()
    }
    async fn get_signing_keys(
        &self,
        _: Request<wr::GetSigningKeysRequest>,
    ) -> Result<Response<wr::GetSigningKeysResponse>, Status> {
        unused()
    }
    async fn get_shuffle_seed(
        &self,
        _: Request<wr::GetShuffleSeedRequest>,
    ) -> Result<Response<wr::GetShuffleSeedResponse>, Status> {
        unused()
    }
    async fn get_shuffle_commitment(
        &self,
        _: Request<wr::GetShuffleCommitmentRequest>,
    ) -> Result<Response<wr::GetShuffleCommitmentResponse>, Status> {
        unused()
    }
    async fn list_pre_queue(
        &self,
        _: Request<wr::ListPreQueueRequest>,
    ) -> Result<Response<wr::ListPreQueueResponse>, Status> {
        unused()
    }
    async fn complete_admission(
        &self,
        _: Request<wr::CompleteAdmissionRequest>,
    ) -> Result<Response<wr::CompleteAdmissionResponse>, Status> {
        unused()
    }
    async fn release_admission(
        &self,
        _: Request<wr::ReleaseAdmissionRequest>,
    ) -> Result<Response<wr::ReleaseAdmissionResponse>, Status> {
        unused()
    }
    async fn revoke_admission(
        &self,
        _: Request<wr::RevokeAdmissionRequest>,
    ) -> Result<Response<wr::RevokeAdmissionResponse>, Status> {
        unused()
    }
    async fn configure_event(
        &self,
        _: Request<wr::ConfigureEventRequest>,
    ) -> Result<Response<wr::ConfigureEventResponse>, Status> {
        unused()
    }
    async fn set_admission_rate(
        &self,
        _: Request<wr::SetAdmissionRateRequest>,
    ) -> Result<Response<wr::SetAdmissionRateResponse>, Status> {
        unused()
    }
    async fn pause_admission(
        &self,
        _: Request<wr::PauseAdmissionRequest>,
    ) -> Result<Response<wr::PauseAdmissionResponse>, Status> {
        unused()
    }
    async fn resume_admission(
        &self,
        _: Request<wr::ResumeAdmissionRequest>,
    ) -> Result<Response<wr::ResumeAdmissionResponse>, Status> {
        unused()
    }
    async fn get_queue_stats(
        &self,
        _: Request<wr::GetQueueStatsRequest>,
    ) -> Result<Response<wr::GetQueueStatsResponse>, Status> {
        unused()
    }
    async fn join_waiting_list(
        &self,
        _: Request<wr::JoinWaitingListRequest>,
    ) -> Result<Response<wr::JoinWaitingListResponse>, Status> {
        unused()
    }
    async fn get_waiting_list_status(
        &self,
        _: Request<wr::GetWaitingListStatusRequest>,
    ) -> Result<Response<wr::GetWaitingListStatusResponse>, Status> {
        unused()
    }
    async fn watch_waiting_list(
        &self,
        _: Request<wr::WatchWaitingListRequest>,
    ) -> Result<Response<Self::WatchWaitingListStream>, Status> {
        unused()
    }
    async fn get_waiting_list(
        &self,
        _: Request<wr::GetWaitingListRequest>,
    ) -> Result<Response<wr::GetWaitingListResponse>, Status> {
        unused()
    }
    async fn report_inventory(
        &self,
        _: Request<wr::ReportInventoryRequest>,
    ) -> Result<Response<wr::ReportInventoryResponse>, Status> {
        unused()
    }
}

/// The stand-in on a loopback port, and holds linked to it (keys from the issuers'
/// ring, revocations and use reports over gRPC), trusting a silent room `stale_limit`.
async fn linked(stale_limit: Duration) -> (TestApp, Arc<Room>, CancellationToken) {
    let room = Arc::new(Room::default());
    let (listener, addr) = loopback_listener().await;
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let fake = Fake(Arc::clone(&room));
        let shutdown = shutdown.clone();
        async move {
            tonic::transport::Server::builder()
                .add_service(WaitingRoomServer::new(fake))
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    shutdown.cancelled(),
                )
                .await
        }
    });
    let channel = connect(addr).await;
    let freshness = Freshness {
        stale_limit,
        ..Freshness::default()
    };
    let app = TestApp::start_linked(&[], |issuers| {
        Some(WaitingRoomLinks {
            keys: Arc::new(StaticJwks(issuers.ring.jwks_json().unwrap())),
            revocations: Arc::new(WaitingRoomRevocations::new(
                channel.clone(),
                freshness.fetch_timeout,
            )),
            admission_use: Some(AdmissionUse::spawn(channel, None, Duration::from_secs(2))),
            freshness,
        })
    })
    .await;
    (app, room, shutdown)
}

/// `fan` with an admission of its own to `event`, and its jti.
fn admitted(app: &TestApp, fan: &str, event: &str) -> (Fan, String) {
    let issued = app
        .issuers
        .admission
        .issue(fan, event, SystemTime::now())
        .expect("an admission token");
    let mut holder = app.fan(fan, event);
    holder.admission = issued.token;
    (holder, issued.claims.registered.jti)
}

/// Past the documented bound: the copy's age (1 s) and one fetch.
const REFRESH_BOUND: Duration = Duration::from_millis(1_600);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_admission_is_refused_and_a_used_one_reported() {
    let (app, room, shutdown) = linked(Duration::from_secs(10)).await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].id;
    let seats = app.sections[0].seats.clone();
    let (mut gone, gone_jti) = admitted(&app, "fan-gone", &event);
    let (mut kept, kept_jti) = admitted(&app, "fan-kept", &event);

    gone.claim(section, &seats[..1]).await.expect("held");
    let first = kept.claim(section, &seats[1..2]).await.expect("held");
    // The first claims are reported used, off the claim path.
    let mut waited = Duration::ZERO;
    while room.used.lock().unwrap().len() < 2 && waited < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    let mut used: Vec<_> = room.used.lock().unwrap().clone();
    used.sort();
    let mut expected = vec![(event.clone(), gone_jti.clone()), (event.clone(), kept_jti)];
    expected.sort();
    assert_eq!(used, expected, "each admission reported once");

    // The waiting room revokes one admission (released, revoked or a no-show).
    room.revoked.lock().unwrap().push(gone_jti);
    tokio::time::sleep(REFRESH_BOUND).await;
    let err = gone.claim(section, &seats[2..3]).await.unwrap_err();
    assert_eq!(
        reason(&err, Code::Unauthenticated),
        Reason::AdmissionRevoked
    );
    let best = ClaimBestAvailableRequest {
        admission_token: gone.admission.clone(),
        event_id: event.clone(),
        target: Some(Target::SectionId(section)),
        quantity: 1,
        ..Default::default()
    };
    let err = app
        .client()
        .claim_best_available(bearer(best, &gone.session))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&err, Code::Unauthenticated),
        Reason::AdmissionRevoked
    );
    // One hold per admission: the kept fan lets its first go and claims again.
    app.release(&first.hold_key, &kept.session)
        .await
        .expect("released");
    kept.claim(section, &seats[3..4])
        .await
        .expect("another fan's admission still works");
    // A third claim of the kept fan is not reported again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(room.used.lock().unwrap().len(), 2);
    assert!(room.lists.load(Ordering::Relaxed) >= 2);
    shutdown.cancel();
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_silent_waiting_room_is_trusted_for_the_stale_limit_then_claims_fail_closed() {
    let stale_limit = Duration::from_secs(3);
    let (app, room, shutdown) = linked(stale_limit).await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].id;
    let seats = app.sections[0].seats.clone();
    let (mut fan, _) = admitted(&app, "fan-1", &event);
    // One hold per admission: each claim lets the previous hold go first.
    let held = fan.claim(section, &seats[..1]).await.expect("held");
    app.release(&held.hold_key, &fan.session).await.unwrap();

    room.down.store(true, Ordering::Relaxed);
    tokio::time::sleep(REFRESH_BOUND).await;
    let held = fan
        .claim(section, &seats[1..2])
        .await
        .expect("a blip does not stop the sale");
    app.release(&held.hold_key, &fan.session).await.unwrap();
    tokio::time::sleep(stale_limit).await;
    let err = fan.claim(section, &seats[2..3]).await.unwrap_err();
    assert_eq!(
        reason(&err, Code::Unavailable),
        Reason::RevocationsUnavailable
    );

    room.down.store(false, Ordering::Relaxed);
    tokio::time::sleep(REFRESH_BOUND).await;
    fan.claim(section, &seats[2..3])
        .await
        .expect("claims resume once the waiting room answers");
    shutdown.cancel();
    app.stop().await;
}
