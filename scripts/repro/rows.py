"""Reading rows: the simulator's (averaged over seeds per point and mode), the testbed's, and
recovery from an outage in a series of delivered bytes."""

import csv
import io
import json
import os
import statistics
from collections import OrderedDict

import raw_pack  # scripts/raw_pack.py (reproduce.py puts scripts/ on the path)

from .common import fnum, parse_point, same_value
from .papers import RECOVERY_BEFORE, RECOVERY_SHARE, RECOVERY_WINDOW


class Rows:
    """The simulator rows of one experiment, averaged over seeds per (point, mode)."""

    def __init__(self, rows):
        # braid-sim labels a point with its seed too (`seed=2 path.wifi.loss=0.01`): the seed is a
        # column of its own, and a point is the same point whatever the seed.
        for r in rows:
            r["point"] = " ".join(t for t in r["point"].split() if not t.startswith("seed="))
        self.rows = rows
        self.points = list(OrderedDict.fromkeys(r["point"] for r in rows))

    @classmethod
    def load(cls, repro, exp):
        """The experiment's rows (`repro`: results_files()): its untagged run's, and each tagged
        run's with `@tag` on the mode; a run's phase goodputs (phases.csv beside its summary)
        become columns of its row."""
        files = repro.files(exp)
        rows = []
        for name in ("summary.csv", "video.csv"):
            if name in files:
                rows += with_phases(csv_rows(files[name]), files, "")
        for tag in tags(files):
            if f"{tag}/summary.csv" in files:
                for r in with_phases(csv_rows(files[f"{tag}/summary.csv"]), files, f"{tag}/"):
                    r["mode"] = f"{r['mode']}@{tag}"
                    rows.append(r)
        return cls(rows)

    def __bool__(self):
        return bool(self.rows)

    def runs(self, point, mode):
        return [r for r in self.rows if r["point"] == point and r["mode"] == mode]

    def mean(self, point, mode, col="goodput_mbps"):
        xs = [fnum(r.get(col)) for r in self.runs(point, mode)]
        xs = [x for x in xs if x is not None]
        return statistics.mean(xs) if xs else None

    def median(self, point, mode, col="goodput_mbps"):
        xs = [fnum(r.get(col)) for r in self.runs(point, mode)]
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    def seeds(self):
        return sorted({r["seed"] for r in self.rows}, key=lambda s: int(s) if s.isdigit() else s)

    def unfinished(self, point, mode):
        return sum(1 for r in self.runs(point, mode) if not fnum(r.get("completion_s")) or r.get("stalled_at_s"))

    def point_where(self, **want):
        """The first point whose sweep values match `want` (values compared as numbers where they are)."""
        for p in self.points:
            vals = parse_point(p)
            if all(same_value(vals.get(k), v) for k, v in want.items()):
                return p
        return None


def b1_share(rows, point, mode):
    """Mean over seeds of path 0's share of the acknowledged packets (`path_share` is `a;b`)."""
    xs = []
    for r in rows.runs(point, mode):
        first = (r.get("path_share") or "").split(";")[0]
        if fnum(first) is not None:
            xs.append(fnum(first))
    return statistics.mean(xs) if xs else None


def with_phases(rows, files, prefix):
    """Each run's phase goodputs (phases.csv) and outage recovery (recovery.csv) as columns;
    `files` is an experiment's (results_files()), `prefix` a tagged run's `<tag>/` or ''."""
    for name in ("phases.csv", "recovery.csv"):
        if prefix + name in files:
            by_run = {p["run"]: p for p in csv_rows(files[prefix + name])}
            for r in rows:
                r.update({k: v for k, v in by_run.get(r.get("run"), {}).items() if k != "run"})
    return rows


def csv_rows(body):
    """The rows of a CSV file's bytes, as dicts."""
    return list(csv.DictReader(io.StringIO(body.decode("utf-8"), newline="")))


def tags(files):
    """The tagged runs of an experiment (`files`: results_files()'s), sorted: its folders."""
    return sorted({n.split("/")[0] for n in files if "/" in n and not n.startswith(".")})


def results_files(results):
    """docs/results/repro as the report reads it: each experiment's rows.tar.gz
    (scripts/raw_pack.py) with any loose files laid over it (a run not packed yet)."""
    return raw_pack.Raw(results)


