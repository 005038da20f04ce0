//! Venues: import through the venue library, idempotent re-import, refusals naming the
//! place, list and show with counts.

use stadium_kit::Reason;
use stadium_proto::box_office::v1 as pb;
use tonic::Code;

use crate::support::{Office, VENUE_CSV, create_request, reason};

#[tokio::test]
async fn import_list_and_show_a_venue() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    assert_eq!((venue.section_count, venue.seat_count), (2, 10));
    let a = &venue.sections[0];
    assert_eq!((a.code.as_str(), a.row_count, a.seat_count), ("A", 2, 6));
    assert_eq!(a.seats_by_category["FRONT"], 6);
    assert_eq!(venue.sections[1].seats_by_category["BACK"], 4);
    assert_eq!(venue.source_digest.len(), 64);

    let again = office
        .client
        .import_venue(office.office(pb::ImportVenueRequest {
            name: "Test Arena".into(),
            format: pb::PlanFormat::CsvManifest as i32,
            content: VENUE_CSV.as_bytes().to_vec(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(again.already_imported);
    assert_eq!(again.venue.unwrap().venue_id, venue.venue_id);
    let imports = office
        .audit()
        .await
        .into_iter()
        .filter(|(_, action, _)| action == "import_venue")
        .count();
    assert_eq!(
        imports, 1,
        "a repeated import changes nothing and records nothing"
    );

    let listed = office
        .client
        .list_venues(office.sre(pb::ListVenuesRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.venues.len(), 1);
    assert_eq!(listed.venues[0].seat_count, 10);
    assert!(listed.next_page_token.is_empty());

    let shown = office
        .client
        .get_venue(office.sre(pb::GetVenueRequest {
            venue_id: venue.venue_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .venue
        .unwrap();
    assert_eq!(shown, venue);

    let status = office
        .client
        .get_venue(office.sre(pb::GetVenueRequest {
            venue_id: "77".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::VenueNotFound));
    office.stop().await;
}

#[tokio::test]
async fn bad_plans_are_refused_with_their_place_and_store_nothing() {
    let office = Office::start(&[]).await;
    let before = office.counts().await;
    let mut client = office.client.clone();

    let status = client
        .import_venue(office.office(pb::ImportVenueRequest {
            name: "Broken".into(),
            format: pb::PlanFormat::CsvManifest as i32,
            content: b"section,row,seat,category\nA,1,1\n".to_vec(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let info = stadium_kit::status::error_info(&status).unwrap();
    assert_eq!(Reason::of(&status), Some(Reason::PlanInvalid));
    assert!(info.metadata["path"].contains('2'), "{:?}", info.metadata);

    for (request, field) in [
        (
            pb::ImportVenueRequest {
                name: "X".into(),
                format: 99,
                content: VENUE_CSV.as_bytes().to_vec(),
            },
            "format",
        ),
        (
            pb::ImportVenueRequest {
                name: " ".into(),
                format: pb::PlanFormat::CsvManifest as i32,
                content: VENUE_CSV.as_bytes().to_vec(),
            },
            "name",
        ),
        (
            pb::ImportVenueRequest {
                name: "X".into(),
                format: pb::PlanFormat::PretixJson as i32,
                content: Vec::new(),
            },
            "content",
        ),
    ] {
        let status = client
            .import_venue(office.office(request))
            .await
            .unwrap_err();
        assert_eq!(reason(&status).2.as_deref(), Some(field));
    }

    let status = client
        .import_venue(office.sre(pb::ImportVenueRequest {
            name: "Arena".into(),
            format: pb::PlanFormat::CsvManifest as i32,
            content: VENUE_CSV.as_bytes().to_vec(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(office.counts().await, before);
    office.stop().await;
}

#[tokio::test]
async fn sizes_are_checked_after_the_caller_and_errors_stay_small() {
    let office = Office::start(&[]).await;
    let mut client = office.client.clone();

    // A stranger's import past the import cap: refused for who it is, not for its size
    // (the gate answers before the body is read).
    let huge = pb::ImportVenueRequest {
        name: "Huge".into(),
        format: pb::PlanFormat::CsvManifest as i32,
        content: vec![b'x'; box_office::MAX_IMPORT_BYTES + 1024],
    };
    let status = client.import_venue(huge).await.unwrap_err();
    assert_eq!(
        (status.code(), Reason::of(&status)),
        (Code::Unauthenticated, Some(Reason::TokenMissing)),
        "{}",
        status.message()
    );

    // Staff past the cap of an ordinary call: RESOURCE_EXHAUSTED, with the cap.
    let mut large = create_request("1");
    large.venue_id = "n".repeat(box_office::MAX_CALL_BYTES + 1);
    let status = client.create_event(office.office(large)).await.unwrap_err();
    assert_eq!(
        (status.code(), Reason::of(&status)),
        (Code::ResourceExhausted, Some(Reason::RequestTooLarge))
    );
    assert_eq!(
        stadium_testkit::grpc::metadata(&status, "limit_bytes"),
        Some(box_office::MAX_CALL_BYTES.to_string())
    );

    // A 2.4 MB header line quoted back: the details stay small enough to read.
    let header = format!("{}\n", "h".repeat(2_400_000));
    let status = client
        .import_venue(office.office(pb::ImportVenueRequest {
            name: "Wide".into(),
            format: pb::PlanFormat::CsvManifest as i32,
            content: header.into_bytes(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.details().len() < 8 * 1024,
        "{}",
        status.details().len()
    );
    assert!(status.message().len() <= stadium_kit::status::MAX_MESSAGE_BYTES);
    office.stop().await;
}
