#!/usr/bin/env python3
"""The testbed scenario matrix, driven by scripts/testbed-matrix.sh.

For every scenario of MATRIX and every sweep point, one `braid-testbed run` invocation runs every
contender over the same emulated paths, one after the other: the kernel's (cubic, bbr on one path;
MPTCP cubic/bbr, 2-TCP bbr and bbr on the best single path on several) and braid's (`braid
forward`/`braid server`, the default mode and every seed mode, as external contenders). The
fairness scenario runs flow mixes instead. Raw rows go to RAW/testbed/<scenario>/<point>.{json,csv}
with RAW/testbed/<scenario>/<point>.meta.json (commit, seed, command, date, load) and each run's
`ss -tinM` snapshot in RAW/testbed/<scenario>/ss/; after every point they are packed into
RAW/testbed/<scenario>/rows.tar.gz (scripts/raw_pack.py: one file per scenario, not hundreds), and
a point whose .meta.json there records the same configuration is skipped (resume). Then braid-sim
runs its `tcp` and
`mptcp` models (cubic and bbr, as the kernel) and braid on the same scenario files with the same
transfer and limit, into RAW/sim/<scenario>/<model>/summary.csv, packed after each model into
RAW/sim/<scenario>/rows.tar.gz.

Usage: testbed_matrix.py [--quick] [--only SCENARIO]... [--out RAW] [--force] [--estimate]
                         [--no-sim] [--no-testbed]
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_pack  # noqa: E402  (beside this script)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTBED = os.path.join(ROOT, "target/release/braid-testbed")
BRAID = os.path.join(ROOT, "target/release/braid")
SIM = os.path.join(ROOT, "target/release/braid-sim")
SCEN = os.path.join(ROOT, "scenarios/testbed")

# A mix's braid connection with two paths from the client's first address: both cross the
# point's one path, so they share its bottleneck.
TWO_PATHS = "braid-2paths"

# The matrix. `transfer`/`limit` override the scenario file's for the testbed and the simulator
# alike (None: the file's). Chosen so that the whole matrix takes about an hour: a contender that
# keeps up finishes in 4-8 s; one that does not (kernel cubic at 1 % loss needs 72 s for the CTCP
# file) is cut at the limit and reported with its goodput so far.
MATRIX = [
    # CTCP Table IV: the paper's 11,492,499-byte file; 15 s instead of 120 s.
    {"file": "ctcp-table4.toml", "transfer": None, "limit": "15s"},
    # The same at 1-5 % loss with three loss seeds a point (the target: CTCP >= 13.5 Mbit/s, the
    # paper's lowest, in every run): braid's ctcp mode beside kernel bbr, the bar for bulk goodput.
    {"file": "ctcp-table4-runs.toml", "transfer": None, "limit": "15s",
     "kernel": ["bbr"], "modes": ["ctcp"], "sim": False},
    # Bursty loss on CTCP Table IV's path: Gilbert-Elliott at 1, 2 and 5 % mean, bursts of 4
    # packets; braid's default beside kernel cubic and bbr, three runs a point (the target: braid
    # >= 1.05 x bbr, medians).
    {"file": "gilbert-elliott.toml", "transfer": None, "limit": "15s", "repeat": 3,
     "kernel": ["cubic", "bbr"], "modes": ["braid"]},
    # CTCP after a burst of timeouts (a 500 ms ACK outage at 5 s; the file says why): bytes at the
    # sink every 100 ms (--timeline), and braid's per-path statistics every 100 ms beside the
    # rows (`<point>.stats.jsonl`: tokens, timeouts). Three loss seeds at 1, 3 and 5 %.
    {"file": "ctcp-recovery.toml", "transfer": None, "limit": None, "args": ["--timeline"],
     "kernel": ["bbr"], "modes": ["ctcp"], "sim": False,
     "client_args": ["--stats-json", "{base}.stats.jsonl", "--stats-interval", "0.1"]},
    # FMTCP Table II: 15 MB instead of 30 MB (~7.5 s at the ideal 20 Mbit/s), 15 s.
    {"file": "fmtcp-table2-loss.toml", "transfer": "15MB", "limit": "15s"},
    {"file": "fmtcp-table2-delay.toml", "transfer": "15MB", "limit": "15s"},
    # The file's own (surge at 8 s, 30 MB, 40 s).
    {"file": "fmtcp-loss-surge.toml", "transfer": None, "limit": "30s"},
    # dFEC Table III: the file's (12 MB, 12 s).
    # Twelve points: kernel MPTCP (cubic, bbr) and bbr on the best single path, braid's default
    # and the paper's own scheme (MPTCP-dFEC) — the other seed modes and 2-TCP are measured on
    # FMTCP Table II's two-path points above.
    {"file": "dfec-table3.toml", "transfer": None, "limit": None,
     "kernel": ["mptcp-cubic", "mptcp-bbr", "bbr@best"], "modes": ["braid", "mptcp-dfec"]},
    # Satellite + cellular, the cellular path failing at 4 s: the file's (6 MB, 30 s), 20 s.
    {"file": "satellite-cellular.toml", "transfer": None, "limit": "20s"},
    # Workloads (the scenario file's `# workload:` line selects them): HTTP/2 page loads, 3 loads
    # of each page, each capped at 30 s (kernel cubic at 2 % loss needs ~57 s for the 111-object
    # page and is reported as cut); 30 s of live video. Kernel cubic and bbr beside braid's
    # default (and CTCP's mode, the seed scheme built for streaming, on video).
    {"file": "web.toml", "transfer": None, "limit": "30s", "args": ["--loads", "3"],
     "kernel": ["cubic", "bbr"], "modes": ["braid"], "sim": False, "run_s": 3 * 3 * 6.0},
    {"file": "video.toml", "transfer": None, "limit": None, "repeat": 3,
     "kernel": ["cubic", "bbr"], "modes": ["braid", "ctcp"], "sim": False, "run_s": 32.0},
    # A shallow drop-tail buffer (0.1 BDP and 4 packets) on CTCP Table IV's path, 0 and 1 % loss:
    # goodput and the forward queue's drops (the row's `forwarders`), braid's default beside
    # kernel cubic and bbr; three runs a point. Kernel cubic at 1 % loss is cut at the limit.
    {"file": "shallow-buffer.toml", "transfer": None, "limit": "20s", "repeat": 3,
     "kernel": ["cubic", "bbr"], "modes": ["braid"], "sim": False},
    # Latency under load: 20 probe round trips a second beside a 25 MB bulk transfer, one path
    # (20 Mbit/s, 100 ms RTT, 0 and 2 % loss); three runs of each point, for medians.
    {"file": "latency.toml", "transfer": None, "limit": None, "repeat": 3,
     "kernel": ["cubic", "bbr"], "modes": ["braid"], "sim": False},
    # The same on `braid demo`'s two unequal paths (40 ms and 160 ms RTT, 1 % and 5 % loss), beside
    # kernel MPTCP; three runs.
    {"file": "latency-two-paths.toml", "transfer": None, "limit": None, "repeat": 3,
     "kernel": ["mptcp-bbr", "mptcp-cubic"], "modes": ["braid"], "sim": False},
    # Fairness: flow mixes on one bottleneck, 25 s each; three runs of each point, for medians.
    {"file": "fairness-bottleneck.toml", "transfer": None, "limit": None, "repeat": 3,
     "mixes": ["braid:2,cubic:2", "braid:2,bbr:2", "braid:4", "cubic:2,bbr:2"]},
    # One braid connection over two paths that both cross the bottleneck (RFC 6356's shared
    # bottleneck), beside one flow of each kind, and one-path braid in its place for reference;
    # three runs.
    {"file": "fairness-shared-bottleneck.toml", "transfer": None, "limit": None, "repeat": 3, "sim": False,
     "mixes": [f"{TWO_PATHS}:1,braid:1", "braid:2", f"{TWO_PATHS}:1,cubic:1", "braid:1,cubic:1",
               f"{TWO_PATHS}:1,bbr:1", "braid:1,bbr:1"]},
]

# braid's modes as external contenders: the default (`braid`) and each seed mode.
BRAID_MODES = ["braid", "ctcp", "fmtcp", "dfec", "sato", "tcp-ir"]
BRAID_MULTIPATH_MODES = ["mptcp-dfec"]
KERNEL_ONE = ["cubic", "bbr"]
KERNEL_MULTI = ["mptcp-cubic", "mptcp-bbr", "2tcp-bbr", "bbr@best"]

QUICK = {
    "transfer": "3MB",
    "limit": "8s",
    "kernel_one": ["bbr"],
    "kernel_multi": ["mptcp-bbr", "bbr@best"],
    "modes": ["braid"],
    "mixes": ["braid:1,cubic:1"],
    "mix_limit": "12s",
}

# Run-time model for the estimate (seconds): per run on top of the transfer, per point (testbed
# setup and teardown).
OVERHEAD_KERNEL, OVERHEAD_EXT, OVERHEAD_POINT = 1.0, 2.0, 1.0
# The testbed's self-check before the matrix and the simulator's runs after it (measured: ~15 s
# and ~25 s on this project's machines).
OVERHEAD_FIXED = 40.0


def parse_secs(s):
    m = re.fullmatch(r"([0-9.]+)\s*(ms|s|m|min)?", s.strip())
    if not m:
        raise ValueError(f"duration {s!r}")
    v, unit = float(m.group(1)), m.group(2) or "s"
    return v / 1000 if unit == "ms" else v * 60 if unit in ("m", "min") else v


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def ext_args(mode, paths, key, extra=(), name=None, path_ids=None):
    """--ext NAME --server-cmd … --client-cmd … for one braid mode over `paths` paths (or the
    testbed paths `path_ids`, one braid path each), `extra` appended to the client's command."""
    name = name or ("braid" if mode == "braid" else f"braid-{mode}")
    path_ids = range(paths) if path_ids is None else path_ids
    server = f"{BRAID} server --listen 0.0.0.0:{{port}} --key {key}"
    client = (f"{BRAID} forward --listen {{entry}} --to {{sink}} --server {{server0}}:{{port}} "
              + " ".join(f"--path {{client{i}}}" for i in path_ids)
              + f" --key {key}" + ("" if mode == "braid" else f" --mode {mode}")
              + "".join(f" {shlex.quote(a)}" for a in extra))
    return ["--ext", name, "--server-cmd", server, "--client-cmd", client]


