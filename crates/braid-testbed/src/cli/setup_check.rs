//! `--assert-setup`: what makes a run evidence of a broken testbed rather than a slow
//! transport.

use crate::report::Row;

/// What makes a run evidence of a broken testbed rather than a slow transport.
pub fn setup_problems(r: &Row) -> Vec<String> {
    let id = format!("{} {} {}", r.scenario, r.label, r.contender);
    let mut p = Vec::new();
    if let Some(e) = &r.error {
        p.push(format!("{id}: {e}"));
    }
    if let Some(t) = &r.tun {
        // A tun row: the part ran and braid cleaned up; speed and loss are not judged.
        if t.tcp_intact == Some(false) {
            p.push(format!("{id}: the download was not intact"));
        }
        if t.udp_received == Some(0) || t.ping_answered == Some(0) {
            p.push(format!("{id} ({}): nothing came back", t.part));
        }
        if t.teardown.as_ref().is_some_and(|td| td != "clean") {
            p.push(format!("{id}: teardown: {}", t.teardown.as_deref().unwrap_or_default()));
        }
        if r.tun_drops > 0 {
            p.push(format!("{id}: {} TUN drops", r.tun_drops));
        }
        if r.ss_check != "ok" && r.ss_check != "n/a" {
            p.push(format!("{id}: ss -tinM: {}", r.ss_check));
        }
        return p;
    }
    if !r.mix.is_empty() {
        if r.received_bytes == 0 {
            p.push(format!("{id} (mix {} flow {}): received nothing", r.mix, r.flow));
        }
    } else if r.completion_s.is_none() {
        p.push(format!("{id}: did not complete ({} of {} bytes)", r.received_bytes, r.transfer_bytes));
    }
    if r.tun_drops > 0 {
        p.push(format!("{id}: {} TUN drops", r.tun_drops));
    }
    if r.ss_check != "ok" && r.ss_check != "n/a" {
        p.push(format!("{id}: ss -tinM: {}", r.ss_check));
    }
    let total: u64 = r.path_fwd_tx_bytes.iter().sum();
    // Bulk only: an app-limited stream (video) or short page loads may rightly keep to one path.
    let multipath =
        r.workload == "bulk" && (r.contender.starts_with("mptcp-") || r.contender.starts_with("2tcp-"));
    if multipath && r.path_fwd_tx_bytes.iter().any(|&b| b * 20 < total) {
        p.push(format!("{id}: a path carried < 5% of the bytes {:?}", r.path_fwd_tx_bytes));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(contender: &str, paths: Vec<u64>) -> Row {
        Row {
            scenario: "s".into(),
            seed: 1,
            contender: contender.into(),
            transfer_bytes: 100,
            received_bytes: 100,
            completion_s: Some(1.0),
            elapsed_s: 1.0,
            goodput_mbps: 1.0,
            ideal_mbps: 1.0,
            ratio: 1.0,
            path_fwd_tx_bytes: paths.clone(),
            path_fwd_rx_bytes: paths,
            ss_check: "ok".into(),
            workload: "bulk".into(),
            ..Row::default()
        }
    }

    #[test]
    fn tun_rows_need_intact_bytes_answers_and_a_clean_teardown() {
        use crate::report::TunMetrics;
        let mut r = row("braid-tun", vec![5000, 4000]);
        r.completion_s = None;
        r.ss_check = "n/a".into();
        r.tun = Some(TunMetrics {
            part: "udp-stream".into(),
            udp_received: Some(10),
            teardown: Some("clean".into()),
            ..TunMetrics::default()
        });
        assert!(setup_problems(&r).is_empty(), "a stream has no completion time");
        let t = r.tun.as_mut().unwrap();
        t.udp_received = Some(0);
        t.teardown = Some("device braid0".into());
        t.tcp_intact = Some(false);
        assert_eq!(setup_problems(&r).len(), 3);
    }

    #[test]
    fn flags_a_broken_setup_not_a_slow_one() {
        assert!(setup_problems(&row("mptcp-bbr", vec![5000, 4000])).is_empty());
        let mut slow = row("cubic", vec![5000]);
        slow.goodput_mbps = 0.01;
        assert!(setup_problems(&slow).is_empty(), "speed is not checked");
        assert_eq!(setup_problems(&row("mptcp-bbr", vec![10_000, 100])).len(), 1, "one path unused");
        assert!(setup_problems(&row("cubic", vec![10_000, 0])).is_empty(), "single-path TCP uses path 0");
        let mut r = row("bbr", vec![5000]);
        r.completion_s = None;
        r.tun_drops = 3;
        r.ss_check = "bbr not seen".into();
        assert_eq!(setup_problems(&r).len(), 3);
    }

    #[test]
    fn setup_check_of_a_mix_needs_bytes_not_completion() {
        let mut r = row("cubic", vec![100]);
        r.mix = "cubic:2".into();
        r.completion_s = None;
        assert!(setup_problems(&r).is_empty());
        r.received_bytes = 0;
        assert_eq!(setup_problems(&r).len(), 1);
    }
}
