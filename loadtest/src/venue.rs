//! Where an on-sale's venue comes from ([`VenueSource`]): a plan file to import, a
//! generated stadium bowl, or a venue the box office already has.

use std::path::Path;

use stadium_proto::box_office::v1::PlanFormat;
use stadium_venues::{SourceFormat, StadiumParams, VenuePlan, detect_format, generate_stadium};

use crate::error::{LoadtestError, Result};

/// The seating plan formats the box office imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VenueFormat {
    /// pretix seating-plan JSON.
    PretixJson,
    /// CSV manifest `section,row,seat,category[,x,y]` with a header line.
    CsvManifest,
    /// seats.io chart JSON.
    SeatsioJson,
}

impl VenueFormat {
    /// The wire enum of `ImportVenueRequest.format`.
    pub fn to_proto(self) -> PlanFormat {
        match self {
            VenueFormat::PretixJson => PlanFormat::PretixJson,
            VenueFormat::CsvManifest => PlanFormat::CsvManifest,
            VenueFormat::SeatsioJson => PlanFormat::SeatsioJson,
        }
    }
}

/// The venue of an on-sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VenueSource {
    /// Import these plan bytes (importing the same bytes again reuses the venue).
    Import {
        /// Venue name to store.
        name: String,
        /// Plan format.
        format: VenueFormat,
        /// The file's bytes.
        content: Vec<u8>,
    },
    /// A venue the box office already has.
    Existing {
        /// Its id.
        venue_id: String,
    },
}

impl VenueSource {
    /// A plan file, its format told from its content whatever its name
    /// (`stadium_venues::detect_format`: a seats.io chart, a pretix plan or a CSV
    /// manifest); the venue is named after the file stem.
    ///
    /// Errors: [`LoadtestError::Io`] when the file cannot be read.
    pub fn from_file(path: &Path) -> Result<Self> {
        let content = std::fs::read(path).map_err(|source| LoadtestError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let format = match detect_format(&content) {
            SourceFormat::PretixJson => VenueFormat::PretixJson,
            SourceFormat::SeatsioJson => VenueFormat::SeatsioJson,
            // detect_format never answers Generated.
            SourceFormat::CsvManifest | SourceFormat::Generated => VenueFormat::CsvManifest,
        };
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("venue")
            .to_owned();
        Ok(VenueSource::Import {
            name,
            format,
            content,
        })
    }

    /// A generated stadium bowl of exactly `total_seats` seats in `sections` sections
    /// (see `stadium_venues::generate_stadium`), sent as a CSV manifest with positions.
    ///
    /// Errors: [`LoadtestError::Venue`] when the parameters are out of range (1,000 to
    /// 500,000 seats, 4 to 400 sections).
    pub fn generated(total_seats: u32, sections: u32) -> Result<Self> {
        let plan = generate_stadium(StadiumParams {
            total_seats,
            sections,
        })
        .map_err(|e| LoadtestError::Venue(e.to_string()))?;
        Ok(VenueSource::Import {
            name: format!("Generated stadium {total_seats} seats"),
            format: VenueFormat::CsvManifest,
            content: plan_to_csv(&plan)?,
        })
    }
}

/// A plan as a CSV manifest with positions (`section,row,seat,category,x,y`).
///
/// Errors: [`LoadtestError::Venue`] if the CSV writer fails.
pub fn plan_to_csv(plan: &VenuePlan) -> Result<Vec<u8>> {
    let fail = |e: csv::Error| LoadtestError::Venue(format!("csv: {e}"));
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(["section", "row", "seat", "category", "x", "y"])
        .map_err(fail)?;
    for section in &plan.sections {
        for row in &section.rows {
            for seat in &row.seats {
                writer
                    .write_record([
                        section.code.as_str(),
                        row.label.as_str(),
                        seat.label.as_str(),
                        seat.category.as_str(),
                        &format!("{:.2}", seat.x),
                        &format!("{:.2}", seat.y),
                    ])
                    .map_err(fail)?;
            }
        }
    }
    writer
        .into_inner()
        .map_err(|e| LoadtestError::Venue(format!("csv: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_stadium_round_trips_through_csv() {
        let VenueSource::Import {
            format, content, ..
        } = VenueSource::generated(2_000, 8).unwrap()
        else {
            panic!("expected an import");
        };
        assert_eq!(format, VenueFormat::CsvManifest);
        let plan = stadium_venues::parse_csv("x", &content).unwrap();
        assert_eq!(plan.seat_count(), 2_000);
        assert_eq!(plan.sections.len(), 8);
    }

    #[test]
    fn out_of_range_generation_is_an_error() {
        assert!(matches!(
            VenueSource::generated(10, 8),
            Err(LoadtestError::Venue(_))
        ));
    }

    #[test]
    fn plan_files_are_read_by_their_content_not_their_name() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "chart.txt",
                &br#"{"categories": {"list": []}, "subChart": {"sections": []}}"#[..],
                VenueFormat::SeatsioJson,
            ),
            (
                "plan.csv",
                &br#"{"name": "x", "categories": [], "zones": []}"#[..],
                VenueFormat::PretixJson,
            ),
            (
                "manifest.json",
                &b"section,row,seat,category\nA,1,1,Main\n"[..],
                VenueFormat::CsvManifest,
            ),
        ];
        for (file, content, expected) in cases {
            let path = dir.path().join(file);
            std::fs::write(&path, content).unwrap();
            let VenueSource::Import { format, name, .. } = VenueSource::from_file(&path).unwrap()
            else {
                panic!("expected an import");
            };
            assert_eq!(
                (format, name.as_str()),
                (expected, file.split('.').next().unwrap())
            );
        }
        assert!(matches!(
            VenueSource::from_file(&dir.path().join("missing.json")),
            Err(LoadtestError::Io { .. })
        ));
    }
}