def list_points(entry, quick):
    """The sweep points of a matrix entry: braid-testbed's own parser (`list`)."""
    out = subprocess.run([TESTBED, "list", os.path.join(SCEN, entry["file"]), *override_args(entry, quick),
                          "--contenders", "cubic"], capture_output=True, text=True, check=True).stdout
    points = []
    for line in out.splitlines():
        name, label, paths, ideal, transfer, limit, loss, _ = line.split("\t")
        points.append({"scenario": name, "label": label, "paths": int(paths), "ideal": float(ideal),
                       "transfer": int(transfer), "limit": float(limit), "loss": float(loss)})
    if quick:
        points = points[:1]
    return points


def override_args(entry, quick, mix=False):
    a = []
    transfer = QUICK["transfer"] if quick else entry.get("transfer")
    limit = (QUICK["mix_limit"] if mix else QUICK["limit"]) if quick else entry.get("limit")
    if transfer:
        a += ["--transfer", transfer]
    if limit:
        a += ["--limit", limit]
    return a


def contenders(point, quick, entry=None):
    multi = point["paths"] > 1
    if entry and "kernel" in entry:
        return entry["kernel"], (QUICK["modes"] if quick else entry["modes"])
    if quick:
        kernel = QUICK["kernel_multi"] if multi else QUICK["kernel_one"]
        modes = QUICK["modes"]
    else:
        kernel = KERNEL_MULTI if multi else KERNEL_ONE
        # On several paths: braid and the seed schemes defined for several paths (CTCP, FMTCP,
        # MPTCP-dFEC); the one-path XOR schemes (TCP-IR, Sato, TCP-dFEC) are measured on one path.
        modes = ["braid", "ctcp", "fmtcp"] + BRAID_MULTIPATH_MODES if multi else BRAID_MODES
    return kernel, modes


