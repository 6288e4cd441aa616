"""The matrix's raw rows as the report reads them: loading (RAW/testbed through raw_pack, RAW/sim),
the contenders' names, and the small helpers on rows and point labels that the report's sections
and its target verdicts (report_targets.py) share. Used by scripts/make-report.py.
"""

import csv
import io
import json
import os
import re
import statistics
import sys
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_pack  # noqa: E402  (beside this script)
from repro.common import fmt, fnum  # noqa: E402,F401  (a CSV cell as a number, and printed; make-report uses fmt)
from repro.common import parse_point as parse_label  # noqa: E402  (a point's label as a dict)

# The kernel contenders, and braid's default (the external contender named `braid`).
BRAID = "ext:braid"
# The two-path braid connection of the fairness mixes (scripts/testbed_matrix.py).
TWO_PATHS = "braid-2paths"
ONE_PATH_REF = "bbr"
MULTI_REF = "mptcp-bbr"


# The latency-under-load bound per scenario: RTT + 25 ms on one path; on several, the slower
# path's RTT + 30 ms.
LATENCY_BOUND_MS = {"latency": 125, "latency-two-paths": 190}


def label_value(v):
    """A sweep value as a number for plotting: 0.01 → 0.01, '100ms' → 100."""
    m = re.match(r"^([0-9.]+)", v)
    return float(m.group(1)) if m else None


def loss_model(v):
    """A loss table as braid-testbed labels it, `{model:gilbert-elliott,p_bad_to_good:0.25,...}`,
    as a dict of its keys (numbers as floats); None for anything else."""
    m = re.fullmatch(r"\{(.*)\}", v or "")
    if not m:
        return None
    out = {}
    for part in m.group(1).split(","):
        k, _, x = part.partition(":")
        out[k.strip()] = fnum(x) if fnum(x) is not None else x.strip()
    return out


def mean_loss(v):
    """A point's loss value as its mean loss rate: a number, or a Gilbert-Elliott chain's
    stationary loss (the bad state's share p_gb / (p_gb + p_bg) times its loss, plus the good
    state's); None when neither."""
    if fnum(v) is not None:
        return fnum(v)
    ge = loss_model(v)
    if not ge or ge.get("model") != "gilbert-elliott":
        return None
    gb, bg = ge.get("p_good_to_bad"), ge.get("p_bad_to_good")
    if not isinstance(gb, float) or not isinstance(bg, float) or gb + bg <= 0:
        return None
    bad = gb / (gb + bg)
    return bad * ge.get("loss_bad", 1.0) + (1 - bad) * ge.get("loss_good", 0.0)


def pretty_label(label):
    parts = parse_label(label)
    if not parts:
        return "—"
    out = []
    for k, v in parts.items():
        ge = loss_model(v)
        if k.endswith("loss") and fnum(v) is not None:
            out.append(f"{k} {fnum(v) * 100:g} %")
        elif k.endswith("loss") and mean_loss(v) is not None:
            burst = ge.get("p_bad_to_good")
            out.append(f"{k} Gilbert–Elliott {mean_loss(v) * 100:.3g} % mean"
                       + (f", bursts of {1 / burst:.3g} packets" if isinstance(burst, float) and burst > 0 else ""))
        else:
            out.append(f"{k} {v}")
    return ", ".join(out)


def load_testbed(raw):
    """Testbed rows, each with `_meta` (its point's .meta.json, or {}); read through raw_pack.Raw
    (each scenario's rows.tar.gz and any loose files)."""
    rows = []
    tb = raw_pack.Raw(os.path.join(raw, "testbed"))
    for path in tb.glob("*", "*.csv"):
        meta_path = path[: -len(".csv")] + ".meta.json"
        meta = {}
        if tb.exists(meta_path):
            try:
                meta = json.loads(tb.read_text(meta_path))
            except ValueError:
                meta = {}
        for r in csv.DictReader(io.StringIO(tb.read_text(path), newline="")):
            r["_meta"] = meta
            rows.append(r)
    return rows


def load_sim(raw):
    """{(scenario, point, model): row} from RAW/sim/<scenario>/<model>/summary.csv, read through
    raw_pack.Raw (each scenario's rows.tar.gz and any loose files)."""
    out = {}
    sim = raw_pack.Raw(os.path.join(raw, "sim"))
    paths = sorted(os.path.join(sim.dir, s, name) for s in sim.scenarios() for name in sim.files(s)
                   if re.fullmatch(r"[^/]+/summary\.csv", name))
    for path in paths:
        model = os.path.basename(os.path.dirname(path))
        for r in csv.DictReader(io.StringIO(sim.read_text(path), newline="")):
            out[(r["scenario"], r.get("point", ""), model)] = r
    return out


def workload(r):
    return (r.get("workload") or "bulk").strip() or "bulk"


def mix_runs(rows):
    """Mix rows grouped by (scenario, label, mix), each group split into its runs (flow indices
    restart at 0 with each run), and each run's mean share per kind."""
    groups = OrderedDict()
    for r in rows:
        groups.setdefault((r["scenario"], r["label"], r["mix"]), []).append(r)
    out = OrderedDict()
    for key, rs in groups.items():
        runs = []
        for r in rs:
            if r.get("flow") == "0" or not runs:
                runs.append([])
            runs[-1].append(r)
        per_run = []
        for run in runs:
            kinds = defaultdict(list)
            for r in run:
                kinds[r["contender"]].append(fnum(r["ratio"]) or 0)
            per_run.append({k: statistics.mean(v) for k, v in kinds.items()})
        out[key] = (runs, per_run)
    return out


def is_mix(r):
    return bool((r.get("mix") or "").strip())


def per_path_share(r):
    b = [fnum(x) or 0 for x in (r.get("path_fwd_tx_bytes") or "").split(";") if x != ""]
    total = sum(b)
    return [x / total for x in b] if total > 0 else []


def single_path_tcp(contender, cc="bbr"):
    return re.fullmatch(rf"{cc}(@\d+)?", contender) is not None
