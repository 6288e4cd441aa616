#!/usr/bin/env python3
"""The raw rows, one compressed file per scenario instead of hundreds of loose ones.

A matrix point writes into RAW/testbed/<scenario>/ its rows (`<point>.csv`, `<point>.json`), its
`<point>.meta.json` (commit, command, load), files of its own (`<point>.stats.jsonl`) and one
`ss -tinM` snapshot per run in `ss/` (the rows' ss_file column names it). After every point the
matrix moves them into RAW/testbed/<scenario>/rows.tar.gz, under the same relative names
(`ss/<snapshot>`), so that

    tar -xzf docs/results/raw/testbed/video/rows.tar.gz -C DIR

gives the folder back as braid-testbed wrote it. A point packed again (a rerun) replaces that
point's members; the others stay. The archive is written in name order with fixed owners, modes
and times, so the same files give the same bytes.

The matrix's simulator runs are packed the same way: RAW/sim/<scenario>/<model>/ (braid-sim's
summary.csv, timeseries.csv and the matrix's meta.json) goes into RAW/sim/<scenario>/rows.tar.gz
as `<model>/<file>`, and a model run again replaces that model's members.

scripts/reproduce.py packs each experiment's rows the same way: docs/results/repro/<experiment>/
(summary.csv, table.md, scenario.toml, commit.txt, …, a tagged run's as `<tag>/<file>`) into
docs/results/repro/<experiment>/rows.tar.gz, the whole experiment at once. A folder's README.md
is never packed: it stays beside the archive for readers.

Readers (scripts/make-report.py, scripts/repro/) see a scenario through `Raw`: the archive's
members with any loose file laid over them (a point run but not packed yet, or rows merged from a
branch that wrote loose files), at the paths the loose files would have.

    python3 scripts/raw_pack.py docs/results/raw/testbed         # pack every scenario's loose files
    python3 scripts/raw_pack.py docs/results/raw/sim             # the same for the simulator's
    python3 scripts/raw_pack.py docs/results/repro               # and for reproduce.py's experiments
    python3 scripts/raw_pack.py --unpack DIR docs/results/raw/testbed/video/rows.tar.gz
"""

import argparse
import fnmatch
import gzip
import io
import os
import re
import sys
import tarfile

PACKED = "rows.tar.gz"
# A note for readers beside the rows; pack() leaves it loose.
README = "README.md"
SNAPSHOTS = "ss"
# The section header of the text file the ss snapshots were once packed into (`ss.txt`); pack()
# moves such a file's snapshots into the archive.
LEGACY_SS = "ss.txt"
LEGACY_HEADER = re.compile(r"==> (.+) \((\d+) bytes\) <==\n")


def read(packed_path):
    """The members of an archive: {relative name: bytes}."""
    out = {}
    with tarfile.open(packed_path, "r:gz") as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            check_name(packed_path, m.name)
            out[m.name] = tar.extractfile(m).read()
    return out


def check_name(where, name):
    parts = name.split("/")
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts) or len(parts) > 2:
        raise ValueError(f"{where}: member name {name!r} is not a scenario file")


def write(packed_path, files):
    """Writes {name: bytes} as the archive, atomically (a matrix interrupted mid-write leaves the
    previous archive)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(files):
                check_name(packed_path, name)
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(files[name]), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(files[name]))
    tmp = packed_path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(buf.getvalue())
    os.replace(tmp, packed_path)


def read_legacy_ss(path):
    """The snapshots of an `ss.txt`: {name: bytes}."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    out, at = {}, 0
    while at < len(text):
        m = LEGACY_HEADER.match(text, at)
        if not m:
            raise ValueError(f"{path}: no section header at character {at}")
        body = text[m.end():m.end() + int(m.group(2))]
        if len(body) != int(m.group(2)):
            raise ValueError(f"{path}: section {m.group(1)} is cut short")
        out[m.group(1)] = body.encode("utf-8")
        at = m.end() + len(body)
        if text.startswith("\n", at):  # the separator after a section that does not end in one
            at += 1
    return out


def loose_files(scenario_dir):
    """The scenario's files not in its archive: {relative name: path}. A folder's files (the
    testbed's ss/ snapshots, a simulator model's rows) are `<folder>/<file>`."""
    out = {}
    for name in sorted(os.listdir(scenario_dir)):
        path = os.path.join(scenario_dir, name)
        if os.path.isdir(path):
            for s in sorted(os.listdir(path)):
                if os.path.isfile(os.path.join(path, s)):
                    out[f"{name}/{s}"] = os.path.join(path, s)
        elif os.path.isfile(path) and name != PACKED and not name.endswith(".tmp"):
            out[name] = path
    return out


