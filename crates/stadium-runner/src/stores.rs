//! The stores a run uses: the given PostgreSQL and Redis, or private ones started from
//! the machine's binaries; migrated, with a Redis key prefix of their own. Shards of
//! the holds (more PostgreSQL databases) are given as URLs or started privately too.

use anyhow::Context;
use stadium_db::ShardUrl;
use stadium_localstack::LocalStack;

/// The shards a run uses besides the main database.
#[derive(Debug, Clone, Default)]
pub enum ShardStores {
    /// None: every section on the main database.
    #[default]
    None,
    /// These, by name.
    Given(Vec<ShardUrl>),
    /// This many private PostgreSQL servers, named `s1`, `s2`, ….
    Private(usize),
}

/// The stores of one run.
pub struct Stores {
    /// The PostgreSQL URL in use.
    pub database_url: String,
    /// The Redis URL in use.
    pub redis_url: String,
    /// The waiting room's Redis key prefix for this database (`stadium:wr:<oid>:`).
    pub key_prefix: String,
    /// The private PostgreSQL/Redis, when one was started.
    pub local: Option<LocalStack>,
    /// The shards besides the main database (migrated), by name.
    pub shards: Vec<ShardUrl>,
    /// The private PostgreSQL servers of the shards, when started here.
    pub shard_stacks: Vec<LocalStack>,
}

impl Stores {
    /// Starts private stores for the URLs not given, and applies the migrations.
    ///
    /// # Errors
    /// A store that cannot start (the message names the package to install when a
    /// binary is missing), or a migration.
    pub async fn open(
        database_url: Option<String>,
        redis_url: Option<String>,
        shards: ShardStores,
    ) -> anyhow::Result<Self> {
        let local = if database_url.is_none() || redis_url.is_none() {
            // It logs where it runs; it is removed at exit (also on Ctrl-C, via stop or drop).
            Some(LocalStack::start().await?)
        } else {
            None
        };
        let database_url = database_url
            .or_else(|| local.as_ref().map(|l| l.database_url().to_owned()))
            .context("database URL")?;
        let redis_url = redis_url
            .or_else(|| local.as_ref().map(|l| l.redis_url().to_owned()))
            .context("redis URL")?;

        let pool = stadium_db::connect(&database_url, &Default::default())
            .await
            .context("connect to PostgreSQL")?;
        stadium_db::migrate(&pool)
            .await
            .context("apply migrations")?;
        // Event ids restart in a new database while Redis may keep an old queue: the
        // database's oid in the key prefix keeps the two from meeting.
        let database_oid = sqlx::query_scalar!(
            r#"SELECT oid::bigint AS "oid!" FROM pg_database WHERE datname = current_database()"#,
        )
        .fetch_one(&pool)
        .await
        .context("read the database's oid")?;
        pool.close().await;
        let (shards, shard_stacks) = open_shards(shards).await?;
        Ok(Self {
            database_url,
            redis_url,
            key_prefix: format!("stadium:wr:{database_oid}:"),
            local,
            shards,
            shard_stacks,
        })
    }
}

/// The shards of `stores`, started when private, each migrated and named.
async fn open_shards(stores: ShardStores) -> anyhow::Result<(Vec<ShardUrl>, Vec<LocalStack>)> {
    let (urls, stacks) = match stores {
        ShardStores::None => return Ok((Vec::new(), Vec::new())),
        ShardStores::Given(urls) => (urls, Vec::new()),
        ShardStores::Private(n) => {
            let mut urls = Vec::with_capacity(n);
            let mut stacks = Vec::with_capacity(n);
            for i in 1..=n {
                let stack = LocalStack::start_postgres()
                    .await
                    .with_context(|| format!("start the private PostgreSQL of shard s{i}"))?;
                urls.push(ShardUrl {
                    name: format!("s{i}"),
                    url: stack.database_url().to_owned(),
                });
                stacks.push(stack);
            }
            (urls, stacks)
        }
    };
    for shard in &urls {
        let pool = stadium_db::connect(&shard.url, &Default::default())
            .await
            .with_context(|| format!("connect to shard {}", shard.name))?;
        stadium_db::migrate(&pool)
            .await
            .with_context(|| format!("apply migrations to shard {}", shard.name))?;
        // Named before any service starts: once sections are placed on it, a database
        // keeps its name for good, and the sale places them as soon as its event exists.
        holds::shards::register(&pool, &shard.name)
            .await
            .with_context(|| format!("name the database of shard {}", shard.name))?;
        pool.close().await;
    }
    Ok((urls, stacks))
}
