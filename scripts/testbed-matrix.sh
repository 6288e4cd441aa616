#!/usr/bin/env bash
# One command for the whole testbed matrix: the simulator's models on the same
# scenarios, and the report.
#
#   scripts/testbed-matrix.sh                 # everything (~1 h; prints its estimate first)
#   scripts/testbed-matrix.sh --quick         # a fast sanity pass (one point per scenario, 3 MB,
#                                             # bbr / MPTCP-bbr and braid; into target/matrix-quick)
#   scripts/testbed-matrix.sh --only ctcp-table4 --only dfec-table3
#   scripts/testbed-matrix.sh --estimate      # the plan and its run time only
#   scripts/testbed-matrix.sh --force         # rerun points already done (default: resume)
#   scripts/testbed-matrix.sh --report-only   # regenerate docs/RESULTS.md from docs/results/raw
#
# Builds the release binaries, makes a braid key (target/matrix.key), runs every scenario point of
# scripts/testbed_matrix.py's MATRIX with every contender in one braid-testbed invocation per
# point (raw rows in docs/results/raw/testbed/, the seed in each row, the commit in each point's
# .meta.json), then braid-sim (docs/results/raw/sim/), then scripts/make-report.py
# (docs/RESULTS.md, docs/results/*.png). Needs Linux, root, /dev/net/tun, iproute2, python3 with
# matplotlib.
set -euo pipefail
cd "$(dirname "$0")/.."

report_only=0 quick=0 args=()
for a in "$@"; do
  case "$a" in
    --report-only) report_only=1 ;;
    --quick) quick=1; args+=("$a") ;;
    *) args+=("$a") ;;
  esac
done
# A python3 with matplotlib (Debian's python3-matplotlib is in /usr/bin/python3, which a pyenv
# python3 first on PATH does not see).
PY=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  PY=/usr/bin/python3
fi
raw=docs/results/raw out=docs
if [ $quick = 1 ]; then raw=target/matrix-quick/raw out=target/matrix-quick; fi

if [ $report_only = 0 ]; then
  nice -n 10 cargo build --release --locked -q -p braid-testbed -p braid-cli -p braid-sim
  "$PY" scripts/testbed_matrix.py --estimate "${args[@]}"
  for a in "${args[@]}"; do [ "$a" = --estimate ] && exit 0; done
  if [ "$(id -u)" != 0 ]; then echo "testbed-matrix: needs root (network namespaces)" >&2; exit 1; fi
  if [ ! -c /dev/net/tun ]; then echo "testbed-matrix: no /dev/net/tun" >&2; exit 1; fi
  key=target/matrix.key
  [ -f "$key" ] || target/release/braid keygen -o "$key"
  status=0
  skip_testbed=0
  for a in "${args[@]}"; do [ "$a" = --no-testbed ] && skip_testbed=1; done
  if [ $skip_testbed = 0 ]; then
    # The testbed checks its own delay, rate and loss first (RESULTS.md quotes it); a broken
    # setup stops here rather than after an hour of wrong numbers.
    mkdir -p "$raw"
    nice -n -5 target/release/braid-testbed check --json "$raw/check.json"
  fi
  "$PY" scripts/testbed_matrix.py --key "$key" "${args[@]}" || status=$?
  if [ $status = 130 ]; then exit 130; fi
fi
"$PY" scripts/make-report.py --raw "$raw" --out "$out"
exit "${status:-0}"
