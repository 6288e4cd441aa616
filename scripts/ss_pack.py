#!/usr/bin/env python3
"""The testbed's `ss -tinM` snapshots, one text file per scenario instead of one file per run.

braid-testbed writes one snapshot per run into RAW/testbed/<scenario>/ss/ (the rows' ss_file
column names it, and the rows' ss_check holds its verdict; scripts/make-report.py reads neither
file). A matrix run packs them into RAW/testbed/<scenario>/ss.txt: each snapshot is a section

    ==> NAME (N bytes) <==
    <the N bytes of the file, as written>

in name order; a snapshot packed again (a rerun point) replaces its section. `unpack` gives the
files back byte for byte.

    python3 scripts/ss_pack.py docs/results/raw/testbed          # pack every scenario's ss/
    python3 scripts/ss_pack.py --unpack DIR docs/results/raw/testbed/video/ss.txt
"""

import argparse
import os
import re
import sys

PACKED = "ss.txt"
HEADER = re.compile(r"==> (.+) \((\d+) bytes\) <==\n")


def read(packed_path):
    """The snapshots in a packed file: {name: text}."""
    with open(packed_path, encoding="utf-8", newline="") as f:
        text = f.read()
    out, at = {}, 0
    while at < len(text):
        m = HEADER.match(text, at)
        if not m:
            raise ValueError(f"{packed_path}: no section header at character {at}")
        start = m.end()
        body = text[start:start + int(m.group(2))]
        if len(body) != int(m.group(2)):
            raise ValueError(f"{packed_path}: section {m.group(1)} is cut short")
        out[m.group(1)] = body
        at = start + len(body)
        if text.startswith("\n", at):  # the separator after a section that does not end in one
            at += 1
    return out


def write(packed_path, snapshots):
    with open(packed_path, "w", encoding="utf-8", newline="") as f:
        for name in sorted(snapshots):
            body = snapshots[name]
            f.write(f"==> {name} ({len(body)} bytes) <==\n{body}")
            if not body.endswith("\n"):
                f.write("\n")


def pack(scenario_dir):
    """Moves the snapshots of scenario_dir/ss/ into scenario_dir/ss.txt (removing the files and
    the emptied folder); returns how many were packed."""
    loose = os.path.join(scenario_dir, "ss")
    if not os.path.isdir(loose):
        return 0
    packed_path = os.path.join(scenario_dir, PACKED)
    snapshots = read(packed_path) if os.path.exists(packed_path) else {}
    names = sorted(n for n in os.listdir(loose) if os.path.isfile(os.path.join(loose, n)))
    for name in names:
        with open(os.path.join(loose, name), encoding="utf-8", errors="replace", newline="") as f:
            snapshots[name] = f.read()
    if not names:
        return 0
    write(packed_path, snapshots)
    for name in names:
        os.remove(os.path.join(loose, name))
    if not os.listdir(loose):
        os.rmdir(loose)
    return len(names)


def pack_all(testbed_dir):
    """pack() for every scenario folder under RAW/testbed; returns the count."""
    if not os.path.isdir(testbed_dir):
        return 0
    return sum(pack(os.path.join(testbed_dir, d)) for d in sorted(os.listdir(testbed_dir))
               if os.path.isdir(os.path.join(testbed_dir, d)))


def unpack(packed_path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, body in read(packed_path).items():
        if os.sep in name or name in (".", ".."):
            raise ValueError(f"{packed_path}: section name {name!r} is not a file name")
        with open(os.path.join(out_dir, name), "w", encoding="utf-8", newline="") as f:
            f.write(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unpack", metavar="DIR", help="write the snapshots of the packed file into DIR")
    ap.add_argument("path", help="RAW/testbed (to pack), or a packed ss.txt (with --unpack)")
    a = ap.parse_args()
    if a.unpack:
        unpack(a.path, a.unpack)
    else:
        print(f"packed {pack_all(a.path)} snapshots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
