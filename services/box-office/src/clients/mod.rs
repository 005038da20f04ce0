//! Calls to other services (`stadium_kit::outbound`): holds and payments for inventory
//! changes with the caller's token ([`upstream`]); the waiting room, as the box office's
//! service identity, for sale changes ([`push`]) and seat counts ([`seat_report`]).

pub mod push;
pub mod seat_report;
pub mod upstream;
