#!/usr/bin/env python3
"""Recovery after an outage, from braid-sim's `--csv DIR` output (docs/BENCHMARKS.md, "A path dies mid-transfer").

usage: recovery_time.py DIR OUTAGE_S THRESHOLD_MBPS

For each run: the first 100 ms bin at or after the outage from which connection goodput stays
at or above the threshold for 2 s (20 bins), as an offset from the outage; the first 10 bins
after the outage; the mean goodput from 0.5 s after the outage to completion; and how many later
bins fall below the threshold. Bins that end after the run completed are left out.
"""
import csv
import sys

HOLD = 20


def main():
    d, outage, thr = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    summary = {r["run"]: r for r in csv.DictReader(open(d + "/summary.csv"))}
    runs = {}
    for r in csv.DictReader(open(d + "/timeseries.csv")):
        if r["path"] == "0":  # goodput is per connection, repeated on each path's row
            runs.setdefault(r["run"], []).append((float(r["time_s"]), float(r["goodput_mbps"])))
    print("| mode | completion s | back ≥ threshold | first 10 bins after the outage | mean after | later dips |")
    print("|---|---:|---:|---|---:|---:|")
    for run, series in runs.items():
        s = summary[run]
        done = s["completion_s"]
        end = float(done) if done else series[-1][0] + 0.1
        bins = [(t, g) for t, g in series if t >= outage - 1e-9 and t + 0.1 <= end]
        back = next(
            (i for i in range(len(bins) - HOLD + 1) if all(g >= thr for _, g in bins[i : i + HOLD])),
            None,
        )
        dips = 0 if back is None else sum(1 for _, g in bins[back:] if g < thr)
        when = "never" if back is None else f"+{bins[back][0] - outage:.1f} s"
        after = [g for _, g in bins[5:]]
        mean = sum(after) / max(1, len(after))
        first = " ".join(f"{g:.1f}" for _, g in bins[:10])
        print(f"| {s['mode']} | {done[:6] or 'dnf'} | {when} | {first} | {mean:.2f} | {dips} |")


if __name__ == "__main__":
    main()
