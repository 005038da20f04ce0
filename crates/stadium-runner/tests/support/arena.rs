//! The small venue of the end-to-end on-sales.

/// A 500-seat arena as a CSV manifest: 4 sections × 5 rows × 25 seats, the front two
/// rows of each section in category A.
pub fn arena_csv() -> tempfile::NamedTempFile {
    let mut csv = String::from("section,row,seat,category,x,y\n");
    for section in 1..=4 {
        for row in 1..=5 {
            for seat in 1..=25 {
                let category = if row <= 2 { "A" } else { "B" };
                let x = section * 40 + seat;
                let y = row * 2;
                csv.push_str(&format!("S{section},{row},{seat},{category},{x},{y}\n"));
            }
        }
    }
    let file = tempfile::Builder::new()
        .suffix(".csv")
        .tempfile()
        .expect("temp file");
    std::fs::write(file.path(), csv).expect("write manifest");
    file
}
