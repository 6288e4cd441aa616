#!/usr/bin/env python3
"""Tests of scripts/ss_pack.py: the testbed's ss snapshots packed one file per scenario and given
back byte for byte. Run: python3 -m unittest discover -s scripts/tests (or this file)."""

import importlib.util
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("ss_pack", os.path.join(HERE, "..", "ss_pack.py"))
sp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sp)

SNAPSHOTS = {
    "ss-video-video-bbr-path.wifi.loss_0.txt": "Netid State\ntcp   ESTAB 0 88021\n\t bbr wscale:9,9 rtt:101.8/0.4\n",
    "ss-web-web-cubic.txt": "ss failed: no such namespace",  # no final newline
    "ss-empty.txt": "",
    "ss-looks-like-a-header.txt": "==> x (3 bytes) <==\n\n\n",
}


def write_files(folder, files):
    os.makedirs(folder, exist_ok=True)
    for name, body in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as f:
            f.write(body)


def read_files(folder):
    out = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), encoding="utf-8", newline="") as f:
            out[name] = f.read()
    return out


class SsPack(unittest.TestCase):
    def test_pack_then_unpack_gives_the_files_back(self):
        with tempfile.TemporaryDirectory() as d:
            scenario = os.path.join(d, "testbed", "video")
            write_files(os.path.join(scenario, "ss"), SNAPSHOTS)
            self.assertEqual(sp.pack_all(os.path.join(d, "testbed")), len(SNAPSHOTS))
            self.assertEqual(os.listdir(scenario), ["ss.txt"], "the loose files and their folder are gone")
            self.assertEqual(sp.read(os.path.join(scenario, "ss.txt")), SNAPSHOTS)
            sp.unpack(os.path.join(scenario, "ss.txt"), os.path.join(d, "back"))
            self.assertEqual(read_files(os.path.join(d, "back")), SNAPSHOTS)

    def test_a_rerun_replaces_its_section_and_keeps_the_others(self):
        with tempfile.TemporaryDirectory() as d:
            write_files(os.path.join(d, "ss"), SNAPSHOTS)
            sp.pack(d)
            name = "ss-web-web-cubic.txt"
            write_files(os.path.join(d, "ss"), {name: "tcp ESTAB rerun\n", "ss-new.txt": "new\n"})
            self.assertEqual(sp.pack(d), 2)
            expected = dict(SNAPSHOTS, **{name: "tcp ESTAB rerun\n", "ss-new.txt": "new\n"})
            self.assertEqual(sp.read(os.path.join(d, "ss.txt")), expected)
            self.assertEqual(sp.pack(d), 0, "nothing loose: nothing to do")

    def test_a_damaged_file_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ss.txt")
            sp.write(path, SNAPSHOTS)
            text = open(path, encoding="utf-8").read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(text[:-10])
            with self.assertRaises(ValueError):
                sp.read(path)
            with open(path, "w", encoding="utf-8") as f:
                f.write("not a packed file\n")
            with self.assertRaises(ValueError):
                sp.read(path)


if __name__ == "__main__":
    unittest.main()
