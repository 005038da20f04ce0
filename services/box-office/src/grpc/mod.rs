//! `stadium.box_office.v1.BoxOffice` over tonic: authenticate, convert and check the
//! request, call [`BoxOfficeService`], convert the answer.

mod admissions;
mod cancellation;
mod channels;
pub mod convert;
mod history;
mod inventory;
mod shards;
mod waiting_list;

use std::sync::Arc;
use std::time::SystemTime;

use stadium_proto::box_office::v1::{self as pb, box_office_server};
use stadium_proto::holds::v1 as holds;
use stadium_venues::SourceFormat;
use tonic::{Request, Response, Status};

use crate::auth::{Authenticator, CHANGE, Caller, OPERATE};
use crate::clients::upstream::Upstream;
use crate::domain::Transition;
use crate::error::{Error, Result};
use crate::service::BoxOfficeService;
use crate::store::reports::{Grouping, ReportLine};
use inventory::text;

/// Most seats one block or comp may name.
pub const MAX_SEATS_PER_REQUEST: usize = 1000;

/// The gRPC face of the box office.
#[derive(Debug, Clone)]
pub struct BoxOfficeApi {
    office: BoxOfficeService,
    auth: Arc<Authenticator>,
    upstream: Upstream,
}

impl BoxOfficeApi {
    /// The API over `office`, checking tokens with `auth`, reaching holds and payments
    /// through `upstream`.
    pub fn new(office: BoxOfficeService, auth: Arc<Authenticator>, upstream: Upstream) -> Self {
        Self {
            office,
            auth,
            upstream,
        }
    }

    fn caller<T>(&self, request: &Request<T>, access: stadium_tokens::Access) -> Result<Caller> {
        self.auth
            .caller(request.metadata(), access, SystemTime::now())
    }

    async fn transition(
        &self,
        request: Request<String>,
        t: Transition,
    ) -> Result<(pb::Event, pb::WaitingRoomPush)> {
        let caller = self.caller(&request, CHANGE)?;
        let event_id = convert::id("event_id", request.get_ref())?;
        let (event, push) = self.office.transition(&caller.actor, event_id, t).await?;
        Ok((convert::event(&event), convert::push(&push)))
    }
}

fn row(line: &ReportLine, currency: &str) -> pb::ReportRow {
    let n = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    pb::ReportRow {
        key: line.key.clone(),
        seats: n(line.seats),
        available: n(line.available),
        held: n(line.held),
        sold: n(line.sold),
        blocked: n(line.blocked),
        comps: n(line.comps),
        waiting_list_sold: n(line.waiting_list_sold),
        revenue: Some(convert::money(line.revenue_minor, currency)),
        refunds: n(line.refunds),
        refunded: Some(convert::money(line.refunded_minor, currency)),
    }
}

/// The report as CSV: a header line, one line per row, then the total.
///
/// # Errors
/// [`Error::Internal`] if the CSV writer fails (it writes to memory).
pub fn report_csv(lines: &[ReportLine], total: &ReportLine, currency: &str) -> Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| Error::Internal(format!("csv: {e}"));
    out.write_record([
        "key",
        "seats",
        "available",
        "held",
        "sold",
        "blocked",
        "comps",
        "waiting_list_sold",
        "revenue_minor",
        "refunds",
        "refunded_minor",
        "currency",
    ])
    .map_err(fail)?;
    for l in lines.iter().chain(std::iter::once(total)) {
        out.write_record([
            l.key.clone(),
            l.seats.to_string(),
            l.available.to_string(),
            l.held.to_string(),
            l.sold.to_string(),
            l.blocked.to_string(),
            l.comps.to_string(),
            l.waiting_list_sold.to_string(),
            l.revenue_minor.to_string(),
            l.refunds.to_string(),
            l.refunded_minor.to_string(),
            currency.to_owned(),
        ])
        .map_err(fail)?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| Error::Internal(format!("csv: {e}")))?;
    String::from_utf8(bytes).map_err(|e| Error::Internal(format!("csv: {e}")))
}