def testbed_files(raw):
    """RAW/testbed as the matrix left it: each scenario's rows.tar.gz with any loose files over it."""
    return raw_pack.Raw(os.path.join(raw, "testbed"))


def load_testbed(raw):
    """Testbed rows by scenario: (label, contender) → (goodput, commit); the last run wins."""
    out = {}
    tb = testbed_files(raw)
    for path in tb.glob("*", "*.csv"):
        meta = {}
        mpath = path[: -len(".csv")] + ".meta.json"
        if tb.exists(mpath):
            try:
                meta = json.loads(tb.read_text(mpath))
            except ValueError:
                pass
        for r in csv.DictReader(io.StringIO(tb.read_text(path), newline="")):
            if (r.get("workload") or "bulk") != "bulk" or (r.get("mix") or "").strip():
                continue
            done = bool(fnum(r.get("completion_s")))
            out.setdefault(r["scenario"], {})[(r["label"], r["contender"])] = (
                fnum(r.get("goodput_mbps")), done, (meta.get("commit") or "")[:7])
    return out


def load_timelines(raw, scenario):
    """The testbed rows of `scenario` that carry a timeline (braid-testbed --timeline), from the
    JSON files, each with its point's commit and, for braid's rows, the per-path statistics
    written beside them (`<point>.stats.jsonl`, braid forward --stats-json): the timeouts."""
    out = []
    tb = testbed_files(raw)
    for path in tb.glob(scenario, "*.json"):
        if path.endswith(".meta.json"):
            continue
        base = path[: -len(".json")]
        meta = {}
        if tb.exists(base + ".meta.json"):
            meta = json.loads(tb.read_text(base + ".meta.json"))
        timeouts = None
        if tb.exists(base + ".stats.jsonl"):
            lines = [json.loads(x) for x in tb.read_text(base + ".stats.jsonl").split("\n") if x.strip()]
            timeouts = max((sum(p.get("timeouts", 0) for p in x.get("paths", [])) for x in lines), default=None)
        for r in json.loads(tb.read_text(path)):
            if not r.get("timeline"):
                continue
            r["commit"] = (meta.get("commit") or "")[:7]
            r["stats_timeouts"] = timeouts if r["contender"].startswith("ext:") else None
            out.append(r)
    return out


def bytes_at(series, t):
    """Bytes delivered by time `t`, linear between the samples of `series` ((s, bytes), by time)."""
    if not series or t <= series[0][0]:
        return series[0][1] if series else 0.0
    for (t0, b0), (t1, b1) in zip(series, series[1:]):
        if t <= t1:
            return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
    return series[-1][1]


def recovery(series, start, end):
    """Recovery from an outage [start, end] (s) of a transfer whose delivered bytes are `series`
    ((s, bytes), increasing, ending with the transfer): (rate before, Mbit/s; back, s after the
    outage's end, or None if no window made it by the series' end; the least 1-s window's goodput
    from the outage's end to `back`, Mbit/s). Rule: RECOVERY_* above."""
    if not series or series[0][0] > start - RECOVERY_BEFORE:
        return None, None, None
    rate = (bytes_at(series, start) - bytes_at(series, start - RECOVERY_BEFORE)) * 8 / RECOVERY_BEFORE / 1e6
    last = series[-1][0]
    least = None
    k = 0
    while True:
        w0 = end + k * 0.1
        w1 = w0 + RECOVERY_WINDOW
        if w1 > last + 1e-9:
            return rate, None, least
        got = (bytes_at(series, w1) - bytes_at(series, w0)) * 8 / RECOVERY_WINDOW / 1e6
        least = got if least is None else min(least, got)
        if got >= RECOVERY_SHARE * rate:
            return rate, round(w1 - end, 3), least
        k += 1


def sim_series(timeseries):
    """run → [(s, bytes delivered)] from braid-sim's timeseries.csv (100 ms bins; the goodput
    column is the run's, repeated on each path's row)."""
    bins = OrderedDict()
    for r in timeseries:
        t, g = fnum(r.get("time_s")), fnum(r.get("goodput_mbps"))
        if t is not None and g is not None:
            bins.setdefault(r["run"], OrderedDict())[t] = g
    out = OrderedDict()
    for run_id, by_t in bins.items():
        total, series = 0.0, [(0.0, 0.0)]
        for t, g in by_t.items():
            total += g * 1e6 * 0.1 / 8
            series.append((round(t + 0.1, 3), total))
        out[run_id] = series
    return out
