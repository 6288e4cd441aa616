"""CTCP (Kim, Médard et al.): Table IV in the simulator and on the testbed, recovery after a burst
of timeouts, Table V."""

import statistics
from collections import OrderedDict

from .common import fmt, fnum, parse_point, pct
from .papers import (
    CTCP_OUTAGE, CTCP_RECOVERY_SCENARIO, CTCP_RUNS_SCENARIO, CTCP_RUNS_TARGET, CTCP_TABLE4, CTCP_TABLE5,
    RECOVERY_BEFORE, RECOVERY_BY, RECOVERY_SHARE, RECOVERY_WINDOW,
)
from .rows import load_timelines, recovery
from .verdicts import NOT, NOT_RUN, PARTLY, REPRODUCED, ratio_verdict


class CtcpSections:
    """The report's sections for CTCP (Kim, Médard et al.) (a part of `report.Report`)."""

    def ctcp_table4(self):
        paper, exp = "CTCP (002)", "ctcp-table4"
        self.w(f"### {exp}")
        self.w()
        self.w("Setting (§VI-A, Table IV): one WiFi path, ≈100 ms RTT, 20 Mbit/s, an 11,492,499-byte file, "
               "random loss p on the data direction, 5 runs per point. The paper's TCP is Linux CUBIC with "
               "SACK; braid's `tcp` is its model of TCP over UDP (CUBIC). Testbed columns: the matrix's "
               "`ext:braid-ctcp` and kernel `cubic`.")
        self.w()
        rows = self.rows(exp)
        if not rows:
            return self.missing(paper, exp)
        self.source_line(exp, rows)
        commits = self.testbed_commits("ctcp-table4")
        self.w("| p | paper TCP | paper CTCP | sim tcp | sim ctcp | ctcp / paper | sim braid | testbed cubic | "
               f"testbed ctcp | testbed braid |")
        self.w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        ratios, over_tcp = [], []
        for p, (tcp, ctcp) in CTCP_TABLE4.items():
            pt = rows.point_where(**{"wifi.loss": p})
            if pt is None:
                continue
            c, t, b = rows.mean(pt, "ctcp"), rows.mean(pt, "tcp"), rows.mean(pt, "braid")
            ratio = c / ctcp if c is not None else None
            ratios.append(ratio)
            if p > 0 and c is not None and t:
                over_tcp.append(c / t)
            label = f"path.wifi.loss={p:g}"
            tb = self.testbed_cells("ctcp-table4", label, ["cubic", "ext:braid-ctcp", "ext:braid"])
            self.w(f"| {p * 100:g} % | {tcp:.2f} | {ctcp:.2f} | {fmt(t)} | {fmt(c)} | {fmt(ratio)} | {fmt(b)} | "
                   + " | ".join(tb) + " |")
        self.w()
        if commits:
            self.w(f"Testbed rows measured at {', '.join(commits)} (one run per point).")
            self.w()
        v = ratio_verdict(ratios)
        lo = min((r for r in ratios if r is not None), default=None)
        gain = min(over_tcp, default=None)
        self.verdict(paper, exp, v, "reproduced when the simulator's ctcp is ≥ 0.9 × the paper's CTCP at every "
                     "p of Table IV; partly when ≥ 0.75 × everywhere or ≥ 0.9 × at half the points.",
                     f"Lowest ctcp / paper {fmt(lo)}; ctcp ≥ {fmt(gain, 1)} × the tcp model at every p ≥ 1 % "
                     "(the paper: 4.1–29 × TCP).")

    def ctcp_table4_testbed(self):
        """The project's testbed target for CTCP on one path: ≥ 13.5 Mbit/s (the paper's lowest
        CTCP, at 4–5 %) at 1–5 % loss in every run, three runs (loss seeds) per point."""
        paper, exp = "CTCP (002)", "ctcp-table4-testbed"
        self.w(f"### {exp}")
        self.w()
        runs = self.tb.get(CTCP_RUNS_SCENARIO, {})
        by_p = OrderedDict()
        bbr = {}
        for (label, contender), (g, done, _) in sorted(runs.items()):
            vals = parse_point(label)
            p = fnum(vals.get("wifi.loss"))
            if p is None:
                continue
            if contender == "ext:braid-ctcp":
                by_p.setdefault(p, []).append((vals.get("seed", "?"), g, done))
            elif contender == "bbr":
                bbr.setdefault(p, []).append(g)
        self.w(f"Setting: Table IV's path on the namespace testbed, three runs per point "
               f"(`scenarios/testbed/{CTCP_RUNS_SCENARIO}.toml`, loss seeds 1–3, braid's ctcp mode as an external "
               "contender beside kernel bbr, 15 s limit; rows in "
               f"`docs/results/raw/testbed/{CTCP_RUNS_SCENARIO}/`, each point's command in its `.meta.json`; "
               f"`scripts/testbed-matrix.sh --only {CTCP_RUNS_SCENARIO}`). Target: ≥ {CTCP_RUNS_TARGET:g} Mbit/s "
               "(the paper's lowest CTCP, at 4–5 %) at 1–5 % loss in every run.")
        self.w()
        if not by_p:
            self.w(f"No rows yet: `scripts/testbed-matrix.sh --only {CTCP_RUNS_SCENARIO}`.")
            self.w()
            self.verdicts.append((paper, exp, NOT_RUN))
            return
        self.w("| p | ctcp, each run (seed: Mbit/s) | lowest | kernel bbr, mean |")
        self.w("|---:|---|---:|---:|")
        total = met = 0
        medians_met = True
        for p, rs in sorted(by_p.items()):
            rs.sort(key=lambda r: r[0])
            total += len(rs)
            ok = [g is not None and done and g >= CTCP_RUNS_TARGET for _, g, done in rs]
            met += sum(ok)
            medians_met &= sum(ok) * 2 > len(ok)
            cells = ", ".join(f"{seed}: {fmt(g)}{'' if done else '*'}" for seed, g, done in rs)
            low = min((g for _, g, _ in rs if g is not None), default=None)
            b = [x for x in bbr.get(p, []) if x is not None]
            self.w(f"| {p * 100:g} % | {cells} | {fmt(low)} | {fmt(statistics.mean(b) if b else None)} |")
        self.w()
        commits = self.testbed_commits(CTCP_RUNS_SCENARIO)
        loads = self.testbed_loads(CTCP_RUNS_SCENARIO)
        self.w(f"Target ≥ {CTCP_RUNS_TARGET:g} Mbit/s in every run: **{'met' if met == total else 'not met'}** "
               f"({met} of {total} runs; `*` = unfinished at the limit)"
               f"{'; measured at ' + ', '.join(commits) if commits else ''}"
               f"{'; load average (1 min) at the points’ starts ' + loads if loads else ''}.")
        self.w()
        v = REPRODUCED if met == total else PARTLY if medians_met else NOT
        self.verdict(paper, exp, v, f"reproduced when every run is ≥ {CTCP_RUNS_TARGET:g} Mbit/s; partly when "
                     "most runs at every point are; not otherwise.", "")

    def ctcp_recovery(self):
        """The target's second half: after a burst of timeouts, back to ≥ 0.8 × the rate within
        5 s, in the simulator and on the testbed, on the same scenario file."""
        paper, exp = "CTCP (002)", CTCP_RECOVERY_SCENARIO
        start, end = CTCP_OUTAGE
        self.w(f"### {exp}")
        self.w()
        self.w(f"Setting: Table IV's path (20 Mbit/s, 100 ms RTT, one-BDP queue, random loss p on the data "
               f"direction) with its ACK direction dark from {start:g} s to {end:g} s "
               f"(`scenarios/testbed/{exp}.toml`, a 30 MB transfer): the sender's probe timeout, ~1.5 × srtt, "
               "doubles with each one in a row, so it times out about twice before the ACKs return, and "
               "Algorithm 2 restarts slow start each time. Target: back to ≥ "
               f"{RECOVERY_SHARE:g} × its rate within {RECOVERY_BY:g} s after the burst, in every run. Rule, the same "
               f"for the simulator and the testbed: its rate = goodput over the {RECOVERY_BEFORE:g} s before the "
               f"outage; back = the end of the first {RECOVERY_WINDOW:g}-s window (on a 100 ms grid) starting at or "
               f"after the outage's end that delivers ≥ {RECOVERY_SHARE:g} × that rate, counted from the outage's "
               "end. The paper has no such experiment: its testbed shows CTCP holding its rate over a run, "
               "not a measured outage.")
        self.w()
        results = []  # (where, back) of every ctcp run
        rows = self.rows(exp)
        if rows:
            self.source_line(exp, rows)
            self.w("Simulator (time zero = the connection's start; `timeouts` = the run's probe timeouts):")
            self.w()
            self.w("| p | mode | seed | rate before | back after | least 1-s window until back | timeouts |")
            self.w("|---:|---|---:|---:|---:|---:|---:|")
            for pt in rows.points:
                p = fnum(parse_point(pt).get("wifi.loss"))
                for mode in ("ctcp", "braid"):
                    for r in rows.runs(pt, mode):
                        back = fnum(r.get("back_s"))
                        if mode == "ctcp":
                            results.append(("sim", back))
                        self.w(f"| {p * 100:g} % | {mode} | {r['seed']} | {fmt(fnum(r.get('rate_before_mbps')))} | "
                               f"{'never' if back is None else f'{back:.1f} s'} | "
                               f"{fmt(fnum(r.get('least_window_mbps')))} | {r.get('timeouts') or '—'} |")
            self.w()
        else:
            self.w(f"No simulator rows in `docs/results/repro/{exp}/`: run `scripts/reproduce.py --only {exp}`.")
            self.w()
        tl = load_timelines(self.raw, exp)
        if tl:
            commits = sorted({r["commit"] for r in tl if r["commit"]})
            loads = self.testbed_loads(exp)
            self.w(f"Testbed (`scripts/testbed-matrix.sh --only {exp}`; rows with `--timeline`, the bytes at the sink "
                   f"every 100 ms, in `docs/results/raw/testbed/{exp}/`; time zero = the links' start, the sender "
                   "connects about 0.6 s later; `timeouts` from braid's per-path statistics beside the rows, "
                   "`braid forward --stats-json`; measured at "
                   f"{', '.join(commits) or 'an unrecorded commit'}"
                   f"{', load average (1 min) ' + loads + ' at the points’ starts' if loads else ''}):")
            self.w()
            self.w("| p | contender | seed | rate before | back after | least 1-s window until back | timeouts | completion |")
            self.w("|---:|---|---:|---:|---:|---:|---:|---:|")
            tl.sort(key=lambda r: (fnum(parse_point(r["label"]).get("wifi.loss")) or 0, r["contender"], r["seed"]))
            for r in tl:
                p = fnum(parse_point(r["label"]).get("wifi.loss"))
                rate, back, least = recovery([tuple(x) for x in r["timeline"]], start, end)
                if r["contender"] == "ext:braid-ctcp":
                    results.append(("testbed", back))
                done = r.get("completion_s")
                self.w(f"| {p * 100:g} % | {r['contender']} | {r['seed']} | {fmt(rate)} | "
                       f"{'never' if back is None else f'{back:.1f} s'} | {fmt(least)} | "
                       f"{'—' if r.get('stats_timeouts') is None else r['stats_timeouts']} | "
                       f"{'—' if done is None else f'{done:.1f} s'} |")
            self.w()
        else:
            self.w(f"No testbed rows yet: `scripts/testbed-matrix.sh --only {exp}`.")
            self.w()
        if not results:
            self.verdicts.append((paper, exp, NOT_RUN))
            return
        ok = {w: [b is not None and b <= RECOVERY_BY for ww, b in results if ww == w] for w in ("sim", "testbed")}
        every = {w: bool(v) and all(v) for w, v in ok.items()}
        v = REPRODUCED if every["sim"] and every["testbed"] else PARTLY if any(every.values()) else NOT
        said = "; ".join(f"{w}: {sum(v)} of {len(v)} ctcp runs back within {RECOVERY_BY:g} s" for w, v in ok.items() if v)
        self.verdict(paper, exp, v, f"reproduced when every ctcp run, in the simulator and on the testbed, is back "
                     f"within {RECOVERY_BY:g} s; partly when every run of one of them is; not otherwise.", said + ".")

    def ctcp_table5(self):
        paper, exp = "CTCP (002)", "ctcp-table5"
        self.w(f"### {exp}")
        self.w()
        self.w("Setting (§VI-B, Table V): two WiFi interfaces, each capped at about 100 packets of window "
               "(\"at most 7-8 Mbps per path\"), ≈100 ms RTT, the same file, the same loss p on both. braid: two "
               "8 Mbit/s paths with one-BDP queues (the cap is a link rate here, not a window); only the points "
               "with equal loss on both paths are the paper's.")
        self.w()
        rows = self.rows(exp)
        if not rows:
            return self.missing(paper, exp)
        self.source_line(exp, rows)
        self.w("| p | paper combined | sim ctcp | ctcp / paper | × ideal | repair | sim braid | braid × ideal |")
        self.w("|---:|---:|---:|---:|---:|---:|---:|---:|")
        ratios, ideal_ok, repair_ok = [], [], []
        for p, (_, _, _, combined) in CTCP_TABLE5.items():
            pt = rows.point_where(**{"wlan0.loss": p, "wlan1.loss": p})
            if pt is None:
                continue
            c, b = rows.mean(pt, "ctcp"), rows.mean(pt, "braid")
            ci, bi = rows.mean(pt, "ctcp", "ratio_ideal"), rows.mean(pt, "braid", "ratio_ideal")
            rep = rows.mean(pt, "ctcp", "repair_overhead")
            ratio = c / combined if c is not None else None
            ratios.append(ratio)
            ideal_ok.append(ci is not None and ci >= 0.8)
            repair_ok.append(rep is not None and rep <= 2 * p + 0.05)
            self.w(f"| {p * 100:g} % | {combined:.2f} | {fmt(c)} | {fmt(ratio)} | {fmt(ci)} | {pct(rep)} | "
                   f"{fmt(b)} | {fmt(bi)} |")
        self.w()
        v = ratio_verdict(ratios)
        self.verdict(paper, exp, v, "as Table IV: ctcp ≥ 0.9 × the paper's combined goodput at every p.",
                     f"ctcp ≥ 0.8 × ideal at {sum(ideal_ok)} of {len(ideal_ok)} points, repair ≤ 2p + 5 points "
                     f"at {sum(repair_ok)} of {len(repair_ok)}. The paper's paths were window-capped below "
                     "their links; these are rate-capped, so ctcp may exceed the paper's numbers.")
