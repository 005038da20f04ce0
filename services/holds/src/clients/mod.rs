//! Calls to other services: the waiting room's published admission keys.

pub mod waiting_room;
