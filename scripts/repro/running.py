"""Running an experiment: the scenario copy with its keys written in, braid-sim's runs, and what is
kept of their output (summary, link counters, phase goodput, outage recovery)."""

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
from collections import OrderedDict

import raw_pack  # scripts/raw_pack.py (reproduce.py puts scripts/ on the path)

from .common import ROOT, fnum, read_csv
from .experiments import EXPERIMENTS
from .rows import recovery, sim_series


def with_keys(text, keys):
    """The scenario text with top-level `key = value` lines replaced (or added after `name =`);
    values are TOML text."""
    head_end = text.find("\n[")
    head, tail = (text, "") if head_end < 0 else (text[: head_end + 1], text[head_end + 1:])
    for key, value in keys.items():
        line = f"{key} = {value}"
        pattern = rf"(?m)^{re.escape(key)}\s*=.*$"
        if re.search(pattern, head):
            head = re.sub(pattern, lambda _: line, head, count=1)
        else:
            head = re.sub(r"(?m)^(name\s*=.*)$", lambda m: m.group(1) + "\n" + line, head, count=1)
    return head + tail


def with_seeds(text, seeds):
    return with_keys(text, {"seed": f"[{', '.join(str(s) for s in seeds)}]"})


def run_experiment(name, results, sim):
    e = EXPERIMENTS[name]
    out = os.path.join(results, name)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(ROOT, e["scenario"])) as f:
        text = f.read()
    keys = dict(e["keys"])
    if e["seeds"]:
        keys["seed"] = f"[{', '.join(str(s) for s in e['seeds'])}]"
    text = with_keys(text, keys)
    scenario = os.path.join(tmp, "scenario.toml")
    with open(scenario, "w") as f:
        f.write(text)
    for r in e["runs"]:
        dest = os.path.join(tmp, r["tag"]) if r["tag"] else tmp
        os.makedirs(dest, exist_ok=True)
        cmd = [sim, *r["args"], "--csv", dest, scenario]
        runs_json = os.path.join(dest, "runs.json")
        if e.get("links"):
            cmd[-1:-1] = ["--json", runs_json]
        print(f"[{name}] {' '.join(cmd)}", flush=True)
        with open(os.path.join(dest, "table.md"), "w") as log:
            subprocess.run(cmd, check=True, stdout=log, cwd=ROOT)
        if os.path.exists(runs_json):
            write_links(runs_json, os.path.join(dest, "links.csv"))
            os.remove(runs_json)
        # The per-interval series are large: only the phases' goodput is kept from them.
        ts = os.path.join(dest, "timeseries.csv")
        if os.path.exists(ts):
            if e.get("phases"):
                write_phases(ts, os.path.join(dest, "phases.csv"), e["phases"])
            if e.get("outage"):
                write_recovery(ts, os.path.join(dest, "recovery.csv"), e["outage"])
            os.remove(ts)
        # A video run writes its rows to video.csv; summary.csv is then a header alone.
        summary = os.path.join(dest, "summary.csv")
        if os.path.exists(os.path.join(dest, "video.csv")) and os.path.exists(summary):
            with open(summary) as f:
                if sum(1 for _ in f) <= 1:
                    os.remove(summary)
    with open(os.path.join(tmp, "commit.txt"), "w") as f:
        f.write(source_commit() + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    # One archive an experiment (scripts/raw_pack.py), as the testbed's and the matrix's rows.
    raw_pack.pack(out)


LINK_COLUMNS = ["sent", "sent_bytes", "delivered", "delivered_bytes", "dropped_queue", "lost"]


def write_links(runs_json, dest):
    """links.csv: a row per run and link direction, from braid-sim --json's metrics.links."""
    with open(runs_json) as f:
        runs = json.load(f).get("runs", [])
    with open(dest, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "link", *LINK_COLUMNS])
        for r in runs:
            for link in (r.get("metrics") or {}).get("links", []):
                w.writerow([r.get("run"), link.get("name"), *(link.get(c, "") for c in LINK_COLUMNS)])


def phase_goodput(timeseries, phases):
    """run → {phase: mean goodput (Mbit/s) of the intervals ending in the phase}, from braid-sim's
    timeseries.csv (one row per interval and flow; the goodput column is the run's, all flows)."""
    per_run = OrderedDict()
    for r in timeseries:
        t, g = fnum(r.get("time_s")), fnum(r.get("goodput_mbps"))
        if t is not None and g is not None:
            per_run.setdefault(r["run"], OrderedDict())[t] = g
    out = OrderedDict()
    for run_id, series in per_run.items():
        out[run_id] = OrderedDict()
        for name, start, end in phases:
            xs = [g for t, g in series.items() if t > start and (end is None or t <= end)]
            out[run_id][name] = statistics.mean(xs) if xs else None
    return out


def write_recovery(timeseries_path, dest, outage):
    with open(dest, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "rate_before_mbps", "back_s", "least_window_mbps"])
        for run_id, series in sim_series(read_csv(timeseries_path)).items():
            rate, back, least = recovery(series, *outage)
            w.writerow([run_id] + ["" if v is None else f"{v:.6g}" for v in (rate, back, least)])


def write_phases(timeseries_path, dest, phases):
    goodput = phase_goodput(read_csv(timeseries_path), phases)
    with open(dest, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run"] + [f"{name}_mbps" for name, _, _ in phases])
        for run_id, by_phase in goodput.items():
            w.writerow([run_id] + ["" if v is None else f"{v:.6f}" for v in by_phase.values()])


def source_commit():
    """The commit braid-sim was built from, marked when the code or scenarios had changes on top."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "crates", "scenarios", "Cargo.lock")
    return commit + (" with uncommitted changes" if dirty else "")
