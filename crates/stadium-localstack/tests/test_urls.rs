//! `test_urls` hands out working URLs and, without environment URLs, one shared stack.

use sqlx::Connection as _;
use stadium_localstack::{test_urls, try_test_urls};

#[tokio::test]
async fn test_urls_work_and_are_shared() {
    let first = test_urls().await;
    let second = try_test_urls().await.unwrap();
    assert_eq!(first, second);

    let mut connection = sqlx::PgConnection::connect(&first.database_url)
        .await
        .unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    assert_eq!(one, 1);
    let client = redis::Client::open(first.redis_url.as_str()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    assert_eq!(pong, "PONG");
}
