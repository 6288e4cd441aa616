#!/usr/bin/env bash
# Smoke test of `braid tun` / `braid server --tun` in network namespaces (root, /dev/net/tun):
#   client ns --veth-- server ns --veth-- world ns (HTTP and UDP echo servers)
# The client routes the world's prefixes (IPv4 and IPv6) into its TUN device; checks over each
# family a TCP download (bytes checked), a UDP echo (small and full-MTU packets, which take two
# datagrams), a ping, and that Ctrl-C leaves no device, address or route behind. Bad input and
# refusals too: no CAP_NET_ADMIN, no root, no /dev/net/tun, the granted address already in use
# and a server without --tun each fail in one line saying which and leave no device; the grant
# is a pool address; packets from another source are dropped and counted; the server's own
# address is not reachable through the tunnel.
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
  [[ -n ${WEB6_PID:-} ]] && kill $WEB6_PID 2>/dev/null
  [[ -n ${UDP6_PID:-} ]] && kill $UDP6_PID 2>/dev/null
  [[ -n ${SRV2_PID:-} ]] && kill $SRV2_PID 2>/dev/null
  [[ -n ${LOCAL_PID:-} ]] && kill $LOCAL_PID 2>/dev/null
  [[ -n ${LOCALWEB_PID:-} ]] && kill $LOCALWEB_PID 2>/dev/null
  [[ -n ${KEY_COPY:-} ]] && rm -f "$KEY_COPY"
  sleep 0.3
  for n in $C $S $W; do ip netns del $n 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
for n in $C $S $W; do ip netns add $n; ip -n $n link set lo up; done
ip link add ${P}a netns $C type veth peer name ${P}b netns $S
ip link add ${P}d netns $S type veth peer name ${P}e netns $W
# The path's MTU (1350) holds braid's base PLPMTU (1280-byte UDP payloads, 1324 bytes on the
# wire) but not its first probe (1400): datagrams stay 1216 bytes, so full-size packets in
# the tunnel take two datagrams.
ip -n $C addr add 10.200.1.1/24 dev ${P}a; ip -n $C link set ${P}a mtu 1350 up
ip -n $S addr add 10.200.1.2/24 dev ${P}b; ip -n $S link set ${P}b mtu 1350 up
ip -n $S addr add 10.200.2.1/24 dev ${P}d; ip -n $S link set ${P}d up
ip -n $W addr add 10.200.2.2/24 dev ${P}e; ip -n $W link set ${P}e up
ip -n $S addr add fd00:200:2::1/64 dev ${P}d nodad
ip -n $W addr add fd00:200:2::2/64 dev ${P}e nodad
ip netns exec $S sysctl -qw net.ipv4.ping_group_range="0 2147483647"
head -c 3000000 /dev/urandom > "$TMP/file"
WANT=$(sha256sum < "$TMP/file" | cut -d' ' -f1)
ip netns exec $W python3 -m http.server 8080 --bind 10.200.2.2 --directory "$TMP" >/dev/null 2>&1 & WEB_PID=$!
ip netns exec $W python3 -m http.server 8080 --bind fd00:200:2::2 --directory "$TMP" >/dev/null 2>&1 & WEB6_PID=$!
ECHO_SERVER='
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM); s.bind((sys.argv[1], 9999))
while True:
    d, a = s.recvfrom(65536); s.sendto(d, a)'
ip netns exec $W python3 -c "$ECHO_SERVER" 10.200.2.2 & UDP_PID=$!
ip netns exec $W python3 -c "$ECHO_SERVER" fd00:200:2::2 & UDP6_PID=$!
# Wait for the world's servers and then braid's (python starts slowly on a loaded machine).
for _ in $(seq 100); do ip netns exec $W curl -s -o /dev/null http://10.200.2.2:8080/ && break; sleep 0.1; done
for _ in $(seq 100); do ip netns exec $W curl -s -o /dev/null -g 'http://[fd00:200:2::2]:8080/' && break; sleep 0.1; done
"$BRAID" keygen -o "$TMP/key" >/dev/null
ip netns exec $S "$BRAID" server --listen 10.200.1.2:4433 --key "$TMP/key" --tun --tun-pool 10.77.0.0/24 --tun-pool6 fd77::/64 2>"$TMP/server.log" & SRV_PID=$!
for _ in $(seq 100); do grep -q listening "$TMP/server.log" && break; sleep 0.1; done
FAIL=0 PASSED=0
pass() { echo "ok   $1"; PASSED=$((PASSED + 1)); }
# bad NAME TEXT COMMAND...: the command fails, its last line on stderr names TEXT, and no
# device is left.
bad() {
  local name=$1 want=$2 out
  shift 2
  if out=$("$@" 2>&1 >/dev/null); then echo "FAIL $name: exited 0"; FAIL=1; return; fi
  out=$(tail -n 1 <<<"$out")
  if [[ $out == *"$want"* ]] && ! ip -n $C link show braid0 >/dev/null 2>&1; then pass "$name: $out"
  else echo "FAIL $name: $out"; FAIL=1; fi
}
TUN_ARGS=(tun --server 10.200.1.2:4433 --key "$TMP/key" --name braid0 --route 10.200.2.0/24)
# The server's first grant is 10.77.0.2: taken on the client already, it is refused.
ip -n $C addr add 10.77.0.2/32 dev lo
bad "address already in use" "address 10.77.0.2 is already in use on lo" ip netns exec $C "$BRAID" "${TUN_ARGS[@]}"
ip -n $C addr del 10.77.0.2/32 dev lo
bad "no /dev/net/tun" "/dev/net/tun does not exist" \
  ip netns exec $C unshare -m sh -c 'mount -t tmpfs none /dev/net && exec "$@"' sh "$BRAID" "${TUN_ARGS[@]}"
