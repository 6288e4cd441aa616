//! Random loss models: none, Bernoulli, and the two-state Gilbert–Elliott chain.
//!
//! Gilbert–Elliott (E. N. Gilbert, "Capacity of a burst-noise channel", Bell Syst. Tech. J. 1960;
//! E. O. Elliott, "Estimates of error rates for codes on burst-noise channels", 1963), applied per
//! packet as in netem's `loss gemodel p r 1-h 1-k`: the chain is in state Good or Bad; a packet is
//! lost with probability `loss_good` or `loss_bad` according to the current state, and then the
//! chain moves Good→Bad with probability `p_good_to_bad`, Bad→Good with `p_bad_to_good`.
//!
//! Analytic values used by the tests: the stationary probability of Bad is
//! π_B = p_gb / (p_gb + p_bg), the mean loss rate is π_G·loss_good + π_B·loss_bad, and a sojourn in
//! Bad lasts 1 / p_bg packets on average (geometric), so with loss_good = 0 and loss_bad = 1 (the
//! plain Gilbert model) the mean loss burst is 1 / p_bg packets.

use crate::rng::{Chance, Rng};

/// How a link loses packets at random (on top of queue overflow and outages).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Two-state Markov chain, stepped once per packet (see the module doc).
    GilbertElliott { p_good_to_bad: f64, p_bad_to_good: f64, loss_good: f64, loss_bad: f64 },
}

impl LossModel {
    /// A Bernoulli model, or `None` when `p` is 0.
    pub fn bernoulli(p: f64) -> LossModel {
        if p == 0.0 {
            LossModel::None
        } else {
            LossModel::Bernoulli { p }
        }
    }

    /// The long-run fraction of packets lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } => {
                let total = p_good_to_bad + p_bad_to_good;
                if total == 0.0 {
                    // The chain never moves; it starts in Good (see `LossState::new`).
                    return loss_good;
                }
                let bad = p_good_to_bad / total;
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }

    /// Why the parameters are unusable, if they are: every probability must lie in [0, 1].
    pub fn validate(&self) -> Result<(), String> {
        let check = |name: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("{name} = {p} is not a probability in [0, 1]"))
            }
        };
        match *self {
            LossModel::None => Ok(()),
            LossModel::Bernoulli { p } => check("loss", p),
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } => {
                check("p_good_to_bad", p_good_to_bad)?;
                check("p_bad_to_good", p_bad_to_good)?;
                check("loss_good", loss_good)?;
                check("loss_bad", loss_bad)
            }
        }
    }
}

/// A loss model with its state and precomputed thresholds, owned by one link direction.
#[derive(Debug, Clone)]
pub(crate) struct LossState {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    None,
    Bernoulli(Chance),
    GilbertElliott { bad: bool, to_bad: Chance, to_good: Chance, loss_good: Chance, loss_bad: Chance },
}

impl LossState {
    /// The Gilbert–Elliott chain starts in its stationary distribution (drawn from `rng`), so a
    /// short run sees the configured mean from its first packet.
    pub(crate) fn new(model: &LossModel, rng: &mut Rng) -> LossState {
        let kind = match *model {
            LossModel::None => Kind::None,
            LossModel::Bernoulli { p } => {
                if p <= 0.0 {
                    Kind::None
                } else {
                    Kind::Bernoulli(Chance::new(p))
                }
            }
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } => {
                let total = p_good_to_bad + p_bad_to_good;
                let stationary_bad = if total > 0.0 { p_good_to_bad / total } else { 0.0 };
                Kind::GilbertElliott {
                    bad: rng.chance(Chance::new(stationary_bad)),
                    to_bad: Chance::new(p_good_to_bad),
                    to_good: Chance::new(p_bad_to_good),
                    loss_good: Chance::new(loss_good),
                    loss_bad: Chance::new(loss_bad),
                }
            }
        };
        LossState { kind }
    }

    /// Decide the fate of one packet and step the chain.
    #[inline]
    pub(crate) fn lose(&mut self, rng: &mut Rng) -> bool {
        match &mut self.kind {
            Kind::None => false,
            Kind::Bernoulli(p) => rng.chance(*p),
            Kind::GilbertElliott { bad, to_bad, to_good, loss_good, loss_bad } => {
                let lost = rng.chance(if *bad { *loss_bad } else { *loss_good });
                let flip = rng.chance(if *bad { *to_good } else { *to_bad });
                if flip {
                    *bad = !*bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_loss_formulas() {
        assert_eq!(LossModel::None.mean_loss(), 0.0);
        assert_eq!(LossModel::bernoulli(0.02).mean_loss(), 0.02);
        let ge = LossModel::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.09,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!((ge.mean_loss() - 0.1).abs() < 1e-12);
        assert_eq!(LossModel::bernoulli(0.0), LossModel::None);
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let err = LossModel::Bernoulli { p: 1.5 }.validate().unwrap_err();
        assert!(err.contains("loss = 1.5"), "{err}");
        let ge = LossModel::GilbertElliott {
            p_good_to_bad: 0.1,
            p_bad_to_good: -0.2,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!(ge.validate().unwrap_err().contains("p_bad_to_good"));
    }
}
