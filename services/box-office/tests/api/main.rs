//! The box office over real gRPC on a loopback port against a fresh PostgreSQL database
//! per test: each RPC's normal path, refusals that write nothing, pushes to a fake
//! waiting room, and the invariant canary on sales planted by SQL.

mod admissions;
mod canary;
mod cancellation;
mod events;
mod fake_room;
mod inventory;
mod push;
mod queue_marks;
mod resync;
mod scale;
mod seat_history;
mod seatsio;
mod section_load;
mod support;
mod upstream;
mod venues;
mod waiting_list;
