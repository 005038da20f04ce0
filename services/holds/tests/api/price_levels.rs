//! Best available over several price categories (`also_price_categories`): a category
//! without a fitting block passes to the next in the same call, truly parallel fans fill
//! every category listed before any is refused, a queued claim is served by a return in
//! any of its categories, and bad lists write nothing.

use stadium_kit::Reason;
use stadium_kit::status::error_info;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{ClaimBestAvailableRequest, ClaimBestAvailableResponse};
use stadium_testkit::{all_at_once, catalog};
use tonic::{Code, Status};

use crate::support::{EventSettings, Fan, TestApp, assert_invariants, bearer, reason, snapshot};

/// Best available for 2 adjacent seats of `first`, then of `also` in order.
async fn ask(
    fan: &mut Fan,
    first: &str,
    also: &[&str],
    request_id: &str,
    wait_for_returns: bool,
) -> Result<ClaimBestAvailableResponse, Status> {
    let request = ClaimBestAvailableRequest {
        admission_token: fan.admission.clone(),
        event_id: fan.event.clone(),
        target: Some(Target::PriceCategory(first.to_owned())),
        quantity: 2,
        together: true,
        request_id: request_id.to_owned(),
        wait_for_returns,
        also_price_categories: also.iter().map(|c| (*c).to_owned()).collect(),
        presale_code: String::new(),
    };
    fan.client
        .claim_best_available(bearer(request, &fan.session))
        .await
        .map(tonic::Response::into_inner)
}

/// Sections `U0`, `U1` of category `upper` and `L0`, `L1` of category `lower`, each two
/// rows of four seats (four adjacent pairs); their ids, upper first.
async fn two_levels(app: &TestApp) -> (Vec<u64>, Vec<u64>) {
    let mut upper = Vec::new();
    let mut lower = Vec::new();
    for i in 0..2 {
        upper.push(
            catalog::section(app.pool(), app.venue, &format!("U{i}"), 10 + i, 2, 4)
                .await
                .id,
        );
        lower.push(
            catalog::section(app.pool(), app.venue, &format!("L{i}"), 20 + i, 2, 4)
                .await
                .id,
        );
    }
    for (code, sections) in [("upper", &upper), ("lower", &lower)] {
        sqlx::query("UPDATE catalog.seats SET category_code = $1 WHERE section_id = ANY($2)")
            .bind(code)
            .bind(sections.iter().map(|s| *s as i64).collect::<Vec<_>>())
            .execute(app.pool())
            .await
            .unwrap();
    }
    (upper, lower)
}

/// Blocks every seat of the app's own sections (neither category), so no section of the
/// event has room but those of the two levels.
async fn block_other_sections(app: &TestApp, event: &str) {
    for section in &app.sections {
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
                 status, kind, expires_at) \
             SELECT gen_random_uuid(), $1::bigint, $2, s, 'box-office', 'blocked', 'block', \
                    'infinity' \
             FROM unnest($3::bigint[]) AS s",
        )
        .bind(event)
        .bind(section.id as i64)
        .bind(section.seats.iter().map(|s| *s as i64).collect::<Vec<_>>())
        .execute(app.pool())
        .await
        .unwrap();
    }
}

