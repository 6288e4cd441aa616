//! The command line's parsing: every flag reaches its option, a wrong one is named.

use super::*;

/// `run` with these flags (and `x.toml` unless a file is among them).
fn args(s: &[&str]) -> Result<Args, String> {
    let file = if s.iter().any(|a| a.ends_with(".toml")) { None } else { Some("x.toml") };
    let argv = ["braid-testbed", "run"].into_iter().chain(file).chain(s.iter().copied());
    match parse_from(argv).map_err(|e| e.to_string())? {
        Action::Run(a) => Ok(a),
        _ => unreachable!("`run` parses as a run"),
    }
}

#[test]
fn several_external_contenders_and_mixes() {
    let a = args(&[
        "--ext",
        "braid",
        "--server-cmd",
        "s1 {port}",
        "--client-cmd",
        "c1",
        "--ext",
        "ctcp",
        "--client-cmd",
        "c2",
        "--server-cmd",
        "s2",
        "--mix",
        "braid:2,cubic:2",
        "--mix",
        "ext:ctcp,bbr",
    ])
    .unwrap();
    assert_eq!(a.ext.len(), 2);
    assert_eq!((a.ext[1].name.as_str(), a.ext[1].server_cmd.as_str()), ("ctcp", "s2"));
    let m = parse_mix(&a.mix[0], &a.ext).unwrap();
    let names: Vec<String> = m.iter().map(|c| c.to_string()).collect();
    assert_eq!(names, ["ext:braid", "ext:braid", "cubic", "cubic"]);
    assert_eq!(parse_mix(&a.mix[1], &a.ext).unwrap().len(), 2, "a count defaults to 1");
    assert!(args(&["--ext", "b", "--server-cmd", "s"]).is_err(), "no client command");
    assert!(args(&["--server-cmd", "s"]).is_err(), "no --ext before it");
    assert!(args(&["--ext", "bbr", "--server-cmd", "s", "--client-cmd", "c"]).is_err(), "a kernel name");
    assert!(args(&["--mix", "quic:2"]).is_err());
    assert!(args(&["--mix", "cubic:0"]).is_err());
    assert!(args(&["--mix", "cubic:17"]).is_err());
}

#[test]
fn contenders_in_run_order_and_mix_only_runs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed");
    let sc = load(&[dir.join("dfec-table3.toml")], &[]).unwrap().remove(0);
    let a =
        args(&["--contenders", "mptcp-bbr,bbr@best", "--ext", "b", "--server-cmd", "s", "--client-cmd", "c"])
            .unwrap();
    let names: Vec<String> = contenders_for(&a, &sc, Workload::Bulk).iter().map(|c| c.to_string()).collect();
    assert_eq!(names, ["mptcp-bbr", "bbr", "ext:b"], "B1 (20 Mbit/s, no loss) is the best path");
    let lossy = load(&[dir.join("dfec-table3.toml")], &["path.B1.loss=0.05".into()]).unwrap().remove(0);
    let names: Vec<String> =
        contenders_for(&a, &lossy, Workload::Bulk).iter().map(|c| c.to_string()).collect();
    assert_eq!(names[1], "bbr", "20 × 0.95 = 19 still beats B2's 10");
    let only_mix = args(&["--mix", "cubic:2"]).unwrap();
    assert!(contenders_for(&only_mix, &sc, Workload::Bulk).is_empty());
}

