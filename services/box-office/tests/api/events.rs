//! Events: creation with its audit, every refusal writing nothing, sale transitions as
//! conditional updates, prices and the admission rate.

use stadium_kit::Reason;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::common::v1::PageRequest;
use stadium_tokens::Role;
use tonic::{Code, Request};

use crate::support::{Office, bearer, create_request, eur, from_now, reason};

#[tokio::test]
async fn create_get_and_list_events_with_their_audit() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    assert_eq!(event.status, pb::EventStatus::Draft as i32);
    assert_eq!(event.venue_id, venue.venue_id);
    let settings = event.settings.clone().unwrap();
    assert_eq!(settings.currency, "EUR");
    assert_eq!(settings.admission_ttl_ms, 600_000);
    let mut codes: Vec<_> = event
        .price_categories
        .iter()
        .map(|c| c.code.as_str())
        .collect();
    codes.sort_unstable();
    assert_eq!(codes, ["BACK", "FRONT"]);

    let got = office
        .client
        .get_event(office.sre(pb::GetEventRequest {
            event_id: event.event_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .event
        .unwrap();
    assert_eq!(got, event);

    let second = office.event(&venue.venue_id).await;
    let page = office
        .client
        .list_events(office.sre(pb::ListEventsRequest {
            page: Some(PageRequest {
                page_size: 1,
                page_token: String::new(),
            }),
            venue_id: venue.venue_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(page.events.len(), 1);
    assert_eq!(page.events[0].event_id, event.event_id);
    let rest = office
        .client
        .list_events(office.sre(pb::ListEventsRequest {
            page: Some(PageRequest {
                page_size: 1,
                page_token: page.next_page_token,
            }),
            venue_id: String::new(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(rest.events[0].event_id, second.event_id);

    let audit = office.audit().await;
    let target = format!("event:{}", event.event_id);
    assert!(
        audit.contains(&("ann".into(), "create_event".into(), target)),
        "{audit:?}"
    );
    let after: serde_json::Value = sqlx::query_scalar(
        "SELECT after FROM catalog.admin_audit WHERE action = 'create_event' ORDER BY audit_id LIMIT 1",
    )
    .fetch_one(office.pool())
    .await
    .unwrap();
    assert_eq!(after["settings"]["name"], "Cup Final");
    office.stop().await;
}

#[tokio::test]
async fn no_token_and_wrong_roles_are_refused_and_write_nothing() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let before = office.counts().await;

    let status = office
        .client
        .create_event(Request::new(create_request(&venue.venue_id)))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).0, Code::Unauthenticated);
    assert_eq!(reason(&status).1, Some(Reason::TokenMissing));

    for roles in [&[Role::Sre][..], &[Role::Service][..]] {
        let token = office.token("mallory", roles);
        let status = office
            .client
            .create_event(bearer(create_request(&venue.venue_id), &token))
            .await
            .unwrap_err();
        assert_eq!(reason(&status).0, Code::PermissionDenied, "{roles:?}");
        assert_eq!(reason(&status).1, Some(Reason::RoleRequired));
    }

    let stranger = stadium_tokens::DevIssuer::generate().unwrap();
    let forged = stranger
        .admin("eve", &[Role::BoxOffice], std::time::SystemTime::now())
        .unwrap()
        .token;
    let status = office
        .client
        .create_event(bearer(create_request(&venue.venue_id), &forged))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::TokenInvalid));

    // Reads: a service token is not staff.
    let token = office.token("svc", &[Role::Service]);
    let status = office
        .client
        .list_venues(bearer(pb::ListVenuesRequest::default(), &token))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);

    assert_eq!(office.counts().await, before);
    office.stop().await;
}

#[tokio::test]
async fn each_bad_field_is_named_and_writes_nothing() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let before = office.counts().await;

    type Edit = fn(&mut pb::CreateEventRequest);
    let cases: [(&str, Edit); 12] = [
        ("venue_id", |r| r.venue_id = "abc".into()),
        ("settings.onsale_at", |r| {
            r.settings.as_mut().unwrap().onsale_at = from_now(30 * 86_400);
        }),
        ("settings.hold_ttl_ms", |r| {
            r.settings.as_mut().unwrap().hold_ttl_ms = 0
        }),
        ("settings.max_hold_lifetime_ms", |r| {
            r.settings.as_mut().unwrap().max_hold_lifetime_ms = 7_200_001
        }),
        ("settings.max_seats_per_fan", |r| {
            r.settings.as_mut().unwrap().max_seats_per_fan = 2;
        }),
        ("settings.admission_rate_per_min", |r| {
            r.settings.as_mut().unwrap().admission_rate_per_min = 0;
        }),
        ("settings.currency", |r| {
            r.settings.as_mut().unwrap().currency = "euro".into()
        }),
        ("settings.name", |r| {
            r.settings.as_mut().unwrap().name = String::new()
        }),
        ("price_categories[1].price.amount_minor", |r| {
            r.price_categories[1].price = eur(-1);
        }),
        ("price_categories[0].code", |r| {
            r.price_categories[0].code = "VIP".into()
        }),
        ("price_categories[1].price.currency", |r| {
            r.price_categories[1].price.as_mut().unwrap().currency = "usd".into();
        }),
        ("price_categories[1].code", |r| {
            r.price_categories[1].code = "FRONT".into()
        }),
    ];
    for (field, edit) in cases {
        let mut request = create_request(&venue.venue_id);
        edit(&mut request);
        let status = office
            .client
            .create_event(office.office(request))
            .await
            .unwrap_err();
        assert_eq!(
            reason(&status),
            (
                Code::InvalidArgument,
                Some(Reason::InvalidField),
                Some(field.to_owned())
            ),
            "{field}: {status:?}"
        );
    }
    let status = office
        .client
        .create_event(office.office(create_request("999999")))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::VenueNotFound));
    assert_eq!(office.counts().await, before);
    office.stop().await;
}

