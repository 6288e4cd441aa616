//! The runner's `--csv` and `--json` output: a tiny two-path scenario, both modes, checked for
//! the documented columns and for values that agree with each other and with the transfer.

use std::path::PathBuf;
use std::process::{Command, Stdio};

const TRANSFER: u64 = 300_000;

const SCENARIO: &str = r#"
name = "tiny"
seed = 7
transfer = 300000
duration = "60s"

[[path]]
name = "a"
rate = "10Mbit/s"
rtt = "40ms"
loss = [0.02]

[[path]]
name = "b"
rate = "5Mbit/s"
rtt = "60ms"
"#;

const SUMMARY_COLUMNS: &str = "run,scenario,point,seed,mode,completion_s,goodput_mbps,ratio_ideal,\
repair_overhead,source_sent,repair_sent,recovered,recovery_rate,retransmissions,fast_losses,losses,\
timeouts,block_count,block_delay_mean_ms,block_delay_p99_ms,block_jitter_ms,datagrams,intact,\
ideal_mbps,path_packets_sent,path_packets_acked,path_share,stalled_at_s,outage_recovery_s,fast_recoveries";

const SERIES_COLUMNS: &str = "run,time_s,goodput_mbps,flow,path,cwnd_bytes,srtt_ms,loss_estimate";

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-sim-runner-output-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("`{s}` is not a number"))
}

