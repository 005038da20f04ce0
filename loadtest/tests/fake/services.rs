//! The five fake services.

use stadium_kit::Reason;

use std::pin::Pin;
use std::time::{Instant, SystemTime};

use tokio_stream::Stream;

use super::*;

service!(WaitingRoom {
    type WatchStatusStream = Pin<Box<dyn Stream<Item = Result<wr::WatchStatusResponse, Status>> + Send>>;
    type WatchWaitingListStream = Pin<Box<dyn Stream<Item = Result<wr::WatchWaitingListResponse, Status>> + Send>>;

    async fn join(&self, r: Request<wr::JoinRequest>) -> Result<Response<wr::JoinResponse>, Status> {
        let fan = self.fan(&r)?;
        self.restoring(true)?;
        Ok(Response::new(wr::JoinResponse { status: Some(self.queue_status(&fan)) }))
    }

    async fn get_status(&self, r: Request<wr::GetStatusRequest>) -> Result<Response<wr::GetStatusResponse>, Status> {
        let fan = self.fan(&r)?;
        self.restoring(false)?;
        if r.get_ref().queue_ticket != format!("t:{fan}") {
            return Err(Status::permission_denied("WRONG_FAN"));
        }
        Ok(Response::new(wr::GetStatusResponse { status: Some(self.queue_status(&fan)) }))
    }

    async fn release_admission(&self, r: Request<wr::ReleaseAdmissionRequest>) -> Result<Response<wr::ReleaseAdmissionResponse>, Status> {
        let fan = self.fan(&r)?;
        if r.get_ref().admission_token != format!("adm:{fan}") {
            return Err(Status::unauthenticated("TOKEN_INVALID"));
        }
        self.lock().completed += 1;
        Ok(Response::new(wr::ReleaseAdmissionResponse { freed: true }))
    }

    async fn get_queue_stats(&self, r: Request<wr::GetQueueStatsRequest>) -> Result<Response<wr::GetQueueStatsResponse>, Status> {
        self.admin(&r)?;
        let admitted = self.lock().admitted;
        Ok(Response::new(wr::GetQueueStatsResponse { admitted, ..Default::default() }))
    }
} unimplemented {
    watch_status(wr::WatchStatusRequest) -> Self::WatchStatusStream;
    get_signing_keys(wr::GetSigningKeysRequest) -> wr::GetSigningKeysResponse;
    get_shuffle_seed(wr::GetShuffleSeedRequest) -> wr::GetShuffleSeedResponse;
    get_shuffle_commitment(wr::GetShuffleCommitmentRequest) -> wr::GetShuffleCommitmentResponse;
    list_pre_queue(wr::ListPreQueueRequest) -> wr::ListPreQueueResponse;
    complete_admission(wr::CompleteAdmissionRequest) -> wr::CompleteAdmissionResponse;
    revoke_admission(wr::RevokeAdmissionRequest) -> wr::RevokeAdmissionResponse;
    list_revoked_admissions(wr::ListRevokedAdmissionsRequest) -> wr::ListRevokedAdmissionsResponse;
    mark_admissions_used(wr::MarkAdmissionsUsedRequest) -> wr::MarkAdmissionsUsedResponse;
    configure_event(wr::ConfigureEventRequest) -> wr::ConfigureEventResponse;
    set_admission_rate(wr::SetAdmissionRateRequest) -> wr::SetAdmissionRateResponse;
    pause_admission(wr::PauseAdmissionRequest) -> wr::PauseAdmissionResponse;
    resume_admission(wr::ResumeAdmissionRequest) -> wr::ResumeAdmissionResponse;
    report_inventory(wr::ReportInventoryRequest) -> wr::ReportInventoryResponse;
    join_waiting_list(wr::JoinWaitingListRequest) -> wr::JoinWaitingListResponse;
    get_waiting_list_status(wr::GetWaitingListStatusRequest) -> wr::GetWaitingListStatusResponse;
    watch_waiting_list(wr::WatchWaitingListRequest) -> Self::WatchWaitingListStream;
    get_waiting_list(wr::GetWaitingListRequest) -> wr::GetWaitingListResponse;
});