/// Live held seats of `event` in `sections`.
async fn held_in(app: &TestApp, event: &str, sections: &[u64]) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds \
         WHERE event_id = $1::bigint AND section_id = ANY($2) AND status = 'held'",
    )
    .bind(event)
    .bind(sections.iter().map(|s| *s as i64).collect::<Vec<_>>())
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// 40 fans ask at once for 2 seats of `upper`, also taking `lower` (8 pairs each): the
/// 16 pairs are all held, adjacent, each in one of the two categories, and the 24 other
/// fans are answered `SEAT_TAKEN` naming no section of either category.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_fans_fill_every_category_they_take() {
    let app = TestApp::start().await;
    let (upper, lower) = two_levels(&app).await;
    let event = app.event(EventSettings::default()).await;
    let fans: Vec<Fan> = (0..40)
        .map(|i| app.fan(&format!("fan-{i}"), &event))
        .collect();
    let fans = std::sync::Arc::new(std::sync::Mutex::new(
        fans.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    let answers = all_at_once(40, move |i| {
        let mut fan = fans.lock().unwrap()[i].take().expect("one task per fan");
        async move { ask(&mut fan, "upper", &["lower"], "", false).await }
    })
    .await;

    let mut held = 0;
    for answer in &answers {
        match answer {
            Ok(answer) => {
                let hold = answer.hold.as_ref().expect("a hold");
                assert!(
                    upper.contains(&hold.section_id) || lower.contains(&hold.section_id),
                    "{hold:?}"
                );
                assert_eq!(hold.seat_ids.len(), 2);
                assert_eq!(hold.seat_ids[1], hold.seat_ids[0] + 1, "{hold:?}");
                held += 1;
            }
            Err(status) => {
                assert_eq!(
                    reason(status, Code::AlreadyExists),
                    Reason::SeatTaken,
                    "{status:?}"
                );
                let named = stadium_testkit::grpc::seat_list(status, "other_section_ids");
                assert!(
                    named
                        .iter()
                        .all(|s| !upper.contains(s) && !lower.contains(s)),
                    "{status:?}"
                );
            }
        }
    }
    assert_eq!(held, 16);
    assert_eq!(held_in(&app, &event, &upper).await, 16);
    assert_eq!(held_in(&app, &event, &lower).await, 16);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// With `upper` full and `lower` held to the last seat, a fan taking both waits in the
/// returns queue with its whole list: a `lower` hold that lapses serves it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_claim_is_served_by_a_return_in_a_further_category() {
    let app = TestApp::start().await;
    let (upper, lower) = two_levels(&app).await;
    let event = app.event(EventSettings::default()).await;
    block_other_sections(&app, &event).await;
    let mut holders = Vec::new();
    for i in 0..16 {
        let mut fan = app.fan(&format!("holder-{i}"), &event);
        let answer = ask(&mut fan, "upper", &["lower"], "", false).await.unwrap();
        holders.push(answer.hold.expect("a hold"));
    }
    let mut waiter = app.fan("waiter", &event);
    let queued = ask(&mut waiter, "upper", &["lower"], "wait-1", true)
        .await
        .unwrap();
    assert_eq!(queued.waiting.expect("in line").position, 1);
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT unnest(also_price_categories) FROM holds.return_queue WHERE fan_id = 'waiter'",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(stored, vec!["lower".to_owned()]);

    let in_lower = holders
        .iter()
        .find(|h| lower.contains(&h.section_id))
        .expect("a lower hold");
    sqlx::query(
        "UPDATE holds.seat_holds SET expires_at = now() - interval '1 second' \
         WHERE hold_key = $1::uuid",
    )
    .bind(&in_lower.hold_key)
    .execute(app.pool())
    .await
    .unwrap();
    // Serving passes over a claim whose categories had no room a second ago.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!(pass.served, 1, "{pass:?}");
    let served = ask(&mut waiter, "upper", &["lower"], "wait-1", true)
        .await
        .unwrap()
        .hold
        .expect("the served hold");
    assert_eq!(served.section_id, in_lower.section_id);
    assert_eq!(served.seat_ids, in_lower.seat_ids);
    assert_eq!(held_in(&app, &event, &upper).await, 16);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_category_lists_name_the_field_and_write_nothing() {
    let app = TestApp::start().await;
    two_levels(&app).await;
    let event = app.event(EventSettings::default()).await;
    let mut fan = app.fan("fan-1", &event);
    let before = snapshot(app.pool()).await;
    let seventeen: Vec<String> = (0..17).map(|i| format!("c{i}")).collect();
    let cases: Vec<(Target, Vec<String>, &str)> = vec![
        (
            Target::SectionId(app.sections[0].id),
            vec!["lower".into()],
            "also_price_categories",
        ),
        (
            Target::PriceCategory("upper".into()),
            vec!["nope".into()],
            "also_price_categories",
        ),
        (
            Target::PriceCategory("upper".into()),
            vec!["lower".into(), " ".into()],
            "also_price_categories[1]",
        ),
        (
            Target::PriceCategory("upper".into()),
            seventeen,
            "also_price_categories",
        ),
    ];
    for (target, also, field) in cases {
        let request = ClaimBestAvailableRequest {
            admission_token: fan.admission.clone(),
            event_id: event.clone(),
            target: Some(target),
            quantity: 2,
            together: true,
            request_id: String::new(),
            wait_for_returns: false,
            also_price_categories: also,
            presale_code: String::new(),
        };
        let status = fan
            .client
            .claim_best_available(bearer(request, &fan.session))
            .await
            .unwrap_err();
        assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
        assert_eq!(error_info(&status).unwrap().metadata["field"], field);
    }
    assert_eq!(snapshot(app.pool()).await, before);
    // The same code listed twice, or as the target's own, counts once.
    let held = ask(&mut fan, "upper", &["upper", "lower", "lower"], "", false)
        .await
        .unwrap();
    assert!(held.hold.is_some());
    assert_invariants(app.pool()).await;
    app.stop().await;
}
