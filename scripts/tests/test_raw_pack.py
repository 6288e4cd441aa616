#!/usr/bin/env python3
"""Tests of scripts/raw_pack.py: a testbed or simulator scenario's files packed into one archive,
given back byte for byte, and read through `Raw` as if they were loose. Run: python3 -m unittest discover -s
scripts/tests (or this file)."""

import glob
import importlib.util
import io
import os
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("raw_pack", os.path.join(HERE, "..", "raw_pack.py"))
rp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rp)

# A scenario folder as a matrix point leaves it: rows, meta, a point's own file, ss snapshots.
POINT_FILES = {
    "path.wifi.loss=0.csv": b"scenario,label,contender,goodput_mbps\nvideo,\"path.wifi.loss=0\",bbr,17.4\n",
    "path.wifi.loss=0.json": b'[{"contender": "bbr", "timeline": [[0.0, 0]]}]',
    "path.wifi.loss=0.meta.json": b'{\n "commit": "0123456", "load_before": "0.49 0.41 1.09"\n}',
    "path.wifi.loss=0.stats.jsonl": b'{"t":1.0,"paths":[{"timeouts":0}]}\n',
    "path.wifi.loss=0.02.csv": b"scenario,label,contender,goodput_mbps\nvideo,\"path.wifi.loss=0.02\",bbr,15.3\n",
    "path.wifi.loss=0.02.meta.json": b'{"commit": "89abcde"}',
    "path.wifi.loss=0.02.stats.jsonl": b'{"t":1.0}\n',
    "ss/ss-video-bbr-path.wifi.loss_0.txt": b"Netid State\ntcp   ESTAB 0 88021\n\t bbr rtt:101.8/0.4\n",
    "ss/ss-video-cubic.txt": b"ss failed: no such namespace",  # no final newline
    "ss/ss-empty.txt": b"",
}


def write_files(folder, files):
    for name, body in files.items():
        path = os.path.join(folder, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)


def read_tree(folder):
    out = {}
    for dirpath, _, names in os.walk(folder):
        for n in names:
            path = os.path.join(dirpath, n)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder).replace(os.sep, "/")] = f.read()
    return out


