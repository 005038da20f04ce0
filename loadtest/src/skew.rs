//! Which section a fan tries: skewed toward the best sections, as real crowds are.
//!
//! Sections are ranked best first (by their best price category, then by the venue's
//! own order: lower sort order is nearer the stage or pitch). A section of rank `r`
//! is drawn with weight `1 / (r + 1)^skew` among those with enough free seats; inside
//! the section the seat map's best-view suggestion picks the front rows.

use rand::Rng;

/// A section the fan might try, as the (possibly stale) seat map shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The section's id.
    pub section_id: u64,
    /// 0 = best.
    pub rank: u32,
    /// Free seats in the latest snapshot.
    pub available: u32,
}

/// The weight of a section of `rank` under `skew`.
pub fn weight(rank: u32, skew: f64) -> f64 {
    (f64::from(rank) + 1.0).powf(-skew)
}

/// Draws a section with at least `quantity` free seats, skewed toward low ranks;
/// `None` when no candidate has that many.
pub fn pick_section<R: Rng + ?Sized>(
    rng: &mut R,
    candidates: &[Candidate],
    quantity: u32,
    skew: f64,
) -> Option<u64> {
    let fitting: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.available >= quantity.max(1))
        .collect();
    let total: f64 = fitting.iter().map(|c| weight(c.rank, skew)).sum();
    if fitting.is_empty() || total <= 0.0 {
        return None;
    }
    let mut target = rng.r#gen::<f64>() * total;
    for c in &fitting {
        let w = weight(c.rank, skew);
        if target < w {
            return Some(c.section_id);
        }
        target -= w;
    }
    fitting.last().map(|c| c.section_id)
}

/// Ranks sections best first: by the index of their best category (lower is better;
/// `None` = no known category, ranked last), then by their position in the venue.
/// Returns the rank of each input section, in input order.
pub fn rank_sections(best_category: &[Option<usize>]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..best_category.len()).collect();
    order.sort_by_key(|&i| (best_category[i].unwrap_or(usize::MAX), i));
    let mut ranks = vec![0; best_category.len()];
    for (rank, i) in order.into_iter().enumerate() {
        ranks[i] = rank as u32;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn candidates(n: u32, available: u32) -> Vec<Candidate> {
        (0..n)
            .map(|r| Candidate {
                section_id: 100 + u64::from(r),
                rank: r,
                available,
            })
            .collect()
    }

    #[test]
    fn better_sections_are_picked_more_often() {
        let mut rng = StdRng::seed_from_u64(9);
        let cands = candidates(10, 50);
        let mut hits = [0usize; 10];
        for _ in 0..20_000 {
            let id = pick_section(&mut rng, &cands, 2, 1.0).unwrap();
            hits[(id - 100) as usize] += 1;
        }
        assert!(
            hits[0] > hits[1] && hits[1] > hits[4] && hits[4] > hits[9],
            "{hits:?}"
        );
        // Rank 0 has weight 1 of H(10) ≈ 2.93: about 34 %.
        let first = hits[0] as f64 / 20_000.0;
        assert!((first - 1.0 / 2.928_968).abs() < 0.02, "{first}");
    }

    #[test]
    fn zero_skew_is_uniform() {
        let mut rng = StdRng::seed_from_u64(1);
        let cands = candidates(4, 10);
        let mut hits = [0usize; 4];
        for _ in 0..8_000 {
            hits[(pick_section(&mut rng, &cands, 1, 0.0).unwrap() - 100) as usize] += 1;
        }
        assert!(hits.iter().all(|h| (1_800..2_200).contains(h)), "{hits:?}");
    }

    #[test]
    fn full_sections_are_skipped() {
        let mut rng = StdRng::seed_from_u64(2);
        let mut cands = candidates(3, 1);
        cands[2].available = 4;
        for _ in 0..100 {
            assert_eq!(pick_section(&mut rng, &cands, 3, 2.0), Some(102));
        }
        assert_eq!(pick_section(&mut rng, &cands, 5, 2.0), None);
        assert_eq!(pick_section(&mut rng, &[], 1, 2.0), None);
    }

    #[test]
    fn ranks_follow_category_then_order() {
        assert_eq!(
            rank_sections(&[Some(2), Some(0), None, Some(0)]),
            vec![2, 0, 3, 1]
        );
    }
}