async fn transition(
    office: &mut Office,
    event_id: &str,
    which: &str,
) -> Result<pb::Event, tonic::Status> {
    let id = event_id.to_owned();
    let client = &mut office.client;
    let token = office
        .dev
        .admin("ann", &[Role::BoxOffice], std::time::SystemTime::now())
        .unwrap()
        .token;
    let answer = match which {
        "presale" => client
            .start_presale(bearer(pb::StartPresaleRequest { event_id: id }, &token))
            .await
            .map(|r| (r.get_ref().event.clone(), r.into_inner().waiting_room)),
        "open" => client
            .open_sale(bearer(pb::OpenSaleRequest { event_id: id }, &token))
            .await
            .map(|r| (r.get_ref().event.clone(), r.into_inner().waiting_room)),
        "pause" => client
            .pause_sale(bearer(pb::PauseSaleRequest { event_id: id }, &token))
            .await
            .map(|r| (r.get_ref().event.clone(), r.into_inner().waiting_room)),
        "resume" => client
            .resume_sale(bearer(pb::ResumeSaleRequest { event_id: id }, &token))
            .await
            .map(|r| (r.get_ref().event.clone(), r.into_inner().waiting_room)),
        _ => client
            .close_sale(bearer(pb::CloseSaleRequest { event_id: id }, &token))
            .await
            .map(|r| (r.get_ref().event.clone(), r.into_inner().waiting_room)),
    }?;
    let push = answer.1.expect("a push report");
    assert_eq!(
        push.outcome,
        pb::PushOutcome::Skipped as i32,
        "no waiting room configured"
    );
    Ok(answer.0.expect("an event"))
}

/// The audit actions on event `id`, oldest first.
async fn event_actions(office: &Office, id: &str) -> Vec<String> {
    office
        .audit()
        .await
        .into_iter()
        .filter(|(_, _, target)| *target == format!("event:{id}"))
        .map(|(_, action, _)| action)
        .collect()
}

