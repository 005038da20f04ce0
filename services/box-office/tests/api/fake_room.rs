//! A fake waiting room for the box office's tests: it records the calls it gets
//! (ConfigureEvent, SetAdmissionRate, ReportInventory, RevokeAdmission,
//! GetWaitingList), can refuse the first ones, and can hold a ConfigureEvent call in
//! flight; and an office wired to it.

use std::sync::{Arc, Mutex};

use stadium_kit::testing::loopback_listener;
use stadium_proto::waiting_room::v1 as wr;
use stadium_proto::waiting_room::v1::waiting_room_server::{WaitingRoom, WaitingRoomServer};
use stadium_tokens::Role;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::support::{Office, config};

/// One call the fake received: method, event, state or rate, bearer token.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: &'static str,
    pub event_id: String,
    pub state: i32,
    pub fans_per_minute: u32,
    /// The cap a ConfigureEvent carried (0 for every other call).
    pub active_fan_cap: u32,
    pub bearer: String,
    pub inventory: Option<wr::InventoryReport>,
}

/// A waiting room that records configuration calls and refuses the first `fail_first`
/// with UNAVAILABLE; a ConfigureEvent call can be held on arrival until the test lets
/// it land ([`FakeWaitingRoom::hold_next_configure`]).
#[derive(Clone, Default)]
pub struct FakeWaitingRoom {
    calls: Arc<Mutex<Vec<Call>>>,
    /// The floors each ConfigureEvent carried, by event, in order.
    floors: Arc<Mutex<Vec<(String, u64, u64)>>>,
    /// The `admitted` and `numbered` a ConfigureEvent answers with.
    queue: Arc<Mutex<(u64, u64)>>,
    failures_left: Arc<Mutex<u32>>,
    gate: Arc<Mutex<Option<Gate>>>,
}

type Gate = (oneshot::Sender<()>, oneshot::Receiver<()>);

/// The next ConfigureEvent call, held: `arrived` fires when it reaches the fake, and
/// it is recorded and answered once `release` is sent (or dropped).
pub struct Held {
    pub arrived: oneshot::Receiver<()>,
    pub release: oneshot::Sender<()>,
}

impl FakeWaitingRoom {
    fn record<T>(
        &self,
        request: &Request<T>,
        method: &'static str,
        event_id: &str,
        state: i32,
        rate: u32,
    ) -> Result<(), Status> {
        let mut left = self.failures_left.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            return Err(Status::unavailable("warming up"));
        }
        let bearer = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        self.calls.lock().unwrap().push(Call {
            method,
            event_id: event_id.to_owned(),
            state,
            fans_per_minute: rate,
            active_fan_cap: 0,
            bearer,
            inventory: None,
        });
        Ok(())
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Holds the next ConfigureEvent call (see [`Held`]).
    /// The floors (`admitted_floor`, `numbered_floor`) of the ConfigureEvent calls
    /// recorded for `event_id`, in order.
    pub fn floors(&self, event_id: &str) -> Vec<(u64, u64)> {
        self.floors
            .lock()
            .unwrap()
            .iter()
            .filter(|(id, ..)| id == event_id)
            .map(|(_, a, n)| (*a, *n))
            .collect()
    }

    /// From now on ConfigureEvent answers that the queue has `admitted` fans admitted
    /// and `numbered` numbers handed out.
    pub fn set_queue(&self, admitted: u64, numbered: u64) {
        *self.queue.lock().unwrap() = (admitted, numbered);
    }

    pub fn hold_next_configure(&self) -> Held {
        let (arrived_tx, arrived) = oneshot::channel();
        let (release, release_rx) = oneshot::channel();
        *self.gate.lock().unwrap() = Some((arrived_tx, release_rx));
        Held { arrived, release }
    }
}

fn unused<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("not part of the fake"))
}

