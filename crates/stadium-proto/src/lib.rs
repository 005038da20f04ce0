//! The stadium gRPC contracts (`proto/stadium/<service>/v1`) as Rust types, tonic
//! clients and servers, plus the encoded file descriptor set for gRPC reflection.
//!
//! Generated at build time from `proto/` with protox, so no system `protoc` is needed.
#![allow(missing_docs, clippy::all)]

/// Encoded `google.protobuf.FileDescriptorSet` of every stadium proto, for
/// `tonic_reflection`'s `register_encoded_file_descriptor_set`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/stadium_descriptor.bin"));

/// Shared types: money, paging.
pub mod common {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("stadium.common.v1");
    }
}

/// The waiting room's contract.
pub mod waiting_room {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("stadium.waiting_room.v1");
    }
}

/// The seat map's contract.
pub mod seat_map {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("stadium.seat_map.v1");
    }
}

/// The holds service's contract.
pub mod holds {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("stadium.holds.v1");
    }
}

/// The payments service's contract.
pub mod payments {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("stadium.payments.v1");
    }
}

/// The box office's contract.
pub mod box_office {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("stadium.box_office.v1");
    }
}