#[tokio::test]
async fn sale_transitions_follow_the_state_machine_and_are_audited() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let id = event.event_id.clone();

    for which in ["pause", "resume"] {
        let before = office.counts().await;
        let status = transition(&mut office, &id, which).await.unwrap_err();
        assert_eq!(reason(&status).0, Code::FailedPrecondition);
        assert_eq!(reason(&status).1, Some(Reason::InvalidTransition));
        let info = stadium_kit::status::error_info(&status).unwrap();
        assert_eq!(info.metadata["from"], "draft");
        assert_eq!(office.counts().await, before, "{which} wrote nothing");
    }

    let steps = [
        ("open", pb::EventStatus::OnSale),
        ("pause", pb::EventStatus::Paused),
        ("resume", pb::EventStatus::OnSale),
        ("close", pb::EventStatus::Closed),
    ];
    for (which, expected) in steps {
        let event = transition(&mut office, &id, which).await.unwrap();
        assert_eq!(event.status, expected as i32, "{which}");
    }
    for which in ["open", "pause", "resume", "close"] {
        let status = transition(&mut office, &id, which).await.unwrap_err();
        assert_eq!(
            reason(&status).1,
            Some(Reason::InvalidTransition),
            "{which} after close"
        );
    }
    let actions = event_actions(&office, &id).await;
    assert_eq!(
        actions,
        [
            "create_event",
            "open_sale",
            "pause_sale",
            "resume_sale",
            "close_sale"
        ]
    );
    let (before, after): (serde_json::Value, serde_json::Value) =
        sqlx::query_as("SELECT before, after FROM catalog.admin_audit WHERE action = 'pause_sale'")
            .fetch_one(office.pool())
            .await
            .unwrap();
    assert_eq!(
        (before["status"].as_str(), after["status"].as_str()),
        (Some("on_sale"), Some("paused"))
    );

    let status = transition(&mut office, "424242", "open").await.unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::EventNotFound));
    office.stop().await;
}

#[tokio::test]
async fn a_presale_comes_before_the_sale_and_resumes_as_a_presale() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let id = office.event(&venue.venue_id).await.event_id;

    use pb::EventStatus::{OnSale, Paused, Presale, Unspecified};
    // (transition, status after it, what a pause paused)
    let steps = [
        ("presale", Presale, Unspecified),
        ("pause", Paused, Presale),
        ("resume", Presale, Unspecified),
        ("open", OnSale, Unspecified),
        ("pause", Paused, OnSale),
        ("resume", OnSale, Unspecified),
    ];
    for (which, expected, paused_from) in steps {
        let event = transition(&mut office, &id, which).await.unwrap();
        assert_eq!(event.status, expected as i32, "{which}");
        assert_eq!(event.paused_from, paused_from as i32, "{which}");
        assert!(event.presale_started_at.is_some(), "{which}");
    }
    // No presale once the sale has opened.
    let before = office.counts().await;
    let status = transition(&mut office, &id, "presale").await.unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::InvalidTransition));
    let info = stadium_kit::status::error_info(&status).unwrap();
    assert_eq!(
        (info.metadata["from"].as_str(), info.metadata["to"].as_str()),
        ("on_sale", "presale")
    );
    assert_eq!(office.counts().await, before);
    let actions = event_actions(&office, &id).await;
    assert_eq!(
        actions,
        [
            "create_event",
            "start_presale",
            "pause_sale",
            "resume_sale",
            "open_sale",
            "pause_sale",
            "resume_sale"
        ]
    );

    // A presale may be closed, and needs every seat priced as a sale does.
    let second = office.event(&venue.venue_id).await.event_id;
    transition(&mut office, &second, "presale").await.unwrap();
    let closed = transition(&mut office, &second, "close").await.unwrap();
    assert_eq!(closed.status, pb::EventStatus::Closed as i32);
    let mut request = create_request(&venue.venue_id);
    request.price_categories.truncate(1);
    let unpriced = office.create_event(request).await.event_id;
    assert_presale_refused(&mut office, unpriced, Reason::PricesMissing).await;

    // Nor once its on-sale time has come: the presale would end at once.
    let mut request = create_request(&venue.venue_id);
    if let Some(settings) = request.settings.as_mut() {
        settings.onsale_at = from_now(-5);
    }
    let late = office.create_event(request).await.event_id;
    assert_presale_refused(&mut office, late, Reason::OnsaleTimePassed).await;
    office.stop().await;
}

