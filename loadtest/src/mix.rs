//! Who the fans are: each fan's behaviour, seat count and arrival, drawn from the run's
//! seed and the fan's index alone, so a run is reproducible and fans can be planned
//! independently (no shared random stream between tasks).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::options::OnSaleOptions;

/// What a fan does once it holds seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Behaviour {
    /// Confirms and pays while the hold is alive.
    Pay,
    /// Walks away; the hold expires.
    Abandon,
    /// Waits past the hold's expiry, then confirms.
    PayLate,
    /// Sends two confirms at once.
    DoubleConfirm,
}

impl Behaviour {
    /// Every behaviour, in the order of [`crate::BehaviourShares::normalised`].
    pub const ALL: [Behaviour; 4] = [
        Behaviour::Pay,
        Behaviour::Abandon,
        Behaviour::PayLate,
        Behaviour::DoubleConfirm,
    ];
}

/// One fan of a run, fixed before the run starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FanPlan {
    /// 0-based index in the run.
    pub index: u32,
    /// The fan id its session token carries: `lt<seed>-<index>`.
    pub fan_id: String,
    /// What it does with a hold.
    pub behaviour: Behaviour,
    /// Seats wanted together, 1..=4.
    pub seats: u32,
    /// Joins before the on-sale time.
    pub pre_queue: bool,
    /// Where in its arrival window it joins, 0..1 (pre-queue: the time before opening;
    /// others: the arrival window after opening).
    pub arrival: f64,
    /// Seed of the fan's own later choices (section, suggestion, think times).
    pub rng_seed: u64,
}

/// SplitMix64 finaliser: spreads consecutive indices over the whole seed space.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Index of the weight `roll` (0..1) falls into, over weights summing to `total`.
fn pick_weighted(weights: &[f64], roll: f64) -> usize {
    let total: f64 = weights.iter().sum();
    let mut target = roll * total;
    for (i, w) in weights.iter().enumerate() {
        if target < *w {
            return i;
        }
        target -= w;
    }
    // Rounding left the roll past the end: the last non-zero weight.
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
}

/// The plan of fan `index` under `options`.
///
/// Errors: [`crate::LoadtestError::InvalidOption`] for invalid shares.
pub fn plan_fan(options: &OnSaleOptions, index: u32) -> Result<FanPlan> {
    let shares = options.shares.normalised()?;
    Ok(plan_with(options, &shares, index))
}

fn plan_with(options: &OnSaleOptions, shares: &[f64; 4], index: u32) -> FanPlan {
    let mut rng = StdRng::seed_from_u64(mix64(options.seed ^ mix64(u64::from(index))));
    let behaviour = Behaviour::ALL[pick_weighted(shares, rng.r#gen::<f64>())];
    let seats = pick_weighted(&options.seats_wanted, rng.r#gen::<f64>()) as u32 + 1;
    let pre_queue = rng.gen_bool(options.pre_queue_share.clamp(0.0, 1.0));
    let arrival = rng.r#gen::<f64>();
    FanPlan {
        index,
        fan_id: format!("lt{}-{index}", options.seed),
        behaviour,
        seats,
        pre_queue,
        arrival,
        rng_seed: rng.r#gen(),
    }
}

/// Plans of all `options.fans` fans, in index order.
///
/// Errors: [`crate::LoadtestError::InvalidOption`] when `options` do not validate.
pub fn plan_fans(options: &OnSaleOptions) -> Result<Vec<FanPlan>> {
    options.validate()?;
    let shares = options.shares.normalised()?;
    Ok((0..options.fans)
        .map(|i| plan_with(options, &shares, i))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn options(seed: u64, fans: u32) -> OnSaleOptions {
        OnSaleOptions {
            seed,
            fans,
            ..OnSaleOptions::default()
        }
    }

    #[test]
    fn same_seed_same_fans() {
        assert_eq!(
            plan_fans(&options(7, 500)).unwrap(),
            plan_fans(&options(7, 500)).unwrap()
        );
        assert_ne!(
            plan_fans(&options(7, 500)).unwrap(),
            plan_fans(&options(8, 500)).unwrap()
        );
        // A fan's plan does not depend on how many fans there are.
        assert_eq!(
            plan_fans(&options(7, 10)).unwrap()[9],
            plan_fans(&options(7, 500)).unwrap()[9]
        );
    }

    #[test]
    fn behaviours_match_the_shares() {
        let opts = options(42, 20_000);
        let plans = plan_fans(&opts).unwrap();
        let mut counts: HashMap<Behaviour, usize> = HashMap::new();
        for p in &plans {
            *counts.entry(p.behaviour).or_default() += 1;
        }
        let shares = opts.shares.normalised().unwrap();
        for (b, share) in Behaviour::ALL.iter().zip(shares) {
            let got = counts.get(b).copied().unwrap_or(0) as f64 / plans.len() as f64;
            assert!((got - share).abs() < 0.01, "{b:?}: {got} vs {share}");
        }
        let pre = plans.iter().filter(|p| p.pre_queue).count() as f64 / plans.len() as f64;
        assert!((pre - opts.pre_queue_share).abs() < 0.01, "pre-queue {pre}");
        assert!(plans.iter().all(|p| (1..=4).contains(&p.seats)));
        assert!(plans.iter().all(|p| (0.0..1.0).contains(&p.arrival)));
    }

    #[test]
    fn a_zero_share_is_never_drawn() {
        let mut opts = options(3, 5_000);
        opts.shares.pay_late = 0.0;
        opts.seats_wanted = [0.0, 1.0, 0.0, 0.0];
        let plans = plan_fans(&opts).unwrap();
        assert!(plans.iter().all(|p| p.behaviour != Behaviour::PayLate));
        assert!(plans.iter().all(|p| p.seats == 2));
    }

    #[test]
    fn weighted_pick_covers_the_edges() {
        assert_eq!(pick_weighted(&[1.0, 0.0, 1.0], 0.0), 0);
        assert_eq!(pick_weighted(&[1.0, 0.0, 1.0], 0.75), 2);
        assert_eq!(pick_weighted(&[1.0, 0.0, 1.0, 0.0], 1.0), 2);
    }
}
