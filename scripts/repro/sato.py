"""Sato, Koga, Ikenaga: the 16-flow dumbbell, the ns-3 NewReno baseline and the r, g, l sweeps."""

import json
import statistics
from collections import OrderedDict

from .common import fmt, fnum, parse_point, parse_rate, parse_seconds, pct
from .rows import csv_rows, tags


def point_without_seed(point):
    """A summary row's point with its `seed=` key left out (the seeds' runs of one point)."""
    return " ".join(k for k in (point or "").split() if not k.startswith("seed="))


def parse_rate_packets(queue):
    """"30packets" → 30 (a buffer in packets; others sort last)."""
    q = str(queue)
    return int(q.removesuffix("packets")) if q.removesuffix("packets").isdigit() else float("inf")
from .verdicts import NOT, NOT_RUN, claims_verdict


class SatoSections:
    """The report's sections for Sato, Koga, Ikenaga (a part of `report.Report`)."""

    def sato(self):
        paper, exp = "Sato et al. (001/003)", "sato-dumbbell"
        self.w(f"### {exp}")
        self.w()
        self.w("Setting (§4, Table 1): 16 flows through a 50 Mbit/s, 50 ms bottleneck with a 300-packet buffer, "
               "60 s, 10 trials, 1000-byte segments, TCP NewReno in ns-3; parameters l ∈ {10…40}, r ∈ {0.5, 0.7, "
               "1.0}, g ∈ {1…5} (l = 0: no limit). Paper (text; the figures' values are not in it): the proposed scheme's total "
               "throughput is above NewReno's \"regardless of the parameters evaluated\" (Fig. 6(a)–(c)), best at "
               "l = 30–40, r = 0.7, g = 2–3; it \"significantly reduces the number of TCP fast recoveries\" (Fig. "
               "7(a)) and timeouts (Figs. 8(c), 9(c)). braid: each flow behind its own 100 Mbit/s access link into "
               "the shared router (Fig. 5; the receiver's side folded into it), whose delay is two draws from the "
               "paper's 1–5 ms (sender's and receiver's side) per flow and seed, flows 10 ms apart, sending "
               "continuously for the 60 s as the paper's (goodput: the bytes delivered over the 60 s); 10 seeds, "
               "the paper's 10 trials, each with its own access delays (the table gives means over the seeds). The "
               "paper's comparison: the `tcp` mode on `newreno-ns3` (ns-3's NewReno window rules) with TCP's loss "
               "recovery without SACK (`--recovery cumulative`: the sender sees only the cumulative point and "
               "duplicate ACKs, RFC 6582 recovery repairs one hole per round trip, a timeout resends everything "
               "from the cumulative point, segments the receiver holds included; docs/DEVIATIONS.md, \"Sato et "
               "al.\"), and the `sato` mode on the same TCP, whose parities rebuild a segment at the receiver so "
               "the cumulative point moves without a resend. Beside it, as a second reading, both on braid's own "
               "recovery from the ACK ranges (`@ranges`, SACK-like: every hole seen, only lost packets resent), "
               "and the modes' own controllers (`@default`).")
        self.w()
        rows = self.rows(exp)
        if not rows:
            return self.missing(paper, exp)
        self.source_line(exp, rows)
        use = self.bottleneck_use(exp)
        self.w("| mode | congestion control and recovery | goodput Mbit/s (all flows) | 0–20 s | 20–60 s | × ideal | "
               "timeouts | fast recoveries | segments resent | repair | recovered / repair | bottleneck carried |")
        self.w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        pt = rows.points[0]
        names = [("tcp", "ns-3 NewReno, recovery without SACK: the paper's baseline"),
                 ("sato", "ns-3 NewReno, recovery without SACK, l = 30, r = 0.7, g = 3"),
                 ("tcp@ranges", "ns-3 NewReno (`newreno-ns3`), braid's recovery from the ACK ranges"),
                 ("sato@ranges", "the same, l = 30, r = 0.7, g = 3"),
                 ("sato@default", "braid's NewReno (the mode's default)"),
                 ("tcp@default", "CUBIC (the tcp model's default)"),
                 ("braid@default", "braid's own (`--mode braid`)")]
        for mode, cc in names:
            if not rows.runs(pt, mode):
                continue
            self.w(f"| {mode} | {cc} | {fmt(rows.mean(pt, mode))} | {fmt(rows.mean(pt, mode, 'transient_mbps'))} | "
                   f"{fmt(rows.mean(pt, mode, 'steady_mbps'))} | {fmt(rows.mean(pt, mode, 'ratio_ideal'))} | "
                   f"{fmt(rows.mean(pt, mode, 'timeouts'), 1)} | {fmt(rows.mean(pt, mode, 'fast_recoveries'), 1)} | "
                   f"{pct(self.resent_share(rows, pt, mode))} | "
                   f"{pct(rows.mean(pt, mode, 'repair_overhead'))} | {fmt(rows.mean(pt, mode, 'recovery_rate'))} | "
                   f"{pct(use.get(mode))} |")
        self.w()
        self.w("Timeouts: the connections' retransmission (or probe) timeouts plus, on braid's recovery, the "
               "timeouts `newreno-ns3` models (summed over the 16 flows, mean over seeds); fast recoveries: the "
               "recovery episodes `newreno-ns3` opens (Fig. 7(a)'s metric; empty for the other controllers, which "
               "do not count them); segments resent: source symbols sent again over all packets sent. 0–20 s and "
               "20–60 s: the goodput of the transient and the steady state (Figs. 8(a), 9(a)), the means of the "
               "100 ms intervals. Bottleneck carried: the router's bytes delivered × 8 over 50 Mbit/s × 60 s, "
               "parities and retransmissions included (links.csv, braid-sim `--json`'s link counters).")
        self.w()
        ns3 = self.sato_ns3()
        s, t = rows.mean(pt, "sato"), rows.mean(pt, "tcp")
        st, tt = rows.mean(pt, "sato", "timeouts"), rows.mean(pt, "tcp", "timeouts")
        headline = None if s is None or t is None else s >= t
        fewer = None if st is None or tt is None else st < tt
        sr, tr = rows.mean(pt, "sato", "fast_recoveries"), rows.mean(pt, "tcp", "fast_recoveries")
        fewer_fr = None if sr is None or tr is None else sr < tr
        phase = {}
        for name in ("transient", "steady"):
            a, b = rows.mean(pt, "sato", f"{name}_mbps"), rows.mean(pt, "tcp", f"{name}_mbps")
            phase[name] = (a, b, None if a is None or b is None else a >= b)
        claims = [("sato ≥ the baseline (ns-3's NewReno, recovery without SACK) at l = 30, r = 0.7, g = 3", headline),
                  ("with fewer timeouts", fewer),
                  ("with fewer fast recoveries (Fig. 7(a))", fewer_fr),
                  ("sato ≥ the baseline in the transient state, 0–20 s (Fig. 8(a))", phase["transient"][2]),
                  ("and in the steady state, 20–60 s (Fig. 9(a))", phase["steady"][2])]
        claims += self.sato_sweeps(t)
        buffer = self.sato_buffer()
        self.w("Claims: " + "; ".join(f"{c}: **{'held' if ok else 'did not hold' if ok is not None else 'not run'}**"
                                      for c, ok in claims) + ".")
        self.w()
        self.sato_against_ns3(rows, pt, use, ns3)
        self.sato_why(rows, pt, use)
        self.sato_ranges_reading(rows, pt, use, buffer)
        rep_s = rows.mean(pt, "sato", "repair_overhead")
        v = NOT_RUN if headline is None else NOT if not headline else claims_verdict(claims)
        self.verdict(paper, exp, v, "reproduced when every claim holds on the paper's TCP (recovery without "
                     "SACK); partly when the first holds and some other does not; not when the first (the paper's "
                     "gain) does not, whatever the others. The second reading (braid's recovery from the ACK "
                     "ranges) is shown, not voted.",
                     f"sato {fmt(s)} against {fmt(t)} Mbit/s (mean over {len(rows.runs(pt, 'sato'))} seeds; "
                     f"median {fmt(rows.median(pt, 'sato'))} against {fmt(rows.median(pt, 'tcp'))}), "
                     f"timeouts {fmt(st, 1)} against {fmt(tt, 1)}, fast recoveries {fmt(sr, 1)} against "
                     f"{fmt(tr, 1)}."
                     + (f" On braid's recovery: sato {fmt(rows.mean(pt, 'sato@ranges'))} against "
                        f"{fmt(rows.mean(pt, 'tcp@ranges'))}." if rows.runs(pt, "sato@ranges") else "")
                     + (f" sato spends {pct(rep_s)} of its packets on parity." if rep_s is not None else ""))

    def sato_against_ns3(self, rows, pt, use, ns3):
        """How near the baseline lands to ns-3's own NewReno without SACK, and why not nearer."""
        off = ns3.get(False)
        t, tr, tt = rows.mean(pt, "tcp"), rows.mean(pt, "tcp", "fast_recoveries"), rows.mean(pt, "tcp", "timeouts")
        res = self.resent_share(rows, pt, "tcp")
        if not off or None in (t, tr, tt, res, use.get("tcp")) or not tr:
            return
        # ns-3's data segment on the wire: 1000 bytes, TCP 20 + timestamps 12, IP 20, PPP 2.
        resent = off["bottleneck_carried"] - off["goodput_mbps"] * 1054 / 1000 / 50
        self.w(f"The baseline against ns-3 itself (the table above): ns-3.44's NewReno without SACK delivers "
               f"{fmt(off['goodput_mbps'])} Mbit/s here with {fmt(off['fast_recoveries'], 0)} fast recoveries and "
               f"{fmt(off['timeouts'], 0)} timeouts, its bottleneck {pct(off['bottleneck_carried'])} busy, about "
               f"{pct(max(resent, 0))} of it with segments the receiver already held; the baseline here delivers "
               f"{fmt(t)} Mbit/s with {fmt(tr, 0)} fast recoveries and {fmt(tt, 0)} timeouts, its bottleneck "
               f"{pct(use['tcp'])} busy, {pct(res)} of its packets resent segments. So the recovery without SACK "
               f"moves the model from the SACK figures ({fmt(rows.mean(pt, 'tcp@ranges'))} Mbit/s on braid's "
               f"recovery, ns-3 with SACK {fmt(ns3[True]['goodput_mbps']) if ns3.get(True) else '—'}) to "
               f"{fmt(t / off['goodput_mbps'])} × ns-3's goodput without, with {fmt(tr / off['fast_recoveries'])} × "
               f"its fast recoveries and {fmt(tt / off['timeouts']) if off['timeouts'] else '—'} × its timeouts."
               + self.ns3_trace_sentences(off))
        self.w()

    def ns3_trace_sentences(self, off):
        """Where ns-3.44's recoveries and resends without SACK come from: its traced run
        (`scripts/ns3/sato_dumbbell.py --trace`, trace-seed1.json beside its rows)."""
        body = self.repro.files("sato-dumbbell-ns3").get("trace-seed1.json")
        if not body:
            return " Where ns-3.44's recoveries and resends come from was not traced."
        tr = json.loads(body.decode("utf-8"))
        opened, res = tr["recoveries_opened_by"], tr["resends"]
        total = sum(res.values())
        crossed = {k.split(" / ")[0]: n for k, n in res.items() if k.endswith("/ crossed")}
        flows = tr["per_flow_recoveries_resends"]
        cycling = sorted((v for v in flows.values() if v[0] >= 50), key=lambda v: v[0])
        calm = sorted((v for v in flows.values() if v[0] < 50), key=lambda v: v[0])
        n_open = opened["spurious"] + opened["lost"]
        return (f" Where ns-3.44's come from (its run of seed 1 traced: `scripts/ns3/sato_dumbbell.py --trace`, "
                f"summary in `trace-seed1.json` beside its rows): of its {total:,} resends, "
                f"{sum(crossed.values()):,} ({pct(sum(crossed.values()) / total)}) were of segments a copy of "
                f"which had already crossed the bottleneck — {crossed.get('recovery', 0):,} in fast recovery, "
                f"{crossed.get('open', 0):,} in the open state, {crossed.get('loss', 0):,} after a timeout — and "
                f"{opened['spurious']:,} of its {n_open:,} fast recoveries ({pct(opened['spurious'] / n_open)}) "
                "began by resending such a segment: spurious, opened by the duplicate ACKs the receiver returns "
                "for duplicates. Three rules of ns-3.44 without SACK make it so (`tcp-socket-base.cc`, "
                "`tcp-tx-buffer.cc`): every ACK in recovery that moves the cumulative point short of the "
                "recovery point resends the segment at the new point, even one that was only in flight behind "
                "the segment that arrived (`ProcessAck`'s partial ACK, `DoRetransmit`); each duplicate ACK in "
                "recovery counts one more segment held past the point (`AddRenoSack`), kept after recovery, and "
                "a point that lands on a segment so guessed marks it lost and resends it (`DiscardUpTo`, "
                "`MarkHeadAsLost`); and after the full ACK (`m_recoverActive` false) three duplicate ACKs open "
                "recovery again. The duplicates each recovery sends return the duplicate ACKs that open the "
                f"next, round after round: {len(cycling)} of the 16 flows spent much of the run in that cycle "
                f"({cycling[0][0]}–{cycling[-1][0]} fast recoveries, {min(v[1] for v in cycling):,}–"
                f"{max(v[1] for v in cycling):,} resends each), the other {len(calm)} did not "
                f"({calm[0][0] if calm else 0}–{calm[-1][0] if calm else 0} fast recoveries) — it starts when a "
                "timeout's go-back-N has duplicates still in flight as the loss state ends; 1,598 of the 1,760 "
                "recoveries opened on a single duplicate ACK, the segment at the point having been resent as "
                "a wrong guess (`DupAck`, RFC 6675 §5 step (2)). The model has these rules "
                "(`conn/path/cumulative.rs`: a late first copy moves the point, the resends go out at once, the "
                "guessed holds, the re-entry on one duplicate ACK, a flight size without the packets the point "
                "passed and without the guessed holds, and each braid ACK frame replayed as the TCP ACKs "
                "ns-3's receiver would have sent, its delayed ACKs counted across frames) and, since the "
                "mend of those delayed ACKs (2026-11-28), its cycle lasts as ns-3's does: on seed 1, 9 of its "
                "16 flows cycle (134–287 fast recoveries, 4,149–11,839 resends each) and 7 do not (5–10), "
                "from per-flow counters of a debug build, not kept (docs/DEVIATIONS.md, \"Sato et al.\"). "
                "Before, a lone in-order segment at the end of an ACK frame lost its delayed ACK, and the "
                "duplicate ACKs that carry the cycle became ACKs that moved the point. Whether ns-3.25's TCP, "
                "the paper's, had these rules is not known: the guessed holds came with the scoreboard of "
                "3.27.")

    def sato_why(self, rows, pt, use):
        """What the rows say about sato against the baseline on the paper's TCP."""
        s, t = rows.mean(pt, "sato"), rows.mean(pt, "tcp")
        rep_s, rec = rows.mean(pt, "sato", "repair_overhead"), rows.mean(pt, "sato", "recovered")
        par = rows.mean(pt, "sato", "repair_sent")
        res_t, res_s = self.resent_share(rows, pt, "tcp"), self.resent_share(rows, pt, "sato")
        use_t, use_s = use.get("tcp"), use.get("sato")
        s5, t5 = rows.mean(pt, "sato", "start_mbps"), rows.mean(pt, "tcp", "start_mbps")
        ss, ts = rows.mean(pt, "sato", "steady_mbps"), rows.mean(pt, "tcp", "steady_mbps")
        if None in (s, t, rep_s, rec, par, res_t, res_s, use_t, use_s, s5, t5, ss, ts) or not t or not par:
            return
        sr, tr = rows.mean(pt, "sato", "fast_recoveries"), rows.mean(pt, "tcp", "fast_recoveries")
        head = (f"Reading the rows, on the paper's TCP: the baseline resends {pct(res_t)} of its packets (a "
                f"timeout's go-back-N among them) and its bottleneck is {pct(use_t)} busy; sato resends "
                f"{pct(res_s)}, spends {pct(rep_s)} on parity and keeps it {pct(use_s)} busy, and its goodput is "
                f"{fmt(s / t)} × the baseline's ({fmt(ss / ts)} × from 20 s on; 0–5 s {fmt(s5)} against {fmt(t5)} "
                f"Mbit/s). Its {par:,.0f} parities rebuilt {rec:,.0f} segments: the losses here are a full "
                "drop-tail buffer's, bursts that put several holes in one group (whose parity then repairs "
                "nothing) rather than the single losses a group's one parity is made for")
        if s >= t and None not in (sr, tr) and sr < tr and res_s < res_t / 2:
            # The gain is the baseline's waste avoided, not the repairs.
            self.w(head + ". So the gain is not the repairs: it is the baseline's waste that sato does not "
                   f"have. The baseline runs in the cycle of spurious recoveries above ({fmt(tr, 0)} fast "
                   f"recoveries, {pct(res_t)} of its packets resent); sato stays out of it ({fmt(sr, 0)} and "
                   f"{pct(res_s)}). Why is not traced; the likely cause is §3.2's withheld duplicate ACKs: while "
                   "the segment at the point may still be rebuilt by its group's parity, the model opens no "
                   "recovery on it, neither at three duplicate ACKs nor on the single one that re-opens the "
                   "cycle's recoveries (not verified). " + self.fig7_sentence(rows, pt))
        else:
            self.w(head + ", so the parities displace data packets and win back little of what the recovery "
                   "without SACK wastes. " + self.fig7_sentence(rows, pt) + f" On this recovery the baseline "
                   f"resends {pct(res_t)} of its packets, go-back-N included; ns-3.44's about a quarter of its "
                   "link.")
        self.w()

    def sato_ranges_reading(self, rows, pt, use, buffer):
        """The second reading: both modes on braid's recovery from the ACK ranges."""
        s, t = rows.mean(pt, "sato@ranges"), rows.mean(pt, "tcp@ranges")
        use_t, use_s = use.get("tcp@ranges"), use.get("sato@ranges")
        rep_s = rows.mean(pt, "sato@ranges", "repair_overhead")
        s5_t, st_t = rows.mean(pt, "tcp@ranges", "start_mbps"), rows.mean(pt, "tcp@ranges", "steady_mbps")
        if None in (s, t, use_t, use_s, rep_s, s5_t, st_t) or not st_t or not t:
            return
        early = (st_t - s5_t) * 5 / (st_t * 60)
        self.w(f"The second reading, on braid's recovery from the ACK ranges (`@ranges`, as ns-3's NewReno "
               f"with SACK): sato {fmt(s)} against {fmt(t)} Mbit/s ({pct(s / t - 1)}). The baseline's bottleneck "
               f"is {pct(use_t)} busy, sato's {pct(use_s)}: the baseline leaves {pct(1 - use_t)} of the link "
               f"unused, nearly all of it in slow start's first seconds (the first 5 s's shortfall against the "
               f"steady rate is {pct(early)} of the 60 s), and no segment is resent that the receiver holds, so "
               f"sato's parities ({pct(rep_s)} of its packets) can only displace data: its goodput falls by "
               "about its parity share. The losses a parity repairs — single drops at the full buffer — cost "
               "this link nothing: while one flow recovers, the other 15 fill it."
               + self.idle_room_sentence(buffer))
        self.w()

    @staticmethod
    def fig7_sentence(rows, pt):
        """What Fig. 7 credits (fewer fast recoveries and timeouts), as the rows have it."""
        sr, st = rows.mean(pt, "sato", "fast_recoveries"), rows.mean(pt, "sato", "timeouts")
        tr, tt = rows.mean(pt, "tcp", "fast_recoveries"), rows.mean(pt, "tcp", "timeouts")
        counts = (f"{fmt(sr, 1)} fast recoveries and {fmt(st, 1)} timeouts against the baseline's "
                  f"{fmt(tr, 1)} and {fmt(tt, 1)}")
        why = ("a burst's holes still need a fast retransmit and one round trip each, and withholding the "
               "duplicate ACKs while a parity may still repair (§3.2) delays the recovery of the holes it "
               "cannot, so more recoveries outlast the retransmission timer (each a go-back-N).")
        if sr < tr and st >= tt:
            return (f"Of what Fig. 7 credits, the fewer fast recoveries appear, the fewer timeouts do not: {counts}. "
                    "The withheld duplicate ACKs open fewer recoveries, but " + why)
        if sr < tr and st < tt:
            return f"What Fig. 7 credits appears: {counts}."
        return f"What Fig. 7 credits does not appear either: {counts}: " + why

    @staticmethod
    def resent_share(rows, pt, mode):
        """Source symbols sent again over all packets sent (retransmissions / path packets sent)."""
        r, n = rows.mean(pt, mode, "retransmissions"), rows.mean(pt, mode, "path_packets_sent")
        return None if r is None or not n else r / n

    def idle_room_sentence(self, buffer):
        """The buffer check's reading: room idle under the baseline is not enough for a gain."""
        small = min(buffer, key=lambda q: parse_rate_packets(q), default=None) if buffer else None
        m = buffer.get(small) if small else None
        if not m:
            return ""
        need = [("tcp", "carried"), ("sato", "carried"), ("sato", "repair_overhead"), ("tcp", "goodput_mbps"),
                ("sato", "goodput_mbps"), ("sato", "recovered"), ("sato", "losses")]
        if any(m.get(k) is None for k in need) or not m[("tcp", "goodput_mbps")] or not m[("sato", "losses")]:
            return ""
        won = m[("sato", "carried")] - m[("tcp", "carried")]
        size = str(small).removesuffix("packets")
        return (f" Idle room alone does not make the gain either (sato-buffer above): with a {size}-packet buffer "
                f"the baseline carried {pct(m[('tcp', 'carried')])} of the link, {pct(1 - m[('tcp', 'carried')])} "
                f"idle; sato carried {fmt(won * 100, 1)} points more but spent {pct(m[('sato', 'repair_overhead')])} of its packets "
                "on parity (smaller windows, so smaller groups, g parities a window), and its goodput is "
                f"{fmt(m[('sato', 'goodput_mbps')] / m[('tcp', 'goodput_mbps')])} × the baseline's; its "
                f"parities repaired {pct(m[('sato', 'recovered')] / m[('sato', 'losses')])} of its losses, the "
                "rest in groups with a second loss or a lost parity.")

    def sato_ns3(self):
        """ns-3's own NewReno in the same dumbbell (scripts/ns3/sato_dumbbell.py's rows): the table,
        and {sack: {column: mean}}."""
        files = self.repro.files("sato-dumbbell-ns3")
        if "rows.jsonl" not in files:
            return {}
        rows = [json.loads(line) for line in files["rows.jsonl"].decode("utf-8").split("\n") if line.strip()]
        keys = ["goodput_mbps", "transient_mbps", "steady_mbps", "bottleneck_carried", "fast_recoveries", "timeouts"]
        out = {}
        for sack in (False, True):
            rs = [r for r in rows if bool(r.get("sack")) == sack]
            if rs:
                out[sack] = {k: statistics.mean(r[k] for r in rs) for k in keys}
                out[sack]["seeds"] = sorted(r["seed"] for r in rs)
        if not out:
            return {}
        self.w("The same dumbbell in ns-3 itself (ns-3.44's TCP, the oldest with bindings in the package "
               "registry; `scripts/ns3/sato_dumbbell.py`, rows in `docs/results/repro/sato-dumbbell-ns3/`): "
               "NewReno with classic RFC 6582 recovery, initial window 1, delayed ACKs every 2 segments, minimum "
               "RTO 1 s, no pacing, 1000-byte segments, the same access-delay draws and 10 ms stagger; fast "
               "recoveries and timeouts from the senders' congestion-state trace, bottleneck carried from the "
               "router's transmitted bytes (headers and retransmissions included)."
               + (" Rows marked `draft` came from the script before it was committed, with the same settings "
                  "(the folder's README says how they differ)." if any("draft" in r.get("script", "") for r in rows)
                  else ""))
        self.w()
        self.w("| TCP in ns-3 | seeds | goodput Mbit/s (all flows) | 0–20 s | 20–60 s | bottleneck carried | "
               "fast recoveries | timeouts |")
        self.w("|---|---|---:|---:|---:|---:|---:|---:|")
        for sack, label in ((False, "NewReno, SACK off (ns-3 before 3.27: the paper's TCP, which `--recovery cumulative` models)"),
                            (True, "NewReno, SACK on (ns-3.27 and later's default)")):
            m = out.get(sack)
            if m:
                self.w(f"| {label} | {', '.join(map(str, m['seeds']))} | {fmt(m['goodput_mbps'])} | "
                       f"{fmt(m['transient_mbps'])} | {fmt(m['steady_mbps'])} | {pct(m['bottleneck_carried'])} | "
                       f"{fmt(m['fast_recoveries'], 1)} | {fmt(m['timeouts'], 1)} |")
        self.w()
        return out

    def bottleneck_use(self, exp, by_point=False):
        """mode → the share of the scenario's first bottleneck's capacity it carried over the
        run (forward bytes delivered × 8 / (rate × duration)), mean over seeds; a tagged run's
        modes as `mode@tag`; with `by_point`, (point without its seed, mode) →. From links.csv
        (`links=True` experiments); a swept bottleneck rate is not read (the file's first)."""
        files = self.repro.files(exp)
        if "scenario.toml" not in files:
            return {}
        import tomllib
        sc = tomllib.loads(files["scenario.toml"].decode("utf-8"))
        neck = (sc.get("bottleneck") or [{}])[0]
        rate, secs = parse_rate(neck.get("rate")), parse_seconds(sc.get("duration"))
        if isinstance(rate, list) or rate is None or secs is None:
            return {}
        by_mode = {}
        for prefix, tag in [("", "")] + [(t + "/", "@" + t) for t in tags(files)]:
            links, summary = files.get(prefix + "links.csv"), files.get(prefix + "summary.csv")
            if links is None or summary is None:
                continue
            mode_of = {r["run"]: r["mode"] + tag for r in csv_rows(summary)}
            point_of = {r["run"]: point_without_seed(r.get("point")) for r in csv_rows(summary)}
            for r in csv_rows(links):
                if r["link"] == f"{neck.get('name')}.fwd" and fnum(r["delivered_bytes"]) is not None:
                    key = mode_of.get(r["run"])
                    if by_point and key:
                        key = (point_of.get(r["run"]), key)
                    by_mode.setdefault(key, []).append(fnum(r["delivered_bytes"]) * 8 / (rate * secs))
        return {m: statistics.mean(xs) for m, xs in by_mode.items() if m}

    def sato_buffer(self):
        """The dumbbell with smaller router buffers (not a paper experiment): the table, and
        {queue: {(mode, column): mean}} with the bottleneck's carried share as column `carried`."""
        exp = "sato-buffer"
        rows = self.rows(exp)
        self.w(f"#### {exp}")
        self.w()
        self.w("Not one of the paper's experiments: the same dumbbell with the router's buffer cut from the "
               "paper's 300 packets to 100 and 30, where NewReno leaves more of the bottleneck idle — room the "
               "parities could win back (both modes on `newreno-ns3` with braid's recovery from the ACK ranges: the "
               "second reading's).")
        self.w()
        if not rows:
            self.w(f"No rows: `scripts/reproduce.py --only {exp}`.")
            self.w()
            return {}
        self.source_line(exp, rows)
        use = self.bottleneck_use(exp, by_point=True)
        cols = ["goodput_mbps", "repair_overhead", "recovered", "losses", "recovery_rate", "timeouts"]
        self.w("| buffer | tcp goodput | sato goodput | sato / tcp | tcp carried | sato carried | sato repair | "
               "sato losses repaired | recovered / repair | timeouts tcp / sato |")
        self.w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        out = {}
        for pt in rows.points:
            queue = parse_point(pt).get("bottleneck.router.queue")
            m = {(mode, c): rows.mean(pt, mode, c) for mode in ("tcp", "sato") for c in cols}
            for mode in ("tcp", "sato"):
                m[(mode, "carried")] = use.get((point_without_seed(pt), mode))
            out[queue] = m
            g_t, g_s = m[("tcp", "goodput_mbps")], m[("sato", "goodput_mbps")]
            rec, lost = m[("sato", "recovered")], m[("sato", "losses")]
            self.w(f"| {queue} | {fmt(g_t)} | {fmt(g_s)} | "
                   f"{fmt(g_s / g_t) if None not in (g_s, g_t) and g_t else '—'} | {pct(m[('tcp', 'carried')])} | "
                   f"{pct(m[('sato', 'carried')])} | {pct(m[('sato', 'repair_overhead')])} | "
                   f"{pct(rec / lost) if None not in (rec, lost) and lost else '—'} | "
                   f"{fmt(m[('sato', 'recovery_rate')])} | {fmt(m[('tcp', 'timeouts')], 1)} / "
                   f"{fmt(m[('sato', 'timeouts')], 1)} |")
        self.w()
        self.w("Carried: the router's bytes × 8 over 50 Mbit/s × 60 s (links.csv), parities and retransmissions "
               "included; losses repaired: the share of sato's detected losses its parities repaired.")
        self.w()
        return out

    def sato_sweeps(self, baseline):
        """Figs. 6(a)–(c): the sweeps' tables, and the trend claims read from them."""
        claims = []
        above = []
        sweeps = [("sato-sweep-l", "Fig. 6(a): the group size limit l (rows) for g = 1, 3, 5 (columns), r = 0.7",
                   "sato_limit", "sato_interleave", ("30", "40"), "best l in 30–40"),
                  ("sato-sweep-r", "Fig. 6(b): the reduction factor r, l = 30, g = 3", "sato_reduction", None,
                   ("0.7",), "best r = 0.7"),
                  ("sato-sweep-g", "Fig. 6(c), Figs. 7–9: the interleaved groups g, l = 30, r = 0.7",
                   "sato_interleave", None, ("2", "3"), "best g in 2–3")]
        for exp, title, key, col, best_values, claim in sweeps:
            rows = self.rows(exp)
            self.w(f"#### {exp}")
            self.w()
            self.w(title + ".")
            self.w()
            if not rows:
                self.w(f"No rows: `scripts/reproduce.py --only {exp}`.")
                self.w()
                claims.append((claim, None))
                continue
            self.source_line(exp, rows)
            values = list(OrderedDict.fromkeys(parse_point(p).get(key) for p in rows.points))
            cols = list(OrderedDict.fromkeys(parse_point(p).get(col) for p in rows.points)) if col else [None]
            heads = [f"g = {c}" for c in cols] if col else ["goodput Mbit/s", "timeouts", "repair", "recovered / repair"]
            self.w(f"| {key.removeprefix('sato_')} | " + " | ".join(heads) + " |")
            self.w("|---:|" + "---:|" * len(heads))
            best, best_at = None, None
            for v in values:
                cells = []
                for c in cols:
                    want = {key: v} if c is None else {key: v, col: c}
                    pt = next((p for p in rows.points
                               if all(parse_point(p).get(k) == x for k, x in want.items())), None)
                    g = rows.mean(pt, "sato") if pt else None
                    if g is not None:
                        above.append(baseline is not None and g >= baseline)
                        if best is None or g > best:
                            best, best_at = g, v
                    if c is None and pt:
                        cells += [fmt(g), fmt(rows.mean(pt, "sato", "timeouts"), 1),
                                  pct(rows.mean(pt, "sato", "repair_overhead")), fmt(rows.mean(pt, "sato", "recovery_rate"))]
                    else:
                        cells.append(fmt(g))
                self.w(f"| {v} | " + " | ".join(cells) + " |")
            self.w()
            claims.append((f"{claim} (measured: {best_at})", None if best_at is None else best_at in best_values))
        if above:
            claims.insert(0, (f"sato ≥ the baseline at every sweep point ({sum(above)} of {len(above)})", all(above)))
        return claims
