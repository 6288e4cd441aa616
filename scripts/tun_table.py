#!/usr/bin/env python3
"""docs/TUN.md's testbed tables and verdicts, from the raw rows of `braid-testbed run ... --workload
tun` (one JSON file per run; kept in docs/results/raw/testbed/tun/rows.tar.gz).

    python3 scripts/tun_table.py tun-two-lossy.COMMIT.run1.json tun-two-lossy.COMMIT.run2.json ...
    python3 scripts/tun_table.py --failover tun-failover.COMMIT.run1.json

A name that is not a file is looked up in the tun archive (scripts/raw_pack.py). Prints one
Markdown table (a column per run, IPv4 / IPv6 in each cell, medians last) and the verdict of
each target, judged on the rows:

- TCP through the tunnel: median goodput ÷ `braid forward`'s in the same run ≥ 0.9, every
  download intact;
- UDP: median share within the deadline ≥ 99.5 %;
- repair: each row's repair bytes ≤ 2 × the loss the stream met + 2 points, with that loss read
  three ways: the share of braid's datagrams the paths lost, random and outage drops alike
  (the server's counts: received less rebuilt, against the datagrams sent); the emulated
  links' random drops in the data direction over the packets that met the draw (the
  forwarders' counters, an outage left out); and the configured loss of each path weighted by
  the bytes put on it (the row's `udp_loss_met`, an outage left out);
- failover (`--failover`): the download intact, and the longest run of UDP packets that missed
  the deadline spans ≤ the deadline;
- teardown: every braid row `clean`.
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import raw_pack  # noqa: E402

ARCHIVE_DIR = os.path.join(HERE, "..", "docs", "results", "raw", "testbed")
TUN_ROWS = ("braid-tun", "braid-tun-v6")


def load(name):
    """The rows of one run: a JSON file, or a member of the tun archive."""
    if os.path.exists(name):
        with open(name) as f:
            return json.load(f)
    files = raw_pack.Raw(ARCHIVE_DIR).files("tun")
    if name not in files:
        raise SystemExit(f"tun_table: {name}: no such file, nor a member of the tun archive")
    return json.loads(files[name])


def stream_loss(row):
    """The loss the stream met: the share of the datagrams braid sent that the paths lost, i.e.
    that did not reach the server as sent (the server's datagrams received, less those rebuilt
    from repair, against the client's datagrams sent). Random and outage drops alike, counted
    in the stream's own units: the packets an outage drops that carry no datagram (probes,
    ACKs, padded path announcements) are not in it. A datagram that arrived late still
    arrived."""
    t = row.get("tun") or {}
    sent, received, rebuilt = (t.get(k) for k in ("braid_datagrams_sent", "braid_server_received", "braid_server_rebuilt"))
    if not sent or received is None or rebuilt is None:
        return None
    return (sent - (received - rebuilt)) / sent


def random_loss(row):
    """The emulated links' random drops in the data direction (client to server) over the
    packets that met the random draw (those not lost in an outage), over every path
    (forwarders are listed a>, a<, b>, b<, ...): the links' own record, an outage left out."""
    forward = [f["link"] for f in row.get("forwarders", [])[0::2]]
    carried = sum(f["sent"] - f.get("lost_outage", 0) for f in forward)
    return sum(f["lost"] for f in forward) / carried if carried else None


def outage_drops(row):
    """Packets the forward links lost in an outage, and the bytes lost beyond their random
    drops' share (each random drop counted at the mean packet size of its link): about what
    the outage swallowed, in bytes."""
    forward = [f["link"] for f in row.get("forwarders", [])[0::2]]
    packets = sum(f.get("lost_outage", 0) for f in forward)
    nbytes = sum(f["sent_bytes"] - f["delivered_bytes"] - f["lost"] * f["sent_bytes"] / f["sent"]
                 for f in forward if f["sent"])
    return packets, max(nbytes, 0)