#[test]
fn csv_and_json_have_the_documented_columns_and_agree() {
    let dir = scratch("columns");
    let scenario = dir.join("tiny.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let csv = dir.join("csv");
    let json = dir.join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_braid-sim"))
        .args(["--modes", "braid,tcp", "--csv"])
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The printed tables: a row per run with the ideal and the path shares, then one row per
    // sweep point with the modes side by side.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| ideal Mbit/s | × ideal |") && stdout.contains("| path share % |"), "{stdout}");
    let side = stdout.split("Modes side by side").nth(1).unwrap_or_else(|| panic!("{stdout}"));
    assert!(side.contains("| scenario | ideal Mbit/s | braid | tcp (model) |"), "{side}");
    assert!(side.contains("| tiny path.a.loss=0.02 | 14.80 |"), "{side}");

    // summary.csv: a row per run, braid then tcp.
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    assert_eq!(lines.next(), Some(SUMMARY_COLUMNS));
    let columns: Vec<&str> = SUMMARY_COLUMNS.split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    let field = |row: usize, name: &str| rows[row][columns.iter().position(|c| *c == name).unwrap()];
    for (i, mode) in ["braid", "tcp"].into_iter().enumerate() {
        assert_eq!(rows[i].len(), columns.len());
        assert_eq!(field(i, "run"), i.to_string());
        assert_eq!((field(i, "scenario"), field(i, "seed"), field(i, "mode")), ("tiny", "7", mode));
        assert!(field(i, "point").contains("path.a.loss=0.02"), "{}", field(i, "point"));
        assert_eq!(field(i, "intact"), "true");
        assert_eq!(field(i, "stalled_at_s"), "", "finished runs did not stall");
        assert_eq!(field(i, "outage_recovery_s"), "", "no outage in this scenario");
        assert_eq!(field(i, "fast_recoveries"), "", "only newreno-ns3 counts its fast recoveries");
        let completion = num(field(i, "completion_s"));
        assert!(completion > 0.1 && completion < 60.0, "{mode}: {completion}");
        let goodput = num(field(i, "goodput_mbps"));
        assert!((goodput - TRANSFER as f64 * 8.0 / completion / 1e6).abs() < 1e-3, "{mode}: {goodput}");
        assert!(num(field(i, "ratio_ideal")) > 0.0 && num(field(i, "ratio_ideal")) < 1.0);
        assert!(num(field(i, "block_count")) >= 1.0);
        let (mean, p99) = (num(field(i, "block_delay_mean_ms")), num(field(i, "block_delay_p99_ms")));
        assert!(mean > 0.0 && p99 >= mean && num(field(i, "block_jitter_ms")) >= 0.0);
        assert!(num(field(i, "fast_losses")) <= num(field(i, "losses")));
        assert!(num(field(i, "datagrams")) > (TRANSFER / 1200) as f64);
        // The ideal: 10 Mbit/s × 0.98 + 5 Mbit/s, and the ratio is goodput over it.
        assert!((num(field(i, "ideal_mbps")) - 14.8).abs() < 1e-6, "{}", field(i, "ideal_mbps"));
        assert!((num(field(i, "ratio_ideal")) * 14.8 - goodput).abs() < 1e-3);
        // Per path, `;`-separated: both paths carried data, the shares add up to 1.
        let list = |name: &str| field(i, name).split(';').map(num).collect::<Vec<f64>>();
        let (sent, acked, share) =
            (list("path_packets_sent"), list("path_packets_acked"), list("path_share"));
        assert_eq!((sent.len(), acked.len(), share.len()), (2, 2, 2), "{mode}");
        assert!(sent.iter().zip(&acked).all(|(s, a)| *a > 0.0 && a <= s), "{mode}: {sent:?} {acked:?}");
        assert!((share.iter().sum::<f64>() - 1.0).abs() < 1e-5, "{mode}: {share:?}");
        assert!((share[0] - acked[0] / (acked[0] + acked[1])).abs() < 1e-5);
    }
    // braid repairs and recovers; the tcp model retransmits and sends no repair.
    assert!(num(field(0, "repair_sent")) > 0.0 && num(field(0, "recovered")) > 0.0);
    let rate = num(field(0, "recovery_rate"));
    assert!(rate > 0.0 && rate <= 1.0, "{rate}");
    assert_eq!(num(field(0, "retransmissions")), 0.0);
    assert_eq!((field(1, "repair_sent"), field(1, "recovery_rate")), ("0", ""));
    assert!(num(field(1, "retransmissions")) > 0.0);

    // timeseries.csv: every interval of every run, once per path; goodput adds up to the transfer.
    let series = std::fs::read_to_string(csv.join("timeseries.csv")).unwrap();
    let mut lines = series.lines();
    assert_eq!(lines.next(), Some(SERIES_COLUMNS));
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(num).collect()).collect();
    for run in [0.0, 1.0] {
        let of_run: Vec<&Vec<f64>> = rows.iter().filter(|r| r[0] == run).collect();
        assert!(of_run.len() >= 4 && of_run.len().is_multiple_of(2), "two paths per interval");
        for pair in of_run.chunks(2) {
            assert_eq!((pair[0][4], pair[1][4]), (0.0, 1.0), "path 0 then path 1");
            assert_eq!(pair[0][1], pair[1][1]);
            assert!(pair.iter().all(|r| r[5] > 0.0 && r[6] > 0.0 && (0.0..=1.0).contains(&r[7])));
        }
        let bytes: f64 = of_run.iter().step_by(2).map(|r| r[2] * 1e6 / 8.0 * 0.1).sum();
        assert!((bytes - TRANSFER as f64).abs() < 1.0, "run {run}: {bytes} bytes");
        let last = of_run.last().unwrap()[1];
        assert!((last - 0.1 * (of_run.len() / 2 - 1) as f64).abs() < 1e-9);
    }

    // The JSON document says the same.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["interval_ms"], 100.0);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run["mode"], ["braid", "tcp"][i]);
        assert_eq!(run["metrics"]["delivered_bytes"], TRANSFER);
        assert!((run["ideal_mbps"].as_f64().unwrap() - 14.8).abs() < 1e-9);
        let path_stats = run["path_stats"].as_array().unwrap();
        assert_eq!(path_stats.len(), 2);
        let share: f64 = path_stats.iter().map(|p| p["share"].as_f64().unwrap()).sum();
        assert!((share - 1.0).abs() < 1e-9);
        assert_eq!(path_stats[1]["packets_acked"].as_f64().unwrap(), {
            let acked = field(i, "path_packets_acked");
            num(acked.split(';').nth(1).unwrap())
        });
        let goodput = run["series"]["goodput_mbps"].as_array().unwrap();
        let bytes: f64 = goodput.iter().map(|g| g.as_f64().unwrap() * 1e6 / 8.0 * 0.1).sum();
        assert!((bytes - TRANSFER as f64).abs() < 1.0);
        let paths = run["series"]["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 2);
        for p in paths {
            assert_eq!(p["cwnd_bytes"].as_array().unwrap().len(), goodput.len());
            assert_eq!(p["srtt_ms"].as_array().unwrap().len(), goodput.len());
        }
        assert_eq!(run["blocks"]["count"].as_f64().unwrap(), num(field(i, "block_count")));
        assert!(run["blocks"]["jitter_ms"].as_f64().unwrap() >= 0.0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `braid-sim … | head`: a reader that leaves early costs only the rest of the tables. The run
/// ends as it would have (success, nothing on stderr, no panic) and the `--json` file is whole.
#[test]
fn a_closed_stdout_still_writes_the_json_file_and_exits_quietly() {
    let dir = scratch("closed-stdout");
    let scenario = dir.join("tiny.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let json = dir.join("out.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid-sim"))
        .args(["--modes", "braid,tcp", "--json"])
        .arg(&json)
        .arg(&scenario)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the runs end, so the first line of the tables meets a closed
    // pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, mode) in runs.iter().zip(["braid", "tcp"]) {
        assert_eq!(run["mode"], mode);
        assert_eq!(run["metrics"]["delivered_bytes"], TRANSFER);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `receive_window` reaches both ends' flow control: with 16 KiB over a 100 ms path the
/// connection cannot exceed 16 KiB per round trip (1.31 Mbit/s), far below the link's 10 Mbit/s
/// that the same transfer reaches without it.
#[test]
fn receive_window_limits_the_connection() {
    let dir = scratch("window");
    let goodput = |window: &str| {
        let scenario = dir.join(format!("w{}.toml", window.len()));
        let text = format!(
            "transfer = 600000\nduration = \"60s\"\n{window}\n[[path]]\nrate = \"10Mbit/s\"\nrtt = \"100ms\"\n"
        );
        std::fs::write(&scenario, text).unwrap();
        let csv = dir.join(format!("csv{}", window.len()));
        let out = Command::new(env!("CARGO_BIN_EXE_braid-sim"))
            .args(["--modes", "braid", "--csv"])
            .arg(&csv)
            .arg(&scenario)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
        let row: Vec<String> = summary.lines().nth(1).unwrap().split(',').map(str::to_owned).collect();
        num(&row[6])
    };
    let limited = goodput("receive_window = \"16KiB\"");
    let open = goodput("");
    assert!(limited > 0.3 && limited < 16.0 * 1024.0 * 8.0 / 0.1 / 1e6, "{limited} Mbit/s");
    assert!(open > 3.0 * limited, "{open} vs {limited} Mbit/s");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `outage_recovery_s`: with path `a` dark from 2 s to 2.5 s, the recovery is measured from 2 s
/// against the survivor's capacity (5 Mbit/s), and braid holds 0.8 of it from then on.
#[test]
fn outage_recovery_is_measured_from_the_outage() {
    let dir = scratch("outage");
    let scenario = dir.join("outage.toml");
    std::fs::write(
        &scenario,
        "seed = 3\ntransfer = \"8MB\"\nduration = \"60s\"\n\
         [[path]]\nname = \"a\"\nrate = \"10Mbit/s\"\nrtt = \"40ms\"\noutages = [[\"2s\", \"2.5s\"]]\n\
         [[path]]\nname = \"b\"\nrate = \"5Mbit/s\"\nrtt = \"60ms\"\n",
    )
    .unwrap();
    let csv = dir.join("csv");
    let out = Command::new(env!("CARGO_BIN_EXE_braid-sim"))
        .args(["--modes", "braid", "--csv"])
        .arg(&csv)
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Recovery after the first outage"), "{stdout}");
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    let columns: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = summary.lines().nth(1).unwrap().split(',').collect();
    let field = |name: &str| row[columns.iter().position(|c| *c == name).unwrap()];
    let recovery = num(field("outage_recovery_s"));
    let completion = num(field("completion_s"));
    assert!((0.0..=1.0).contains(&recovery) && completion > 3.0, "{recovery} s, completed at {completion} s");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--secure`: the same tiny scenario through the security layer completes intact, a little
/// later than without it (the handshake's round trip, 16 bytes a packet).
#[test]
fn secure_runs_complete_intact_a_little_later() {
    let dir = scratch("secure");
    let scenario = dir.join("tiny.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let completion = |secure: bool| {
        let csv = dir.join(if secure { "secure" } else { "plain" });
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_braid-sim"));
        cmd.args(["--modes", "braid", "--csv"]).arg(&csv);
        if secure {
            cmd.arg("--secure");
        }
        let out = cmd.arg(&scenario).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
        let columns: Vec<&str> = SUMMARY_COLUMNS.split(',').collect();
        let row: Vec<String> = summary.lines().nth(1).unwrap().split(',').map(String::from).collect();
        let field = |name: &str| row[columns.iter().position(|c| *c == name).unwrap()].clone();
        assert_eq!(field("intact"), "true", "secure: {secure}");
        num(&field("completion_s"))
    };
    let (plain, secure) = (completion(false), completion(true));
    assert!(secure > plain && secure < plain + 0.5, "{secure} s with the layer, {plain} s without");
    let _ = std::fs::remove_dir_all(&dir);
}
