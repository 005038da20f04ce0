//! Compiles `proto/` with protox (pure Rust, no system `protoc`) and generates the
//! tonic clients and servers into `OUT_DIR`, together with the encoded file
//! descriptor set that gRPC reflection serves.

use std::{env, fs, path::PathBuf};

use prost::Message;

const PROTOS: &[&str] = &[
    "stadium/common/v1/common.proto",
    "stadium/waiting_room/v1/waiting_room.proto",
    "stadium/seat_map/v1/seat_map.proto",
    "stadium/holds/v1/holds.proto",
    "stadium/payments/v1/payments.proto",
    "stadium/box_office/v1/box_office.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let fds = protox::compile(PROTOS, [&root])?;
    let out = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out.join("stadium_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
