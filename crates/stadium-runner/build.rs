//! Embeds the fan's page: lists every file of `web/dist` (the committed build of
//! `web/`) as `include_bytes!` entries in `OUT_DIR/page_assets.rs`, so the runner
//! serves the page from its own binary and needs no Node.js.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dist = manifest.join("../../web/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut list = Vec::new();
    files(&dist, &mut list)?;
    // Sorted, so the generated file does not depend on the directory's order.
    list.sort();
    let mut code = String::from("&[\n");
    for path in &list {
        println!("cargo:rerun-if-changed={}", path.display());
        let relative = path
            .strip_prefix(&dist)
            .expect("under dist")
            .to_string_lossy()
            .replace('\\', "/");
        let absolute = path.canonicalize()?;
        writeln!(
            code,
            "    ({:?}, include_bytes!({:?}).as_slice()),",
            format!("/{relative}"),
            absolute.display().to_string()
        )
        .expect("writing to a String");
    }
    code.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("page_assets.rs"), code)
}
