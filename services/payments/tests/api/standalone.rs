//! The simulated provider in its own server, reached over gRPC: the same flow and the
//! same recovery when its faults are set remotely and its notices fetched from it.

use stadium_kit::Reason;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use stadium_proto::payments::v1::{
    OrderStatus, SimFaults, SimLedgerRequest, SimLookupRequest, sim_lookup_response,
};
use tonic::Code;

use crate::support::{Options, Stack, reason};

#[tokio::test]
async fn payments_charges_through_the_standalone_provider_and_recovers_from_its_faults() {
    let stack = Stack::start_with(Options {
        remote_provider: true,
        ..Options::default()
    })
    .await;
    let mut provider = SimulatedProviderClient::new(stack.provider_channel.clone().unwrap());
    let event = stack.event().await;

    let paid = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let order = stack.confirm("fan-a", &paid, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);

    // An outage: nothing charged, the payment stays pending, a later retry pays.
    let retried = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    provider
        .set_faults(SimFaults {
            unavailable: true,
            ..SimFaults::default()
        })
        .await
        .unwrap();
    let err = stack
        .confirm("fan-b", &retried, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::Unavailable), Reason::ProviderUnavailable);
    provider.set_faults(SimFaults::default()).await.unwrap();
    let nothing = provider
        .lookup(SimLookupRequest {
            idempotency_key: retried.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(nothing.record.is_none());
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(
        report.skipped, 1,
        "no charge yet, not abandoned: {report:?}"
    );
    let order = stack.confirm("fan-b", &retried, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);

    // A timeout after charging, finished by the provider's notice fetched from it.
    let noticed = stack.claim("fan-c", &event, &[stack.seats[2]]).await;
    provider
        .set_faults(SimFaults {
            timeout_after_charge: 1,
            ..SimFaults::default()
        })
        .await
        .unwrap();
    let err = stack
        .confirm("fan-c", &noticed, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::Unavailable), Reason::ProviderUnavailable);
    let notice = provider
        .success_notice(SimLookupRequest {
            idempotency_key: noticed.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    for _ in 0..2 {
        let ack = stack
            .client()
            .provider_notice(notice.clone())
            .await
            .unwrap()
            .into_inner();
        assert!(ack.acknowledged);
    }
    assert_eq!(stack.payment(&noticed).await.unwrap().0, "captured");

    let ledger = provider
        .ledger(SimLedgerRequest {})
        .await
        .unwrap()
        .into_inner()
        .entries;
    let charged = ledger
        .iter()
        .filter(|e| {
            matches!(
                e.record.as_ref().and_then(|r| r.record.as_ref()),
                Some(sim_lookup_response::Record::Charge(c)) if c.succeeded
            )
        })
        .count();
    assert_eq!(charged, 3);
    stack.assert_consistent().await;
    stack.stop().await;
}
