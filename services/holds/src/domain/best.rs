//! Best available, decided by the server: the event's layout (each section's seats in
//! rows, its best-view point, each seat's price category), the blocks that fit a
//! request ranked best first by the shared seating engine (`stadium-seating`: adjacent
//! in a row, no stranded single seat when avoidable, nearest the section's focus), and
//! what is still possible when none fits.
//!
//! Availability here is a hint (what this process last learned from the database); the
//! claim itself decides, and a refusal brings the fresh list back.

use std::collections::{BTreeMap, HashMap};

use stadium_seating::{Availability, Overlap, Preference, SectionLayout, rank};

use super::room::{Room, section_rooms};
use super::{EventId, RequestId, SeatId, SectionId};
use crate::error::Error;

/// What the fan asks best available for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Seats of this section.
    Section(SectionId),
    /// Seats of this price category, in any section that has it.
    Category(String),
}

/// A best-available request, validated at the edge but for the event's own limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BestRequest {
    /// The event.
    pub event: EventId,
    /// Where.
    pub target: Target,
    /// How many seats, at least 1.
    pub quantity: u32,
    /// Side by side in one row only; otherwise a block is still preferred, and the best
    /// single seats of one section are taken when no block fits.
    pub together: bool,
    /// The client's id for this claim: a retry with it finds the hold it made.
    pub request: Option<RequestId>,
    /// With a [`Target::Category`]: further category codes the fan also takes, in order
    /// of preference, each tried when those before it have no fitting block (at most
    /// [`MAX_ALSO_CATEGORIES`], none repeated, none the target's own).
    pub also_categories: Vec<String>,
}

/// Most further price categories one best-available request may list.
pub const MAX_ALSO_CATEGORIES: usize = 16;

impl BestRequest {
    /// The request as tried for each category it accepts, in order: itself alone for a
    /// section or a lone category; then one request per further category (same
    /// quantity, request id, everything), none with further categories of its own.
    pub fn each_category(&self) -> Vec<BestRequest> {
        let mut first = self.clone();
        first.also_categories = Vec::new();
        let rest = self.also_categories.iter().map(|code| BestRequest {
            target: Target::Category(code.clone()),
            ..first.clone()
        });
        std::iter::once(first.clone()).chain(rest).collect()
    }
}

/// What a fan can still get when no block fits, from fresh availability.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Possible {
    /// The largest number of adjacent seats still free in one row of the target (0:
    /// none), below the quantity asked for.
    pub fewer_seats: u32,
    /// Whether the quantity is still free in one section of the target, not side by
    /// side.
    pub not_together: bool,
}

/// One section laid out, with each seat's price category by offset.
#[derive(Debug, Clone)]
struct Section {
    layout: SectionLayout,
    categories: Vec<String>,
}

/// An event's sections as best available ranks them.
#[derive(Debug, Clone)]
pub struct EventLayout {
    max_seats_per_claim: u32,
    sections: BTreeMap<SectionId, Section>,
    /// Per price category code, the sections with a seat of it, ascending: looked up by
    /// every request naming a category (a scan of every seat's category would cost a
    /// request a pass over the whole venue, per category it takes).
    by_category: HashMap<String, Vec<SectionId>>,
}

/// A block to try: seats of one section, ascending (adjacent in a row, except the
/// scattered fallback of a request that is not `together`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Its section.
    pub section: SectionId,
    /// Its seats, ascending; every block of one call has the same number.
    pub seats: Vec<SeatId>,
}

/// Availability hints by section.
pub type Hints = HashMap<SectionId, Availability>;

