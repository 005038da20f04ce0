//! The load generator's budget of RPCs in flight. It bounds what one process sends at
//! once (the machine is shared with the services), but a real fan's browser never
//! queues behind other fans: a fan paying for a live hold must reach payments while the
//! hold lives, so the calls that settle a payment do not wait for the budget (there is
//! at most one such call per fan holding seats). Nor does a shopping fan queue behind
//! the queued fans' joins and polls: with a million fans in the queue those would take
//! every place, so they have a budget of their own, of the same size. Time spent waiting
//! for either budget is reported on its own line, apart from the RPCs' latency.
//!
//! A shopping fan looks at the map and clicks in one turn ([`in_turn`]): the place is
//! taken before the look, and the reads and the claim of the turn run in it without
//! queueing again, so a fan never claims seats seen on a map that aged while the claim
//! waited for a place (a person clicks a moment after looking, whatever the crowd).

use std::future::Future;

use tokio::sync::{Semaphore, SemaphorePermit};

tokio::task_local! {
    /// Set while a fan's turn holds a place in the shoppers' budget.
    static TURN: ();
}

/// Runs `step` as one turn of a fan that already holds a place of [`Lane::Shared`]:
/// its shared calls take no further place.
pub(crate) async fn in_turn<T>(step: impl Future<Output = T>) -> T {
    TURN.scope((), step).await
}

/// Whether the running task is inside [`in_turn`].
fn turn_held() -> bool {
    TURN.try_with(|()| ()).is_ok()
}

/// Which calls wait for the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// An admitted fan's claims, reads and releases: within the shoppers' budget.
    Shared,
    /// A queued fan's join and polls: within the queue's budget.
    Queue,
    /// Calls that settle a payment (Confirm, reading the order back): never queued.
    Paying,
}

/// `total` calls of [`Lane::Shared`] in flight at most, and `total` of [`Lane::Queue`].
#[derive(Debug)]
pub(crate) struct RpcBudget {
    shared: Semaphore,
    queue: Semaphore,
}

impl RpcBudget {
    /// A budget of `total` calls in flight per lane (at least 1).
    pub fn new(total: usize) -> Self {
        Self {
            shared: Semaphore::new(total.max(1)),
            queue: Semaphore::new(total.max(1)),
        }
    }

    /// Waits for a permit of `lane` (none needed for [`Lane::Paying`], nor for
    /// [`Lane::Shared`] inside a turn that holds one); held until dropped.
    pub async fn acquire(&self, lane: Lane) -> Option<SemaphorePermit<'_>> {
        match lane {
            Lane::Shared if turn_held() => None,
            // The semaphore is never closed, so acquiring only waits.
            Lane::Shared => self.shared.acquire().await.ok(),
            Lane::Queue => self.queue.acquire().await.ok(),
            Lane::Paying => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn paying_calls_pass_a_budget_that_claims_have_used_up() {
        let budget = RpcBudget::new(4);
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(budget.acquire(Lane::Shared).await.unwrap());
        }
        assert!(
            budget.shared.try_acquire().is_err(),
            "the budget is used up"
        );
        tokio::time::timeout(
            std::time::Duration::from_secs(1),
            budget.acquire(Lane::Paying),
        )
        .await
        .expect("a paying call does not wait behind claims");
        drop(held);
        assert!(budget.acquire(Lane::Shared).await.is_some());
    }

    #[tokio::test]
    async fn calls_inside_a_turn_take_no_second_place() {
        let budget = RpcBudget::new(1);
        let turn = budget.acquire(Lane::Shared).await;
        assert!(turn.is_some(), "the turn holds the only place");
        let inner = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            in_turn(async { budget.acquire(Lane::Shared).await.is_none() }),
        )
        .await
        .expect("a call inside the turn does not wait for a second place");
        assert!(inner, "and takes none");
        assert!(
            budget.shared.try_acquire().is_err(),
            "outside the turn the budget is still used up"
        );
        drop(turn);
        assert!(budget.acquire(Lane::Shared).await.is_some());
    }

    #[tokio::test]
    async fn a_full_queue_does_not_hold_up_the_shoppers() {
        let budget = RpcBudget::new(2);
        let polls = [
            budget.acquire(Lane::Queue).await,
            budget.acquire(Lane::Queue).await,
        ];
        assert!(budget.queue.try_acquire().is_err(), "polls used their lane");
        let claim = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            budget.acquire(Lane::Shared),
        )
        .await
        .expect("a claim does not wait behind polls");
        assert!(claim.is_some());
        drop(polls);
    }
}