service!(SeatMap {
    async fn get_layout(&self, r: Request<sm::GetLayoutRequest>) -> Result<Response<sm::GetLayoutResponse>, Status> {
        self.fan(&r)?;
        let sections = (1..=SECTIONS)
            .map(|s| {
                let ids: Vec<u64> = seats_of(s).collect();
                sm::Section {
                    section_id: s,
                    code: format!("S{s}"),
                    first_seat_id: ids[0],
                    seat_count: ids.len() as u32,
                    rows: ids
                        .chunks(PER_ROW as usize)
                        .enumerate()
                        .map(|(i, row)| sm::Row {
                            label: (i + 1).to_string(),
                            seats: row
                                .iter()
                                .map(|&id| sm::Seat {
                                    seat_id: id,
                                    category_code: category(s).into(),
                                    ..Default::default()
                                })
                                .collect(),
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        let categories = ["A", "B"]
            .map(|c| sm::Category { code: c.into(), ..Default::default() })
            .to_vec();
        Ok(Response::new(sm::GetLayoutResponse {
            layout: Some(sm::Layout { event_id: "ev-1".into(), sections, categories, ..Default::default() }),
        }))
    }

    async fn get_availability(&self, r: Request<sm::GetAvailabilityRequest>) -> Result<Response<sm::GetAvailabilityResponse>, Status> {
        self.fan(&r)?;
        let state = self.lock();
        let now = Instant::now();
        let sections = (1..=SECTIONS)
            .map(|s| sm::SectionAvailability {
                section_id: s,
                available: state.free_in(s, now).len() as u32,
                ..Default::default()
            })
            .collect();
        Ok(Response::new(sm::GetAvailabilityResponse { sections, staleness_bound_ms: 0 }))
    }

    async fn suggest_seats(&self, r: Request<sm::SuggestSeatsRequest>) -> Result<Response<sm::SuggestSeatsResponse>, Status> {
        self.fan(&r)?;
        let req = r.into_inner();
        let Some(sm::suggest_seats_request::Scope::SectionId(section)) = req.scope else {
            return Err(Status::invalid_argument("scope"));
        };
        let free = self.lock().free_in(section, Instant::now());
        let mut suggestions = Vec::new();
        if free.len() >= req.quantity as usize && req.quantity > 0 {
            suggestions.push(sm::Suggestion {
                section_id: section,
                seat_ids: free[..req.quantity as usize].to_vec(),
                ..Default::default()
            });
        }
        Ok(Response::new(sm::SuggestSeatsResponse { suggestions, as_of: None }))
    }
} unimplemented {});

service!(Holds {
    async fn claim_seats(&self, r: Request<ho::ClaimSeatsRequest>) -> Result<Response<ho::ClaimSeatsResponse>, Status> {
        let fan = self.fan(&r)?;
        let req = r.into_inner();
        if req.admission_token != format!("adm:{fan}") {
            return Err(Status::permission_denied("WRONG_FAN"));
        }
        if req.seat_ids.is_empty() || req.seat_ids.iter().any(|s| section_of(*s) != req.section_id) {
            return Err(error_status(Code::InvalidArgument, Reason::SeatNotInSection, "seats", []));
        }
        let mut state = self.lock();
        let now = Instant::now();
        let taken: Vec<u64> = req.seat_ids.iter().copied().filter(|s| state.active(*s, now)).collect();
        if !taken.is_empty() {
            let free = state.free_in(req.section_id, now);
            let alternatives = if free.len() >= req.seat_ids.len() {
                free[..req.seat_ids.len()].iter().map(u64::to_string).collect::<Vec<_>>().join(",")
            } else {
                String::new()
            };
            let list = taken.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            return Err(error_status(
                Code::AlreadyExists,
                Reason::SeatTaken,
                "taken",
                [("taken_seat_ids".to_owned(), list), ("alternative_seat_ids".to_owned(), alternatives)],
            ));
        }
        state.next_id += 1;
        let key = format!("hold-{}", state.next_id);
        for s in &req.seat_ids {
            state.owner.insert(*s, key.clone());
        }
        state.holds.insert(key.clone(), HoldRec {
            fan,
            section: req.section_id,
            seats: req.seat_ids.clone(),
            expires: now + HOLD_TTL,
            booked: false,
        });
        Ok(Response::new(ho::ClaimSeatsResponse {
            hold: Some(ho::Hold {
                hold_key: key,
                event_id: req.event_id,
                section_id: req.section_id,
                seat_ids: req.seat_ids,
                status: ho::HoldStatus::Held as i32,
                expires_in_ms: HOLD_TTL.as_millis() as u64,
                ttl_ms: HOLD_TTL.as_millis() as u64,
            }),
        }))
    }

    async fn claim_best_available(&self, r: Request<ho::ClaimBestAvailableRequest>) -> Result<Response<ho::ClaimBestAvailableResponse>, Status> {
        let Some(ho::claim_best_available_request::Target::SectionId(section)) = r.get_ref().target.clone() else {
            return Err(error_status(Code::InvalidArgument, Reason::InvalidField, "target", []));
        };
        let quantity = r.get_ref().quantity as usize;
        let free = self.lock().free_in(section, Instant::now());
        if quantity == 0 || free.len() < quantity {
            return Err(error_status(
                Code::AlreadyExists,
                Reason::SeatTaken,
                "no block left",
                [
                    ("fewer_seats".to_owned(), free.len().min(quantity.saturating_sub(1)).to_string()),
                    ("not_together".to_owned(), "false".to_owned()),
                    ("other_section_ids".to_owned(), String::new()),
                ],
            ));
        }
        // The fake takes the first free seats: the shape of the answer is what matters.
        let mut claim = Request::new(ho::ClaimSeatsRequest {
            admission_token: r.get_ref().admission_token.clone(),
            event_id: r.get_ref().event_id.clone(),
            section_id: section,
            seat_ids: free[..quantity].to_vec(),
            request_id: String::new(),
            presale_code: String::new(),
            accept_similar: false,
        });
        *claim.metadata_mut() = r.metadata().clone();
        let hold = self.claim_seats(claim).await?.into_inner().hold;
        Ok(Response::new(ho::ClaimBestAvailableResponse {
            hold,
            waiting: None,
        }))
    }
} unimplemented {
    get_hold(ho::GetHoldRequest) -> ho::GetHoldResponse;
    list_holds(ho::ListHoldsRequest) -> ho::ListHoldsResponse;
    leave_returns_queue(ho::LeaveReturnsQueueRequest) -> ho::LeaveReturnsQueueResponse;
    release_hold(ho::ReleaseHoldRequest) -> ho::ReleaseHoldResponse;
    extend_hold(ho::ExtendHoldRequest) -> ho::ExtendHoldResponse;
    start_payment(ho::StartPaymentRequest) -> ho::StartPaymentResponse;
    confirm_hold(ho::ConfirmHoldRequest) -> ho::ConfirmHoldResponse;
    block_seats(ho::BlockSeatsRequest) -> ho::BlockSeatsResponse;
    claim_comp(ho::ClaimCompRequest) -> ho::ClaimCompResponse;
    release_seats(ho::ReleaseSeatsRequest) -> ho::ReleaseSeatsResponse;
    sweep_expired(ho::SweepExpiredRequest) -> ho::SweepExpiredResponse;
    create_channel(ho::CreateChannelRequest) -> ho::CreateChannelResponse;
    assign_channel_seats(ho::AssignChannelSeatsRequest) -> ho::AssignChannelSeatsResponse;
    create_presale_codes(ho::CreatePresaleCodesRequest) -> ho::CreatePresaleCodesResponse;
    release_channel(ho::ReleaseChannelRequest) -> ho::ReleaseChannelResponse;
    list_channels(ho::ListChannelsRequest) -> ho::ListChannelsResponse;
});

service!(Payments {
    async fn confirm(&self, r: Request<pa::ConfirmRequest>) -> Result<Response<pa::ConfirmResponse>, Status> {
        let fan = self.fan(&r)?;
        let key = r.into_inner().hold_key;
        let mut state = self.lock();
        if let Some(order) = state.orders.get(&key) {
            return Ok(Response::new(pa::ConfirmResponse { order: Some(order.clone()) }));
        }
        let Some(hold) = state.holds.get(&key).filter(|h| h.fan == fan) else {
            return Err(error_status(Code::NotFound, Reason::HoldNotFound, "no hold", []));
        };
        let alive = hold.expires > Instant::now();
        if !alive && self.late == Late::Reject {
            return Err(error_status(Code::FailedPrecondition, Reason::HoldExpired, "expired", []));
        }
        let section = hold.section;
        let seats = hold.seats.clone();
        state.charges += 1;
        let mut order = pa::Order {
            order_id: format!("order-{key}"),
            hold_key: key.clone(),
            fan_id: fan,
            ..Default::default()
        };
        if alive {
            if let Some(h) = state.holds.get_mut(&key) {
                h.booked = true;
            }
            order.status = pa::OrderStatus::Paid as i32;
            order.tickets = seats
                .iter()
                .map(|&seat_id| pa::Ticket { seat_id, section_id: section, ..Default::default() })
                .collect();
        } else {
            order.status = pa::OrderStatus::Refunded as i32;
            order.refund = Some(pa::Refund {
                reason: pa::RefundReason::HoldExpired as i32,
                ..Default::default()
            });
        }
        state.orders.insert(key, order.clone());
        Ok(Response::new(pa::ConfirmResponse { order: Some(order) }))
    }

    async fn get_order(&self, r: Request<pa::GetOrderRequest>) -> Result<Response<pa::GetOrderResponse>, Status> {
        self.fan(&r)?;
        let Some(pa::get_order_request::Key::HoldKey(key)) = r.into_inner().key else {
            return Err(Status::invalid_argument("key"));
        };
        let order = self.lock().orders.get(&key).cloned();
        order
            .map(|o| Response::new(pa::GetOrderResponse { order: Some(o) }))
            .ok_or_else(|| error_status(Code::NotFound, Reason::OrderNotFound, "no order", []))
    }
} unimplemented {
    list_orders(pa::ListOrdersRequest) -> pa::ListOrdersResponse;
    refund_order(pa::RefundOrderRequest) -> pa::RefundOrderResponse;
    issue_comp(pa::IssueCompRequest) -> pa::IssueCompResponse;
    provider_notice(pa::ProviderNoticeRequest) -> pa::ProviderNoticeResponse;
    verify_ticket(pa::VerifyTicketRequest) -> pa::VerifyTicketResponse;
});

service!(BoxOffice {
    async fn import_venue(&self, r: Request<bo::ImportVenueRequest>) -> Result<Response<bo::ImportVenueResponse>, Status> {
        self.admin(&r)?;
        let sections = (1..=SECTIONS)
            .map(|s| bo::SectionSummary {
                section_id: s,
                code: format!("S{s}"),
                seat_count: (ROWS * PER_ROW) as u32,
                seats_by_category: [(category(s).to_owned(), (ROWS * PER_ROW) as u32)].into(),
                ..Default::default()
            })
            .collect();
        Ok(Response::new(bo::ImportVenueResponse {
            venue: Some(bo::Venue {
                venue_id: "venue-1".into(),
                name: r.into_inner().name,
                section_count: SECTIONS as u32,
                seat_count: SEATS as u32,
                sections,
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn create_event(&self, r: Request<bo::CreateEventRequest>) -> Result<Response<bo::CreateEventResponse>, Status> {
        self.admin(&r)?;
        let req = r.into_inner();
        let codes: Vec<&str> = req.price_categories.iter().map(|c| c.code.as_str()).collect();
        if codes != ["A", "B"] {
            return Err(Status::invalid_argument(format!("categories {codes:?}")));
        }
        let onsale = req
            .settings
            .as_ref()
            .and_then(|s| s.onsale_at)
            .and_then(|t| SystemTime::try_from(t).ok());
        self.lock().onsale = onsale;
        Ok(Response::new(bo::CreateEventResponse {
            event: Some(bo::Event { event_id: "ev-1".into(), venue_id: req.venue_id, ..Default::default() }),
        }))
    }

    async fn open_sale(&self, r: Request<bo::OpenSaleRequest>) -> Result<Response<bo::OpenSaleResponse>, Status> {
        self.admin(&r)?;
        Ok(Response::new(bo::OpenSaleResponse {
            event: Some(bo::Event { event_id: r.into_inner().event_id, ..Default::default() }),
            waiting_room: Some(bo::WaitingRoomPush {
                outcome: bo::PushOutcome::Delivered as i32,
                ..Default::default()
            }),
        }))
    }

    async fn get_sales_report(&self, r: Request<bo::GetSalesReportRequest>) -> Result<Response<bo::GetSalesReportResponse>, Status> {
        self.admin(&r)?;
        let state = self.lock();
        let now = Instant::now();
        let (mut held, mut sold) = (0u32, 0u32);
        for h in state.holds.values() {
            if h.booked {
                sold += h.seats.len() as u32;
            } else if h.expires > now {
                held += h.seats.len() as u32;
            }
        }
        let refunds = state
            .orders
            .values()
            .filter(|o| o.status == pa::OrderStatus::Refunded as i32)
            .map(|o| state.holds.get(&o.hold_key).map_or(0, |h| h.seats.len() as u32))
            .sum();
        let total = bo::ReportRow {
            key: "total".into(),
            seats: SEATS as u32,
            available: SEATS as u32 - held - sold,
            held,
            sold,
            refunds,
            ..Default::default()
        };
        Ok(Response::new(bo::GetSalesReportResponse { total: Some(total), ..Default::default() }))
    }

    async fn check_invariants(&self, r: Request<bo::CheckInvariantsRequest>) -> Result<Response<bo::CheckInvariantsResponse>, Status> {
        self.admin(&r)?;
        let state = self.lock();
        // Every seat's owner must list it (one active claim per seat).
        let violations = state
            .owner
            .iter()
            .filter(|(seat, key)| !state.holds.get(*key).is_some_and(|h| h.seats.contains(seat)))
            .map(|(seat, _)| bo::Violation {
                invariant: "two_active_claims".into(),
                description: format!("seat {seat}"),
                rows: vec![],
            })
            .collect();
        Ok(Response::new(bo::CheckInvariantsResponse {
            event_id: r.into_inner().event_id,
            violations,
            checked_at: None,
        }))
    }
} unimplemented {
    list_venues(bo::ListVenuesRequest) -> bo::ListVenuesResponse;
    get_venue(bo::GetVenueRequest) -> bo::GetVenueResponse;
    get_event(bo::GetEventRequest) -> bo::GetEventResponse;
    list_events(bo::ListEventsRequest) -> bo::ListEventsResponse;
    set_price_categories(bo::SetPriceCategoriesRequest) -> bo::SetPriceCategoriesResponse;
    start_presale(bo::StartPresaleRequest) -> bo::StartPresaleResponse;
    pause_sale(bo::PauseSaleRequest) -> bo::PauseSaleResponse;
    resume_sale(bo::ResumeSaleRequest) -> bo::ResumeSaleResponse;
    close_sale(bo::CloseSaleRequest) -> bo::CloseSaleResponse;
    set_admission_rate(bo::SetAdmissionRateRequest) -> bo::SetAdmissionRateResponse;
    block_seats(bo::BlockSeatsRequest) -> bo::BlockSeatsResponse;
    release_seats(bo::ReleaseSeatsRequest) -> bo::ReleaseSeatsResponse;
    issue_comp(bo::IssueCompRequest) -> bo::IssueCompResponse;
    refund_order(bo::RefundOrderRequest) -> bo::RefundOrderResponse;
    revoke_admission(bo::RevokeAdmissionRequest) -> bo::RevokeAdmissionResponse;
    get_waiting_list(bo::GetWaitingListRequest) -> bo::GetWaitingListResponse;
    get_sales_timeline(bo::GetSalesTimelineRequest) -> bo::GetSalesTimelineResponse;
    get_seat_history(bo::GetSeatHistoryRequest) -> bo::GetSeatHistoryResponse;
    cancel_event(bo::CancelEventRequest) -> bo::CancelEventResponse;
    get_cancellation(bo::GetCancellationRequest) -> bo::GetCancellationResponse;
    list_shards(bo::ListShardsRequest) -> bo::ListShardsResponse;
    move_section(bo::MoveSectionRequest) -> bo::MoveSectionResponse;
    top_sections(bo::TopSectionsRequest) -> bo::TopSectionsResponse;
    create_channel(ho::CreateChannelRequest) -> ho::CreateChannelResponse;
    assign_channel_seats(ho::AssignChannelSeatsRequest) -> ho::AssignChannelSeatsResponse;
    create_presale_codes(ho::CreatePresaleCodesRequest) -> ho::CreatePresaleCodesResponse;
    release_channel(ho::ReleaseChannelRequest) -> ho::ReleaseChannelResponse;
    list_channels(ho::ListChannelsRequest) -> ho::ListChannelsResponse;
});