type Reply<T> = std::result::Result<Response<T>, Status>;

fn reply<T>(result: Result<T>) -> Reply<T> {
    result.map(Response::new).map_err(Status::from)
}

#[tonic::async_trait]
impl box_office_server::BoxOffice for BoxOfficeApi {
    #[tracing::instrument(skip_all, fields(name = %request.get_ref().name))]
    async fn import_venue(
        &self,
        request: Request<pb::ImportVenueRequest>,
    ) -> Reply<pb::ImportVenueResponse> {
        reply(
            async {
                let caller = self.caller(&request, CHANGE)?;
                let req = request.get_ref();
                if req.content.is_empty() {
                    return Err(Error::invalid("content", "is empty"));
                }
                let format = match pb::PlanFormat::try_from(req.format) {
                    Ok(pb::PlanFormat::Unspecified) => stadium_venues::detect_format(&req.content),
                    Ok(pb::PlanFormat::PretixJson) => SourceFormat::PretixJson,
                    Ok(pb::PlanFormat::CsvManifest) => SourceFormat::CsvManifest,
                    Ok(pb::PlanFormat::SeatsioJson) => SourceFormat::SeatsioJson,
                    Err(_) => {
                        return Err(Error::invalid(
                            "format",
                            "must be UNSPECIFIED, PRETIX_JSON, CSV_MANIFEST or SEATSIO_JSON",
                        ));
                    }
                };
                let name = text("name", &req.name, true)?;
                let imported = self
                    .office
                    .import_venue(&caller.actor, &name, format, &req.content)
                    .await?;
                Ok(pb::ImportVenueResponse {
                    venue: Some(convert::venue(&imported.venue)),
                    already_imported: imported.already_imported,
                    warnings: imported.warnings,
                    format: convert::plan_format(format) as i32,
                })
            }
            .await,
        )
    }

