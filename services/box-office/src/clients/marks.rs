//! Where each event's queue stood, as the waiting room's answers say: raised in
//! `catalog.queue_marks` from every configuration push and every seat report (about
//! once a second), so a queue the waiting room must create again after Redis lost its
//! data starts close to where it was and re-admits few numbers whose fans are gone.

use sqlx::PgPool;
use stadium_proto::waiting_room::v1::GetQueueStatsResponse;

use crate::store;

/// Raises `event_id`'s marks to the queue's counters in `stats` (an answer of the
/// waiting room). A failure is logged and left to the next answer: the marks only
/// bound how far a recreated queue falls back.
pub async fn record(pool: &PgPool, event_id: i64, stats: Option<&GetQueueStatsResponse>) {
    let Some(stats) = stats else {
        return;
    };
    let seen = store::queue_marks::QueueMarks {
        admitted: stats.admitted,
        numbered: stats.numbered,
    };
    let recorded = match pool.acquire().await {
        Ok(mut conn) => store::queue_marks::raise(&mut conn, event_id, seen)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(why) = recorded {
        tracing::warn!(event_id, why, "recording where the queue stood");
    }
}
