"""Small helpers shared by the report and the runs: number parsing and formatting, CSV reading,
sweep labels."""

import csv
import math
import os
import re
from collections import OrderedDict


# The repository (this file is scripts/repro/common.py).
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SIM = os.path.join("target", "release", "braid-sim")


def fnum(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def fmt(v, digits=2, none="—"):
    return none if v is None else f"{v:.{digits}f}"


def pct(v, digits=1):
    return "—" if v is None else f"{v * 100:.{digits}f} %"


def parse_rate(v):
    """`50Mbit/s` → 50e6 (bit/s); the decimal units the scenario files use."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kMG]?)bit/s\s*", str(v or ""))
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)] if m else None


def parse_seconds(v):
    """`60s` / `500ms` → seconds."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*(s|ms)\s*", str(v or ""))
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1) if m else None


def parse_point(point):
    """`path.B1.loss=0.01 path.B2.rtt=100ms` → {'B1.loss': '0.01', 'B2.rtt': '100ms'}."""
    out = OrderedDict()
    for part in (point or "").split():
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.removeprefix("path.")] = v
    return out


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def same_value(a, b):
    if a is None:
        return False
    x, y = fnum(re.sub(r"[a-zA-Z/]+$", "", str(a))), fnum(re.sub(r"[a-zA-Z/]+$", "", str(b)))
    if x is not None and y is not None:
        return abs(x - y) < 1e-9
    return str(a) == str(b)


def describe(vals, prefix=""):
    """Sweep values as words: {'subflow2.loss': '0.1'} → 'loss 10 %'."""
    out = []
    for k, v in vals.items():
        if not k.startswith(prefix):
            continue
        name = k.split(".")[-1]
        x = fnum(v)
        out.append(f"{name} {x * 100:g} %" if name == "loss" and x is not None else f"{name} {v}")
    return ", ".join(out)


def pretty(point):
    return ", ".join(f"{k} {v}" for k, v in parse_point(point).items()) or "—"
