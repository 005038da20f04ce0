//! Restarts of the private servers, as the fault suite uses them: PostgreSQL comes
//! back on the same port with every committed row; Redis comes back on the same port
//! with its keys or empty, as asked.

use sqlx::Connection as _;
use stadium_localstack::{LocalStack, RedisRestart};

async fn get(url: &str, key: &str) -> Option<String> {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut connection)
        .await
        .unwrap()
}

async fn set(url: &str, key: &str, value: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query_async::<()>(&mut connection)
        .await
        .unwrap();
}

#[tokio::test]
async fn servers_restart_on_their_ports_keeping_or_losing_data_as_asked() {
    let mut stack = LocalStack::start().await.expect("a local stack");
    let (database_url, redis_url) = (
        stack.database_url().to_owned(),
        stack.redis_url().to_owned(),
    );

    let mut db = sqlx::PgConnection::connect(&database_url).await.unwrap();
    sqlx::raw_sql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)")
        .execute(&mut db)
        .await
        .unwrap();
    stack.restart_postgres().await.expect("postgres comes back");
    assert!(
        sqlx::query("SELECT 1").execute(&mut db).await.is_err(),
        "the old session survived a fast shutdown"
    );
    let mut db = sqlx::PgConnection::connect(&database_url).await.unwrap();
    let n: i32 = sqlx::query_scalar("SELECT n FROM kept")
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!(n, 7);
    db.close().await.unwrap();

    set(&redis_url, "queue", "ahead").await;
    stack
        .restart_redis(RedisRestart::KeepingData)
        .await
        .expect("redis comes back");
    assert_eq!(get(&redis_url, "queue").await.as_deref(), Some("ahead"));
    stack
        .restart_redis(RedisRestart::LosingData)
        .await
        .expect("redis comes back");
    assert_eq!(get(&redis_url, "queue").await, None);

    stack.stop().await;
}
