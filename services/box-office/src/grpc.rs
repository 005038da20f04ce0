//! `stadium.box_office.v1.BoxOffice` over tonic. Every RPC answers `UNIMPLEMENTED`
//! (reason `NOT_IMPLEMENTED`) until issue 7 builds the service behind it.

use sqlx::PgPool;
use stadium_proto::box_office::v1::{
    BlockSeatsRequest, BlockSeatsResponse, CheckInvariantsRequest, CheckInvariantsResponse,
    CloseSaleRequest, CloseSaleResponse, CreateEventRequest, CreateEventResponse, GetEventRequest,
    GetEventResponse, GetSalesReportRequest, GetSalesReportResponse, GetSalesTimelineRequest,
    GetSalesTimelineResponse, GetVenueRequest, GetVenueResponse, ImportVenueRequest,
    ImportVenueResponse, IssueCompRequest, IssueCompResponse, ListEventsRequest,
    ListEventsResponse, ListVenuesRequest, ListVenuesResponse, OpenSaleRequest, OpenSaleResponse,
    PauseSaleRequest, PauseSaleResponse, RefundOrderRequest, RefundOrderResponse,
    ReleaseSeatsRequest, ReleaseSeatsResponse, ResumeSaleRequest, ResumeSaleResponse,
    SetAdmissionRateRequest, SetAdmissionRateResponse, SetPriceCategoriesRequest,
    SetPriceCategoriesResponse, box_office_server::BoxOffice,
};
use tonic::{Request, Response, Status};

use crate::error::Error;

/// The issue that builds the box-office handlers.
const ISSUE: u32 = 7;

/// The gRPC face of the box office.
#[derive(Debug, Clone)]
pub struct BoxOfficeService {
    // Opened at start when a database URL is given; the handlers of issue 7 use it.
    #[allow(dead_code)]
    db: Option<PgPool>,
}

impl BoxOfficeService {
    /// A service over `db` (`None`: no database configured).
    pub fn new(db: Option<PgPool>) -> Self {
        Self { db }
    }
}

fn unimplemented<T>(rpc: &'static str) -> Result<Response<T>, Status> {
    Err(Error::Unimplemented { rpc, issue: ISSUE }.into())
}

#[tonic::async_trait]
impl BoxOffice for BoxOfficeService {
    async fn import_venue(
        &self,
        _: Request<ImportVenueRequest>,
    ) -> Result<Response<ImportVenueResponse>, Status> {
        unimplemented("ImportVenue")
    }

    async fn list_venues(
        &self,
        _: Request<ListVenuesRequest>,
    ) -> Result<Response<ListVenuesResponse>, Status> {
        unimplemented("ListVenues")
    }

    async fn get_venue(
        &self,
        _: Request<GetVenueRequest>,
    ) -> Result<Response<GetVenueResponse>, Status> {
        unimplemented("GetVenue")
    }

    async fn create_event(
        &self,
        _: Request<CreateEventRequest>,
    ) -> Result<Response<CreateEventResponse>, Status> {
        unimplemented("CreateEvent")
    }

    async fn get_event(
        &self,
        _: Request<GetEventRequest>,
    ) -> Result<Response<GetEventResponse>, Status> {
        unimplemented("GetEvent")
    }

    async fn list_events(
        &self,
        _: Request<ListEventsRequest>,
    ) -> Result<Response<ListEventsResponse>, Status> {
        unimplemented("ListEvents")
    }

    async fn set_price_categories(
        &self,
        _: Request<SetPriceCategoriesRequest>,
    ) -> Result<Response<SetPriceCategoriesResponse>, Status> {
        unimplemented("SetPriceCategories")
    }

    async fn open_sale(
        &self,
        _: Request<OpenSaleRequest>,
    ) -> Result<Response<OpenSaleResponse>, Status> {
        unimplemented("OpenSale")
    }

    async fn pause_sale(
        &self,
        _: Request<PauseSaleRequest>,
    ) -> Result<Response<PauseSaleResponse>, Status> {
        unimplemented("PauseSale")
    }

    async fn resume_sale(
        &self,
        _: Request<ResumeSaleRequest>,
    ) -> Result<Response<ResumeSaleResponse>, Status> {
        unimplemented("ResumeSale")
    }

    async fn close_sale(
        &self,
        _: Request<CloseSaleRequest>,
    ) -> Result<Response<CloseSaleResponse>, Status> {
        unimplemented("CloseSale")
    }

    async fn set_admission_rate(
        &self,
        _: Request<SetAdmissionRateRequest>,
    ) -> Result<Response<SetAdmissionRateResponse>, Status> {
        unimplemented("SetAdmissionRate")
    }

    async fn block_seats(
        &self,
        _: Request<BlockSeatsRequest>,
    ) -> Result<Response<BlockSeatsResponse>, Status> {
        unimplemented("BlockSeats")
    }

    async fn release_seats(
        &self,
        _: Request<ReleaseSeatsRequest>,
    ) -> Result<Response<ReleaseSeatsResponse>, Status> {
        unimplemented("ReleaseSeats")
    }

    async fn issue_comp(
        &self,
        _: Request<IssueCompRequest>,
    ) -> Result<Response<IssueCompResponse>, Status> {
        unimplemented("IssueComp")
    }

    async fn refund_order(
        &self,
        _: Request<RefundOrderRequest>,
    ) -> Result<Response<RefundOrderResponse>, Status> {
        unimplemented("RefundOrder")
    }

    async fn get_sales_report(
        &self,
        _: Request<GetSalesReportRequest>,
    ) -> Result<Response<GetSalesReportResponse>, Status> {
        unimplemented("GetSalesReport")
    }

    async fn get_sales_timeline(
        &self,
        _: Request<GetSalesTimelineRequest>,
    ) -> Result<Response<GetSalesTimelineResponse>, Status> {
        unimplemented("GetSalesTimeline")
    }

    async fn check_invariants(
        &self,
        _: Request<CheckInvariantsRequest>,
    ) -> Result<Response<CheckInvariantsResponse>, Status> {
        unimplemented("CheckInvariants")
    }
}
