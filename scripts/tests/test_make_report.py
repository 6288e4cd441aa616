#!/usr/bin/env python3
"""Tests of scripts/make-report.py on small fixture rows written in the shape braid-testbed and
braid-sim write them. Run: python3 -m unittest discover -s scripts/tests (or this file)."""

import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("make_report", os.path.join(HERE, "..", "make-report.py"))
mr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mr)
import raw_pack  # noqa: E402  (make-report.py put scripts/ on the path)

# braid-testbed's CSV header (crates/braid-testbed/src/report.rs, write_csv).
TB_HEADER = ("scenario,label,seed,contender,transfer_bytes,received_bytes,completion_s,elapsed_s,goodput_mbps,"
             "steady_mbps,ideal_mbps,ratio,path_fwd_tx_bytes,path_fwd_rx_bytes,tun_drops,ss_check,load,error,"
             "mix,flow,jain")
SIM_HEADER = ("run,scenario,point,seed,mode,completion_s,goodput_mbps,ratio_ideal,repair_overhead,source_sent,"
              "repair_sent,recovered,recovery_rate,retransmissions,fast_losses,losses,timeouts,block_count,"
              "block_delay_mean_ms,block_delay_p99_ms,block_jitter_ms,datagrams,intact,ideal_mbps,"
              "path_packets_sent,path_packets_acked,path_share,stalled_at_s,outage_recovery_s")


def tb_row(sc, label, contender, goodput, ideal, completion="5.0", paths="1000", mix="", flow=0, jain="",
           steady=""):
    ratio = goodput / ideal
    return (f'{sc},"{label}",1,{contender},11492499,11492499,{completion},5.0,{goodput},{steady},{ideal},'
            f'{ratio:.4f},{paths},{paths},0,"ok","0.5 0.5 0.5","","{mix}",{flow},{jain}')


def sim_row(sc, point, mode, goodput, overhead=0.005):
    return (f'0,{sc},{point},1,{mode},6.0,{goodput},0.9,{overhead},100,1,0,,0,0,0,0,0,,,,100,true,19,'
            f'100,100,1,,')


class Fixture:
    def __init__(self, tmp, braid_one_path=(17.9, 16.0, 14.0), workload_rows=()):
        self.raw = os.path.join(tmp, "raw")
        self.out = os.path.join(tmp, "docs")
        d = os.path.join(self.raw, "testbed", "ctcp-table4")
        os.makedirs(d)
        b0, b5, b10 = braid_one_path
        rows = [
            tb_row("ctcp-table4", "path.wifi.loss=0", "cubic", 17.5, 20.0),
            tb_row("ctcp-table4", "path.wifi.loss=0", "bbr", 17.4, 20.0),
            tb_row("ctcp-table4", "path.wifi.loss=0", "ext:braid", b0, 20.0),
            tb_row("ctcp-table4", "path.wifi.loss=0.05", "cubic", 0.4, 19.0, completion=""),
            tb_row("ctcp-table4", "path.wifi.loss=0.05", "bbr", 15.3, 19.0),
            tb_row("ctcp-table4", "path.wifi.loss=0.05", "ext:braid", b5, 19.0),
            tb_row("ctcp-table4", "path.wifi.loss=0.1", "bbr", 12.9, 18.0),
            tb_row("ctcp-table4", "path.wifi.loss=0.1", "ext:braid", b10, 18.0),
        ]
        with open(os.path.join(d, "all.csv"), "w") as f:
            f.write(TB_HEADER + "\n" + "\n".join(rows) + "\n")
        with open(os.path.join(d, "all.meta.json"), "w") as f:
            json.dump({"commit": "0123456789abcdef", "started": "2026-11-22T16:00:00+00:00",
                       "command": "braid-testbed run …"}, f)
        d = os.path.join(self.raw, "testbed", "fmtcp-table2-loss")
        os.makedirs(d)
        lab = "path.path2.loss=0.2"
        rows = [
            tb_row("fmtcp-table2-loss", lab, "mptcp-bbr", 13.0, 18.0, paths="600;400"),
            tb_row("fmtcp-table2-loss", lab, "bbr", 9.0, 18.0),
            tb_row("fmtcp-table2-loss", lab, "ext:braid", 17.0, 18.0, paths="500;500"),
        ] + list(workload_rows)
        with open(os.path.join(d, "p.csv"), "w") as f:
            f.write(TB_HEADER + "\n" + "\n".join(rows) + "\n")
        d = os.path.join(self.raw, "testbed", "fairness-bottleneck")
        os.makedirs(d)
        rows = [tb_row("fairness-bottleneck", "path.bottleneck.loss=0", c, g, 19.0, completion="", mix="braid:2,cubic:2",
                       flow=i, jain="0.9500", steady=g)
                for i, (c, g) in enumerate([("ext:braid", 5.5), ("ext:braid", 5.0), ("cubic", 4.0), ("cubic", 4.5)])]
        with open(os.path.join(d, "m.csv"), "w") as f:
            f.write(TB_HEADER + "\n" + "\n".join(rows) + "\n")
        with open(os.path.join(self.raw, "check.json"), "w") as f:
            json.dump({"rtt_configured_ms": 100.07, "rtt_median_ms": 100.4, "rate_expected_mbps": 19.6,
                       "rate_measured_mbps": 19.551, "loss_configured": 0.02, "loss_measured": 0.0223,
                       "tun_drops": 0, "passed": True}, f)
        for model, g in [("tcp-cubic", 18.0), ("braid", 17.0)]:
            d = os.path.join(self.raw, "sim", "ctcp-table4", model)
            os.makedirs(d)
            with open(os.path.join(d, "summary.csv"), "w") as f:
                f.write(SIM_HEADER + "\n" + sim_row("ctcp-table4", "path.wifi.loss=0", model.split("-")[0], g) + "\n")

    def run(self):
        with redirect_stdout(io.StringIO()):
            rep = mr.Report(self.raw, self.out)
            path = rep.write()
        with open(path) as f:
            return rep, f.read()


