//! Redis Cluster hash slots of the keys the store passes to its scripts.
//!
//! A Redis Cluster runs a script on the master that owns the slot of its keys, and
//! refuses a script whose keys span slots (`CROSSSLOT`). Each script therefore takes
//! every key it touches in `KEYS[]`, and all of them carry the same `{ev:<id>}` hash
//! tag. The test below calls every script the way the store does, records what is
//! sent, and checks both.

/// The Redis Cluster hash slot of `key` (0 to 16383): CRC16 (XMODEM) of the key's hash
/// tag (the text between the first `{` and the next `}`, when not empty) or of the
/// whole key, modulo 16384 (Redis Cluster specification, "Keys distribution model").
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16_xmodem(tagged.unwrap_or(key)) % 16_384
}

fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::key_slot;
    use crate::clock::ManualClock;
    use crate::domain::{EventId, FanId, Inventory};
    use crate::store::connection::Connection;
    use crate::store::connection::recorder::Recorder;
    use crate::store::{EventSettings, QueueFloor, RequestedState, Store, Target, scripts};

    #[test]
    fn slots_match_the_cluster_specification() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(crc16_check(), 0x31c3);
        assert_eq!(key_slot(b"foo"), 12_182);
        assert_eq!(key_slot(b"somekey"), 11_058);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(
            key_slot(b"foo{}{bar}"),
            key_slot(b"bar"),
            "an empty tag hashes all"
        );
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    fn crc16_check() -> u16 {
        super::crc16_xmodem(b"123456789")
    }

    /// Every store call that runs a script, for one event, against a recorder.
    async fn record_every_script(event: &EventId) -> Vec<Vec<Vec<u8>>> {
        let recorder = Recorder::default();
        let store = Store {
            conn: Connection::recorder(recorder.clone()),
            prefix: "stadium:wr:".into(),
            scripts: Arc::new(scripts::Scripts::new()),
            clock: Arc::new(ManualClock::starting_now()),
            joins: None,
            numbering: Default::default(),
        };
        let fan = FanId::parse("fan-1").unwrap();
        let settings = EventSettings {
            state: RequestedState::Open,
            onsale_ms: None,
            fans_per_minute: 60,
            active_fan_cap: 0,
            admission_ttl_ms: 60_000,
            floor: QueueFloor::default(),
            no_show_ms: 0,
            waiting_list_offer_ms: 60_000,
        };
        let inventory = Inventory {
            free_seats: 1,
            held_seats: 0,
            holds: 0,
            seats_per_fan_at_first: 1,
            as_of_ms: 1,
            covered_seats: 0,
        };
        // The recorder answers every command with an error: each call sends its
        // script once and gives up.
        let jtis = ["j".to_owned()];
        assert!(store.configure(event, &settings).await.is_err());
        assert!(store.snapshot(event).await.is_err());
        assert!(store.join(event, &fan).await.is_err());
        assert!(
            store
                .issue_admission(event, &fan, 1, "t", "j", 9)
                .await
                .is_err()
        );
        assert!(store.complete(event, &fan).await.is_err());
        assert!(store.set_rate(event, 60).await.is_err());
        assert!(store.report_inventory(event, &inventory, 1).await.is_err());
        assert!(store.revoke(event, Target::Fan(&fan)).await.is_err());
        let token = Target::Token {
            jti: "j",
            exp_ms: 9,
        };
        assert!(store.revoke(event, token).await.is_err());
        assert!(store.mark_used(event, &jtis).await.is_err());
        assert!(store.revocations(event, "", 0, 10).await.is_err());
        assert!(store.raise_numbering(event, &fan, 3).await.is_err());
        assert!(store.join_waiting_list(event, &fan).await.is_err());
        assert!(store.waiting_list_entry(event, &fan).await.is_err());
        assert!(
            store
                .store_offer_token(event, &fan, "j", 9, "t")
                .await
                .is_err()
        );
        assert!(store.waiting_list_stats(event).await.is_err());
        assert!(store.open(event).await.is_err());
        // Numbering reads the seed and the pre-queue first; its script gets the order.
        assert!(
            store
                .write_slice(event, 1, &["fan-1", "fan-2"])
                .await
                .is_err()
        );
        recorder.sent.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn every_script_declares_its_keys_and_they_share_the_event_slot() {
        let all = scripts::Scripts::new();
        let by_hash: BTreeMap<String, &'static str> = all
            .named()
            .into_iter()
            .map(|(name, script)| (script.get_hash().to_owned(), name))
            .collect();
        let mut slots_seen = BTreeMap::new();
        for id in ["1", "2", "77", "9223372036854775807"] {
            let event = EventId::parse(id).unwrap();
            let tag = format!("{{ev:{id}}}");
            let mut called = BTreeMap::new();
            for args in record_every_script(&event).await {
                if args.first().map(Vec::as_slice) != Some(b"EVALSHA") {
                    continue;
                }
                let hash = String::from_utf8(args[1].clone()).unwrap();
                let name = by_hash.get(&hash).copied().unwrap_or("an unknown script");
                let count: usize = std::str::from_utf8(&args[2]).unwrap().parse().unwrap();
                let keys = &args[3..3 + count];
                assert!(!keys.is_empty(), "{name} declares no key");
                let slot = key_slot(&keys[0]);
                for key in keys {
                    let text = String::from_utf8_lossy(key);
                    assert!(
                        text.contains(&tag),
                        "{name}: key {text} lacks the tag {tag}"
                    );
                    assert_eq!(key_slot(key), slot, "{name}: key {text} is in another slot");
                }
                assert_eq!(slot, key_slot(tag.as_bytes()), "{name} of event {id}");
                called.insert(name, count);
            }
            let missing: Vec<_> = by_hash
                .values()
                .filter(|name| !called.contains_key(*name))
                .collect();
            assert!(missing.is_empty(), "scripts never checked: {missing:?}");
            slots_seen.insert(key_slot(tag.as_bytes()), id);
        }
        assert_eq!(
            slots_seen.len(),
            4,
            "events spread over slots: {slots_seen:?}"
        );
    }
}