class RawPack(unittest.TestCase):
    def test_pack_then_unpack_gives_the_files_back(self):
        with tempfile.TemporaryDirectory() as d:
            scenario = os.path.join(d, "testbed", "video")
            write_files(scenario, POINT_FILES)
            self.assertEqual(rp.pack_all(os.path.join(d, "testbed")), len(POINT_FILES))
            self.assertEqual(os.listdir(scenario), [rp.PACKED], "the loose files and ss/ are gone")
            self.assertEqual(rp.read(os.path.join(scenario, rp.PACKED)), POINT_FILES)
            rp.unpack(os.path.join(scenario, rp.PACKED), os.path.join(d, "back"))
            self.assertEqual(read_tree(os.path.join(d, "back")), POINT_FILES)
            # `tar` gives the same files back as unpack().
            with tarfile.open(os.path.join(scenario, rp.PACKED)) as tar:
                self.assertEqual(sorted(m.name for m in tar.getmembers()), sorted(POINT_FILES))
            self.assertEqual(rp.pack_all(os.path.join(d, "testbed")), 0, "nothing loose: nothing to do")

    def test_the_same_files_give_the_same_bytes(self):
        with tempfile.TemporaryDirectory() as d:
            archives = []
            for name in ("a", "b"):
                write_files(os.path.join(d, name), POINT_FILES)
                rp.pack(os.path.join(d, name))
                with open(os.path.join(d, name, rp.PACKED), "rb") as f:
                    archives.append(f.read())
            self.assertEqual(archives[0], archives[1])

    def test_a_finished_rerun_replaces_its_point_and_keeps_the_others(self):
        with tempfile.TemporaryDirectory() as d:
            write_files(d, POINT_FILES)
            rp.pack(d)
            # The rerun of `path.wifi.loss=0` writes no stats file and a new ss snapshot.
            rerun = {"path.wifi.loss=0.csv": b"rerun\n", "path.wifi.loss=0.json": b"[]",
                     "path.wifi.loss=0.meta.json": b"{}", "ss/ss-video-bbr-path.wifi.loss_0.txt": b"rerun\n"}
            write_files(d, rerun)
            self.assertEqual(rp.pack(d, point="path.wifi.loss=0"), len(rerun))
            expected = dict(POINT_FILES, **rerun)
            del expected["path.wifi.loss=0.stats.jsonl"]  # the earlier run's, not this one's
            self.assertEqual(rp.read(os.path.join(d, rp.PACKED)), expected)

    def test_a_failed_rerun_replaces_only_what_it_wrote(self):
        with tempfile.TemporaryDirectory() as d:
            write_files(d, POINT_FILES)
            rp.pack(d)
            write_files(d, {"path.wifi.loss=0.meta.json": b'{"complete": false}'})
            rp.pack(d)
            self.assertEqual(rp.read(os.path.join(d, rp.PACKED)),
                             dict(POINT_FILES, **{"path.wifi.loss=0.meta.json": b'{"complete": false}'}))

    def test_a_simulator_scenario_packs_its_model_folders_and_a_model_rerun_replaces_its_own(self):
        model_files = {"braid/summary.csv": b"run,mode\n0,braid\n", "braid/timeseries.csv": b"run,time_s\n",
                       "braid/meta.json": b'{"commit": "0123456"}', "tcp-bbr/summary.csv": b"run,mode\n0,tcp\n",
                       "tcp-bbr/meta.json": b"{}"}
        with tempfile.TemporaryDirectory() as d:
            sim = os.path.join(d, "sim")
            write_files(os.path.join(sim, "ctcp-table4"), model_files)
            self.assertEqual(rp.pack_all(sim), len(model_files))
            self.assertEqual(os.listdir(os.path.join(sim, "ctcp-table4")), [rp.PACKED], "the model folders are gone")
            packed = os.path.join(sim, "ctcp-table4", rp.PACKED)
            self.assertEqual(rp.read(packed), model_files)
            # braid's rerun writes no time series: its earlier one goes, tcp-bbr's rows stay.
            rerun = {"braid/summary.csv": b"run,mode\n0,braid\n1,braid\n", "braid/meta.json": b"{}"}
            write_files(os.path.join(sim, "ctcp-table4"), rerun)
            self.assertEqual(rp.pack(os.path.join(sim, "ctcp-table4"), folder="braid"), len(rerun))
            expected = dict(model_files, **rerun)
            del expected["braid/timeseries.csv"]
            self.assertEqual(rp.read(packed), expected)

    def test_point_members_do_not_take_another_points_files(self):
        names = list(POINT_FILES) + ["path.wifi.loss=0.run2.csv", "path.wifi.loss=0.run2.stats.jsonl"]
        self.assertEqual(sorted(rp.point_members(names, "path.wifi.loss=0")),
                         ["path.wifi.loss=0.csv", "path.wifi.loss=0.json", "path.wifi.loss=0.meta.json",
                          "path.wifi.loss=0.stats.jsonl"])
        self.assertEqual(rp.point_members(names, "path.wifi.loss=0.run2"),
                         ["path.wifi.loss=0.run2.csv", "path.wifi.loss=0.run2.stats.jsonl"])

    def test_an_old_ss_txt_is_moved_into_the_archive(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, rp.LEGACY_SS), "w", encoding="utf-8", newline="") as f:
                f.write("==> ss-a.txt (4 bytes) <==\nab\n\n==> ss-b.txt (2 bytes) <==\ncd\n")
            write_files(d, {"p.csv": b"x\n"})
            self.assertEqual(rp.pack(d), 2)
            self.assertEqual(rp.read(os.path.join(d, rp.PACKED)),
                             {"p.csv": b"x\n", "ss/ss-a.txt": b"ab\n\n", "ss/ss-b.txt": b"cd"})
            self.assertEqual(os.listdir(d), [rp.PACKED])

    def test_raw_lists_packed_and_loose_files_as_glob_lists_the_loose_ones(self):
        with tempfile.TemporaryDirectory() as d:
            testbed = os.path.join(d, "testbed")
            # `ctcp-table4` and `ctcp-table4-runs`: glob's order is by whole path ('-' < '/').
            files = {"ctcp-table4": {"a.csv": b"1\n", "a.meta.json": b"{}", "b.csv": b"2\n"},
                     "ctcp-table4-runs": {"seed=1_x.csv": b"3\n", "ss/ss-x.csv": b"", ".hidden.csv": b""}}
            for sc, fs in files.items():
                write_files(os.path.join(testbed, sc), fs)
            loose = sorted(glob.glob(os.path.join(testbed, "*", "*.csv")))
            loose_json = sorted(glob.glob(os.path.join(testbed, "ctcp-table4", "*.json")))
            rp.pack(os.path.join(testbed, "ctcp-table4"))
            raw = rp.Raw(testbed)
            self.assertEqual(raw.glob("*", "*.csv"), loose)
            self.assertEqual(raw.glob("ctcp-table4", "*.json"), loose_json)
            path = os.path.join(testbed, "ctcp-table4", "a.meta.json")
            self.assertTrue(raw.exists(path))
            self.assertEqual(raw.read_text(path), "{}")
            self.assertFalse(raw.exists(os.path.join(testbed, "ctcp-table4", "c.csv")))
            with self.assertRaises(FileNotFoundError):
                raw.read_text(os.path.join(testbed, "ctcp-table4", "c.csv"))
            self.assertEqual(rp.Raw(os.path.join(d, "none")).glob("*", "*.csv"), [])

    def test_a_loose_file_is_read_over_the_packed_one(self):
        with tempfile.TemporaryDirectory() as d:
            sc = os.path.join(d, "video")
            write_files(sc, POINT_FILES)
            rp.pack(sc)
            write_files(sc, {"path.wifi.loss=0.csv": b"newer\n", "path.wifi.loss=0.05.csv": b"new point\n"})
            raw = rp.Raw(d)
            self.assertEqual(raw.read_text(os.path.join(sc, "path.wifi.loss=0.csv")), "newer\n")
            self.assertEqual(raw.read_text(os.path.join(sc, "path.wifi.loss=0.02.csv")),
                             POINT_FILES["path.wifi.loss=0.02.csv"].decode())
            self.assertEqual(len(raw.glob("video", "*.csv")), 3)

    def test_a_damaged_or_unsafe_archive_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            write_files(d, POINT_FILES)
            rp.pack(d)
            path = os.path.join(d, rp.PACKED)
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(data[: len(data) // 2])
            with self.assertRaises((tarfile.TarError, EOFError, OSError)):
                rp.read(path)
            for bad in ("../escape.csv", "/abs.csv", "ss/deeper/x.txt", "a//b"):
                with self.assertRaises(ValueError, msg=bad):
                    rp.write(path, {bad: b"x"})
            # An archive made elsewhere with a member outside the folder is not read.
            with tarfile.open(path, "w:gz") as tar:
                info = tarfile.TarInfo("../escape.csv")
                tar.addfile(info, io.BytesIO(b""))
            with self.assertRaises(ValueError):
                rp.read(path)


if __name__ == "__main__":
    unittest.main()