class MakeReport(unittest.TestCase):
    def test_bursty_loss_compares_medians_of_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            fx = Fixture(tmp)
            d = os.path.join(fx.raw, "testbed", "gilbert-elliott")
            os.makedirs(d)
            ge = "path.wan.loss={model:gilbert-elliott,p_bad_to_good:0.25,p_good_to_bad:%s}"
            one, five = ge % "0.0025253", ge % "0.0131579"
            runs = {one: ([17.0, 17.5, 16.0], [16.0, 15.5, 17.0]),  # medians 17.0 / 16.0 = 1.06: met
                    five: ([15.0, 12.0, 16.0], [14.5, 14.0, 15.0])}  # 15.0 / 14.5 = 1.03: not met
            rows = [tb_row("gilbert-elliott", lab, c, g, 19.0)
                    for lab, (braid, bbr) in runs.items()
                    for c, gs in (("ext:braid", braid), ("bbr", bbr)) for g in gs]
            with open(os.path.join(d, "g.csv"), "w") as f:
                f.write(TB_HEADER + "\n" + "\n".join(rows) + "\n")
            rep, text = fx.run()
            v = {name: (verdict, ev) for name, verdict, ev in rep.targets}
            verdict, ev = v[next(k for k in v if k.startswith("Bursty loss"))]
            self.assertEqual(verdict, "not met (1 of 2)")
            self.assertIn("wan.loss Gilbert–Elliott 1 % mean, bursts of 4 packets: 17.00 vs 16.00 (1.06 ×; 3/3 runs)", ev)
            self.assertIn("wan.loss Gilbert–Elliott 5 % mean, bursts of 4 packets: 15.00 vs 14.50 (1.03 ×; 3/3 runs) ✗", ev)

    def test_targets_are_computed_from_the_rows(self):
        with tempfile.TemporaryDirectory() as tmp:
            fx = Fixture(tmp)
            rep, text = fx.run()
            v = {name: verdict for name, verdict, _ in rep.targets}
            # 17.9 / 20 = 0.895 < 0.92 at 0 %; 16/19 = 0.84; 14/18 = 0.78: all three miss.
            self.assertEqual(v["One path, 20 Mbit/s, 100 ms: braid ≥ 0.92 × (1 − p) × rate for p ≤ 10 %"],
                             "not met (3 of 3)")
            self.assertEqual(v["One path: braid ≥ kernel bbr at every p"], "met")
            self.assertEqual(v["One path: braid ≥ 5 × kernel cubic at p ≥ 1 %"], "met")
            self.assertEqual(v["Two paths (FMTCP cases): braid ≥ 0.9 × Σ rateᵢ (1 − pᵢ)"], "met")
            self.assertEqual(v["Two paths (FMTCP cases): braid ≥ 1.2 × kernel MPTCP bbr where path 2 has 20 % loss or ≥ 300 ms RTT"],
                             "met")
            self.assertEqual(v["Two paths: braid never below the best single path (kernel bbr on it)"], "met")
            self.assertTrue(v[next(k for k in v if k.startswith("Live video"))].startswith("not measured"))
            self.assertTrue(v[next(k for k in v if k.startswith("Web"))].startswith("not measured"))
            self.assertEqual(v[next(k for k in v if k.startswith("Repair overhead"))], "met")
            # Tables, fairness, the simulator's gap.
            self.assertIn("## ctcp-table4", text)
            self.assertIn("0.40* (0.02)", text, "an unfinished run is marked")
            self.assertIn("| wifi.loss 5 % | 19.00 |", text)
            self.assertIn("50 % / 50 %", text, "per-path share")
            self.assertIn("| 0.950 |", text, "Jain's index")
            self.assertIn("`tcp-cubic`: 1.03 × the testbed", text)
            self.assertIn("0123456789ab", text, "the commit")
            self.assertIn("rate 19.551 Mbit/s for 19.600 expected; loss 2.23 % for 2.00 %; TUN drops 0; **passed**", text)
            self.assertIn("Not measured (no rows with this workload)", text)
            if mr.plt is not None:
                names = [n for n, _ in rep.plots]
                self.assertEqual(names, ["ctcp-table4-goodput.png", "fmtcp-table2-loss-path-share.png", "fairness.png"])
                self.assertTrue(all(os.path.getsize(os.path.join(fx.out, "results", n)) > 1000 for n in names))

    def test_a_slower_braid_fails_the_bbr_target(self):
        with tempfile.TemporaryDirectory() as tmp:
            rep, _ = Fixture(tmp, braid_one_path=(19.0, 15.0, 17.0)).run()
            v = {name: verdict for name, verdict, _ in rep.targets}
            self.assertEqual(v["One path: braid ≥ kernel bbr at every p"], "not met (1 of 3)")
            self.assertEqual(v["One path, 20 Mbit/s, 100 ms: braid ≥ 0.92 × (1 − p) × rate for p ≤ 10 %"],
                             "not met (1 of 3)")

    def test_workload_rows_get_their_own_section(self):
        # A `workload` column (the web and video workloads' rows) in a file of its own.
        with tempfile.TemporaryDirectory() as tmp:
            fx = Fixture(tmp)
            d = os.path.join(fx.raw, "testbed", "video")
            os.makedirs(d)
            with open(os.path.join(d, "v.csv"), "w") as f:
                # The 0 % point is context only: the target is set at 2 % loss.
                f.write("scenario,label,seed,contender,workload,on_time_share,frame_p99_ms,transfer_bytes,"
                        "path_fwd_tx_bytes\n"
                        "video,path.wifi.loss=0.02,1,ext:braid,video,0.997,150,1000000,1050000\n"
                        "video,path.wifi.loss=0.02,1,bbr,video,0.95,400,1000000,1060000\n"
                        "video,path.wifi.loss=0,1,ext:braid,video,0.98,150,1000000,1010000\n"
                        "video,path.wifi.loss=0,1,bbr,video,0.99,400,1000000,1040000\n")
            rep, text = fx.run()
            v = {name: verdict for name, verdict, _ in rep.targets}
            self.assertEqual(v[next(k for k in v if k.startswith("Live video"))], "met")
            # On time, but 1.2 × the video on the wire: the wire-bytes bound (1.08 ×) misses.
            with open(os.path.join(d, "v.csv"), "w") as f:
                f.write("scenario,label,seed,contender,workload,on_time_share,frame_p99_ms,transfer_bytes,"
                        "path_fwd_tx_bytes\n"
                        "video,path.wifi.loss=0.02,1,ext:braid,video,0.997,150,1000000,700000;500000\n"
                        "video,path.wifi.loss=0.02,1,bbr,video,0.95,400,1000000,1060000\n")
            rep, _ = fx.run()
            v = {name: (verdict, ev) for name, verdict, ev in rep.targets}
            verdict, ev = v[next(k for k in v if k.startswith("Live video"))]
            self.assertEqual(verdict, "not met (1 of 1)")
            self.assertIn("99.70 % (kernel best 95.00 %), wire 1.200 × the video ✗", ev)
            with open(os.path.join(d, "v.csv"), "w") as f:
                f.write("scenario,label,seed,contender,workload,on_time_share,frame_p99_ms\n"
                        "video,path.wifi.loss=0.02,1,ext:braid,video,0.997,150\n"
                        "video,path.wifi.loss=0.02,1,bbr,video,0.95,400\n"
                        "video,path.wifi.loss=0,1,ext:braid,video,0.98,150\n"
                        "video,path.wifi.loss=0,1,bbr,video,0.99,400\n")
            rep, text = fx.run()
            self.assertIn("## Workload: video", text)
            self.assertIn("| ext:braid | 0.997 | 150.000 |", text)
            # At 2 % loss, 99.0 % on time misses the target.
            with open(os.path.join(d, "v.csv"), "w") as f:
                f.write("scenario,label,seed,contender,workload,on_time_share,frame_p99_ms\n"
                        "video,path.wifi.loss=0.02,1,ext:braid,video,0.990,150\n"
                        "video,path.wifi.loss=0.02,1,bbr,video,0.95,400\n")
            rep, _ = fx.run()
            v = {name: verdict for name, verdict, _ in rep.targets}
            self.assertEqual(v[next(k for k in v if k.startswith("Live video"))], "not met (1 of 1)")

    def test_packed_rows_give_the_same_report(self):
        # The matrix packs each scenario's rows and meta into rows.tar.gz (scripts/raw_pack.py).
        with tempfile.TemporaryDirectory() as tmp:
            fx = Fixture(tmp)
            loose_rows = mr.load_testbed(fx.raw)
            _, loose = fx.run()
            loose_sim = mr.load_sim(fx.raw)
            self.assertEqual(raw_pack.pack_all(os.path.join(fx.raw, "testbed")), 4)
            self.assertEqual(sorted(os.listdir(os.path.join(fx.raw, "testbed", "ctcp-table4"))),
                             [raw_pack.PACKED])
            self.assertEqual(mr.load_testbed(fx.raw), loose_rows)
            # The simulator's rows too: one archive per scenario, `<model>/summary.csv` inside.
            self.assertEqual(raw_pack.pack_all(os.path.join(fx.raw, "sim")), 2)
            self.assertEqual(os.listdir(os.path.join(fx.raw, "sim", "ctcp-table4")), [raw_pack.PACKED])
            self.assertEqual(mr.load_sim(fx.raw), loose_sim)
            self.assertEqual(sorted(m for _, _, m in loose_sim), ["braid", "tcp-cubic"])
            self.assertEqual(loose_rows[0]["_meta"]["commit"], "0123456789abcdef")
            _, packed = fx.run()
            self.assertEqual(packed, loose)

    def test_no_rows_at_all(self):
        with tempfile.TemporaryDirectory() as tmp:
            with redirect_stdout(io.StringIO()):
                rep = mr.Report(os.path.join(tmp, "none"), os.path.join(tmp, "docs"))
                with open(rep.write()) as f:
                    text = f.read()
            self.assertIn("No testbed rows found", text)
            self.assertTrue(all(v == "not measured" for _, v, _ in rep.targets))


if __name__ == "__main__":
    sys.exit(unittest.main())
