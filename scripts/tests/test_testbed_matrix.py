#!/usr/bin/env python3
"""Tests of scripts/testbed_matrix.py's point loop with a stand-in for braid-testbed: each point's
files end up in its scenario's rows.tar.gz, a finished point is skipped on the next run (read
from the archive), and a forced rerun replaces the point's files. Run: python3 -m unittest
discover -s scripts/tests (or this file)."""

import importlib.util
import io
import json
import os
import stat
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("testbed_matrix", os.path.join(HERE, "..", "testbed_matrix.py"))
tm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tm)

# braid-testbed as the matrix calls it: `run FILE … --json X.json --out-dir DIR`; writes X.json,
# X.csv and one ss snapshot, and (as the client would) appends to the file `--stats-json` names.
FAKE_TESTBED = r'''#!/usr/bin/env python3
import os, sys
a = sys.argv
js, ss = a[a.index("--json") + 1], a[a.index("--out-dir") + 1]
run = os.environ.get("FAKE_RUN", "1")
with open(js, "w") as f:
    f.write('[{"contender": "bbr", "run": %s}]' % run)
with open(js[: -len(".json")] + ".csv", "w") as f:
    f.write("scenario,label,contender,goodput_mbps\nctcp-recovery,p,bbr,1%s\n" % run)
os.makedirs(ss, exist_ok=True)
with open(os.path.join(ss, "ss-bbr.txt"), "w") as f:
    f.write("tcp ESTAB run %s\n" % run)
for x in " ".join(a).split():
    if x.endswith(".stats.jsonl"):
        with open(x, "a") as f:
            f.write('{"run": %s}\n' % run)
'''


class MatrixPoints(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        fake = os.path.join(self.tmp.name, "braid-testbed")
        with open(fake, "w") as f:
            f.write(FAKE_TESTBED)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        self.addCleanup(setattr, tm, "TESTBED", tm.TESTBED)
        tm.TESTBED = fake
        self.raw = os.path.join(self.tmp.name, "raw")
        self.key = os.path.join(self.tmp.name, "k.key")
        entry = {"file": "ctcp-recovery.toml", "kernel": ["bbr"], "modes": [],
                 "client_args": ["--stats-json", "{base}.stats.jsonl"]}
        point = {"scenario": "ctcp-recovery", "label": "seed=1 path.wifi.loss=0.01", "paths": 1,
                 "ideal": 20.0, "transfer": 1000, "limit": 15.0, "loss": 0.01}
        self.items = [(entry, point, ["bbr"], ["ctcp"], [], 1.0, 1.0, 0)]
        self.dir = os.path.join(self.raw, "testbed", "ctcp-recovery")

    def run_matrix(self, force=False, run="1"):
        os.environ["FAKE_RUN"] = run
        self.addCleanup(os.environ.pop, "FAKE_RUN", None)
        out = io.StringIO()
        with redirect_stdout(out):
            failed = tm.run_testbed(self.items, self.raw, self.key, force, False)
        self.assertEqual(failed, 0)
        return out.getvalue()

    def packed(self):
        return tm.raw_pack.read(os.path.join(self.dir, tm.raw_pack.PACKED))

    def test_a_point_is_packed_skipped_when_done_and_replaced_when_forced(self):
        self.run_matrix()
        self.assertEqual(os.listdir(self.dir), [tm.raw_pack.PACKED], "nothing left loose")
        base = "seed=1_path.wifi.loss=0.01"
        files = self.packed()
        self.assertEqual(sorted(files), [f"{base}.csv", f"{base}.json", f"{base}.meta.json",
                                         f"{base}.stats.jsonl", "ss/ss-bbr.txt"])
        meta = json.loads(files[f"{base}.meta.json"])
        self.assertTrue(meta["complete"])
        self.assertIn(f"--stats-json {os.path.join(self.dir, base)}.stats.jsonl", meta["command"])
        # Done: the next run reads the meta from the archive and skips the point.
        self.assertIn("skip ctcp-recovery", self.run_matrix(run="2"))
        self.assertEqual(self.packed(), files)
        # Forced: the point runs again and its files replace the earlier ones; the statistics
        # file, appended to by the client, holds only the new run's lines.
        self.run_matrix(force=True, run="3")
        files = self.packed()
        self.assertEqual(files[f"{base}.json"], b'[{"contender": "bbr", "run": 3}]')
        self.assertEqual(files[f"{base}.stats.jsonl"], b'{"run": 3}\n')
        self.assertEqual(files["ss/ss-bbr.txt"], b"tcp ESTAB run 3\n")
        self.assertEqual(os.listdir(self.dir), [tm.raw_pack.PACKED])


if __name__ == "__main__":
    unittest.main()
