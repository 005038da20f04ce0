//! Where the queue stood, as the box office keeps it (`catalog.queue_marks`): answers
//! arriving at once and out of order only ever raise the marks, decided by the
//! statement, so a late answer never lowers them.

use box_office::store::queue_marks::{self, QueueMarks};
use stadium_testkit::catalog;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn answers_at_once_and_out_of_order_only_raise_the_marks() {
    let db = stadium_testkit::fresh_database().await;
    let venue = catalog::venue(&db.pool).await;
    let event = catalog::event(&db.pool, venue, Default::default()).await;
    // 64 answers at once, in an order unrelated to their counters.
    let answers: Vec<QueueMarks> = (0..64u64)
        .map(|i| (i * 37) % 64)
        .map(|n| QueueMarks {
            admitted: n * 10,
            numbered: n * 10 + 5,
        })
        .collect();
    let mut writers = tokio::task::JoinSet::new();
    for seen in answers {
        let pool = db.pool.clone();
        writers.spawn(async move {
            let mut conn = pool.acquire().await.expect("connection");
            queue_marks::raise(&mut conn, event, seen)
                .await
                .expect("raise");
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("writer");
    }
    let mut conn = db.pool.acquire().await.unwrap();
    let top = QueueMarks {
        admitted: 630,
        numbered: 635,
    };
    assert_eq!(queue_marks::load(&mut conn, event).await.unwrap(), top);

    // Redis lost the queue: its next answer counts from zero. The marks stay.
    let after_loss = QueueMarks {
        admitted: 3,
        numbered: 40,
    };
    queue_marks::raise(&mut conn, event, after_loss)
        .await
        .unwrap();
    assert_eq!(queue_marks::load(&mut conn, event).await.unwrap(), top);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM catalog.queue_marks")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1, "one row per event");
}
