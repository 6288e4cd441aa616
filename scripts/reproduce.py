#!/usr/bin/env python3
"""docs/REPRODUCTION.md: each seed paper's experiment, its numbers, braid's rows, a verdict.

One command regenerates the simulator rows and the report:

    scripts/reproduce.py                 # build braid-sim (release), run every experiment, write the doc
    scripts/reproduce.py --report-only   # the doc alone, from the stored rows
    scripts/reproduce.py --only sato-best,ctcp-table4   # rerun some experiments, then the doc

Each experiment is one or more braid-sim runs of a scenario file (repro/experiments.py); its rows
(braid-sim --csv's summary.csv; a tagged run's as <tag>/summary.csv), the exact scenario file that
ran (`scenario.toml`: the committed file with the experiment's seeds and keys written in) and the
commit go into one archive, docs/results/repro/<experiment>/rows.tar.gz (scripts/raw_pack.py;
`python3 scripts/raw_pack.py --unpack DIR docs/results/repro/<experiment>/rows.tar.gz` gives the
files back). A loose file in the folder is read over the archive's. Testbed rows, where the matrix has them, are read
from docs/results/raw/testbed/ (scripts/testbed-matrix.sh) and shown with the commit they were
measured at; the verdicts use the simulator's rows, except the testbed's own experiments'.

The papers' numbers are typed in from the papers' text (cited by table or figure); every braid
number and every verdict is computed from the rows, by the rule printed beside it.

The code is in scripts/repro/: experiments.py (what runs), papers.py (the papers' numbers and the
targets), running.py (braid-sim's runs and what is kept of them), rows.py (reading the rows),
verdicts.py, report.py (the document) with a module of sections per paper (ctcp, fmtcp, dfec,
sato), common.py.
"""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Re-exported: the tests (scripts/tests/test_reproduce.py) use them through this script.
from repro.common import ROOT, SIM, parse_rate, parse_seconds  # noqa: E402,F401
from repro.experiments import EXPERIMENTS  # noqa: E402
from repro.papers import CTCP_TABLE4, CTCP_TABLE5  # noqa: E402,F401
from repro.report import Report  # noqa: E402
from repro.rows import recovery  # noqa: E402,F401
from repro.running import (  # noqa: E402,F401
    phase_goodput, run_experiment, with_keys, with_seeds, write_links, write_phases,
)
from repro.verdicts import NOT, NOT_RUN, PARTLY, REPRODUCED, claims_verdict, ratio_verdict  # noqa: E402,F401


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report-only", action="store_true", help="do not run braid-sim; report the stored rows")
    ap.add_argument("--only", help="comma-separated experiments to run (the report covers all)")
    ap.add_argument("--results", default=os.path.join(ROOT, "docs", "results", "repro"))
    ap.add_argument("--raw", default=os.path.join(ROOT, "docs", "results", "raw"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"))
    ap.add_argument("--sim", default=os.path.join(ROOT, SIM), help="the braid-sim binary")
    a = ap.parse_args(argv)
    if not a.report_only:
        names = list(EXPERIMENTS) if not a.only else a.only.split(",")
        unknown = [n for n in names if n not in EXPERIMENTS]
        if unknown:
            print(f"--only: unknown experiment(s) {', '.join(unknown)} (known: {', '.join(EXPERIMENTS)})",
                  file=sys.stderr)
            return 2
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "braid-sim"], check=True, cwd=ROOT)
        for n in names:
            run_experiment(n, a.results, a.sim)
    rep = Report(a.results, a.raw, a.out)
    path = rep.write()
    print(f"wrote {path}")
    for paper, exp, v in rep.verdicts:
        print(f"  {v:<15} {paper}: {exp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
