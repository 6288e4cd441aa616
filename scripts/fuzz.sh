#!/usr/bin/env bash
# Builds braid's fuzz targets with libFuzzer on the stable toolchain and runs them.
#
#   scripts/fuzz.sh build                      # all targets (fuzz/target/HOST/release/TARGET)
#   scripts/fuzz.sh run TARGET [SECONDS] [-- LIBFUZZER_FLAGS...]   # default 60 s, 1 job
#   scripts/fuzz.sh smoke [SECONDS]            # every target for SECONDS (default 10): CI
#   scripts/fuzz.sh merge TARGET               # minimize fuzz/corpus/TARGET with what was found
#
# New inputs go to fuzz/corpus-new/TARGET (not committed); `merge` folds in only those that add
# coverage. A crash is written to fuzz/artifacts/TARGET/: fix it, then copy it to
# fuzz/regressions/TARGET/ so `cargo test -p braid-fuzz` replays it for good.
#
# Why not `cargo fuzz`: it asks for a nightly toolchain unless given `-s none`, and installing
# it builds a binary; the flags below are what it passes, and all are stable: LLVM's
# SanitizerCoverage pass (inline 8-bit counters, the PC table, comparison tracing) and
# `--cfg fuzzing`. No sanitizer: memory safety is Rust's, the harness counts allocations.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

TARGETS=(packet ack_ranges transport_params symbol_parts codec handshake socks config connection fragment)
export RUSTFLAGS="${RUSTFLAGS:-} -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Ccodegen-units=16"
# Its own target folder: these flags would otherwise rebuild the workspace's dependencies.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# With an explicit --target the flags reach only the targets' code, not build scripts.
HOST=$(rustc -vV | sed -n 's/^host: //p')
BIN="$CARGO_TARGET_DIR/$HOST/release"

build() { cargo build --release --locked --target "$HOST" --bins "$@"; }

run() {
  local target=$1 seconds=${2:-60}
  shift $(( $# < 2 ? $# : 2 ))
  [ "${1:-}" = "--" ] && shift
  mkdir -p "corpus-new/$target" "artifacts/$target" "corpus/$target"
  "$BIN/$target" "corpus-new/$target" "corpus/$target" -max_total_time="$seconds" \
    -artifact_prefix="artifacts/$target/" -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 "$@"
}

case "${1:-}" in
  build) build ;;
  run) shift; build --bin "$1"; run "$@" ;;
  smoke)
    seconds=${2:-10}
    build
    for t in "${TARGETS[@]}"; do
      echo "--- fuzz $t for ${seconds}s"
      run "$t" "$seconds" -- -print_final_stats=0 2>&1 | grep -E 'Done|ERROR|panicked|SUMMARY|==' || true
      [ -z "$(ls -A "artifacts/$t" 2>/dev/null)" ] || { echo "fuzz $t: a finding in fuzz/artifacts/$t" >&2; exit 1; }
    done ;;
  merge)
    build --bin "$2"
    mkdir -p "corpus-min/$2"
    "$BIN/$2" -merge=1 "corpus-min/$2" "corpus/$2" "corpus-new/$2"
    rm -rf "corpus/$2" && mv "corpus-min/$2" "corpus/$2" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