def point_members(names, point):
    """The members of `names` that belong to matrix point `point` (its rows, meta and own files:
    `<point>.csv`, `<point>.stats.jsonl`, …; not `<point>.02.csv`, another point's)."""
    own = re.compile(re.escape(point) + r"\.(csv|json|meta\.json|[A-Za-z_]+\.jsonl)")
    return [n for n in names if own.fullmatch(n)]


def pack(scenario_dir, point=None, folder=None):
    """Moves scenario_dir's loose files (and the snapshots of an old ss.txt) into its archive,
    removing them and the emptied folders; with `point`, that point's earlier members go first,
    so the archive holds just its latest run's; with `folder`, the members under `<folder>/` (a
    simulator model's earlier run). Returns how many files were packed."""
    loose = loose_files(scenario_dir)
    loose.pop(README, None)
    legacy = loose.pop(LEGACY_SS, None)
    if not loose and legacy is None:
        return 0
    packed_path = os.path.join(scenario_dir, PACKED)
    files = read(packed_path) if os.path.exists(packed_path) else {}
    if legacy is not None:
        files.update({f"{SNAPSHOTS}/{n}": b for n, b in read_legacy_ss(legacy).items()})
    if point is not None:
        for n in point_members(files, point):
            del files[n]
    if folder is not None:
        for n in [n for n in files if n.startswith(folder + "/")]:
            del files[n]
    for name, path in loose.items():
        with open(path, "rb") as f:
            files[name] = f.read()
    write(packed_path, files)
    for path in list(loose.values()) + ([legacy] if legacy else []):
        os.remove(path)
    for name in os.listdir(scenario_dir):
        sub_dir = os.path.join(scenario_dir, name)
        if os.path.isdir(sub_dir) and not os.listdir(sub_dir):
            os.rmdir(sub_dir)
    return len(loose) + (legacy is not None)


def pack_all(kind_dir):
    """pack() for every scenario folder under RAW/testbed, RAW/sim or docs/results/repro;
    returns the count."""
    if not os.path.isdir(kind_dir):
        return 0
    return sum(pack(os.path.join(kind_dir, d)) for d in sorted(os.listdir(kind_dir))
               if os.path.isdir(os.path.join(kind_dir, d)))


def unpack(packed_path, out_dir):
    for name, body in read(packed_path).items():
        path = os.path.join(out_dir, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)


class Raw:
    """RAW/testbed or RAW/sim as the readers see it: each scenario's archive with its loose files
    laid over, addressed by the paths the loose files have (RAW/<kind>/<scenario>/<name>)."""

    def __init__(self, kind_dir):
        self.dir = kind_dir
        self._files = {}

    def files(self, scenario):
        """{name: bytes} of one scenario."""
        if scenario not in self._files:
            d = os.path.join(self.dir, scenario)
            files = {}
            if os.path.exists(os.path.join(d, PACKED)):
                files.update(read(os.path.join(d, PACKED)))
            if os.path.isdir(d):
                for name, path in loose_files(d).items():
                    if name != LEGACY_SS:
                        with open(path, "rb") as f:
                            files[name] = f.read()
            self._files[scenario] = files
        return self._files[scenario]

    def scenarios(self):
        """The scenario folders, sorted."""
        if not os.path.isdir(self.dir):
            return []
        return sorted(s for s in os.listdir(self.dir) if os.path.isdir(os.path.join(self.dir, s)))

    def glob(self, scenario_pattern, name_pattern):
        """The sorted paths RAW/testbed/<scenario>/<name> matching the two patterns, as
        glob.glob(os.path.join(RAW/testbed, scenario_pattern, name_pattern)) would list the loose
        files (a pattern's `*` matches no `/` and no leading `.`)."""
        if not os.path.isdir(self.dir):
            return []
        out = []
        for s in os.listdir(self.dir):
            if not (os.path.isdir(os.path.join(self.dir, s)) and glob_match(s, scenario_pattern)):
                continue
            out += [os.path.join(self.dir, s, n) for n in self.files(s) if glob_match(n, name_pattern)]
        return sorted(out)

    def _split(self, path):
        rel = os.path.relpath(path, self.dir).split(os.sep)
        return rel[0], "/".join(rel[1:])

    def exists(self, path):
        scenario, name = self._split(path)
        return name in self.files(scenario)

    def read_text(self, path):
        scenario, name = self._split(path)
        try:
            return self.files(scenario)[name].decode("utf-8")
        except KeyError:
            raise FileNotFoundError(path) from None


def glob_match(name, pattern):
    if "/" in name or (name.startswith(".") and not pattern.startswith(".")):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unpack", metavar="DIR", help="write the members of the archive into DIR")
    ap.add_argument("path", help="RAW/testbed, RAW/sim or docs/results/repro (to pack), or a scenario's rows.tar.gz (with --unpack)")
    a = ap.parse_args()
    if a.unpack:
        unpack(a.path, a.unpack)
    else:
        print(f"packed {pack_all(a.path)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
