//! The private Redis Cluster against the real `redis-server` and `redis-cli`: three
//! masters with a replica each on loopback ports, every slot served, keys routed by
//! their hash tag, a coordinated failover that keeps the data, and nothing left
//! running or on disk after it stops; a missing `redis-cli` is named with its package.

use redis::AsyncCommands as _;
use stadium_localstack::{RedisCluster, RedisClusterOptions};

/// Whether a process with this pid is alive (not a zombie).
fn is_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_serves_every_slot_fails_over_and_stops_clean() {
    let cluster = RedisCluster::start()
        .await
        .unwrap_or_else(|error| panic!("a redis cluster from the installed binaries: {error}"));
    let pids = cluster.pids();
    assert_eq!(pids.len(), 6, "three masters and three replicas");
    let masters = cluster.masters().await.unwrap();
    assert_eq!(masters.len(), 3, "{masters:?}");
    let served: u32 = masters
        .iter()
        .flat_map(|m| &m.slots)
        .map(|&(first, last)| u32::from(last - first) + 1)
        .sum();
    assert_eq!(served, 16_384, "every slot has a master");
    for node in cluster.topology().await.unwrap() {
        assert!(node.url.starts_with("redis://127.0.0.1:"), "{node:?}");
    }

    // Keys sharing a hash tag share a slot, and live on the master serving it.
    let client = redis::cluster::ClusterClient::new(cluster.seed_urls()).unwrap();
    let mut conn = client.get_async_connection().await.unwrap();
    let slot = cluster.key_slot("{fans}:a").await.unwrap();
    assert_eq!(cluster.key_slot("{fans}:b").await.unwrap(), slot);
    let () = conn.set("{fans}:a", "1").await.unwrap();
    let () = conn.set("{fans}:b", "2").await.unwrap();
    let owner = cluster.master_of_slot(slot).await.unwrap();
    let mut direct = redis::Client::open(owner.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let here: Option<String> = direct.get("{fans}:b").await.unwrap();
    assert_eq!(here.as_deref(), Some("2"));

    // A coordinated failover: the replica takes the slots and the data.
    let promoted = cluster.fail_over(owner.port).await.unwrap();
    assert_ne!(promoted.port, owner.port);
    assert!(promoted.master && promoted.serves(slot), "{promoted:?}");
    let demoted = cluster
        .topology()
        .await
        .unwrap()
        .into_iter()
        .find(|node| node.port == owner.port)
        .unwrap();
    assert_eq!(demoted.master_id.as_deref(), Some(promoted.id.as_str()));
    let value: Option<String> = conn.get("{fans}:a").await.unwrap();
    assert_eq!(
        value.as_deref(),
        Some("1"),
        "the client follows the new master"
    );

    cluster.stop().await;
    assert!(pids.iter().all(|pid| !is_alive(*pid)), "every node stopped");
}

#[tokio::test]
async fn a_missing_redis_cli_is_named_with_its_package() {
    use std::os::unix::fs::PermissionsExt as _;
    // A `redis-server` but no `redis-cli`: refused before anything starts.
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("redis-server");
    std::fs::write(&server, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let options = RedisClusterOptions {
        search_dirs: Some(vec![dir.path().to_path_buf()]),
        ..RedisClusterOptions::default()
    };
    let error = RedisCluster::start_with(options)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("`redis-cli`"), "{error}");
    assert!(error.contains("apt-get install redis-server"), "{error}");
}