impl EventLayout {
    /// An event whose claims take at most `max_seats_per_claim` seats, with its
    /// sections, each with its seats' price categories by offset.
    ///
    /// # Errors
    /// [`Error::CorruptRow`] for a section id out of range.
    pub fn new(
        max_seats_per_claim: u32,
        sections: Vec<(SectionLayout, Vec<String>)>,
    ) -> Result<Self, Error> {
        let mut out = BTreeMap::new();
        for (layout, categories) in sections {
            out.insert(layout_id(&layout)?, Section { layout, categories });
        }
        let mut by_category: HashMap<String, Vec<SectionId>> = HashMap::new();
        for (id, section) in &out {
            let mut codes: Vec<&String> = section.categories.iter().collect();
            codes.sort_unstable();
            codes.dedup();
            for code in codes {
                by_category.entry(code.clone()).or_default().push(*id);
            }
        }
        Ok(Self {
            max_seats_per_claim,
            sections: out,
            by_category,
        })
    }

    /// The event's `max_seats_per_claim`.
    pub fn max_seats_per_claim(&self) -> u32 {
        self.max_seats_per_claim
    }

    /// The sections `target` covers, ascending.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `section_id` (not a section of the event's venue)
    /// or `price_category` (no seat of the venue has it).
    pub fn sections_for(&self, target: &Target) -> Result<Vec<SectionId>, Error> {
        match target {
            Target::Section(id) if self.sections.contains_key(id) => Ok(vec![*id]),
            Target::Section(id) => Err(Error::invalid(
                "section_id",
                format!("section {id} is not a section of the event's venue"),
            )),
            Target::Category(code) => self.by_category.get(code).cloned().ok_or_else(|| {
                Error::invalid(
                    "price_category",
                    "no seat of the event's venue has this price category",
                )
            }),
        }
    }

    /// The availability of `section` per `unavailable` (ids of other sections ignored).
    pub fn availability(&self, section: SectionId, unavailable: &[i64]) -> Option<Availability> {
        let layout = &self.sections.get(&section)?.layout;
        let mut availability =
            Availability::all_available(layout.first_seat_id(), layout.seat_count()).ok()?;
        for &seat in unavailable {
            if let Ok(seat) = u64::try_from(seat)
                && layout.contains(seat)
            {
                let _ = availability.set(seat, false);
            }
        }
        Some(availability)
    }

    /// The availability of `section` (if it is the event's) where only `free` seats (any
    /// section's, ascending or not) are available: a channel's seats, for a fan with its
    /// code.
    pub fn only_available(&self, section: SectionId, free: &[i64]) -> Option<Availability> {
        let layout = &self.sections.get(&section)?.layout;
        let mut availability =
            Availability::none_available(layout.first_seat_id(), layout.seat_count()).ok()?;
        for &seat in free {
            if let Ok(seat) = u64::try_from(seat)
                && layout.contains(seat)
            {
                let _ = availability.set(seat, true);
            }
        }
        Some(availability)
    }

    /// The room of every section, over all its seats and per price category (see
    /// [`section_rooms`]), given the event's `unavailable` seats in ascending order (as
    /// `store::unavailable_seat_ids` reads them).
    pub fn rooms(&self, unavailable: &[i64]) -> Vec<Room> {
        self.sections
            .iter()
            .filter_map(|(id, section)| {
                let layout = &section.layout;
                let first = i64::try_from(layout.first_seat_id()).ok()?;
                let end = first + i64::from(layout.seat_count());
                let from = unavailable.partition_point(|&seat| seat < first);
                let to = unavailable.partition_point(|&seat| seat < end);
                let availability = self.availability(*id, &unavailable[from..to])?;
                Some(section_rooms(
                    *id,
                    layout,
                    &section.categories,
                    &availability,
                    self.max_seats_per_claim,
                ))
            })
            .flatten()
            .collect()
    }

