//! What an on-sale over the main database and shards `s1` and `s2` must leave: every
//! database checked, each shard sold seats and none twice, and nothing sold on the
//! main database (every section went to a shard).

use stadium_runner::onsale::DatabaseCheck;

/// Asserts the sale of `check` ran on shards `s1` and `s2`, not on the main database.
pub fn assert_sold_on_the_two_shards(check: &DatabaseCheck) {
    let names: Vec<&str> = check.shards.iter().map(|s| s.shard.as_str()).collect();
    assert_eq!(names, ["main", "s1", "s2"], "every database checked");
    for shard in &check.shards[1..] {
        assert!(shard.sold > 0, "shard {} sold nothing", shard.shard);
        assert_eq!(shard.claimed_twice, 0, "shard {}", shard.shard);
    }
    assert_eq!(
        check.shards[0].sold, 0,
        "the sections moved off the main database"
    );
}
