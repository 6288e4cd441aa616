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


def link(sent, lost, outage=0, size=1000, outage_size=1000):
    """A forwarder's counters: `sent` packets of `size` bytes, `lost` of them at random and
    `outage` more (of `outage_size` bytes) in an outage."""
    sent_bytes = (sent - outage) * size + outage * outage_size
    delivered = sent - lost - outage
    return {"link": {"sent": sent, "sent_bytes": sent_bytes, "delivered": delivered,
                     "delivered_bytes": delivered * size, "dropped_queue": 0, "lost": lost,
                     "lost_outage": outage, "duplicated": 0}}


def tcp(contender, goodput, intact=True):
    return {"contender": contender, "goodput_mbps": goodput, "load": "2.00 1.00 0.50", "error": None,
            "forwarders": [], "tun": {"part": "tcp-download", "tcp_intact": intact,
                                      "teardown": "clean" if contender.startswith("braid-tun") else None}}


def udp(contender, on_time, repair, loss_met=0.02, lost=280, teardown="clean", run=3, stream_lost=200):
    return {"contender": contender, "goodput_mbps": 3.3, "load": "3.00 2.00 1.00", "error": None,
            # a>, a<, b>, b<: the data direction lost 280 + 20 of 13,000 + 2,000 packets (2 %).
            "forwarders": [link(13000, lost), link(9000, 200), link(2000, 20), link(1000, 10)],
            "tun": {"part": "udp-stream", "udp_on_time_within_deadline": on_time, "udp_missed": 10,
                    "udp_repair_overhead": repair, "udp_loss_met": loss_met, "udp_longest_miss_run": run,
                    "udp_longest_miss_ms": run * 2.35, "udp_deadline_ms": 150.0,
                    # 10,000 datagrams sent, `stream_lost` of them lost on the way (2 %).
                    "braid_datagrams_sent": 10000, "braid_server_received": 9990,
                    "braid_server_rebuilt": stream_lost - 10,
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
    def test_the_links_random_loss_sets_a_budget(self):
        r = udp("braid-tun", 0.999, 0.06)
        self.assertAlmostEqual(tt.random_loss(r), 300 / 15000)
        self.assertAlmostEqual(tt.Run([r]).budget_random("braid-tun"), 6.0)
        # Packets lost in an outage never met the random draw.
        r["forwarders"][0] = link(13100, 280, outage=100)
        self.assertAlmostEqual(tt.random_loss(r), 300 / 15000)

    def test_the_streams_loss_counts_datagrams_lost_on_the_way_outage_included(self):
        r = udp("braid-tun", 0.999, 0.06)
        # 10,000 sent; the server got 9,950, 230 of them rebuilt: 280 lost on the way (2.8 %).
        r["tun"].update(braid_datagrams_sent=10000, braid_server_received=9950, braid_server_rebuilt=230)
        self.assertAlmostEqual(tt.stream_loss(r), 0.028)
        self.assertAlmostEqual(tt.Run([r]).budget_stream("braid-tun"), 7.6)
        # The outage's drops: 100 packets, 20 of 1000 bytes and 80 of 50.
        a = link(13100, 280, outage=20, size=1000)
        probes = link(80, 0, outage=80, size=50, outage_size=50)["link"]
        for k in ("sent", "sent_bytes", "lost_outage"):
            a["link"][k] += probes[k]
        r["forwarders"][0] = a
        self.assertEqual(tt.outage_drops(r)[0], 100)
        # Estimated: the random drops counted at the link's mean packet size.
        self.assertAlmostEqual(tt.outage_drops(r)[1], 24_000, delta=2_000)
        del r["tun"]["braid_server_received"]
        self.assertIsNone(tt.stream_loss(r))

    def test_verdicts_follow_the_medians_and_every_row(self):
        out = render([run_rows(18.0, 19.8, 19.0), run_rows(20.0, 19.0, 17.0, repair=(0.058, 0.065)),
                      run_rows(10.0, 15.0, 15.0, on_time=0.990)])
        # Ratios 1.10/1.06, 0.95/0.85, 1.50/1.50: medians 1.10 and 1.06.
        self.assertIn("| ÷ braid forward, IPv4 / IPv6 | 1.10 / 1.06 | 0.95 / 0.85 | 1.50 / 1.50 | 1.10 / 1.06 |", out)
        self.assertIn("TCP ≥ 0.9× braid forward, intact: **met** (median 1.10× / 1.06×", out)
        self.assertIn("UDP ≥ 99.5 % within the deadline: **met** (median 99.90 % / 99.90 %; below: run 3 braid-tun "
                      "99.00 %, run 3 braid-tun-v6 99.00 %)", out)
        for budget in ("the stream's loss", "the links' random loss", "the configured loss"):
            self.assertIn(f"repair ≤ 2 × {budget} + 2 points: **not met** (within it in 5 of 6 rows; "
                          "over: run 2 braid-tun-v6 6.50 > 6.00 %)", out)
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
