//! After a run: the box office's invariant canary (`CheckInvariants`), and the run's
//! own counts compared with the box office's sales report (sold, held, refunded, and
//! sold + held + available + blocked = seats).

use serde::{Deserialize, Serialize};
use stadium_proto::box_office::v1::{
    CheckInvariantsRequest, GetSalesReportRequest, ReportGrouping, ReportRow,
};

use crate::credentials::{Credentials, authed};
use crate::error::Result;
use crate::report::RunReport;
use crate::setup::EventSetup;
use crate::targets::Targets;

/// One broken invariant as the canary reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationSummary {
    /// e.g. `two_active_claims`.
    pub invariant: String,
    /// What is wrong.
    pub description: String,
    /// The offending rows, as text.
    pub rows: Vec<String>,
}

/// A count on which the run and the box office differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disagreement {
    /// What is counted, e.g. `seats sold`.
    pub what: String,
    /// The run's number (for the sum check: the sum of the box office's parts).
    pub report: i64,
    /// The box office's number.
    pub database: i64,
}

/// The box office's totals for the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SalesTotals {
    /// Seats of the venue.
    pub seats: u32,
    /// Free seats.
    pub available: u32,
    /// Held by fans and not yet lapsed.
    pub held: u32,
    /// Booked (comps included).
    pub sold: u32,
    /// Blocked by the box office.
    pub blocked: u32,
    /// Seats of refunded orders.
    pub refunded_seats: u32,
}

impl From<&ReportRow> for SalesTotals {
    fn from(row: &ReportRow) -> Self {
        SalesTotals {
            seats: row.seats,
            available: row.available,
            held: row.held,
            sold: row.sold,
            blocked: row.blocked,
            refunded_seats: row.refunds,
        }
    }
}

/// The outcome of [`check_invariants`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvariantCheck {
    /// Whether the canary answered.
    pub checked: bool,
    /// Broken invariants (empty when all hold).
    pub violations: Vec<ViolationSummary>,
    /// Counts on which the run and the box office differ.
    pub disagreements: Vec<Disagreement>,
    /// The box office's totals, when the sales report answered.
    pub sales: Option<SalesTotals>,
    /// Why part of the check could not run (an RPC failed).
    pub problems: Vec<String>,
}

impl InvariantCheck {
    /// Whether everything was checked and nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.checked
            && self.sales.is_some()
            && self.violations.is_empty()
            && self.disagreements.is_empty()
            && self.problems.is_empty()
    }
}

/// Runs the canary for the event and compares `report` with the box office's sales
/// report. Failing RPCs are listed in [`InvariantCheck::problems`] (so the check
/// fails) rather than returned as errors.
///
/// Errors: [`crate::LoadtestError::InvalidTarget`] for a bad box office URL;
/// [`crate::LoadtestError::Token`] when the admin token cannot be minted.
pub async fn check_invariants(
    targets: &Targets,
    creds: &Credentials,
    event: &EventSetup,
    report: &RunReport,
) -> Result<InvariantCheck> {
    let mut office = targets.clients()?.box_office;
    let mut check = InvariantCheck {
        checked: false,
        violations: Vec::new(),
        disagreements: Vec::new(),
        sales: None,
        problems: Vec::new(),
    };
    let canary = office
        .check_invariants(authed(
            CheckInvariantsRequest {
                event_id: event.event_id.clone(),
            },
            &creds.admin_token()?,
        ))
        .await;
    match canary {
        Ok(response) => {
            check.checked = true;
            check.violations = response
                .into_inner()
                .violations
                .into_iter()
                .map(|v| ViolationSummary {
                    invariant: v.invariant,
                    description: v.description,
                    rows: v.rows,
                })
                .collect();
        }
        Err(s) => check.problems.push(format!(
            "BoxOffice/CheckInvariants: {:?}: {}",
            s.code(),
            s.message()
        )),
    }
    let sales = office
        .get_sales_report(authed(
            GetSalesReportRequest {
                event_id: event.event_id.clone(),
                group_by: ReportGrouping::Section as i32,
                csv: false,
            },
            &creds.admin_token()?,
        ))
        .await;
    match sales {
        Ok(response) => match response.into_inner().total {
            Some(total) => {
                let totals = SalesTotals::from(&total);
                check.disagreements = compare(report, event, &totals);
                check.sales = Some(totals);
            }
            None => check
                .problems
                .push("BoxOffice/GetSalesReport: response without total".into()),
        },
        Err(s) => check.problems.push(format!(
            "BoxOffice/GetSalesReport: {:?}: {}",
            s.code(),
            s.message()
        )),
    }
    Ok(check)
}

/// Every count on which the run's report and the box office's totals differ. The
/// event is the run's own, so nothing else sold or held its seats.
pub fn compare(report: &RunReport, event: &EventSetup, totals: &SalesTotals) -> Vec<Disagreement> {
    let mut out = Vec::new();
    let mut differ = |what: &str, ours: u64, theirs: u64| {
        if ours != theirs {
            out.push(Disagreement {
                what: what.to_owned(),
                report: i64::try_from(ours).unwrap_or(i64::MAX),
                database: i64::try_from(theirs).unwrap_or(i64::MAX),
            });
        }
    };
    let t = |v: u32| u64::from(v);
    differ("seats sold", report.seats_sold, t(totals.sold));
    differ("seats held", report.seats_held_at_end, t(totals.held));
    differ(
        "seats refunded",
        report.late.refunded_seats + report.unexpected_refund_seats,
        t(totals.refunded_seats),
    );
    differ("seats of the venue", event.seats, t(totals.seats));
    differ(
        "sold + held + available + blocked = seats",
        t(totals.sold) + t(totals.held) + t(totals.available) + t(totals.blocked),
        t(totals.seats),
    );
    out
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::report::tests::synthetic;

    fn event(seats: u64) -> EventSetup {
        EventSetup {
            event_id: "ev-1".into(),
            venue_id: "v".into(),
            venue_name: "v".into(),
            seats,
            sections: 1,
            categories: vec![],
            currency: "EUR".into(),
            onsale_at: SystemTime::UNIX_EPOCH,
            hold_ttl_ms: 1,
            max_seats_per_claim: 4,
            admission_rate_per_min: 1,
            waiting_room_push: "DELIVERED".into(),
            import_warnings: vec![],
        }
    }

    #[test]
    fn matching_counts_agree() {
        let report = synthetic();
        let totals = SalesTotals {
            seats: 500,
            available: 50,
            held: 0,
            sold: 450,
            blocked: 0,
            refunded_seats: 12,
        };
        assert_eq!(compare(&report, &event(500), &totals), vec![]);
    }

    #[test]
    fn every_difference_is_listed() {
        let report = synthetic();
        let totals = SalesTotals {
            seats: 500,
            available: 60,
            held: 3,
            sold: 449,
            blocked: 0,
            refunded_seats: 12,
        };
        let found = compare(&report, &event(501), &totals);
        let whats: Vec<&str> = found.iter().map(|d| d.what.as_str()).collect();
        assert_eq!(
            whats,
            vec![
                "seats sold",
                "seats held",
                "seats of the venue",
                "sold + held + available + blocked = seats"
            ]
        );
        assert_eq!(found[0].report, 450);
        assert_eq!(found[0].database, 449);
    }
}
