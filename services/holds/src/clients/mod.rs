//! Calls to other services: the waiting room's published admission keys and
//! revocations, and reports of admissions used.

pub mod admission_use;
pub mod waiting_room;
