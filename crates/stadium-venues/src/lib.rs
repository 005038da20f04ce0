//! Venue import for the box office and the CLI: turns a seating plan into sections,
//! rows and seats in the `catalog` schema.
//!
//! Sources:
//! - pretix seating-plan JSON ([`parse_pretix`]): zones → rows → seats, positions
//!   relative to their row and zone, categories by name with a colour.
//! - seats.io chart JSON ([`parse_seatsio`]): categories, zones, sections → rows →
//!   seats, positions relative to their section, accessible seats; what becomes of each
//!   chart element is documented at the top of `src/seatsio.rs`.
//! - CSV manifest ([`parse_csv`]): `section,row,seat,category[,x,y]` with a header line.
//! - A generated stadium bowl ([`generate_stadium`]) for demos and benchmarks.
//!
//! All of them produce a [`VenuePlan`]; [`import`] parses and stores one file in a single
//! transaction, and importing the same bytes again changes nothing. [`detect_format`]
//! tells a file's format from its content, for callers that are given just a file.
//!
//! # Sections
//! A seats.io section becomes one section. A pretix zone becomes one section unless its
//! rows form several blocks: a new block (and section) starts at a row whose label
//! already occurred in the current block, or whose origin lies more than twice the
//! zone's median row spacing away from the previous row's (an empty stretch between two
//! stands). Blocks of one zone are coded `<zone> <n>` (`n` from 1). Within a section,
//! (row label, seat label) must be unique;
//! two seats sharing it are refused with both places named.
//!
//! # Seat ids
//! Seats are inserted in section, row, seat order in one transaction, so ascending
//! `seat_id` is the natural claiming order and each section's ids are contiguous.
//!
//! # Repeated `seat_guid`s
//! Real plans reuse `seat_guid` values (a copied stand keeps its guids). Seats are
//! identified by their place (zone, row, seat), never by guid, so each place becomes its
//! own seat; the repeated guids come back as [`ImportWarning`]s.

mod csv_manifest;
mod detect;
mod error;
mod generate;
mod json;
mod plan;
mod pretix;
mod seatsio;
mod store;

pub use csv_manifest::parse_csv;
pub use detect::detect_format;
pub use error::{ImportError, PlanIssue, Problem};
pub use generate::{StadiumParams, generate_stadium};
pub use plan::{Category, ImportWarning, PlanRow, PlanSeat, PlanSection, SourceFormat, VenuePlan};
pub use pretix::parse_pretix;
pub use seatsio::parse_seatsio;
pub use store::{ImportOutcome, digest, import, parse, store_plan};