class Run:
    """One run's rows, by (part, contender)."""

    def __init__(self, rows):
        self.rows = {}
        for r in rows:
            t = r.get("tun") or {}
            part = "tcp" if t.get("part") == "tcp-download" else "udp" if t.get("udp_on_time_within_deadline") is not None else None
            if part:
                self.rows[(part, r["contender"])] = r

    def get(self, part, contender):
        return self.rows.get((part, contender))

    def tun(self, part, contender):
        r = self.get(part, contender)
        return (r or {}).get("tun") or {}

    def families(self):
        return [c for c in TUN_ROWS if self.get("udp", c) or self.get("tcp", c)]

    def goodput(self, contender):
        r = self.get("tcp", contender)
        return r["goodput_mbps"] if r and not r.get("error") else None

    def tcp_ratio(self, contender):
        a, b = self.goodput(contender), self.goodput("braid-forward")
        return a / b if a is not None and b else None

    def repair(self, contender):
        v = self.tun("udp", contender).get("udp_repair_overhead")
        return None if v is None else 100 * v

    def budget_configured(self, contender):
        v = self.tun("udp", contender).get("udp_loss_met")
        return None if v is None else 100 * (2 * v + 0.02)

    def budget_stream(self, contender):
        r = self.get("udp", contender)
        loss = stream_loss(r) if r else None
        return None if loss is None else 100 * (2 * loss + 0.02)

    def budget_random(self, contender):
        r = self.get("udp", contender)
        loss = random_loss(r) if r else None
        return None if loss is None else 100 * (2 * loss + 0.02)

    def outage(self, contender):
        r = self.get("udp", contender)
        if not r or not r.get("forwarders"):
            return None
        packets, nbytes = outage_drops(r)
        return f"{packets} ({nbytes / 1000:.0f})"

    def loads(self):
        """uptime's 1-minute load at the first and the last row of the run."""
        loads = [r["load"].split()[0] for r in self.rows.values() if r.get("load")]
        return f"{loads[0]}–{loads[-1]}" if loads else "?"

    def teardowns(self):
        out = []
        for (part, c), r in sorted(self.rows.items()):
            if c in TUN_ROWS:
                out.append(((r.get("tun") or {}).get("teardown") or "not recorded", f"{c} {part}"))
        return out


def fmt(v, spec):
    return "–" if v is None else spec % v


def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def table(runs, failover):
    fams = runs[0].families()
    lines = ["| what | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | median |",
             "|" + "---|" * (len(runs) + 2)]

    def line(name, f, spec, per_family=True, with_median=True):
        keys = fams if per_family else [None]
        cells = [" / ".join(fmt(f(r, k), spec) for k in keys) for r in runs]
        med = " / ".join(fmt(median([f(r, k) for r in runs]), spec) for k in keys) if with_median else ""
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {med} |")

    fam = " / ".join("IPv4" if c == "braid-tun" else "IPv6" for c in fams)
    line(f"TCP, braid-tun {fam}, Mbit/s", lambda r, c: r.goodput(c), "%.2f")
    line("braid-forward Mbit/s", lambda r, _: r.goodput("braid-forward"), "%.2f", per_family=False)
    line(f"÷ braid forward, {fam}", lambda r, c: r.tcp_ratio(c), "%.2f")
    line(f"UDP within the deadline, {fam} %", lambda r, c: _pct(r.tun("udp", c).get("udp_on_time_within_deadline")), "%.2f")
    line(f"misses, {fam}", lambda r, c: r.tun("udp", c).get("udp_missed"), "%d")
    if failover:
        line(f"longest run of misses, {fam} (packets)", lambda r, c: r.tun("udp", c).get("udp_longest_miss_run"), "%d")
        line(f"its span, {fam} ms", lambda r, c: r.tun("udp", c).get("udp_longest_miss_ms"), "%.0f")
    line(f"dropped in the client's send queue, {fam}", lambda r, c: r.tun("udp", c).get("braid_client_dropped"), "%d")
    line(f"one-way p50, {fam} ms", lambda r, c: r.tun("udp", c).get("udp_p50_ms"), "%.1f")
    line(f"repair, {fam} %", lambda r, c: r.repair(c), "%.2f")
    line(f"budget: 2 × the stream's loss + 2, {fam} %", lambda r, c: r.budget_stream(c), "%.2f")
    line(f"budget: 2 × the links' random loss + 2, {fam} %", lambda r, c: r.budget_random(c), "%.2f")
    if failover:
        line(f"outage drops toward the server, {fam}: packets (≈ kB)",
             lambda r, c: r.outage(c), "%s", with_median=False)
    line(f"budget: 2 × configured loss + 2, {fam} %", lambda r, c: r.budget_configured(c), "%.2f")
    line(f"wire overhead, {fam} %", lambda r, c: _pct(r.tun("udp", c).get("udp_wire_overhead")), "%.1f")
    line(f"silences acknowledged after all, {fam}", lambda r, c: r.tun("udp", c).get("braid_suspected_delivered"), "%d")
    line("plain UDP on the best path %", lambda r, _: _pct(r.tun("udp", "udp@0").get("udp_on_time_within_deadline")), "%.2f", per_family=False)
    lines.append("| load (uptime's 1-min, first–last row) | " + " | ".join(r.loads() for r in runs) + " | |")
    intact = [all((r.tun("tcp", c).get("tcp_intact") is True) for (p, c) in r.rows if p == "tcp") for r in runs]
    lines.append("| every download intact | " + " | ".join("yes" if i else "**no**" for i in intact) + " | |")
    clean = [all(t == "clean" for t, _ in r.teardowns()) for r in runs]
    lines.append("| teardown | " + " | ".join("clean" if c else "**left**" for c in clean) + " | |")
    return lines, fams