def mixes(entry, quick):
    if "mixes" not in entry:
        return []
    return QUICK["mixes"] if quick else entry["mixes"]


def estimate_run(name, point):
    """Expected seconds of one contender on one point: the limit where it is not expected to keep
    up (kernel cubic with any loss; the XOR seed modes at 1 % loss or more), else the transfer at
    0.8 × the ideal; plus its overhead."""
    ext = name.startswith("braid")
    slow = ("cubic" in name and point["loss"] > 0) or (
        any(m in name for m in ("sato", "tcp-ir", "dfec")) and point["loss"] >= 0.01)
    if slow or point["ideal"] <= 0:
        t = point["limit"]
    else:
        t = min(point["limit"], point["transfer"] * 8 / (0.8 * point["ideal"] * 1e6))
    return t + (OVERHEAD_EXT if ext else OVERHEAD_KERNEL)


def plan(quick, only):
    """[(entry, point, kernel contenders, braid modes, mixes, expected s, bound s, run index)]."""
    items = []
    for entry in MATRIX:
        stem = entry["file"].removesuffix(".toml")
        if only and stem not in only:
            continue
        for point in list_points(entry, quick):
            ms = mixes(entry, quick)
            kernel, modes = contenders(point, quick, entry) if not ms else ([], [])
            names = kernel + [("braid" if m == "braid" else f"braid-{m}") for m in modes]
            if "run_s" in entry:  # a workload: its own length per contender, not a transfer's
                exp = OVERHEAD_POINT + len(names) * (entry["run_s"] + OVERHEAD_EXT)
            else:
                exp = OVERHEAD_POINT + sum(estimate_run(n, point) for n in names)
            bound = OVERHEAD_POINT + sum(point["limit"] + (OVERHEAD_EXT if n.startswith("braid") else OVERHEAD_KERNEL)
                                         for n in names)
            if ms:
                mix_limit = parse_secs(QUICK["mix_limit"]) if quick else point["limit"]
                exp += len(ms) * (mix_limit + OVERHEAD_EXT)
                bound += len(ms) * (mix_limit + OVERHEAD_EXT)
            # A point repeated for medians: each run its own rows (`.runN`) and meta.
            for run in range(1 if quick else entry.get("repeat", 1)):
                items.append((entry, point, kernel, modes, ms, exp, bound, run))
    return items