/// StartPresale of `event_id` is refused for `why` and writes nothing.
async fn assert_presale_refused(office: &mut Office, event_id: String, why: Reason) {
    let before = office.counts().await;
    let request = office.office(pb::StartPresaleRequest { event_id });
    let status = office.client.start_presale(request).await.unwrap_err();
    assert_eq!(reason(&status).1, Some(why));
    assert_eq!(office.counts().await, before);
}

/// Every box-office replica ends due presales: sixteen at once (and the service's own
/// loop) record the end of one presale once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_ending_a_presale_at_once_record_it_once() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let id = office.event(&venue.venue_id).await.event_id;
    transition(&mut office, &id, "presale").await.unwrap();
    sqlx::query(
        "UPDATE catalog.events SET onsale_at = now() - interval '1 second' \
         WHERE event_id = $1::bigint",
    )
    .bind(&id)
    .execute(office.pool())
    .await
    .unwrap();
    let service = office.parts.office.clone();
    let ended = stadium_testkit::all_at_once(16, |_| {
        let service = service.clone();
        async move { service.open_due_presales().await.unwrap() }
    })
    .await;
    assert!(ended.iter().map(Vec::len).sum::<usize>() <= 1, "{ended:?}");
    let status: String =
        sqlx::query_scalar("SELECT status FROM catalog.events WHERE event_id = $1::bigint")
            .bind(&id)
            .fetch_one(office.pool())
            .await
            .unwrap();
    assert_eq!(status, "on_sale");
    let opened = office.audited("open_sale", &format!("event:{id}")).await;
    assert_eq!(opened, ["schedule"], "ended once, by the schedule");
    office.stop().await;
}

#[tokio::test]
async fn prices_and_rate_change_with_audit_and_closed_events_keep_their_prices() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let id = event.event_id.clone();

    let updated = office
        .client
        .set_price_categories(office.office(pb::SetPriceCategoriesRequest {
            event_id: id.clone(),
            price_categories: vec![pb::PriceCategory {
                code: "FRONT".into(),
                name: String::new(),
                price: eur(7000),
            }],
        }))
        .await
        .unwrap()
        .into_inner()
        .event
        .unwrap();
    assert_eq!(updated.price_categories.len(), 1);
    assert_eq!(updated.price_categories[0].price, eur(7000));
    assert_eq!(updated.price_categories[0].name, "FRONT");

    // The rate is an operating control: an SRE may set it.
    let answer = office
        .client
        .set_admission_rate(office.sre(pb::SetAdmissionRateRequest {
            event_id: id.clone(),
            fans_per_minute: 1200,
            active_fan_cap: Some(300),
        }))
        .await
        .unwrap()
        .into_inner();
    let settings = answer.event.unwrap().settings.unwrap();
    assert_eq!(
        (settings.admission_rate_per_min, settings.active_fan_cap),
        (1200, 300)
    );
    assert_eq!(
        answer.waiting_room.unwrap().outcome,
        pb::PushOutcome::Skipped as i32
    );

    let before = office.counts().await;
    let status = office
        .client
        .set_admission_rate(office.sre(pb::SetAdmissionRateRequest {
            event_id: id.clone(),
            fans_per_minute: 0,
            active_fan_cap: None,
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).2.as_deref(), Some("fans_per_minute"));
    let status = office
        .client
        .set_admission_rate(office.sre(pb::SetAdmissionRateRequest {
            event_id: id.clone(),
            fans_per_minute: 60,
            active_fan_cap: Some(u32::MAX),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).2.as_deref(), Some("active_fan_cap"));
    let status = office
        .client
        .set_price_categories(office.sre(pb::SetPriceCategoriesRequest {
            event_id: id.clone(),
            price_categories: vec![],
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(office.counts().await, before);

    transition(&mut office, &id, "close").await.unwrap();
    let before = office.counts().await;
    let status = office
        .client
        .set_price_categories(office.office(pb::SetPriceCategoriesRequest {
            event_id: id.clone(),
            price_categories: vec![],
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::EventClosed));
    assert_eq!(office.counts().await, before);

    let actions: Vec<String> = office
        .audit()
        .await
        .into_iter()
        .map(|(_, a, _)| a)
        .collect();
    assert!(actions.contains(&"set_price_categories".to_owned()));
    assert!(actions.contains(&"set_admission_rate".to_owned()));
    let actor: String = sqlx::query_scalar(
        "SELECT actor FROM catalog.admin_audit WHERE action = 'set_admission_rate'",
    )
    .fetch_one(office.pool())
    .await
    .unwrap();
    assert_eq!(actor, "sam");
    office.stop().await;
}

#[tokio::test]
async fn concurrent_opens_of_one_event_succeed_exactly_once() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let mut client = office.client.clone();
            let request = office.office(pb::OpenSaleRequest {
                event_id: event.event_id.clone(),
            });
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                client.open_sale(request).await
            })
        })
        .collect();
    let mut opened = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => opened += 1,
            Err(status) => assert_eq!(reason(&status).1, Some(Reason::InvalidTransition)),
        }
    }
    assert_eq!(opened, 1);
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM catalog.admin_audit WHERE action = 'open_sale'")
            .fetch_one(office.pool())
            .await
            .unwrap();
    assert_eq!(audited, 1, "one change, one audit record");
    office.stop().await;
}