def _pct(v):
    return None if v is None else 100 * v


def verdicts(runs, fams, failover):
    out = []
    ratios = {c: median([r.tcp_ratio(c) for r in runs]) for c in fams}
    intact = all(r.tun("tcp", c).get("tcp_intact") is True for r in runs for (p, c) in r.rows if p == "tcp")
    ok = intact and all(v is not None and v >= 0.9 for v in ratios.values())
    out.append(f"- TCP ≥ 0.9× braid forward, intact: **{'met' if ok else 'not met'}** (median "
               + " / ".join(fmt(ratios[c], "%.2f×") for c in fams) + f"; every download intact: {'yes' if intact else 'no'})")
    shares = {c: median([_pct(r.tun("udp", c).get("udp_on_time_within_deadline")) for r in runs]) for c in fams}
    ok = all(v is not None and v >= 99.5 for v in shares.values())
    low = [f"run {i + 1} {c} {v:.2f} %" for i, r in enumerate(runs) for c in fams
           if (v := _pct(r.tun("udp", c).get("udp_on_time_within_deadline"))) is not None and v < 99.5]
    out.append(f"- UDP ≥ 99.5 % within the deadline: **{'met' if ok else 'not met'}** (median "
               + " / ".join(fmt(shares[c], "%.2f %%") for c in fams) + (f"; below: {', '.join(low)}" if low else "; no row below") + ")")
    budgets = (("the stream's loss", Run.budget_stream), ("the links' random loss", Run.budget_random),
               ("the configured loss", Run.budget_configured))
    for name, budget in budgets:
        over = [f"run {i + 1} {c} {r.repair(c):.2f} > {budget(r, c):.2f} %" for i, r in enumerate(runs) for c in fams
                if r.repair(c) is not None and budget(r, c) is not None and r.repair(c) > budget(r, c)]
        n = sum(1 for r in runs for c in fams if r.repair(c) is not None)
        out.append(f"- repair ≤ 2 × {name} + 2 points: **{'met' if not over else 'not met'}** (within it in "
                   f"{n - len(over)} of {n} rows" + (f"; over: {'; '.join(over)})" if over else ")"))
    if failover:
        worst = [(r.tun("udp", c).get("udp_longest_miss_ms"), r.tun("udp", c).get("udp_deadline_ms") or 150.0)
                 for r in runs for c in fams]
        ok = intact and all(w is not None and w <= d for w, d in worst)
        out.append(f"- failover: download intact and the longest run of misses ≤ the deadline: **{'met' if ok else 'not met'}**"
                   f" (longest {max((w for w, _ in worst if w is not None), default=0):.0f} ms)")
    left = [f"run {i + 1} {what}: {t}" for i, r in enumerate(runs) for t, what in r.teardowns() if t != "clean"]
    out.append(f"- teardown clean after every braid run: **{'met' if not left else 'not met'}**"
               + (f" ({'; '.join(left)})" if left else ""))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--failover", action="store_true", help="add the failover rows and verdict")
    ap.add_argument("runs", nargs="+", help="one JSON file of rows per run (or its name in the tun archive)")
    a = ap.parse_args(argv)
    runs = [Run(load(n)) for n in a.runs]
    lines, fams = table(runs, a.failover)
    print("\n".join(lines))
    print()
    print("\n".join(verdicts(runs, fams, a.failover)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
