//! The reconciler converges: it finds a charge that landed after it gave a payment up,
//! with no notice and no confirm to tell it, and payments it cannot finish yet never
//! keep it from the others.

use payments::provider::sim::Faults;
use stadium_kit::Reason;
use tonic::Code;

use crate::support::{Stack, confirm_with, reason};

/// Makes every scheduled visit due now, as if the backoff had passed.
async fn visits_due(stack: &Stack) {
    sqlx::query("UPDATE payments.payments SET reconcile_at = now()")
        .execute(stack.pool())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_charge_landing_after_the_reconciler_gave_up_is_found_without_a_notice() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    // The charge waits at the provider while the reconciler gives the payment up; then
    // it lands, and the confirm's answer is lost: nobody tells us.
    stack.sim.set_faults(Faults {
        timeout_after_charge: 1,
        ..Faults::default()
    });
    stack.sim.close_gate();
    let confirming = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session("fan-a"),
        key.clone(),
        "tok_visa",
    ));
    stack.sim.charge_waiting().await;
    sqlx::query(
        "UPDATE payments.payments SET created_at = now() - interval '11 minutes' \
         WHERE hold_key = $1::uuid",
    )
    .bind(&key)
    .execute(stack.pool())
    .await
    .unwrap();
    stack.lapse_leases().await;
    assert_eq!(stack.core().reconcile_once(100).await.unwrap().failed, 1);
    stack.sim.open_gate();
    let lost = confirming.await.unwrap().unwrap_err();
    assert_eq!(
        reason(&lost, Code::Unavailable),
        Reason::ProviderUnavailable
    );
    assert_eq!(stack.payment(&key).await.unwrap().0, "failed");
    assert_eq!(
        stack.charges_of_hold(&key),
        1,
        "charged, and recorded as failed"
    );

    // Its next visit asks the provider again and books it.
    visits_due(&stack).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.captured, 1, "{report:?}");
    assert_eq!(stack.payment(&key).await.unwrap().0, "captured");
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn payments_that_cannot_finish_do_not_starve_the_others() {
    const STUCK: usize = 30;
    let stack = Stack::start().await;
    let event = stack.event().await;
    // Payments with no charge at the provider, too young to give up: each visit leaves
    // them pending. They were touched first, so an order by last change puts them first.
    for i in 0..STUCK {
        sqlx::query(
            "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, \
                 amount_minor, currency, status, updated_at) \
             VALUES (gen_random_uuid(), gen_random_uuid(), $1::bigint, $2, 100, 'EUR', \
                 'pending', now() - interval '1 hour')",
        )
        .bind(&event)
        .bind(format!("stuck-{i}"))
        .execute(stack.pool())
        .await
        .unwrap();
    }
    // One payment the reconciler can finish: charged, the answer lost.
    let key = stack
        .charged_answer_lost("fan-a", &event, stack.seats[0])
        .await;

    // Passes smaller than the stuck ones: the first visits only stuck payments, which
    // then wait their backoff; a later pass reaches the one that can finish.
    let batch = i64::try_from(STUCK).unwrap() - 5;
    let first = stack.core().reconcile_once(batch).await.unwrap();
    assert_eq!(first.captured, 0, "{first:?}");
    let mut passes = 1;
    while stack.payment(&key).await.unwrap().0 != "captured" {
        passes += 1;
        assert!(passes <= 3, "the finishable payment was starved");
        stack.core().reconcile_once(batch).await.unwrap();
    }
    sqlx::query("DELETE FROM payments.payments WHERE fan_id LIKE 'stuck-%'")
        .execute(stack.pool())
        .await
        .unwrap();
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_pending_payment_is_visited_again_within_seconds_however_often_it_failed() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    // Pending with no charge at the provider, young: every visit leaves it pending.
    // Its hold's payment window runs meanwhile, so no visit may be backed off past it.
    sqlx::query(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, \
             amount_minor, currency, status) \
         VALUES (gen_random_uuid(), gen_random_uuid(), $1::bigint, 'waiting-fan', 100, 'EUR', \
             'pending')",
    )
    .bind(&event)
    .execute(stack.pool())
    .await
    .unwrap();
    for _ in 0..8 {
        visits_due(&stack).await;
        let report = stack.core().reconcile_once(100).await.unwrap();
        assert_eq!(report.skipped, 1, "{report:?}");
    }
    // Eight visits would back off to 5 s × 2^7; a pending payment comes back after 5 s.
    let (visits, next_within_base): (i32, bool) = sqlx::query_as(
        "SELECT reconcile_visits, reconcile_at <= now() + interval '5 seconds' \
         FROM payments.payments WHERE fan_id = 'waiting-fan'",
    )
    .fetch_one(stack.pool())
    .await
    .unwrap();
    assert_eq!(visits, 8);
    assert!(next_within_base, "a pending payment was backed off");
    stack.stop().await;
}

/// Two reconciler passes at once (two replicas), each visiting its payments up to 16 at
/// a time, over a dozen payments charged with the answer lost: every one is captured by
/// exactly one visit, with one charge and its tickets, none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_visits_capture_each_charged_payment_once() {
    const PAID: usize = 12;
    let stack = Stack::start().await;
    let event = stack.event().await;
    let mut keys = Vec::new();
    for i in 0..PAID {
        keys.push(
            stack
                .charged_answer_lost(&format!("fan-{i}"), &event, stack.seats[i])
                .await,
        );
    }
    stack.lapse_leases().await;
    let (a, b) = tokio::join!(
        stack.core().reconcile_once(100),
        stack.core().reconcile_once(100)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.captured + b.captured, PAID as u32, "{a:?} {b:?}");
    assert_eq!((a.errors, b.errors), (0, 0), "{a:?} {b:?}");
    for key in &keys {
        assert_eq!(stack.payment(key).await.unwrap().0, "captured");
        assert_eq!(stack.charges_of_hold(key), 1);
    }
    stack.assert_consistent().await;
    stack.stop().await;
}
