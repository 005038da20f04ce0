//! The waiting room over real gRPC on loopback against real Redis, with several
//! service instances sharing one queue, a manual clock and test-unique key prefixes.

mod admission;
mod audit;
mod cluster;
mod configure;
mod helpers;
mod inventory;
mod join;
mod loss;
mod mode;
mod numbering;
mod refusals;
mod release;
mod rotation;
mod waiting_list;
