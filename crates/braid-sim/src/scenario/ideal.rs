//! The physical limit of a scenario's data direction: what a perfect transport could deliver,
//! Σ rateᵢ × (1 − pᵢ) over the forward links, averaged over time as links change and go dark.

use std::time::Duration;

use braid_proto::Instant;

use super::Scenario;
use braid_netem::link::LinkConfig;

impl Scenario {
    /// The ideal goodput in bit/s, averaged over `[0, over)`: at each instant every forward
    /// path carries rate × (1 − mean loss) (zero during an outage; scheduled changes applied),
    /// each flow its own paths and shared paths once, and the paths through a `[[bottleneck]]`
    /// together at most its rate, times its own (1 − loss). `over` of zero gives the value at
    /// time zero.
    pub fn ideal_goodput_bps(&self, over: Duration) -> f64 {
        let end = Instant::ZERO + over;
        // Instants where some forward link changes, within (0, end).
        let mut cuts: Vec<Instant> = self
            .paths
            .iter()
            .chain(&self.bottlenecks)
            .flat_map(|p| {
                let l = &p.forward;
                l.changes.iter().map(|c| c.at).chain(l.outages.iter().flat_map(|o| [o.start, o.end]))
            })
            .filter(|&t| t > Instant::ZERO && t < end)
            .collect();
        cuts.sort();
        cuts.dedup();
        if over.is_zero() {
            return self.ideal_goodput_bps_at(Instant::ZERO);
        }
        let mut total = 0.0;
        let mut from = Instant::ZERO;
        for to in cuts.into_iter().chain([end]) {
            total += self.ideal_goodput_bps_at(from) * (to - from).as_secs_f64();
            from = to;
        }
        total / over.as_secs_f64()
    }

    /// The ideal goodput at `at`, in bit/s (see [`ideal_goodput_bps`](Self::ideal_goodput_bps)).
    pub fn ideal_goodput_bps_at(&self, at: Instant) -> f64 {
        let flows = self.flows as f64;
        let mut through: Vec<f64> = vec![0.0; self.bottlenecks.len()];
        let mut total = 0.0;
        for path in &self.paths {
            let own = delivery_rate(&path.forward, at) * if path.shared { 1.0 } else { flows };
            match path.via.as_ref().and_then(|v| self.bottlenecks.iter().position(|b| b.name == *v)) {
                Some(b) => through[b] += own,
                None => total += own,
            }
        }
        for (b, carried) in self.bottlenecks.iter().zip(through) {
            let (rate, loss) = rate_and_loss(&b.forward, at);
            total += carried.min(rate) * (1.0 - loss);
        }
        total
    }
}

impl Scenario {
    /// The first instant after time zero at which a forward link (a path's or a bottleneck's)
    /// goes dark, if any: where a run's recovery from a path failure is measured from.
    pub fn first_outage(&self) -> Option<Instant> {
        self.paths
            .iter()
            .chain(&self.bottlenecks)
            .flat_map(|p| p.forward.outages.iter().map(|o| o.start))
            .filter(|&t| t > Instant::ZERO)
            .min()
    }
}

/// Rate and mean loss of `link` at `at` (changes applied in time order, as the link applies
/// them whatever their order in the file; rate zero in an outage).
fn rate_and_loss(link: &LinkConfig, at: Instant) -> (f64, f64) {
    let mut rate = link.rate_bps as f64;
    let mut loss = link.loss.mean_loss();
    let mut due: Vec<_> = link.changes.iter().filter(|c| c.at <= at).collect();
    due.sort_by_key(|c| c.at);
    for change in due {
        if let Some(r) = change.rate_bps {
            rate = r as f64;
        }
        if let Some(l) = &change.loss {
            loss = l.mean_loss();
        }
    }
    if link.outages.iter().any(|o| o.start <= at && at < o.end) {
        rate = 0.0;
    }
    (rate, loss)
}

fn delivery_rate(link: &LinkConfig, at: Instant) -> f64 {
    let (rate, loss) = rate_and_loss(link, at);
    rate * (1.0 - loss)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, "ideal.toml").unwrap().remove(0)
    }

    #[test]
    fn sums_paths_and_follows_changes_and_outages() {
        let s = scenario(
            r#"
transfer = 1
[[path]]
rate = "10Mbit/s"
rtt = "10ms"
loss = 0.1
[[path.forward.change]]
at = "10s"
loss = 0.5
[[path]]
rate = "20Mbit/s"
rtt = "10ms"
outages = [["5s", "15s"]]
"#,
        );
        assert!((s.ideal_goodput_bps(Duration::ZERO) - 29e6).abs() < 1.0);
        // 0–5 s: 9 + 20; 5–10 s: 9; 10–15 s: 5; 15–20 s: 5 + 20.
        let expected = (29.0 * 5.0 + 9.0 * 5.0 + 5.0 * 5.0 + 25.0 * 5.0) / 20.0 * 1e6;
        assert!((s.ideal_goodput_bps(Duration::from_secs(20)) - expected).abs() < 1.0);
        assert_eq!(s.ideal_goodput_bps_at(Instant::from_micros(12_000_000)), 5e6);
        assert_eq!(s.first_outage(), Some(Instant::from_micros(5_000_000)));
    }

    #[test]
    fn a_bottleneck_caps_the_paths_through_it() {
        let s = scenario(
            r#"
transfer = 1
flows = 2
[[bottleneck]]
name = "core"
rate = "10Mbit/s"
delay = "5ms"
loss = 0.1
[[path]]
rate = "8Mbit/s"
rtt = "10ms"
via = "core"
[[path]]
rate = "8Mbit/s"
rtt = "10ms"
via = "core"
[[path]]
rate = "1Mbit/s"
rtt = "10ms"
"#,
        );
        // min(4 × 8, 10) × 0.9 through the core, plus 2 flows × 1 on their own links.
        assert!((s.ideal_goodput_bps(Duration::from_secs(3)) - 11e6).abs() < 1.0);
    }
}
