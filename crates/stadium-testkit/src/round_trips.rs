//! Counting PostgreSQL round trips: a loopback proxy in front of the test server that
//! counts the client messages after which a client waits for the server's
//! ReadyForQuery — `Sync` in the extended query protocol, `Query` in the simple one
//! (PostgreSQL documentation, "Frontend/Backend Protocol", section "Message Flow").
//! A prepared statement run again is one Bind/Execute/Sync: one round trip.
//!
//! A Sync with nothing before it is a ping, counted apart: sqlx pings every connection
//! as it goes back to the pool (after the caller is done with it, so off the request's
//! path, but one more message exchange with the server per pool use).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::postgres::PgConnectOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The protocol 3.0 StartupMessage code; the SSL and GSS requests before it carry others.
const PROTOCOL_3: u32 = 196_608;

/// Round trips and pings seen so far.
#[derive(Debug, Default)]
struct Counts {
    statements: AtomicU64,
    pings: AtomicU64,
}

/// A counting proxy; stops when dropped.
#[derive(Debug)]
pub struct RoundTrips {
    url: String,
    count: Arc<Counts>,
    task: JoinHandle<()>,
}

impl RoundTrips {
    /// A proxy to the database at `database_url` (a TCP server; TLS is turned off on
    /// the proxied URL so the messages can be read).
    ///
    /// # Panics
    /// When the URL does not parse or no loopback port can be bound (test setup).
    pub async fn start(database_url: &str) -> Self {
        let options: PgConnectOptions = database_url.parse().expect("a PostgreSQL URL");
        let upstream = format!("{}:{}", options.get_host(), options.get_port());
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let port = listener.local_addr().expect("bound").port();
        let url = format!(
            "postgres://{}@127.0.0.1:{port}/{}?sslmode=disable",
            options.get_username(),
            options.get_database().unwrap_or("postgres")
        );
        let count = Arc::new(Counts::default());
        let task = tokio::spawn({
            let count = Arc::clone(&count);
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let count = Arc::clone(&count);
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect(&upstream).await {
                            relay(client, server, count).await;
                        }
                    });
                }
            }
        });
        Self { url, count, task }
    }

    /// The URL to give a service instead of the database's.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Statement round trips so far (a Query, or a Sync ending Parse/Bind/Execute),
    /// over every connection through the proxy.
    pub fn count(&self) -> u64 {
        self.count.statements.load(Ordering::SeqCst)
    }

    /// Pings so far (a Sync with nothing before it).
    pub fn pings(&self) -> u64 {
        self.count.pings.load(Ordering::SeqCst)
    }
}

impl Drop for RoundTrips {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn relay(client: TcpStream, server: TcpStream, count: Arc<Counts>) {
    let (client_read, client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let answers = tokio::spawn(async move {
        let mut client_write = client_write;
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    });
    let _ = requests(client_read, &mut server_write, &count).await;
    let _ = server_write.shutdown().await;
    let _ = answers.await;
}

/// Forwards the client's bytes as they come, counting each complete Sync or Query.
async fn requests(
    mut from: OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    count: &Counts,
) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut started = false;
    // A message other than Sync since the last Sync.
    let mut work = false;
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        pending.extend_from_slice(&chunk[..n]);
        loop {
            // Before the startup message: untyped messages (length, code, …).
            let (header, typed) = if started { (5, true) } else { (8, false) };
            if pending.len() < header {
                break;
            }
            let at = usize::from(typed);
            let length = u32::from_be_bytes([
                pending[at],
                pending[at + 1],
                pending[at + 2],
                pending[at + 3],
            ]) as usize
                + at;
            if pending.len() < length {
                break;
            }
            if typed {
                match pending[0] {
                    b'Q' => {
                        count.statements.fetch_add(1, Ordering::SeqCst);
                    }
                    b'S' if work => {
                        count.statements.fetch_add(1, Ordering::SeqCst);
                        work = false;
                    }
                    b'S' => {
                        count.pings.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => work = true,
                }
            } else if u32::from_be_bytes([pending[4], pending[5], pending[6], pending[7]])
                == PROTOCOL_3
            {
                started = true;
            }
            pending.drain(..length);
        }
        to.write_all(&chunk[..n]).await?;
    }
}
