//! The waiting room resync: every interval, every event in presale, on sale or paused is sent
//! again as the database has it (drafts and closed sales never), with the service
//! token; it stops with the service; a sale change committed while a resync call is in
//! flight is sent after it, so the waiting room never keeps the older state; and each
//! call carries where the queue last stood, so a queue Redis lost starts from there.

use std::time::Duration;

use stadium_proto::box_office::v1 as pb;
use stadium_proto::waiting_room::v1 as wr;

use crate::fake_room::{Call, FakeWaitingRoom, office_with_fake_and};
use crate::support::{Office, PATIENCE, create_request, from_now};

/// The ConfigureEvent calls the fake got for `event_id`.
fn configures(fake: &FakeWaitingRoom, event_id: &str) -> Vec<Call> {
    fake.calls()
        .into_iter()
        .filter(|c| c.method == "ConfigureEvent" && c.event_id == event_id)
        .collect()
}

/// A draft event whose sale opens `onsale_in` seconds from now (negative: ago).
async fn event(office: &mut Office, venue_id: &str, onsale_in: i64) -> String {
    let mut request = create_request(venue_id);
    if let Some(settings) = request.settings.as_mut() {
        settings.onsale_at = from_now(onsale_in);
    }
    office.create_event(request).await.event_id
}

async fn open(office: &mut Office, event_id: &str) {
    let request = office.office(pb::OpenSaleRequest {
        event_id: event_id.to_owned(),
    });
    office.client.open_sale(request).await.expect("open");
}

async fn close(office: &mut Office, event_id: &str) {
    let request = office.office(pb::CloseSaleRequest {
        event_id: event_id.to_owned(),
    });
    office.client.close_sale(request).await.expect("close");
}