bad "root without CAP_NET_ADMIN" "needs root or CAP_NET_ADMIN" \
  ip netns exec $C setpriv --bounding-set=-net_admin --inh-caps=-net_admin "$BRAID" "${TUN_ARGS[@]}"
KEY_COPY=$(mktemp); cp "$TMP/key" "$KEY_COPY"; chmod 644 "$KEY_COPY"
bad "not root" "needs root or CAP_NET_ADMIN" ip netns exec $C setpriv --reuid=65534 --regid=65534 --clear-groups \
  "$BRAID" tun --server 10.200.1.2:4433 --key "$KEY_COPY" --name braid0 --route 10.200.2.0/24
ip netns exec $S "$BRAID" server --listen 10.200.1.2:4434 --key "$TMP/key" 2>"$TMP/server2.log" & SRV2_PID=$!
for _ in $(seq 100); do grep -q listening "$TMP/server2.log" && break; sleep 0.1; done
bad "a server without --tun" "this server takes no tunnels (start it with --tun)" \
  ip netns exec $C "$BRAID" tun --server 10.200.1.2:4434 --key "$TMP/key" --name braid0 --route 10.200.2.0/24
kill $SRV2_PID; SRV2_PID=
ip netns exec $C "$BRAID" tun --server 10.200.1.2:4433 --key "$TMP/key" --name braid0 --route 10.200.2.0/24 --route fd00:200:2::/64 2>"$TMP/tun.log" & TUN_PID=$!
for _ in $(seq 150); do ip -n $C link show braid0 >/dev/null 2>&1 && break; sleep 0.1; done
ip -n $C link show braid0 >/dev/null 2>&1 || { cat "$TMP/tun.log"; echo "FAIL: no braid0"; exit 1; }
# The IPv6 address is there once the device is (nodad: usable at once).
for _ in $(seq 50); do ip -n $C -6 addr show dev braid0 | grep -q fd77:: && break; sleep 0.1; done
sleep 0.3
# The echo client: 20 packets of $2 bytes (each with its number), how many came back intact
# (or $3 packets, waiting $4 s for each, sent from address $5).
ECHO_CLIENT='
import socket, sys
host, size = sys.argv[1], int(sys.argv[2])
count, wait = (int(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) > 4 else (20, 2)
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(wait)
if len(sys.argv) > 5:
    s.bind((sys.argv[5], 0))
ok = 0
for i in range(count):
    msg = (b"ping %d " % i).ljust(size, b"x")
    s.sendto(msg, (host, 9999))
    try:
        d, _ = s.recvfrom(65536); ok += d == msg
    except socket.timeout:
        pass
print(ok)'
# Each family: the largest UDP payload a 1280-byte packet holds (1252 over IPv4, 1232 over IPv6)
# takes two datagrams on paths of 1280-byte packets.
for dst in 10.200.2.2 fd00:200:2::2; do
  if [[ $dst == *:* ]]; then fam=IPv6 url="http://[$dst]:8080/file" big=1232; else fam=IPv4 url="http://$dst:8080/file" big=1252; fi
  GOT=$(ip netns exec $C curl -g -s --max-time 30 "$url" | sha256sum | cut -d' ' -f1)
  if [[ $GOT == "$WANT" ]]; then pass "$fam TCP download through the tunnel, 3,000,000 bytes intact"; else echo "FAIL $fam TCP download"; FAIL=1; fi
  for size in 20 $big; do
    ECHO=$(ip netns exec $C python3 -c "$ECHO_CLIENT" $dst $size)
    if [[ $ECHO -ge 19 ]]; then pass "$fam UDP echo through the tunnel, $size-byte payloads ($ECHO/20)"; else echo "FAIL $fam UDP echo, $size bytes ($ECHO/20)"; FAIL=1; fi
  done
  if ! command -v ping >/dev/null; then echo "skip $fam ping: no ping installed"
  elif ip netns exec $C ping -c 3 -W 2 $dst >/dev/null && ip netns exec $C ping -c 2 -W 2 -s $big -M do $dst >/dev/null; then
    pass "$fam ping through the tunnel (and full-size pings)"
  else echo "FAIL $fam ping"; FAIL=1; fi
done
GRANT=$(sed -n 's|.*tunnel up: braid0 \([0-9.]*\)/.*|\1|p' "$TMP/tun.log")
if [[ $GRANT == 10.77.0.* && $GRANT != 10.77.0.1 ]]; then pass "the tunnel's address $GRANT is from the server's pool"
else echo "FAIL grant: '$GRANT' is not a pool address"; FAIL=1; fi
# Another source on the device: its packets never leave the client (and are counted at exit).
ip -n $C addr add 10.77.0.250/32 dev braid0
ECHO=$(ip netns exec $C python3 -c "$ECHO_CLIENT" 10.200.2.2 20 3 1 10.77.0.250)
if [[ $ECHO == 0 ]]; then pass "UDP from a spoofed source (10.77.0.250) is not carried"; else echo "FAIL spoofed source carried ($ECHO/3)"; FAIL=1; fi
# The server's own address (inside the routed prefix) answers locally but not through the tunnel.
ip netns exec $S python3 -c "$ECHO_SERVER" 10.200.2.1 & LOCAL_PID=$!
ip netns exec $S python3 -m http.server 8080 --bind 10.200.2.1 --directory "$TMP" >/dev/null 2>&1 & LOCALWEB_PID=$!
for _ in $(seq 100); do ip netns exec $S curl -s -o /dev/null http://10.200.2.1:8080/ && break; sleep 0.1; done
if ip netns exec $S curl -s -o /dev/null --max-time 5 http://10.200.2.1:8080/ \
  && [[ $(ip netns exec $S python3 -c "$ECHO_CLIENT" 10.200.2.1 20 3 1) == 3 ]]; then
  TCP_OK=$(ip netns exec $C curl -s -o /dev/null --max-time 5 http://10.200.2.1:8080/ && echo reached || true)
  ECHO=$(ip netns exec $C python3 -c "$ECHO_CLIENT" 10.200.2.1 20 3 1)
  if [[ -z $TCP_OK && $ECHO == 0 ]]; then pass "the server's own address is refused through the tunnel (TCP and UDP)"
  else echo "FAIL the server's own address reached through the tunnel (TCP: ${TCP_OK:-refused}, UDP $ECHO/3)"; FAIL=1; fi
else echo "FAIL the server's own servers do not answer locally"; FAIL=1; fi
kill -INT $TUN_PID; wait $TUN_PID 2>/dev/null || true; TUN_PID=
SPOOFED=$(sed -n 's/.* \([0-9]*\) packets dropped as spoofed.*/\1/p' "$TMP/tun.log")
if [[ ${SPOOFED:-0} -ge 1 ]]; then pass "the exit line counts $SPOOFED packets dropped as spoofed"; else echo "FAIL spoofed packets not counted: $(grep 'tunnel down' "$TMP/tun.log")"; FAIL=1; fi
if grep -q "mtu 1280" "$TMP/tun.log" && ! grep -q " 0 messages split" "$TMP/tun.log"; then pass "IPv6 device at 1280 bytes; full-size packets went in pieces"
else echo "FAIL device size or splitting: $(grep -e 'tunnel up' -e 'tunnel down' "$TMP/tun.log")"; FAIL=1; fi
LEFT=$( (ip -n $C link show braid0 2>/dev/null; ip -n $C -4 route | grep braid0; ip -n $C -6 route | grep -e braid0 -e fd00:200:2; ip -n $C -6 addr | grep fd77) || true)
if [[ -n $LEFT ]]; then
  echo "FAIL teardown: left behind: $LEFT"; FAIL=1
else
  pass "teardown: no device, address or route left (IPv4 and IPv6)"
fi
if [[ $FAIL != 0 ]]; then echo "--- tun.log"; cat "$TMP/tun.log"; echo "--- server.log"; cat "$TMP/server.log"; exit 1; fi
echo "tun smoke: $PASSED passed, 0 failed"
