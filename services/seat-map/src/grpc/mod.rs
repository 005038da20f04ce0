//! The tonic service: authenticate, convert the request into domain values (refusing
//! bad input with INVALID_ARGUMENT naming the field), call [`SeatMapService`], convert
//! the answer back.

mod convert;

use std::sync::Arc;
use std::time::SystemTime;

use stadium_proto::seat_map::v1::seat_map_server::SeatMap;
use stadium_proto::seat_map::v1::{
    GetAvailabilityRequest, GetAvailabilityResponse, GetLayoutRequest, GetLayoutResponse,
    SuggestSeatsRequest, SuggestSeatsResponse,
};
use stadium_tokens::FanSessionVerifier;
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::domain::EventId;
use crate::error::Error;
use crate::service::SeatMapService;

/// The `stadium.seat_map.v1.SeatMap` implementation.
#[derive(Debug, Clone)]
pub struct SeatMapApi {
    service: Arc<SeatMapService>,
    fans: Arc<FanSessionVerifier>,
}

impl SeatMapApi {
    /// Serves `service`, accepting fan sessions that `fans` verifies.
    pub fn new(service: Arc<SeatMapService>, fans: Arc<FanSessionVerifier>) -> Self {
        Self { service, fans }
    }

    /// Every call is a fan call: the fan session must verify (the seat map is public
    /// data, but the token keeps anonymous scrapers off the hot path).
    fn authenticate<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let token = stadium_kit::auth::bearer_token(request.metadata())?;
        self.fans
            .verify(token, SystemTime::now())
            .map_err(Error::from)?;
        Ok(())
    }
}

fn event_id(raw: &str) -> Result<EventId, Error> {
    EventId::try_from(raw).map_err(|problem| Error::invalid("event_id", problem))
}

#[tonic::async_trait]
impl SeatMap for SeatMapApi {
    #[instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_layout(
        &self,
        request: Request<GetLayoutRequest>,
    ) -> Result<Response<GetLayoutResponse>, Status> {
        self.authenticate(&request)?;
        let event = event_id(&request.get_ref().event_id)?;
        let layout = self.service.layout(event).await?;
        Ok(Response::new(GetLayoutResponse {
            layout: Some(convert::layout(&layout)),
        }))
    }

    #[instrument(skip_all, fields(event_id = %request.get_ref().event_id, section_id = request.get_ref().section_id))]
    async fn get_availability(
        &self,
        request: Request<GetAvailabilityRequest>,
    ) -> Result<Response<GetAvailabilityResponse>, Status> {
        self.authenticate(&request)?;
        let request = request.into_inner();
        let event = event_id(&request.event_id)?;
        let section = (request.section_id != 0).then_some(request.section_id);
        let (_, snapshots) = self.service.availability(event, section).await?;
        Ok(Response::new(GetAvailabilityResponse {
            sections: snapshots
                .iter()
                .map(|(id, s)| convert::section_availability(*id, s))
                .collect(),
            staleness_bound_ms: u64::try_from(self.service.staleness().as_millis())
                .unwrap_or(u64::MAX),
        }))
    }

    #[instrument(skip_all, fields(event_id = %request.get_ref().event_id, quantity = request.get_ref().quantity))]
    async fn suggest_seats(
        &self,
        request: Request<SuggestSeatsRequest>,
    ) -> Result<Response<SuggestSeatsResponse>, Status> {
        self.authenticate(&request)?;
        let request = request.into_inner();
        let event = event_id(&request.event_id)?;
        let query = convert::suggest_query(&request)?;
        let answer = self.service.suggest(event, &query).await?;
        Ok(Response::new(SuggestSeatsResponse {
            suggestions: answer.suggestions.iter().map(convert::suggestion).collect(),
            as_of: answer.as_of.map(prost_types::Timestamp::from),
        }))
    }
}