def load_average():
    """/proc/loadavg's line, or "" where there is none."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().strip()
    except OSError:
        return ""


def slug(label):
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", label) or "all"


def run_testbed(items, raw, key, force, quick):
    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    done_n = skipped = failed = 0
    for entry, point, kernel, modes, ms, exp, _, run in items:
        outdir = os.path.join(raw, "testbed", point["scenario"])
        os.makedirs(outdir, exist_ok=True)
        base = os.path.join(outdir, slug(point["label"]) + (f".run{run + 1}" if run else ""))
        cmd = [TESTBED, "run", os.path.join(SCEN, entry["file"])]
        for part in point["label"].split():
            cmd += ["--only", part]
        cmd += override_args(entry, quick, mix=bool(ms))
        cmd += entry.get("args", [])
        if ms:
            for m in ms:
                cmd += ["--mix", m]
            modes_needed = sorted({p.split(":")[0] for m in ms for p in m.split(",") if p.startswith("braid")})
            for m in modes_needed:
                if m == TWO_PATHS:
                    cmd += ext_args("braid", 2, key, name=TWO_PATHS, path_ids=[0, 0])
                else:
                    cmd += ext_args("braid" if m == "braid" else m.removeprefix("braid-"), point["paths"], key)
        else:
            cmd += ["--contenders", ",".join(kernel)]
            # A point's own files beside its rows (`{base}`: the rows' path without extension).
            extra = [a.replace("{base}", base) for a in entry.get("client_args", [])]
            for m in modes:
                cmd += ext_args(m, point["paths"], key, extra)
        cmd += ["--json", base + ".json", "--out-dir", os.path.join(outdir, "ss")]
        # The configuration a finished point must match to be skipped: the command without the
        # key's and binaries' locations.
        config = hashlib.sha256(" ".join(cmd).replace(key, "KEY").replace(ROOT, ".").encode()).hexdigest()[:16]
        meta_file = base + ".meta.json"
        done = raw_pack.Raw(os.path.dirname(outdir))
        if not force and done.exists(meta_file) and done.exists(base + ".csv"):
            try:
                meta = json.loads(done.read_text(meta_file))
                if meta.get("config") == config and meta.get("complete"):
                    skipped += 1
                    print(f"skip {point['scenario']} {point['label']} (done {meta.get('finished')})")
                    continue
            except (OSError, ValueError):
                pass
        print(f"=== {point['scenario']} {point['label'] or '(one point)'}  (expected ~{exp:.0f} s)", flush=True)
        stem = os.path.basename(base)
        for f in raw_pack.point_members(os.listdir(outdir), stem):
            if f.endswith(".jsonl"):  # a point's own files (`client_args`' {base}) are appended to
                os.remove(os.path.join(outdir, f))
        started = time.time()
        meta = {
            "scenario": point["scenario"], "label": point["label"], "config": config,
            "commit": commit, "dirty_tree": dirty, "quick": quick,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "load_before": load_average(),
            "kernel": os.uname().release,
            "command": shlex.join(cmd).replace(key, "KEY").replace(ROOT + "/", ""),
        }
        rc = subprocess.run(cmd).returncode
        meta.update({
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "wall_s": round(time.time() - started, 1), "exit": rc, "complete": rc == 0,
        })
        with open(meta_file, "w") as f:
            json.dump(meta, f, indent=1)
        # A finished run's files replace all of the point's earlier ones; a failed run's replace
        # those it wrote.
        raw_pack.pack(outdir, point=stem if rc == 0 else None)
        if rc == 130 or rc < 0:
            print("interrupted; rerun the same command to resume", file=sys.stderr)
            sys.exit(130)
        if rc == 0:
            done_n += 1
        else:
            failed += 1
            print(f"!!! {point['scenario']} {point['label']}: braid-testbed exited {rc}", file=sys.stderr)
    print(f"testbed: {done_n} points run, {skipped} skipped (done before), {failed} failed")
    return failed


def run_sim(items, raw, quick):
    """braid-sim's tcp/mptcp models (cubic, bbr) and braid on the same scenario files, with the
    matrix's transfer and limit written into a copy of each file."""
    seen = set()
    failed = 0
    for entry, point, *_ in items:
        if entry["file"] in seen or "mixes" in entry or not entry.get("sim", True):
            continue  # fairness mixes and the web/video workloads are not simulator runs here
        seen.add(entry["file"])
        text = open(os.path.join(SCEN, entry["file"])).read()
        transfer = QUICK["transfer"] if quick else entry.get("transfer")
        limit = QUICK["limit"] if quick else entry.get("limit")
        if transfer:
            text = re.sub(r'(?m)^transfer\s*=.*$', f'transfer = "{transfer}"', text)
        if limit:
            text = re.sub(r'(?m)^duration\s*=.*$', f'duration = "{limit}"', text)
        # The simulator's `tcp` model is set against kernel TCP on one path; on several paths its
        # counterpart is kernel MPTCP (`mptcp` with per-subflow cubic/bbr, as Linux's).
        if point["paths"] > 1:
            models = [("mptcp-cubic", "mptcp", "cubic"), ("mptcp-bbr", "mptcp", "bbr")]
        else:
            models = [("tcp-cubic", "tcp", "cubic"), ("tcp-bbr", "tcp", "bbr")]
        models += [("braid", "braid", None)]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, entry["file"])
            with open(path, "w") as f:
                f.write(text)
            for name, mode, cc in models:
                out = os.path.join(raw, "sim", point["scenario"], name)
                cmd = [SIM, "--modes", mode] + (["--cc", cc] if cc else []) + ["--csv", out, path]
                print(f"sim {point['scenario']} {name}", flush=True)
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    failed += 1
                    print(f"!!! sim {point['scenario']} {name}: {r.stderr.strip()[:500]}", file=sys.stderr)
                    continue
                with open(os.path.join(out, "meta.json"), "w") as f:
                    json.dump({"command": shlex.join(cmd).replace(tmp, "<matrix copy>").replace(ROOT + "/", ""),
                               "commit": git("rev-parse", "HEAD"), "transfer": transfer, "limit": limit,
                               "file": entry["file"]}, f, indent=1)
                raw_pack.pack(os.path.dirname(out), folder=name)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one point per scenario, 3 MB, bbr/MPTCP-bbr and braid only")
    ap.add_argument("--only", action="append", default=[], help="scenario (file stem), repeatable")
    ap.add_argument("--out", help="raw output directory (default docs/results/raw; --quick: target/matrix-quick/raw)")
    ap.add_argument("--key", required=False, help="braid key file (made by the shell script)")
    ap.add_argument("--force", action="store_true", help="rerun points already done")
    ap.add_argument("--estimate", action="store_true", help="print the plan and its run time, run nothing")
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--no-testbed", action="store_true")
    a = ap.parse_args()
    names = {e["file"].removesuffix(".toml") for e in MATRIX}
    for o in a.only:
        if o not in names:
            sys.exit(f"--only {o}: not in the matrix ({', '.join(sorted(names))})")
    raw = a.out or os.path.join(ROOT, "target/matrix-quick/raw" if a.quick else "docs/results/raw")
    items = plan(a.quick, set(a.only))
    exp = OVERHEAD_FIXED + sum(i[5] for i in items)
    bound = OVERHEAD_FIXED + sum(i[6] for i in items)
    runs = sum(len(i[2]) + len(i[3]) + len(i[4]) for i in items)
    print(f"matrix: {len(items)} points, {runs} runs; expected ~{exp / 60:.0f} min "
          f"(every run at its limit: {bound / 60:.0f} min)")
    by = {}
    for entry, point, k, m, ms, e, b, _ in items:
        s = by.setdefault(point["scenario"], [0, 0, 0.0, 0.0])
        s[0] += 1
        s[1] += len(k) + len(m) + len(ms)
        s[2] += e
        s[3] += b
    for name, (pts, r, e, b) in by.items():
        print(f"  {name:<22} {pts:>3} points {r:>4} runs  ~{e / 60:5.1f} min (bound {b / 60:5.1f})")
    if a.estimate:
        return 0
    failed = 0
    if not a.no_testbed:
        if not a.key:
            sys.exit("--key FILE needed (scripts/testbed-matrix.sh makes one)")
        failed += run_testbed(items, raw, os.path.abspath(a.key), a.force, a.quick)
    if not a.no_sim:
        failed += run_sim(items, raw, a.quick)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
