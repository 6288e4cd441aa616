#!/usr/bin/env python3
"""Tests of scripts/tun_table.py: docs/TUN.md's testbed table and verdicts from a tun run's rows.
Run: python3 -m unittest discover -s scripts/tests (or this file)."""

import contextlib
import importlib.util
import io
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("tun_table", os.path.join(HERE, "..", "tun_table.py"))
tt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tt)


def link(sent, lost):
    return {"link": {"sent": sent, "lost": lost, "lost_outage": 0}}


def tcp(contender, goodput, intact=True):
    return {"contender": contender, "goodput_mbps": goodput, "load": "2.00 1.00 0.50", "error": None,
            "forwarders": [], "tun": {"part": "tcp-download", "tcp_intact": intact,
                                      "teardown": "clean" if contender.startswith("braid-tun") else None}}


def udp(contender, on_time, repair, loss_met=0.02, lost=280, teardown="clean", run=3):
    return {"contender": contender, "goodput_mbps": 3.3, "load": "3.00 2.00 1.00", "error": None,
            # a>, a<, b>, b<: the data direction lost 280 + 20 of 13,000 + 2,000 packets (2 %).
            "forwarders": [link(13000, lost), link(9000, 200), link(2000, 20), link(1000, 10)],
            "tun": {"part": "udp-stream", "udp_on_time_within_deadline": on_time, "udp_missed": 10,
                    "udp_repair_overhead": repair, "udp_loss_met": loss_met, "udp_longest_miss_run": run,
                    "udp_longest_miss_ms": run * 2.35, "udp_deadline_ms": 150.0,
                    "teardown": teardown if contender.startswith("braid-tun") else None}}


def run_rows(forward, v4, v6, on_time=0.999, repair=(0.058, 0.059), teardown="clean"):
    return [tcp("braid-tun", v4), tcp("braid-tun-v6", v6), tcp("braid-forward", forward),
            udp("braid-tun", on_time, repair[0], teardown=teardown),
            udp("braid-tun-v6", on_time, repair[1], teardown=teardown), udp("udp@0", 0.978, None)]


def render(runs, failover=False):
    with tempfile.TemporaryDirectory() as d:
        names = []
        for i, rows in enumerate(runs):
            names.append(os.path.join(d, f"run{i}.json"))
            with open(names[-1], "w") as f:
                json.dump(rows, f)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            tt.main((["--failover"] if failover else []) + names)
        return out.getvalue()


class TunTable(unittest.TestCase):
    def test_the_links_applied_loss_sets_the_budget(self):
        r = udp("braid-tun", 0.999, 0.06)
        self.assertAlmostEqual(tt.applied_loss(r), 300 / 15000)
        self.assertAlmostEqual(tt.Run([r]).budget_applied("braid-tun"), 6.0)

    def test_verdicts_follow_the_medians_and_every_row(self):
        out = render([run_rows(18.0, 19.8, 19.0), run_rows(20.0, 19.0, 17.0, repair=(0.058, 0.065)),
                      run_rows(10.0, 15.0, 15.0, on_time=0.990)])
        # Ratios 1.10/1.06, 0.95/0.85, 1.50/1.50: medians 1.10 and 1.06.
        self.assertIn("| ÷ braid forward, IPv4 / IPv6 | 1.10 / 1.06 | 0.95 / 0.85 | 1.50 / 1.50 | 1.10 / 1.06 |", out)
        self.assertIn("TCP ≥ 0.9× braid forward, intact: **met** (median 1.10× / 1.06×", out)
        self.assertIn("UDP ≥ 99.5 % within the deadline: **met** (median 99.90 % / 99.90 %; below: run 3 braid-tun "
                      "99.00 %, run 3 braid-tun-v6 99.00 %)", out)
        self.assertIn("repair ≤ 2 × the loss the links applied + 2 points: **not met** in 5 of 6 rows "
                      "(run 2 braid-tun-v6 6.50 > 6.00 %)", out)
        self.assertIn("teardown clean after every braid run: **met**", out)

    def test_a_broken_download_or_leftover_fails_its_target(self):
        rows = run_rows(18.0, 19.8, 19.0, teardown="left: braid0")
        rows[1]["tun"]["tcp_intact"] = False
        out = render([rows])
        self.assertIn("TCP ≥ 0.9× braid forward, intact: **not met**", out)
        self.assertIn("teardown clean after every braid run: **not met** (run 1 braid-tun udp: left: braid0;", out)

    def test_a_failover_judges_the_longest_run_of_misses(self):
        self.assertIn("longest run of misses ≤ the deadline: **met** (longest 7 ms)", render([run_rows(18, 19, 19)], True))
        rows = run_rows(18, 19, 19)
        rows[4]["tun"]["udp_longest_miss_ms"] = 160.0
        self.assertIn("longest run of misses ≤ the deadline: **not met** (longest 160 ms)", render([rows], True))


if __name__ == "__main__":
    unittest.main()