#[tokio::test]
async fn every_live_event_is_sent_again_every_interval_until_shutdown() {
    let (mut office, fake, service_token, stop) =
        office_with_fake_and(0, "3", &["--waiting-room-resync-ms", "50"]).await;
    let venue = office.venue().await.venue_id;
    let draft = event(&mut office, &venue, 60).await;
    let scheduled = event(&mut office, &venue, 3_600).await;
    let on_sale = event(&mut office, &venue, -60).await;
    let paused = event(&mut office, &venue, -60).await;
    let closed = event(&mut office, &venue, -60).await;
    for id in [&scheduled, &on_sale, &paused, &closed] {
        open(&mut office, id).await;
    }
    let request = office.office(pb::PauseSaleRequest {
        event_id: paused.clone(),
    });
    office.client.pause_sale(request).await.expect("pause");
    close(&mut office, &closed).await;
    let request = office.sre(pb::SetAdmissionRateRequest {
        event_id: on_sale.clone(),
        fans_per_minute: 90,
        active_fan_cap: None,
    });
    office
        .client
        .set_admission_rate(request)
        .await
        .expect("rate");

    // Every live event is sent again and again, in the state and at the rate the
    // database has.
    let live = [
        (&scheduled, wr::SaleState::Scheduled, 600),
        (&on_sale, wr::SaleState::Open, 90),
        (&paused, wr::SaleState::Paused, 600),
    ];
    tokio::time::timeout(PATIENCE, async {
        while live
            .iter()
            .any(|(id, _, _)| configures(&fake, id).len() < 5)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("resyncs arrive every interval");
    // A round in flight when the close committed sends the closed state after it (by
    // design); five rounds later nothing more comes for the closed sale.
    let closed_calls = configures(&fake, &closed).len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (id, state, rate) in live {
        let last = configures(&fake, id).pop().unwrap();
        assert_eq!(
            (last.state, last.fans_per_minute),
            (state as i32, rate),
            "event {id}"
        );
        assert_eq!(last.bearer, format!("Bearer {service_token}"));
    }
    assert!(
        configures(&fake, &draft).is_empty(),
        "a draft is never sent"
    );
    let after_close = configures(&fake, &closed);
    assert_eq!(
        after_close.len(),
        closed_calls,
        "a closed sale is not resent"
    );
    assert_eq!(
        after_close.last().map(|c| c.state),
        Some(wr::SaleState::Closed as i32)
    );

    // The resync stops with the service.
    office.stop().await;
    let sent = fake.calls().len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fake.calls().len(), sent, "nothing sent after shutdown");
    stop.cancel();
}

#[tokio::test]
async fn a_sale_change_made_while_a_resync_is_in_flight_is_sent_after_it() {
    let (mut office, fake, _, stop) = office_with_fake_and(0, "3", &[]).await;
    let venue = office.venue().await.venue_id;
    let id = event(&mut office, &venue, -60).await;
    open(&mut office, &id).await;
    assert_eq!(configures(&fake, &id).len(), 1);

    // A round's call leaves with the sale open; the sale closes (and its own push
    // lands) before that call lands.
    let held = fake.hold_next_configure();
    let resync = office
        .parts
        .resync
        .clone()
        .expect("a waiting room is configured");
    let round = tokio::spawn(async move { resync.round().await });
    tokio::time::timeout(PATIENCE, held.arrived)
        .await
        .expect("the resync call leaves")
        .expect("arrived");
    close(&mut office, &id).await;
    let _ = held.release.send(());
    let round = round.await.unwrap().expect("a round");
    assert_eq!(round.sent, [id.parse::<i64>().unwrap()]);
    assert!(round.failed.is_empty());

    let states: Vec<i32> = configures(&fake, &id).iter().map(|c| c.state).collect();
    assert_eq!(
        states,
        [
            wr::SaleState::Open as i32,
            wr::SaleState::Closed as i32,
            wr::SaleState::Open as i32,
            wr::SaleState::Closed as i32,
        ],
        "the late open is followed by the close"
    );
    office.stop().await;
    stop.cancel();
}

#[tokio::test]
async fn each_resync_carries_where_the_queue_last_stood_never_lower() {
    let (mut office, fake, _, stop) =
        office_with_fake_and(0, "3", &["--waiting-room-resync-ms", "50"]).await;
    let venue = office.venue().await.venue_id;
    let on_sale = event(&mut office, &venue, -60).await;
    fake.set_queue(1_200, 1_900);
    open(&mut office, &on_sale).await;
    let carried = |fake: &FakeWaitingRoom| fake.floors(&on_sale).last().copied();
    tokio::time::timeout(PATIENCE, async {
        while carried(&fake) != Some((1_200, 1_900)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the answer's counters come back as floors");
    assert_eq!(
        fake.floors(&on_sale).first(),
        Some(&(0, 0)),
        "nothing is known before the first answer"
    );

    // Redis lost the queue: the waiting room answers from zero again. The floors sent
    // stay where the queue stood, so the recreated queue starts there.
    fake.set_queue(3, 40);
    let seen = fake.floors(&on_sale).len();
    tokio::time::timeout(PATIENCE, async {
        while fake.floors(&on_sale).len() < seen + 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("more resyncs");
    assert!(
        fake.floors(&on_sale)[seen..]
            .iter()
            .all(|f| *f == (1_200, 1_900)),
        "{:?}",
        fake.floors(&on_sale)
    );
    office.stop().await;
    stop.cancel();
}

#[tokio::test]
async fn a_presale_opens_its_own_queue_and_becomes_the_sale_at_its_time() {
    let (mut office, fake, _, stop) =
        office_with_fake_and(0, "3", &["--waiting-room-resync-ms", "50"]).await;
    let venue = office.venue().await.venue_id;
    let id = event(&mut office, &venue, 2).await;
    let request = office.office(pb::StartPresaleRequest {
        event_id: id.clone(),
    });
    let started = office
        .client
        .start_presale(request)
        .await
        .expect("presale")
        .into_inner();
    assert_eq!(
        started.event.map(|e| e.status),
        Some(pb::EventStatus::Presale as i32)
    );
    // Fans meanwhile join the general on-sale's pre-queue; the presale's own queue
    // admits from the start.
    assert_eq!(
        configures(&fake, &id).first().map(|c| c.state),
        Some(wr::SaleState::Scheduled as i32)
    );
    let presale_queue = format!("{id}-presale");
    assert_eq!(
        configures(&fake, &presale_queue).first().map(|c| c.state),
        Some(wr::SaleState::Open as i32)
    );

    // The on-sale time passes: a resync round records the sale as open, on its own.
    let status = |office: &mut Office| {
        let request = office.office(pb::GetEventRequest {
            event_id: id.clone(),
        });
        let mut client = office.client.clone();
        async move {
            client
                .get_event(request)
                .await
                .expect("event")
                .into_inner()
                .event
                .map(|e| e.status)
        }
    };
    tokio::time::timeout(PATIENCE, async {
        while status(&mut office).await != Some(pb::EventStatus::OnSale as i32) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the presale ends at the on-sale time");
    tokio::time::timeout(PATIENCE, async {
        while configures(&fake, &id).last().map(|c| c.state) != Some(wr::SaleState::Open as i32) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the queue is sent open");
    tokio::time::timeout(PATIENCE, async {
        while configures(&fake, &presale_queue).last().map(|c| c.state)
            != Some(wr::SaleState::Closed as i32)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the presale queue is sent closed");
    let opened = office.audited("open_sale", &format!("event:{id}")).await;
    assert_eq!(opened, ["schedule"], "ended once, by the schedule");
    office.stop().await;
    stop.cancel();
}
