//! The seats.io sample chart through ImportVenue: the format told from the content, the
//! README's counts, and a broken copy refused with the JSON path.

use stadium_kit::Reason;
use stadium_proto::box_office::v1 as pb;
use stadium_testkit::venues::{SEATSIO_SAMPLE, seatsio_dir, seatsio_readme_counts};
use tonic::Code;

use crate::support::Office;

fn sample() -> Vec<u8> {
    std::fs::read(seatsio_dir().join(SEATSIO_SAMPLE)).unwrap()
}

#[tokio::test]
async fn a_seatsio_chart_imports_with_its_format_told_from_the_content() {
    let office = Office::start(&[]).await;
    let mut client = office.client.clone();
    let counts = seatsio_readme_counts();
    let imported = client
        .import_venue(office.office(pb::ImportVenueRequest {
            name: "Race Track".into(),
            format: pb::PlanFormat::Unspecified as i32,
            content: sample(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(imported.format, pb::PlanFormat::SeatsioJson as i32);
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let venue = imported.venue.unwrap();
    assert_eq!(
        (u64::from(venue.section_count), u64::from(venue.seat_count)),
        (counts.sections, counts.seats)
    );
    let rows: u64 = venue.sections.iter().map(|s| u64::from(s.row_count)).sum();
    assert_eq!(rows, counts.rows);
    let codes: Vec<&str> = venue.sections.iter().map(|s| s.code.as_str()).collect();
    assert_eq!(codes, ["Goal Stand 4", "Goal Stand 3", "MT1", "MT3"]);

    let before = office.counts().await;
    let broken = String::from_utf8(sample()).unwrap().replacen(
        r#""zone":"midtrack""#,
        r#""zone":"paddock""#,
        1,
    );
    let status = client
        .import_venue(office.office(pb::ImportVenueRequest {
            name: "Broken".into(),
            format: pb::PlanFormat::SeatsioJson as i32,
            content: broken.into_bytes(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(Reason::of(&status), Some(Reason::PlanInvalid));
    assert_eq!(
        stadium_testkit::grpc::metadata(&status, "path").as_deref(),
        Some("$.subChart.sections[2].zone")
    );
    assert_eq!(office.counts().await, before, "nothing stored");
    office.stop().await;
}
