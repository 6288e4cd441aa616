#!/usr/bin/env bash
# Smoke test of `braid tun` / `braid server --tun` in network namespaces (root, /dev/net/tun):
#   client ns --veth-- server ns --veth-- world ns (HTTP and UDP echo servers)
# The client routes the world's prefix into its TUN device; checks a TCP download (bytes
# checked), a UDP echo, a ping, and that Ctrl-C leaves no device or route behind.
# Usage: scripts/tun-smoke.sh [path/to/braid]   (prints SKIP and exits 0 without root or TUN)
set -euo pipefail
BRAID=${1:-target/debug/braid}
if [[ $(id -u) != 0 ]]; then echo "SKIP tun smoke: needs root"; exit 0; fi
if [[ ! -e /dev/net/tun ]]; then echo "SKIP tun smoke: no /dev/net/tun"; exit 0; fi
for tool in ip curl python3; do
  command -v $tool >/dev/null || { echo "SKIP tun smoke: no $tool"; exit 0; }
done
P=bts$$
C=${P}c S=${P}s W=${P}w
TMP=$(mktemp -d)
cleanup() {
  set +e
  [[ -n ${TUN_PID:-} ]] && kill $TUN_PID 2>/dev/null
  [[ -n ${SRV_PID:-} ]] && kill $SRV_PID 2>/dev/null
  [[ -n ${WEB_PID:-} ]] && kill $WEB_PID 2>/dev/null
  [[ -n ${UDP_PID:-} ]] && kill $UDP_PID 2>/dev/null
  sleep 0.3
  for n in $C $S $W; do ip netns del $n 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
for n in $C $S $W; do ip netns add $n; ip -n $n link set lo up; done
ip link add ${P}a netns $C type veth peer name ${P}b netns $S
ip link add ${P}d netns $S type veth peer name ${P}e netns $W
ip -n $C addr add 10.200.1.1/24 dev ${P}a; ip -n $C link set ${P}a up
ip -n $S addr add 10.200.1.2/24 dev ${P}b; ip -n $S link set ${P}b up
ip -n $S addr add 10.200.2.1/24 dev ${P}d; ip -n $S link set ${P}d up
ip -n $W addr add 10.200.2.2/24 dev ${P}e; ip -n $W link set ${P}e up
ip netns exec $S sysctl -qw net.ipv4.ping_group_range="0 2147483647"
head -c 3000000 /dev/urandom > "$TMP/file"
WANT=$(sha256sum < "$TMP/file" | cut -d' ' -f1)
ip netns exec $W python3 -m http.server 8080 --bind 10.200.2.2 --directory "$TMP" >/dev/null 2>&1 & WEB_PID=$!
ip netns exec $W python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.200.2.2", 9999))
while True:
    d, a = s.recvfrom(65536); s.sendto(d, a)' & UDP_PID=$!
# Wait for the world's servers and then braid's (python starts slowly on a loaded machine).
for _ in $(seq 100); do ip netns exec $W curl -s -o /dev/null http://10.200.2.2:8080/ && break; sleep 0.1; done
"$BRAID" keygen -o "$TMP/key" >/dev/null
ip netns exec $S "$BRAID" server --listen 10.200.1.2:4433 --key "$TMP/key" --tun --tun-pool 10.77.0.0/24 2>"$TMP/server.log" & SRV_PID=$!
for _ in $(seq 100); do grep -q listening "$TMP/server.log" && break; sleep 0.1; done
ip netns exec $C "$BRAID" tun --server 10.200.1.2:4433 --key "$TMP/key" --name braid0 --route 10.200.2.0/24 2>"$TMP/tun.log" & TUN_PID=$!
for _ in $(seq 150); do ip -n $C link show braid0 >/dev/null 2>&1 && break; sleep 0.1; done
ip -n $C link show braid0 >/dev/null 2>&1 || { cat "$TMP/tun.log"; echo "FAIL: no braid0"; exit 1; }
sleep 0.3
FAIL=0
GOT=$(ip netns exec $C curl -s --max-time 30 http://10.200.2.2:8080/file | sha256sum | cut -d' ' -f1)
if [[ $GOT == "$WANT" ]]; then echo "ok   TCP download through the tunnel, 3,000,000 bytes intact"; else echo "FAIL TCP download"; FAIL=1; fi
ECHO=$(ip netns exec $C python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
ok = 0
for i in range(20):
    s.sendto(b"ping %d" % i, ("10.200.2.2", 9999))
    try:
        d, _ = s.recvfrom(100); ok += d == b"ping %d" % i
    except socket.timeout:
        pass
print(ok)')
if [[ $ECHO -ge 19 ]]; then echo "ok   UDP echo through the tunnel ($ECHO/20)"; else echo "FAIL UDP echo ($ECHO/20)"; FAIL=1; fi
PASSED=3
if ! command -v ping >/dev/null; then echo "skip ping: no ping installed"; PASSED=2
elif ip netns exec $C ping -c 3 -W 2 10.200.2.2 >/dev/null; then echo "ok   ping through the tunnel"; else echo "FAIL ping"; FAIL=1; fi
kill -INT $TUN_PID; wait $TUN_PID 2>/dev/null || true; TUN_PID=
if ip -n $C link show braid0 >/dev/null 2>&1 || ip -n $C route | grep -q braid0; then
  echo "FAIL teardown: braid0 or its routes left"; FAIL=1
else
  echo "ok   teardown: no device, no route left"
fi
if [[ $FAIL != 0 ]]; then echo "--- tun.log"; cat "$TMP/tun.log"; echo "--- server.log"; cat "$TMP/server.log"; exit 1; fi
echo "tun smoke: $((PASSED + 1)) passed, 0 failed"
