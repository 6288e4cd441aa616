#!/bin/sh
# scripts/heap.sh PID: the allocator's view of a running process's heap (glibc malloc_stats:
# bytes held from the system and bytes in use, per arena and in total), then malloc_trim(0)
# and the process's RSS before and after. Tells memory a program still holds (a leak, if it
# should be gone) from freed memory the allocator keeps. Needs gdb and ptrace rights over PID;
# the process stops for a moment while gdb is attached.
#
#   target/release/examples/soak --connections 250 --seconds 240 --after-run scripts/heap.sh
set -eu
pid=$1
out=$(mktemp)
rss() { awk '/^VmRSS/ {printf "%.1f MiB", $2 / 1024}' "/proc/$pid/status"; }
echo "heap: pid $pid RSS $(rss) before"
# malloc_stats writes to the process's stderr: point fd 2 at a file for the call.
gdb -p "$pid" -batch -nx \
  -ex 'set $saved = (int) dup(2)' \
  -ex "set \$fd = (int) open(\"$out\", 577, 420)" \
  -ex 'call (int) dup2($fd, 2)' \
  -ex 'call (void) malloc_stats()' \
  -ex 'call (int) dup2($saved, 2)' \
  -ex 'call (int) close($fd)' \
  -ex 'call (int) close($saved)' \
  -ex 'call (int) malloc_trim(0)' >/dev/null 2>&1
sed 's/^/heap: /' "$out"
rm -f "$out"
echo "heap: pid $pid RSS $(rss) after malloc_trim(0)"
