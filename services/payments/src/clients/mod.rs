//! Calls to other services, each with the service's own token, a deadline and the trace
//! context (`stadium_kit::outbound`): holds (start payment, book, release, comp) and the
//! waiting room (a fan's completion).

pub mod holds;
pub mod waiting_room;
