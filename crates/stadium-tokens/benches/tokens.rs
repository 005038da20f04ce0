//! Issue and verify cost per token kind, single-threaded, so "tokens per second per
//! core" is 1 / (time per iteration). Expect Ed25519 kinds at tens of µs and the HS256
//! queue ticket at a few µs, which is why the ticket checked on every poll is HMAC.
//! `verify` is a token's first verification (a fresh verifier each time, outside the
//! timing); `verify_kept` the same token again, answered from the verifier's cache.

use std::hint::black_box;
use std::time::SystemTime;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use stadium_tokens::{
    AdminIssuer, AdminVerifier, AdmissionIssuer, AdmissionVerifier, FanSessionIssuer,
    FanSessionVerifier, QueueTicketKeys, QueueTickets, Role, SigningKeyRing, audience,
};

const ISS: &str = "bench-issuer";

fn tokens(c: &mut Criterion) {
    let now = SystemTime::now();
    let ring = SigningKeyRing::generate("bench-1").expect("key");
    let keys = ring.verification_keys();

    let mut group = c.benchmark_group("tokens");
    group.throughput(Throughput::Elements(1));

    let fan = FanSessionIssuer::new(ring.clone(), ISS).expect("issuer");
    let fan_v = FanSessionVerifier::new(keys.clone(), ISS, audience::HOLDS).expect("verifier");
    let fan_t = fan.issue("fan-123456", now).expect("issue").token;
    group.bench_function("fan_session/issue", |b| {
        b.iter(|| fan.issue(black_box("fan-123456"), now))
    });
    group.bench_function("fan_session/verify", |b| {
        b.iter_batched(
            || FanSessionVerifier::new(keys.clone(), ISS, audience::HOLDS).expect("verifier"),
            |fresh| fresh.verify(black_box(&fan_t), now),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("fan_session/verify_kept", |b| {
        b.iter(|| fan_v.verify(black_box(&fan_t), now))
    });

    let tickets = QueueTickets::new(QueueTicketKeys::generate("q-1").expect("secret"));
    let ticket = tickets
        .issue("fan-123456", "event-1", 123_456, now)
        .expect("issue")
        .token;
    group.bench_function("queue_ticket/issue", |b| {
        b.iter(|| tickets.issue(black_box("fan-123456"), "event-1", 123_456, now))
    });
    group.bench_function("queue_ticket/verify", |b| {
        b.iter(|| tickets.verify(black_box(&ticket), now))
    });

    let adm = AdmissionIssuer::new(ring.clone(), ISS).expect("issuer");
    let adm_v = AdmissionVerifier::new(keys.clone(), ISS, audience::HOLDS).expect("verifier");
    let adm_t = adm
        .issue("fan-123456", "event-1", now)
        .expect("issue")
        .token;
    group.bench_function("admission/issue", |b| {
        b.iter(|| adm.issue(black_box("fan-123456"), "event-1", now))
    });
    group.bench_function("admission/verify", |b| {
        b.iter_batched(
            || AdmissionVerifier::new(keys.clone(), ISS, audience::HOLDS).expect("verifier"),
            |fresh| fresh.verify(black_box(&adm_t), now),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("admission/verify_kept", |b| {
        b.iter(|| adm_v.verify(black_box(&adm_t), now))
    });

    let admin = AdminIssuer::new(ring, ISS).expect("issuer");
    let admin_v = AdminVerifier::new(keys.clone(), ISS, audience::HOLDS).expect("verifier");
    let admin_t = admin
        .issue("payments", &[Role::Service], now)
        .expect("issue")
        .token;
    group.bench_function("admin/issue", |b| {
        b.iter(|| admin.issue(black_box("payments"), &[Role::Service], now))
    });
    group.bench_function("admin/verify", |b| {
        b.iter_batched(
            || AdminVerifier::new(keys.clone(), ISS, audience::HOLDS).expect("verifier"),
            |fresh| fresh.verify(black_box(&admin_t), now),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("admin/verify_kept", |b| {
        b.iter(|| admin_v.verify(black_box(&admin_t), now))
    });

    group.finish();
}

criterion_group!(benches, tokens);
criterion_main!(benches);