#[test]
fn every_flag_reaches_its_option() {
    let a = args(&[
        "--transfer",
        "3MB",
        "--limit",
        "20s",
        "--limit",
        "30s",
        "--only",
        "loss=0.05",
        "--json",
        "o.json",
        "--workload",
        "tun",
        "--pages",
        "6,111",
        "--loads",
        "2",
        "--video-duration",
        "5s",
        "--deadline",
        "90ms",
        "--braid-arg",
        "--mode",
        "--braid-arg",
        "ctcp",
        "--tun-parts",
        "udp,ping",
        "--udp-rate",
        "2Mbit/s",
        "--udp-size",
        "500",
        "--udp-duration",
        "3s",
        "--pings",
        "7",
        "--assert-setup",
        "--timeline",
    ])
    .unwrap();
    assert_eq!((a.transfer, a.limit), (Some(3_000_000), Some(Duration::from_secs(30))), "the last --limit");
    assert_eq!((a.only.as_slice(), a.workload), (&["loss=0.05".to_string()][..], Some(Workload::Tun)));
    assert_eq!(a.wopts.web.pages.iter().map(|p| p.objects).collect::<Vec<_>>(), [6, 111]);
    assert_eq!(a.wopts.web.loads, 2);
    assert!(a.video_duration_set && a.wopts.video.duration == Duration::from_secs(5));
    assert_eq!(
        (a.wopts.video.deadline, a.tun.stream.deadline),
        (Duration::from_millis(90), Duration::from_millis(90))
    );
    assert_eq!(a.tun.client_args, ["--mode", "ctcp"], "an argument for braid may look like a flag");
    assert_eq!(a.tun.parts, [Part::Udp, Part::Ping]);
    assert_eq!((a.tun.stream.rate_bps, a.tun.stream.size, a.tun.pings), (2e6, 500, 7));
    assert_eq!(a.tun.stream.duration, Duration::from_secs(3));
    assert!(a.assert_setup && a.timeline);
    let d = args(&[]).unwrap();
    assert_eq!(
        (d.wopts.video.deadline, d.tun.stream.deadline),
        (Duration::from_millis(200), Duration::from_millis(150))
    );
    assert!(!d.video_duration_set && d.workload.is_none() && d.contenders.is_none() && !d.timeline);
}

/// A wrong flag or value is named, with what it should be.
#[test]
fn wrong_flags_say_what_is_wrong() {
    let err = |s: &[&str]| args(s).unwrap_err();
    assert!(err(&["--frobnicate"]).contains("--frobnicate"));
    let e = err(&["--limit", "soon"]);
    assert!(e.contains("--limit") && e.contains("soon"), "{e}");
    assert!(err(&["--loads", "0"]).contains("expected a positive number"));
    assert!(err(&["--udp-size", "8"]).contains("16 to 65000"));
    assert!(err(&["--pings", "0"]).contains("1 to 100000"));
    assert!(err(&["--udp-rate", "0Mbit/s"]).contains("must be positive"));
    assert!(err(&["--pages", "7"]).contains("no Table II page has 7 objects"));
    assert!(err(&["--tun-parts", "tcp,dns"]).contains("unknown tun part `dns`"));
    assert!(err(&["--contenders", "cubic,vegas"]).contains("unknown contender `vegas`"));
    assert!(err(&["--workload", "ftp"]).contains("unknown workload `ftp`"));
    assert!(err(&["--server-cmd", "s"]).contains("before any --ext"));
    let none = parse_from(["braid-testbed", "run"]).map(|_| ()).unwrap_err();
    assert_eq!(none.kind(), ErrorKind::MissingRequiredArgument, "a scenario file is required");
    let help = parse_from(["braid-testbed", "run", "--help"]).map(|_| ()).unwrap_err();
    assert_eq!(help.kind(), ErrorKind::DisplayHelp);
    assert!(help.to_string().contains("--udp-duration <DUR>"));
}

#[test]
fn check_cleanup_and_relay() {
    let Ok(Action::Check { file, only, json }) =
        parse_from(["braid-testbed", "check", "a.toml", "--only", "loss=0", "--json", "c.json"])
    else {
        panic!("check parses")
    };
    assert_eq!(
        (file, only, json),
        (Some("a.toml".into()), vec!["loss=0".to_string()], Some("c.json".into()))
    );
    assert!(matches!(parse_from(["braid-testbed", "check"]), Ok(Action::Check { file: None, .. })));
    assert!(matches!(parse_from(["braid-testbed", "cleanup"]), Ok(Action::Cleanup)));
    let Ok(Action::Relay { listen, to }) = parse_from(["braid-testbed", "relay", "0.0.0.0:1", "10.0.0.1:2"])
    else {
        panic!("relay parses")
    };
    assert_eq!((listen.as_str(), to.as_str()), ("0.0.0.0:1", "10.0.0.1:2"));
    assert!(parse_from(["braid-testbed", "relay", "0.0.0.0:1"]).is_err(), "relay needs both addresses");
}
