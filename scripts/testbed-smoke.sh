#!/usr/bin/env bash
# Smoke test of the namespace testbed (a few seconds): the self-check of one emulated path
# (delay, rate, loss against the configuration; no TUN drops), then two tiny scenarios with
# kernel TCP (cubic, bbr), kernel MPTCP and 2-TCP, asserting the setup works — transfers complete,
# no TUN drops, `ss -tinM` shows the kernel's congestion control, MPTCP uses both paths. It does
# not judge speed; then one web page load (nghttpd + h2load, skipped when they cannot be
# installed), a 3-second live-video stream, and the tun workload (a download, a UDP stream and a
# ping-pong through `braid tun`; no device, route or nftables rule left), with the same setup
# assertions. Needs root and
# /dev/net/tun; prints why and exits 0 when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" != Linux ]; then
  echo "testbed smoke: skipped (not Linux)"; exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "testbed smoke: skipped (needs root for network namespaces)"; exit 0
fi
if [ ! -c /dev/net/tun ]; then
  echo "testbed smoke: skipped (no /dev/net/tun)"; exit 0
fi
if ! command -v ip >/dev/null 2>&1 || ! command -v ss >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get install -y iproute2 >/dev/null
  else
    echo "testbed smoke: needs iproute2 (ip, ss)" >&2; exit 1
  fi
fi
# nftables and ping are not used by the testbed itself (loss and delay are in the forwarder);
# install them for hand debugging only when the package manager is there.
for tool in nft:nftables ping:iputils-ping; do
  if ! command -v "${tool%%:*}" >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y "${tool##*:}" >/dev/null 2>&1 || echo "note: could not install ${tool##*:}"
  fi
done

cargo build --release --locked -q -p braid-testbed
bin=target/release/braid-testbed
before=$(ip netns list | awk '/^bt[0-9]+x/ {print $1}' | sort)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "--- testbed self-check (20 Mbit/s, 100 ms RTT, 2% loss)"
"$bin" check --json "$out/check.json"

echo "--- testbed smoke scenarios"
# The relay contender exercises the external-command interface a `braid` binary will use.
"$bin" run scenarios/testbed/smoke-1path.toml --contenders cubic,bbr --json "$out/smoke1.json" --assert-setup \
  --ext relay --server-cmd '{self} relay 0.0.0.0:7000 {sink}' --client-cmd '{self} relay {entry} {server0}:7000' \
  --ext relay2 --server-cmd '{self} relay 0.0.0.0:{port} {sink}' --client-cmd '{self} relay {entry} {server0}:{port}'
# Concurrent flows on one bottleneck (the fairness runs' machinery): every flow must move bytes.
"$bin" run scenarios/testbed/smoke-1path.toml --mix cubic:1,bbr:1,relay2:1 --limit 6s --json "$out/mix.json" --assert-setup \
  --ext relay2 --server-cmd '{self} relay 0.0.0.0:{port} {sink}' --client-cmd '{self} relay {entry} {server0}:{port}'
"$bin" run scenarios/testbed/smoke-2path.toml --contenders mptcp-bbr,2tcp-bbr --json "$out/smoke2.json" --assert-setup

echo "--- testbed workloads: one small web page load, a 3 s live-video stream"
# The web workload needs nghttpd and h2load (Debian nghttp2-server, nghttp2-client).
if ! command -v nghttpd >/dev/null 2>&1 || ! command -v h2load >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq nghttp2-server nghttp2-client >/dev/null 2>&1 || true
  fi
fi
if command -v nghttpd >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1; then
  "$bin" run scenarios/testbed/smoke-1path.toml --workload web --pages 6 --loads 1 --contenders bbr,cubic \
    --json "$out/web.json" --assert-setup
else
  echo "testbed web workload: skipped (nghttpd/h2load missing: apt-get install nghttp2-server nghttp2-client)"
fi
"$bin" run scenarios/testbed/smoke-1path.toml --workload video --video-duration 3s --contenders bbr \
  --json "$out/video.json" --assert-setup

echo "--- tun workload: a 2 MB download, a 2 s UDP stream and 20 pings through braid tun"
# The debug braid binary (cargo test built it): a smoke of the plumbing, not a measurement.
cargo build --locked -q -p braid-cli
"$bin" run scenarios/testbed/smoke-2path.toml --workload tun --braid target/debug/braid --transfer 2MB \
  --udp-duration 2s --pings 20 --contenders mptcp-bbr --json "$out/tun.json" --assert-setup

# Nothing of ours may be left behind.
# (Other testbed processes may run meanwhile: a new namespace counts only if its process is gone.)
after=$(ip netns list | awk '/^bt[0-9]+x/ {print $1}' | sort)
left=""
for ns in $(comm -13 <(echo "$before") <(echo "$after")); do
  pid=${ns#bt}; pid=${pid%%x*}
  [ -d "/proc/$pid" ] || left="$left $ns"
done
if [ -n "$left" ]; then
  echo "testbed smoke: namespaces left behind:$left" >&2; exit 1
fi
echo "testbed smoke passed"
