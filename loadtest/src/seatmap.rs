//! The fans' shared view of the seat map: the layout read once (sections ranked best
//! first) and one availability snapshot per refresh interval, loaded by one fan at a
//! time, so 50,000 fans cost the seat map one `GetAvailability` per interval.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::Rng;
use stadium_proto::seat_map::v1::{GetAvailabilityRequest, Layout, Point};

use crate::credentials::authed;
use crate::fan::Ctx;
use crate::levels::SectionSeats;
use crate::skew::{Candidate, rank_sections};

/// Fan id of the session that reads the shared snapshot.
const OBSERVER: &str = "loadtest-observer";

#[derive(Debug, Clone)]
struct SectionInfo {
    id: u64,
    rank: u32,
    seat_count: u32,
    /// Its seats by row with their price levels.
    seats: SectionSeats,
    /// Seat positions per row, front row first (empty when the layout has none).
    rows: Vec<Vec<Point>>,
}

/// The row a fan aims at among `rows` (front first) for a uniform `roll` in 0..1:
/// squaring the roll favours the front (half the fans aim at the front quarter).
pub(crate) fn front_biased_row(rows: usize, roll: f64) -> usize {
    ((rows as f64 * roll.clamp(0.0, 1.0) * roll.clamp(0.0, 1.0)) as usize)
        .min(rows.saturating_sub(1))
}

#[derive(Debug)]
struct Snapshot {
    read_at: Option<Instant>,
    /// The server's availability is at least as new as this (its last successful read
    /// less the staleness bound it answered with); `None` before any.
    data_from: Option<Instant>,
    /// Whether [`SeatMap::mark_short`] lowered a count since that read.
    marked: bool,
    available: Arc<Vec<u32>>,
    /// Per section (layout order), the longest free run in a row per price level.
    runs: Arc<Vec<Vec<u32>>>,
}

/// Layout and cached availability of one event.
#[derive(Debug)]
pub(crate) struct SeatMap {
    sections: Vec<SectionInfo>,
    /// Category codes, best first (the layout's order): index = price level.
    levels: Vec<String>,
    index: HashMap<u64, usize>,
    snapshot: Mutex<Snapshot>,
    loading: tokio::sync::Mutex<()>,
    refresh: Duration,
}