#[tokio::test]
async fn a_sale_never_runs_with_seats_that_have_no_price() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let mut request = create_request(&venue.venue_id);
    request.price_categories.truncate(1);
    let event = office.create_event(request).await;
    let id = event.event_id.clone();

    let before = office.counts().await;
    let status = office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::PricesMissing));
    let info = stadium_kit::status::error_info(&status).unwrap();
    assert_eq!(info.metadata["categories"], "BACK");
    assert_eq!(office.counts().await, before);

    let both = create_request(&venue.venue_id).price_categories;
    office
        .client
        .set_price_categories(office.office(pb::SetPriceCategoriesRequest {
            event_id: id.clone(),
            price_categories: both.clone(),
        }))
        .await
        .unwrap();
    office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: id.clone(),
        }))
        .await
        .unwrap();

    let before = office.counts().await;
    let status = office
        .client
        .set_price_categories(office.office(pb::SetPriceCategoriesRequest {
            event_id: id.clone(),
            price_categories: both[..1].to_vec(),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::PricesMissing));
    assert_eq!(office.counts().await, before, "the old prices stay");
    office.stop().await;
}

/// The absolute hold lifetime holds' ExtendHold caps at: stored as set, and 30 min (or
/// the TTL when longer) where it is left at 0.
#[tokio::test]
async fn an_event_sets_how_far_fans_may_extend_a_hold() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let mut request = create_request(&venue.venue_id);
    request.settings.as_mut().unwrap().max_hold_lifetime_ms = 900_000;
    let set = office.create_event(request).await;
    assert_eq!(set.settings.unwrap().max_hold_lifetime_ms, 900_000);
    let default = office.event(&venue.venue_id).await;
    assert_eq!(default.settings.unwrap().max_hold_lifetime_ms, 0);
    let effective: Vec<i32> = sqlx::query_scalar(
        "SELECT max_hold_lifetime_ms FROM catalog.event_settings \
         WHERE event_id = ANY($1) ORDER BY event_id",
    )
    .bind(vec![
        set.event_id.parse::<i64>().unwrap(),
        default.event_id.parse::<i64>().unwrap(),
    ])
    .fetch_all(&office.db.pool)
    .await
    .unwrap();
    assert_eq!(effective, vec![900_000, 1_800_000]);
}