    /// Per section of `sections`: its layout and its availability for `request` (the
    /// hint, else all free; seats of other categories unavailable for a category).
    fn candidates<'a>(
        &'a self,
        request: &BestRequest,
        sections: &[SectionId],
        hints: &Hints,
    ) -> Vec<(&'a SectionLayout, Availability)> {
        sections
            .iter()
            .filter_map(|id| {
                let section = self.sections.get(id)?;
                let layout = &section.layout;
                let mut availability = match hints.get(id) {
                    Some(hint) => hint.clone(),
                    None => {
                        Availability::all_available(layout.first_seat_id(), layout.seat_count())
                            .ok()?
                    }
                };
                if let Target::Category(code) = &request.target {
                    for (offset, category) in section.categories.iter().enumerate() {
                        if category != code {
                            let _ = availability.set(layout.first_seat_id() + offset as u64, false);
                        }
                    }
                }
                Some((layout, availability))
            })
            .collect()
    }

    /// Up to `limit` blocks for `request` over `sections`, best first: disjoint blocks
    /// first, then the overlapping windows (the order to try them in). When none is
    /// adjacent and the fan does not insist on `together`, the best `quantity` single
    /// seats of one section, as one block.
    pub fn blocks(
        &self,
        request: &BestRequest,
        sections: &[SectionId],
        hints: &Hints,
        limit: usize,
    ) -> Vec<Block> {
        let candidates = self.candidates(request, sections, hints);
        let refs: Vec<(&SectionLayout, &Availability)> =
            candidates.iter().map(|(l, a)| (*l, a)).collect();
        let ranked = rank(
            &refs,
            request.quantity,
            Preference::BestView,
            limit,
            Overlap::DisjointFirst,
        )
        .unwrap_or_default();
        let blocks: Vec<Block> = ranked.into_iter().filter_map(to_block).collect();
        if !blocks.is_empty() || request.together {
            return blocks;
        }
        self.scattered(&refs, request.quantity)
            .into_iter()
            .collect()
    }

    /// The best `quantity` single seats of the one section whose best seats score best.
    fn scattered(
        &self,
        sections: &[(&SectionLayout, &Availability)],
        quantity: u32,
    ) -> Option<Block> {
        let wanted = usize::try_from(quantity).ok()?;
        sections
            .iter()
            .filter_map(|section| {
                let singles = rank(
                    &[*section],
                    1,
                    Preference::BestView,
                    wanted,
                    Overlap::Disjoint,
                )
                .ok()?;
                if singles.len() < wanted {
                    return None;
                }
                let score: f64 = singles.iter().map(|s| s.score).sum();
                let mut seats: Vec<SeatId> = singles
                    .iter()
                    .flat_map(|s| s.seat_ids.iter())
                    .filter_map(|&id| SeatId::try_from(id).ok())
                    .collect();
                seats.sort_unstable();
                let section = SectionId::try_from(section.0.section_id()).ok()?;
                Some((score, Block { section, seats }))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, block)| block)
    }

    /// What is still possible for `request` over `sections` with fresh `hints`.
    pub fn possible(
        &self,
        request: &BestRequest,
        sections: &[SectionId],
        hints: &Hints,
    ) -> Possible {
        let candidates = self.candidates(request, sections, hints);
        let refs: Vec<(&SectionLayout, &Availability)> =
            candidates.iter().map(|(l, a)| (*l, a)).collect();
        let fewer_seats = (1..request.quantity)
            .rev()
            .find(|&n| {
                rank(&refs, n, Preference::BestView, 1, Overlap::Disjoint)
                    .is_ok_and(|r| !r.is_empty())
            })
            .unwrap_or(0);
        let not_together = refs
            .iter()
            .any(|(_, availability)| availability.available() >= request.quantity);
        Possible {
            fewer_seats,
            not_together,
        }
    }
}

fn layout_id(layout: &SectionLayout) -> Result<SectionId, Error> {
    SectionId::try_from(layout.section_id())
        .map_err(|_| Error::CorruptRow(format!("section id {}", layout.section_id())))
}

fn to_block(suggestion: stadium_seating::Suggestion) -> Option<Block> {
    Some(Block {
        section: SectionId::try_from(suggestion.section_id).ok()?,
        seats: suggestion
            .seat_ids
            .iter()
            .map(|&id| SeatId::try_from(id).ok())
            .collect::<Option<Vec<_>>>()?,
    })
}