impl SeatMap {
    /// The sections of `layout`, ranked by their best category (in the layout's
    /// category order) then by layout order; every seat assumed free until the first
    /// snapshot.
    pub fn from_layout(layout: &Layout, refresh: Duration) -> Self {
        let category_rank: HashMap<&str, usize> = layout
            .categories
            .iter()
            .enumerate()
            .map(|(i, c)| (c.code.as_str(), i))
            .collect();
        let best: Vec<Option<usize>> = layout
            .sections
            .iter()
            .map(|s| {
                s.rows
                    .iter()
                    .flat_map(|r| &r.seats)
                    .filter_map(|seat| category_rank.get(seat.category_code.as_str()).copied())
                    .min()
            })
            .collect();
        let ranks = rank_sections(&best);
        let sections: Vec<SectionInfo> = layout
            .sections
            .iter()
            .zip(ranks)
            .map(|(s, rank)| SectionInfo {
                id: s.section_id,
                rank,
                seat_count: s.seat_count,
                seats: SectionSeats::new(s, &category_rank),
                rows: s
                    .rows
                    .iter()
                    .map(|r| r.seats.iter().filter_map(|seat| seat.position).collect())
                    .filter(|r: &Vec<Point>| !r.is_empty())
                    .collect(),
            })
            .collect();
        let index = sections
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id, i))
            .collect();
        let available = Arc::new(sections.iter().map(|s| s.seat_count).collect());
        let levels: Vec<String> = layout.categories.iter().map(|c| c.code.clone()).collect();
        let runs = Arc::new(
            sections
                .iter()
                .map(|s| s.seats.runs(None, levels.len()))
                .collect(),
        );
        SeatMap {
            sections,
            levels,
            index,
            snapshot: Mutex::new(Snapshot {
                read_at: None,
                data_from: None,
                marked: false,
                available,
                runs,
            }),
            loading: tokio::sync::Mutex::new(()),
            refresh,
        }
    }

    /// Seats in the layout.
    pub fn seat_count(&self) -> u64 {
        self.sections.iter().map(|s| u64::from(s.seat_count)).sum()
    }

    fn current(&self) -> (Option<Instant>, Arc<Vec<u32>>) {
        let snap = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        (snap.read_at, Arc::clone(&snap.available))
    }

    fn fresh(&self, read_at: Option<Instant>) -> bool {
        read_at.is_some_and(|t| t.elapsed() < self.refresh)
    }

    /// Free seats per section (in layout order), at most one refresh interval old.
    /// A failed read keeps the previous snapshot (and is counted in the report).
    pub async fn available(&self, ctx: &Ctx) -> Arc<Vec<u32>> {
        let (read_at, available) = self.current();
        if self.fresh(read_at) {
            return available;
        }
        let _loading = self.loading.lock().await;
        let (read_at, available) = self.current();
        if self.fresh(read_at) {
            return available;
        }
        let token = match ctx.creds.fan_token(OBSERVER) {
            Ok(t) => t,
            Err(_) => return available,
        };
        let request = GetAvailabilityRequest {
            event_id: ctx.event.event_id.clone(),
            section_id: 0,
        };
        let mut client = ctx.clients.seat_map.clone();
        let fetched = ctx
            .call(
                "SeatMap/GetAvailability",
                client.get_availability(authed(request, &token)),
            )
            .await;
        let mut snap = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        snap.read_at = Some(Instant::now());
        if let Ok(response) = fetched {
            snap.data_from =
                Instant::now().checked_sub(Duration::from_millis(response.staleness_bound_ms));
            snap.marked = false;
            let mut counts: Vec<u32> = snap.available.as_ref().clone();
            let mut runs: Vec<Vec<u32>> = snap.runs.as_ref().clone();
            for s in response.sections {
                if let Some(&i) = self.index.get(&s.section_id) {
                    counts[i] = s.available;
                    runs[i] = self.sections[i]
                        .seats
                        .runs(Some(&s.available_bitmap), self.levels.len());
                }
            }
            snap.available = Arc::new(counts);
            snap.runs = Arc::new(runs);
        }
        Arc::clone(&snap.available)
    }

    /// Records that `section_id` has fewer than `below` free seats (a suggestion came
    /// back empty), until the next snapshot says otherwise.
    pub fn mark_short(&self, section_id: u64, below: u32) {
        let Some(&i) = self.index.get(&section_id) else {
            return;
        };
        let mut snap = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        if snap.available[i] >= below {
            Arc::make_mut(&mut snap.available)[i] = below.saturating_sub(1);
            snap.marked = true;
        }
    }

    /// Whether the server's own availability, newer than `after` (any, for `None`),
    /// shows no free seat: seats that came back at `after` (a lapsed hold) must be
    /// seen free or taken again before a fan calls the event sold out.
    pub fn shows_none_free_after(&self, after: Option<Instant>) -> bool {
        let snap = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        let newer = match (snap.data_from, after) {
            (Some(from), Some(after)) => from > after,
            (Some(_), None) => true,
            (None, _) => false,
        };
        newer && !snap.marked && snap.available.iter().all(|a| *a == 0)
    }

    /// The best price level (category code) of `section_id` that shows `quantity` free
    /// seats side by side in a row on the latest snapshot; `None` when none does.
    pub fn best_level(&self, section_id: u64, quantity: u32) -> Option<&str> {
        let i = *self.index.get(&section_id)?;
        let runs = Arc::clone(
            &self
                .snapshot
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .runs,
        );
        let level = runs[i].iter().position(|run| *run >= quantity)?;
        self.levels.get(level).map(String::as_str)
    }

    /// The price levels a fan whose first choice is `first` also takes, in the order it
    /// prefers them: the cheaper ones (after `first` in the layout's order), then, when
    /// it takes `any` level, the dearer ones, nearest first. Empty for an unknown code.
    pub fn other_levels(&self, first: &str, any: bool) -> Vec<String> {
        let Some(at) = self.levels.iter().position(|code| code == first) else {
            return Vec::new();
        };
        let cheaper = self.levels[at + 1..].iter();
        let dearer = self.levels[..at].iter().rev().filter(|_| any);
        cheaper.chain(dearer).cloned().collect()
    }

    /// Where a fan would like to sit in `section_id`: a seat's position, front rows
    /// favoured, so fans spread over the section instead of all asking for the same
    /// best seats. `None` when the layout gives no positions.
    pub fn preferred_point<R: Rng + ?Sized>(&self, section_id: u64, rng: &mut R) -> Option<Point> {
        let section = &self.sections[*self.index.get(&section_id)?];
        let row = section
            .rows
            .get(front_biased_row(section.rows.len(), rng.r#gen::<f64>()))?;
        row.get(rng.gen_range(0..row.len())).copied()
    }

    /// The sections as candidates for [`crate::pick_section`].
    pub fn candidates(&self, available: &[u32]) -> Vec<Candidate> {
        self.sections
            .iter()
            .zip(available)
            .map(|(s, &available)| Candidate {
                section_id: s.id,
                rank: s.rank,
                available,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use stadium_proto::seat_map::v1::{Category, Row, Seat, Section};

    use super::*;

    #[test]
    fn aims_favour_the_front_rows() {
        assert_eq!(front_biased_row(10, 0.0), 0);
        assert_eq!(front_biased_row(10, 0.5), 2);
        assert_eq!(front_biased_row(10, 1.0), 9);
        assert_eq!(front_biased_row(0, 0.7), 0);
        let front = (0..1_000)
            .filter(|i| front_biased_row(20, f64::from(*i) / 1_000.0) < 5)
            .count();
        assert_eq!(front, 500);
    }

    fn section(id: u64, category: &str, seats: u32) -> Section {
        Section {
            section_id: id,
            seat_count: seats,
            rows: vec![Row {
                label: "1".into(),
                seats: (0..seats)
                    .map(|i| Seat {
                        seat_id: id * 100 + u64::from(i),
                        category_code: category.into(),
                        position: Some(Point {
                            x: f64::from(i),
                            y: 0.0,
                        }),
                        ..Seat::default()
                    })
                    .collect(),
            }],
            ..Section::default()
        }
    }

    #[test]
    fn the_sell_out_is_called_only_on_data_newer_than_the_last_return() {
        let layout = Layout {
            sections: vec![section(1, "A", 2)],
            categories: vec![Category {
                code: "A".into(),
                ..Category::default()
            }],
            ..Layout::default()
        };
        let map = SeatMap::from_layout(&layout, Duration::from_secs(1));
        // Never read from the server: no call, whatever the counts.
        assert!(!map.shows_none_free_after(None));
        let read = Instant::now();
        {
            let mut snap = map.snapshot.lock().unwrap();
            snap.data_from = Some(read);
            snap.available = Arc::new(vec![0]);
        }
        assert!(map.shows_none_free_after(None));
        assert!(map.shows_none_free_after(read.checked_sub(Duration::from_millis(1))));
        assert!(!map.shows_none_free_after(Some(read + Duration::from_millis(1))));
        map.snapshot.lock().unwrap().available = Arc::new(vec![1]);
        assert!(!map.shows_none_free_after(None));
        map.snapshot.lock().unwrap().available = Arc::new(vec![2]);
        map.mark_short(1, 1);
        assert!(
            !map.shows_none_free_after(None),
            "a local mark is no server data"
        );
    }

    #[test]
    fn sections_rank_by_category_then_order() {
        let layout = Layout {
            sections: vec![section(1, "B", 3), section(2, "A", 2), section(3, "B", 4)],
            categories: vec![
                Category {
                    code: "A".into(),
                    ..Category::default()
                },
                Category {
                    code: "B".into(),
                    ..Category::default()
                },
            ],
            ..Layout::default()
        };
        let map = SeatMap::from_layout(&layout, Duration::from_secs(1));
        assert_eq!(map.seat_count(), 9);
        let (_, available) = map.current();
        let c = map.candidates(&available);
        assert_eq!(
            c.iter().map(|c| (c.section_id, c.rank)).collect::<Vec<_>>(),
            vec![(1, 1), (2, 0), (3, 2)]
        );
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let p = map.preferred_point(2, &mut rng).unwrap();
        assert!(p.x < 2.0 && p.y == 0.0);
        assert!(map.preferred_point(99, &mut rng).is_none());
        map.mark_short(3, 2);
        let (_, available) = map.current();
        assert_eq!(available.as_ref(), &vec![3, 2, 1]);
        assert_eq!(map.best_level(2, 2), Some("A"));
        assert_eq!(map.best_level(2, 3), None);
        assert_eq!(map.best_level(99, 1), None);
        assert_eq!(map.other_levels("A", false), vec!["B".to_owned()]);
        assert_eq!(map.other_levels("B", false), Vec::<String>::new());
        assert_eq!(map.other_levels("B", true), vec!["A".to_owned()]);
        assert!(map.other_levels("Z", true).is_empty());
    }
}
