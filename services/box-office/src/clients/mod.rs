//! Calls to other services (`stadium_kit::outbound`): holds and payments for inventory
//! changes with the caller's token ([`upstream`]); the waiting room, as the box office's
//! service identity, for sale changes ([`push`]), seat counts ([`seat_report`]) and
//! every live event's configuration again each interval ([`resync`]); payments, as the
//! service identity, for the refunds of cancelled events ([`cancellation`]).

pub mod cancellation;
pub mod marks;
pub mod push;
pub mod resync;
pub mod seat_report;
pub mod upstream;