    async fn list_venues(
        &self,
        request: Request<pb::ListVenuesRequest>,
    ) -> Reply<pb::ListVenuesResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let (size, after) = convert::page(request.get_ref().page.as_ref())?;
                let venues = self.office.list_venues(after, size).await?;
                Ok(pb::ListVenuesResponse {
                    next_page_token: convert::next_token(
                        venues.len(),
                        size,
                        venues.last().map(|v| v.venue_id),
                    ),
                    venues: venues.iter().map(convert::venue).collect(),
                })
            }
            .await,
        )
    }

    async fn get_venue(
        &self,
        request: Request<pb::GetVenueRequest>,
    ) -> Reply<pb::GetVenueResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let venue_id = convert::id("venue_id", &request.get_ref().venue_id)?;
                let venue = self.office.get_venue(venue_id).await?;
                Ok(pb::GetVenueResponse {
                    venue: Some(convert::venue(&venue)),
                })
            }
            .await,
        )
    }

    #[tracing::instrument(skip_all, fields(venue_id = %request.get_ref().venue_id))]
    async fn create_event(
        &self,
        request: Request<pb::CreateEventRequest>,
    ) -> Reply<pb::CreateEventResponse> {
        reply(
            async {
                let caller = self.caller(&request, CHANGE)?;
                let req = request.get_ref();
                let venue_id = convert::id("venue_id", &req.venue_id)?;
                let settings = convert::settings(req.settings.as_ref(), &req.price_categories)?;
                let codes = self.office.venue_codes(venue_id).await?;
                let categories =
                    convert::price_categories(&req.price_categories, &settings.currency, &codes)?;
                let event = self
                    .office
                    .create_event(&caller.actor, venue_id, &settings, &categories)
                    .await?;
                Ok(pb::CreateEventResponse {
                    event: Some(convert::event(&event)),
                })
            }
            .await,
        )
    }

    async fn get_event(
        &self,
        request: Request<pb::GetEventRequest>,
    ) -> Reply<pb::GetEventResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let event_id = convert::id("event_id", &request.get_ref().event_id)?;
                let event = self.office.get_event(event_id).await?;
                Ok(pb::GetEventResponse {
                    event: Some(convert::event(&event)),
                })
            }
            .await,
        )
    }

    async fn list_events(
        &self,
        request: Request<pb::ListEventsRequest>,
    ) -> Reply<pb::ListEventsResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let req = request.get_ref();
                let (size, after) = convert::page(req.page.as_ref())?;
                let venue_id = match req.venue_id.as_str() {
                    "" => None,
                    v => Some(convert::id("venue_id", v)?),
                };
                let events = self.office.list_events(venue_id, after, size).await?;
                Ok(pb::ListEventsResponse {
                    next_page_token: convert::next_token(
                        events.len(),
                        size,
                        events.last().map(|e| e.event_id),
                    ),
                    events: events.iter().map(convert::event).collect(),
                })
            }
            .await,
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn set_price_categories(
        &self,
        request: Request<pb::SetPriceCategoriesRequest>,
    ) -> Reply<pb::SetPriceCategoriesResponse> {
        reply(
            async {
                let caller = self.caller(&request, CHANGE)?;
                let req = request.get_ref();
                let event_id = convert::id("event_id", &req.event_id)?;
                let event = self.office.get_event(event_id).await?;
                let codes = self.office.venue_codes(event.venue_id).await?;
                let categories = convert::price_categories(
                    &req.price_categories,
                    &event.settings.currency,
                    &codes,
                )?;
                let event = self
                    .office
                    .set_price_categories(&caller.actor, event_id, &categories)
                    .await?;
                Ok(pb::SetPriceCategoriesResponse {
                    event: Some(convert::event(&event)),
                })
            }
            .await,
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn start_presale(
        &self,
        request: Request<pb::StartPresaleRequest>,
    ) -> Reply<pb::StartPresaleResponse> {
        let request = request.map(|r| r.event_id);
        reply(
            self.transition(request, Transition::StartPresale)
                .await
                .map(|(event, push)| pb::StartPresaleResponse {
                    event: Some(event),
                    waiting_room: Some(push),
                }),
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn open_sale(
        &self,
        request: Request<pb::OpenSaleRequest>,
    ) -> Reply<pb::OpenSaleResponse> {
        let request = request.map(|r| r.event_id);
        reply(
            self.transition(request, Transition::Open)
                .await
                .map(|(event, push)| pb::OpenSaleResponse {
                    event: Some(event),
                    waiting_room: Some(push),
                }),
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn pause_sale(
        &self,
        request: Request<pb::PauseSaleRequest>,
    ) -> Reply<pb::PauseSaleResponse> {
        let request = request.map(|r| r.event_id);
        reply(
            self.transition(request, Transition::Pause)
                .await
                .map(|(event, push)| pb::PauseSaleResponse {
                    event: Some(event),
                    waiting_room: Some(push),
                }),
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn resume_sale(
        &self,
        request: Request<pb::ResumeSaleRequest>,
    ) -> Reply<pb::ResumeSaleResponse> {
        let request = request.map(|r| r.event_id);
        reply(
            self.transition(request, Transition::Resume)
                .await
                .map(|(event, push)| pb::ResumeSaleResponse {
                    event: Some(event),
                    waiting_room: Some(push),
                }),
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn close_sale(
        &self,
        request: Request<pb::CloseSaleRequest>,
    ) -> Reply<pb::CloseSaleResponse> {
        let request = request.map(|r| r.event_id);
        reply(
            self.transition(request, Transition::Close)
                .await
                .map(|(event, push)| pb::CloseSaleResponse {
                    event: Some(event),
                    waiting_room: Some(push),
                }),
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn set_admission_rate(
        &self,
        request: Request<pb::SetAdmissionRateRequest>,
    ) -> Reply<pb::SetAdmissionRateResponse> {
        reply(
            async {
                let caller = self.caller(&request, OPERATE)?;
                let req = request.get_ref();
                let event_id = convert::id("event_id", &req.event_id)?;
                let max = crate::domain::MAX_ADMISSION_RATE;
                if req.fans_per_minute == 0 || req.fans_per_minute > max {
                    return Err(Error::invalid(
                        "fans_per_minute",
                        format!("must be 1 to {max}"),
                    ));
                }
                let cap = req
                    .active_fan_cap
                    .map(|cap| convert::active_fan_cap("active_fan_cap", cap))
                    .transpose()?;
                let (event, push) = self
                    .office
                    .set_admission_rate(&caller.actor, event_id, req.fans_per_minute, cap)
                    .await?;
                Ok(pb::SetAdmissionRateResponse {
                    event: Some(convert::event(&event)),
                    waiting_room: Some(convert::push(&push)),
                })
            }
            .await,
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn block_seats(
        &self,
        request: Request<pb::BlockSeatsRequest>,
    ) -> Reply<pb::BlockSeatsResponse> {
        reply(self.block_seats_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(hold_key = %request.get_ref().hold_key))]
    async fn release_seats(
        &self,
        request: Request<pb::ReleaseSeatsRequest>,
    ) -> Reply<pb::ReleaseSeatsResponse> {
        reply(self.release_seats_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn issue_comp(
        &self,
        request: Request<pb::IssueCompRequest>,
    ) -> Reply<pb::IssueCompResponse> {
        reply(self.issue_comp_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn revoke_admission(
        &self,
        request: Request<pb::RevokeAdmissionRequest>,
    ) -> Reply<pb::RevokeAdmissionResponse> {
        reply(self.revoke_admission_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_waiting_list(
        &self,
        request: Request<pb::GetWaitingListRequest>,
    ) -> Reply<pb::GetWaitingListResponse> {
        reply(self.get_waiting_list_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(order_id = %request.get_ref().order_id))]
    async fn refund_order(
        &self,
        request: Request<pb::RefundOrderRequest>,
    ) -> Reply<pb::RefundOrderResponse> {
        reply(self.refund_order_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_sales_report(
        &self,
        request: Request<pb::GetSalesReportRequest>,
    ) -> Reply<pb::GetSalesReportResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let req = request.get_ref();
                let event_id = convert::id("event_id", &req.event_id)?;
                let grouping = match pb::ReportGrouping::try_from(req.group_by) {
                    Ok(pb::ReportGrouping::Unspecified | pb::ReportGrouping::Section) => {
                        Grouping::Section
                    }
                    Ok(pb::ReportGrouping::PriceCategory) => Grouping::Category,
                    Err(_) => {
                        return Err(Error::invalid(
                            "group_by",
                            "must be SECTION or PRICE_CATEGORY",
                        ));
                    }
                };
                let (event, lines, total) = self.office.sales_report(event_id, grouping).await?;
                let currency = &event.settings.currency;
                Ok(pb::GetSalesReportResponse {
                    csv: if req.csv {
                        report_csv(&lines, &total, currency)?
                    } else {
                        String::new()
                    },
                    rows: lines.iter().map(|l| row(l, currency)).collect(),
                    total: Some(row(&total, currency)),
                    as_of: Some(convert::timestamp(chrono::Utc::now())),
                })
            }
            .await,
        )
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_sales_timeline(
        &self,
        request: Request<pb::GetSalesTimelineRequest>,
    ) -> Reply<pb::GetSalesTimelineResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let req = request.get_ref();
                let event_id = convert::id("event_id", &req.event_id)?;
                let bucket_ms = match req.bucket_ms {
                    0 => 60_000,
                    ms if (1000..=31 * 86_400_000).contains(&ms) => ms,
                    _ => {
                        return Err(Error::invalid(
                            "bucket_ms",
                            "must be 0 (one minute) or 1000 to 2678400000",
                        ));
                    }
                };
                let (event, buckets) = self
                    .office
                    .timeline(event_id, i64::try_from(bucket_ms).unwrap_or(60_000))
                    .await?;
                let currency = &event.settings.currency;
                Ok(pb::GetSalesTimelineResponse {
                    points: buckets
                        .iter()
                        .map(|b| pb::TimelinePoint {
                            bucket_start: Some(convert::timestamp(b.bucket_start)),
                            sold: u32::try_from(b.sold).unwrap_or(u32::MAX),
                            refunded: u32::try_from(b.refunded).unwrap_or(u32::MAX),
                            revenue: Some(convert::money(b.revenue_minor, currency)),
                        })
                        .collect(),
                })
            }
            .await,
        )
    }

    #[tracing::instrument(skip_all)]
    async fn create_channel(
        &self,
        request: Request<holds::CreateChannelRequest>,
    ) -> Reply<holds::CreateChannelResponse> {
        reply(self.create_channel_inner(request).await)
    }

    #[tracing::instrument(skip_all)]
    async fn assign_channel_seats(
        &self,
        request: Request<holds::AssignChannelSeatsRequest>,
    ) -> Reply<holds::AssignChannelSeatsResponse> {
        reply(self.assign_channel_seats_inner(request).await)
    }

    #[tracing::instrument(skip_all)]
    async fn create_presale_codes(
        &self,
        request: Request<holds::CreatePresaleCodesRequest>,
    ) -> Reply<holds::CreatePresaleCodesResponse> {
        reply(self.create_presale_codes_inner(request).await)
    }

    #[tracing::instrument(skip_all)]
    async fn release_channel(
        &self,
        request: Request<holds::ReleaseChannelRequest>,
    ) -> Reply<holds::ReleaseChannelResponse> {
        reply(self.release_channel_inner(request).await)
    }

    #[tracing::instrument(skip_all)]
    async fn list_channels(
        &self,
        request: Request<holds::ListChannelsRequest>,
    ) -> Reply<holds::ListChannelsResponse> {
        reply(self.list_channels_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn list_shards(
        &self,
        request: Request<pb::ListShardsRequest>,
    ) -> Reply<pb::ListShardsResponse> {
        reply(self.list_shards_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id, section_id = request.get_ref().section_id))]
    async fn move_section(
        &self,
        request: Request<pb::MoveSectionRequest>,
    ) -> Reply<pb::MoveSectionResponse> {
        reply(self.move_section_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id, window_s = request.get_ref().window_s))]
    async fn top_sections(
        &self,
        request: Request<pb::TopSectionsRequest>,
    ) -> Reply<pb::TopSectionsResponse> {
        reply(self.top_sections_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_seat_history(
        &self,
        request: Request<pb::GetSeatHistoryRequest>,
    ) -> Reply<pb::GetSeatHistoryResponse> {
        reply(self.get_seat_history_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn cancel_event(
        &self,
        request: Request<pb::CancelEventRequest>,
    ) -> Reply<pb::CancelEventResponse> {
        reply(self.cancel_event_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_cancellation(
        &self,
        request: Request<pb::GetCancellationRequest>,
    ) -> Reply<pb::GetCancellationResponse> {
        reply(self.get_cancellation_inner(request).await)
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn check_invariants(
        &self,
        request: Request<pb::CheckInvariantsRequest>,
    ) -> Reply<pb::CheckInvariantsResponse> {
        reply(
            async {
                self.caller(&request, OPERATE)?;
                let event_id = convert::id("event_id", &request.get_ref().event_id)?;
                let violations = self.office.check_invariants(event_id).await?;
                if !violations.is_empty() {
                    tracing::error!(
                        event_id,
                        count = violations.len(),
                        "invariant violations found"
                    );
                }
                Ok(pb::CheckInvariantsResponse {
                    event_id: event_id.to_string(),
                    violations: violations
                        .into_iter()
                        .map(|v| pb::Violation {
                            invariant: v.invariant.to_owned(),
                            description: v.description.to_owned(),
                            rows: v.rows,
                        })
                        .collect(),
                    checked_at: Some(convert::timestamp(chrono::Utc::now())),
                })
            }
            .await,
        )
    }
}