#[tonic::async_trait]
impl WaitingRoom for FakeWaitingRoom {
    type WatchStatusStream = tokio_stream::Empty<Result<wr::WatchStatusResponse, Status>>;
    type WatchWaitingListStream = tokio_stream::Empty<Result<wr::WatchWaitingListResponse, Status>>;

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
        request: Request<wr::RevokeAdmissionRequest>,
    ) -> Result<Response<wr::RevokeAdmissionResponse>, Status> {
        let event_id = request.get_ref().event_id.clone();
        self.record(&request, "RevokeAdmission", &event_id, 0, 0)?;
        Ok(Response::new(wr::RevokeAdmissionResponse {
            freed: true,
            jti: format!("jti-of-{}", request.get_ref().fan_id),
        }))
    }
    async fn list_revoked_admissions(
        &self,
        _: Request<wr::ListRevokedAdmissionsRequest>,
    ) -> Result<Response<wr::ListRevokedAdmissionsResponse>, Status> {
        unused()
    }
    async fn mark_admissions_used(
        &self,
        _: Request<wr::MarkAdmissionsUsedRequest>,
    ) -> Result<Response<wr::MarkAdmissionsUsedResponse>, Status> {
        unused()
    }
    async fn configure_event(
        &self,
        request: Request<wr::ConfigureEventRequest>,
    ) -> Result<Response<wr::ConfigureEventResponse>, Status> {
        let gate = self.gate.lock().unwrap().take();
        if let Some((arrived, release)) = gate {
            let _ = arrived.send(());
            let _ = release.await;
        }
        let r = request.get_ref();
        self.record(
            &request,
            "ConfigureEvent",
            &r.event_id,
            r.state,
            r.fans_per_minute,
        )?;
        if let Some(last) = self.calls.lock().unwrap().last_mut() {
            last.active_fan_cap = r.active_fan_cap;
        }
        self.floors
            .lock()
            .unwrap()
            .push((r.event_id.clone(), r.admitted_floor, r.numbered_floor));
        let (admitted, numbered) = *self.queue.lock().unwrap();
        Ok(Response::new(wr::ConfigureEventResponse {
            stats: Some(wr::GetQueueStatsResponse {
                event_id: r.event_id.clone(),
                admitted,
                numbered,
                ..Default::default()
            }),
            created: false,
        }))
    }
    async fn set_admission_rate(
        &self,
        request: Request<wr::SetAdmissionRateRequest>,
    ) -> Result<Response<wr::SetAdmissionRateResponse>, Status> {
        let r = request.get_ref();
        self.record(
            &request,
            "SetAdmissionRate",
            &r.event_id,
            0,
            r.fans_per_minute,
        )?;
        Ok(Response::new(wr::SetAdmissionRateResponse::default()))
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
        request: Request<wr::GetWaitingListRequest>,
    ) -> Result<Response<wr::GetWaitingListResponse>, Status> {
        let event_id = request.get_ref().event_id.clone();
        self.record(&request, "GetWaitingList", &event_id, 0, 0)?;
        Ok(Response::new(wr::GetWaitingListResponse {
            event_id,
            waiting: 12,
            open_offers: 2,
            offers_made: 7,
            offers_used: 3,
            offers_lapsed: 2,
            seats_per_offer: 4,
            offer_ms: 600_000,
            as_of: None,
        }))
    }
    async fn report_inventory(
        &self,
        request: Request<wr::ReportInventoryRequest>,
    ) -> Result<Response<wr::ReportInventoryResponse>, Status> {
        let r = request.get_ref();
        self.record(&request, "ReportInventory", &r.event_id, 0, 0)?;
        if let Some(last) = self.calls.lock().unwrap().last_mut() {
            last.inventory = r.inventory;
        }
        let (admitted, numbered) = *self.queue.lock().unwrap();
        Ok(Response::new(wr::ReportInventoryResponse {
            stats: Some(wr::GetQueueStatsResponse {
                event_id: r.event_id.clone(),
                admitted,
                numbered,
                ..Default::default()
            }),
        }))
    }
}

/// Serves `fake` on a loopback port until `stop` is cancelled; returns its URL.
async fn serve_fake(fake: FakeWaitingRoom, stop: CancellationToken) -> String {
    let (listener, addr) = loopback_listener().await;
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(WaitingRoomServer::new(fake))
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                stop.cancelled_owned(),
            )
            .await
    });
    format!("http://{addr}")
}

pub async fn office_with_fake(
    fail_first: u32,
    attempts: &str,
) -> (Office, FakeWaitingRoom, String, CancellationToken) {
    office_with_fake_and(fail_first, attempts, &[]).await
}

pub async fn office_with_fake_and(
    fail_first: u32,
    attempts: &str,
    extra: &[&str],
) -> (Office, FakeWaitingRoom, String, CancellationToken) {
    let fake = FakeWaitingRoom::default();
    *fake.failures_left.lock().unwrap() = fail_first;
    let stop = CancellationToken::new();
    let url = serve_fake(fake.clone(), stop.clone()).await;
    let db = stadium_testkit::fresh_database().await;
    let dev = stadium_tokens::DevIssuer::generate().unwrap();
    let service_token = dev
        .admin("box-office", &[Role::Service], std::time::SystemTime::now())
        .unwrap()
        .token;
    let mut flags = vec![
        "--waiting-room-url",
        &url,
        "--service-token",
        &service_token,
        "--push-attempts",
        attempts,
    ];
    flags.extend_from_slice(extra);
    let config = config(&db, &dev, &flags);
    (
        Office::start_with(db, dev, config).await,
        fake,
        service_token,
        stop,
    )
}
