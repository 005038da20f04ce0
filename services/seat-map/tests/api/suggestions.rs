//! Best-available suggestions over randomly held venues: every suggested seat is free,
//! in one row, adjacent, in the requested scope; an oversized quantity is refused; and
//! fans asking at once are offered different seats.

use stadium_kit::status::error_info;
use stadium_proto::seat_map::v1::SuggestSeatsRequest;
use stadium_proto::seat_map::v1::suggest_seats_request::Scope;

use crate::support::{Harness, SCREENSHOTS, STADIUM, is_free};

#[tokio::test]
async fn suggestions_are_available_and_contiguous_over_random_holds() {
    let h = Harness::start(60_000).await;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..4 {
        let event = h
            .event_on(if round % 2 == 0 { SCREENSHOTS } else { STADIUM })
            .await;
        let layout = h.layout(event).await;
        // Hold a random 30-70 % of every section.
        let share = 30 + next() % 41;
        for section in &layout.sections {
            for offset in 0..u64::from(section.seat_count) {
                if next() % 100 < share {
                    h.hold(
                        event,
                        section.section_id,
                        section.first_seat_id + offset,
                        10,
                    )
                    .await;
                }
            }
        }
        let all = h.availability(event, 0).await;
        let free = |seat: u64| {
            all.sections
                .iter()
                .find(|s| {
                    seat >= s.first_seat_id && seat < s.first_seat_id + u64::from(s.seat_count)
                })
                .is_some_and(|s| is_free(s, seat))
        };
        let row_of = |seat: u64| {
            layout
                .sections
                .iter()
                .flat_map(|s| s.rows.iter().map(move |r| (s.section_id, r)))
                .find(|(_, r)| r.seats.iter().any(|x| x.seat_id == seat))
                .map(|(section, r)| (section, r.clone()))
                .unwrap()
        };
        let scopes = [
            None,
            Some(Scope::SectionId(layout.sections[0].section_id)),
            Some(Scope::CategoryCode(layout.categories[0].code.clone())),
        ];
        for quantity in 1..=4 {
            for scope in &scopes {
                let answer = h
                    .client()
                    .suggest_seats(h.authed(SuggestSeatsRequest {
                        event_id: event.to_string(),
                        quantity,
                        scope: scope.clone(),
                        limit: 5,
                        ..Default::default()
                    }))
                    .await
                    .unwrap()
                    .into_inner();
                assert!(answer.as_of.is_some());
                for s in &answer.suggestions {
                    assert_eq!(s.seat_ids.len(), quantity as usize);
                    assert!(
                        s.seat_ids.iter().all(|id| free(*id)),
                        "suggested a taken seat: {s:?}"
                    );
                    let (section, row) = row_of(s.seat_ids[0]);
                    assert_eq!(
                        (section, row.label.as_str()),
                        (s.section_id, s.row_label.as_str())
                    );
                    let position: Vec<usize> = s
                        .seat_ids
                        .iter()
                        .map(|id| {
                            row.seats
                                .iter()
                                .position(|x| x.seat_id == *id)
                                .expect("same row")
                        })
                        .collect();
                    assert!(
                        position.windows(2).all(|w| w[1] == w[0] + 1),
                        "not adjacent: {s:?}"
                    );
                    if let Some(Scope::CategoryCode(code)) = scope {
                        assert!(s.seat_ids.iter().all(|id| {
                            row.seats
                                .iter()
                                .any(|x| x.seat_id == *id && &x.category_code == code)
                        }));
                    }
                }
            }
        }
    }
    let status = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: "1".into(),
            quantity: 9,
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(error_info(&status).unwrap().metadata["field"], "quantity");
}

/// Fans asking at once are offered different seats: within the staleness bound, each
/// answer passes over the seats answered before, until none is left in the scope;
/// then the seats are offered again rather than nothing.
#[tokio::test]
async fn fans_asking_at_once_are_offered_different_seats_until_none_is_left() {
    let h = Harness::start(60_000).await;
    let event = h.event_on(SCREENSHOTS).await;
    let layout = h.layout(event).await;
    let section = layout.sections.iter().min_by_key(|s| s.seat_count).unwrap();
    let ask = || async {
        h.client()
            .suggest_seats(h.authed(SuggestSeatsRequest {
                event_id: event.to_string(),
                quantity: 1,
                scope: Some(Scope::SectionId(section.section_id)),
                limit: 1,
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner()
            .suggestions
    };
    let mut offered = std::collections::BTreeSet::new();
    for _ in 0..section.seat_count {
        let answer = ask().await;
        assert_eq!(answer.len(), 1);
        let seat = answer[0].seat_ids[0];
        assert!(offered.insert(seat), "seat {seat} offered twice");
    }
    assert_eq!(offered.len(), section.seat_count as usize);
    let again = ask().await;
    assert_eq!(again.len(), 1, "every seat offered: offered again");
    assert!(offered.contains(&again[0].seat_ids[0]));
}
