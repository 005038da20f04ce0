//! `sqlx::migrate!` embeds `migrations/` at compile time; without this, adding a
//! migration file would not rebuild the crate and the new migration would be missing
//! from the binary (as sqlx's documentation of the macro advises).

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
