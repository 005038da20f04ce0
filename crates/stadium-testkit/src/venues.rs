//! The real venue plans in `shared/venues` and what the table of its README states of
//! each; the seats.io sample chart in `shared/data/seatsio` and the counts its README
//! gives.

use std::path::PathBuf;

/// The directory of the real venue plans and their README.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/venues")
}

/// The directory of the seats.io sample chart and its README.
pub fn seatsio_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/seatsio")
}

/// The seats.io sample chart's file name in [`seatsio_dir`].
pub const SEATSIO_SAMPLE: &str = "seatsio_seatsio-js_sampleChartWithZones.json";

/// What the seats.io README states of the sample chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartCounts {
    /// Zones.
    pub zones: u64,
    /// Sections.
    pub sections: u64,
    /// Rows.
    pub rows: u64,
    /// Seats.
    pub seats: u64,
    /// Categories.
    pub categories: u64,
}

/// The counts the seats.io README gives ("2 zones, 4 sections, … 2 categories.").
///
/// # Panics
/// When the README cannot be read or lacks one of the counts.
pub fn seatsio_readme_counts() -> ChartCounts {
    let readme = std::fs::read_to_string(seatsio_dir().join("README.md")).expect("seatsio README");
    let text = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    ChartCounts {
        zones: number_before(&text, " zones,"),
        sections: number_before(&text, " sections,"),
        rows: number_before(&text, " rows,"),
        seats: number_before(&text, " seats,"),
        categories: number_before(&text, " categories."),
    }
}

/// What the README's table states of one plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The plan's file name in [`dir`].
    pub file: String,
    /// Seats in the plan.
    pub seats: u64,
    /// Rows in the plan.
    pub rows: u64,
    /// Price categories the plan defines.
    pub categories: u64,
}

/// Every JSON plan the README's table lists, in its order.
///
/// # Panics
/// When the README cannot be read, or a listed plan's contents cell lacks a count.
pub fn readme_plans() -> Vec<Plan> {
    let readme = std::fs::read_to_string(dir().join("README.md")).expect("venues README");
    readme
        .lines()
        .filter(|l| l.starts_with("| `") && l.contains(".json`"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let contents = cells[4];
            Plan {
                file: cells[1].trim_matches('`').to_owned(),
                seats: number_before(contents, " seats"),
                rows: number_before(contents, " rows"),
                categories: number_before(contents, " categories"),
            }
        })
        .collect()
}

/// The number (with `,` thousands separators) just before `word` in `cell`.
fn number_before(cell: &str, word: &str) -> u64 {
    let at = cell
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {cell:?}"));
    let digits: String = cell[..at]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .collect();
    digits
        .chars()
        .rev()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}
