#!/usr/bin/env python3
"""Where a braid sender's wire bytes go, from its qlog (`braid forward --qlog DIR`).

    scripts/wire_breakdown.py CLIENT.sqlog --payload BYTES [--tun-bytes BYTES]

Each packet the qlog records as sent is counted at the IP layer: its core bytes plus the AEAD
tag (16), UDP (8) and IPv4 (20) headers. Packets are classed by what they carry: a source symbol
(first sending or again), a repair symbol, a PING alone (tail or path probes), ACK/control
frames alone, the handshake. A symbol packet's bytes are split into the symbol's payload and
everything around it (IP/UDP/tag, braid's packet header, the SYMBOL frame's header, control
frames beside it). Source payload beyond `--payload` (the application's bytes) is the pipe's
STREAM frame headers and the zero padding that ends a symbol where a write ended (a video
frame's last symbol). PMTU probes are not in the qlog: with `--tun-bytes` (the testbed's
path_fwd_tx_bytes) the difference is shown as "not in the qlog".
"""

import argparse
import json
import sys

PER_DATAGRAM = 16 + 8 + 20  # AEAD tag, UDP, IPv4


def records(path):
    with open(path, "rb") as f:
        for chunk in f.read().split(b"\x1e"):
            chunk = chunk.strip()
            if chunk:
                try:
                    yield json.loads(chunk)
                except ValueError:
                    continue


def breakdown(path):
    c = {k: 0 for k in ("source_payload", "source_again_payload", "repair_payload", "symbol_around",
                        "ping", "ack_only", "handshake", "other")}
    n = {k: 0 for k in ("packets", "source", "source_again", "repair", "ping", "ack_only", "handshake", "other",
                        "lost")}
    seen = set()
    for r in records(path):
        name = r.get("name")
        if name == "recovery:packet_lost":
            n["lost"] += 1
            continue
        if name != "transport:packet_sent":
            continue
        d = r["data"]
        size = d["raw"]["length"] + PER_DATAGRAM
        frames = d.get("frames", [])
        kinds = {f["frame_type"] for f in frames}
        n["packets"] += 1
        if d["header"]["packet_type"] != "1RTT" or "crypto" in kinds:
            c["handshake"] += size
            n["handshake"] += 1
            continue
        symbols = [f for f in frames if f["frame_type"] in ("symbol", "symbol_part")]
        if symbols:
            payload = 0
            for f in symbols:
                length = f["length"]
                payload += length
                if f["frame_type"] == "symbol" and f.get("repair"):
                    c["repair_payload"] += length
                    n["repair"] += 1
                elif f["frame_type"] == "symbol":
                    key = (f["block"], f["index"])
                    if key in seen:
                        c["source_again_payload"] += length
                        n["source_again"] += 1
                    else:
                        seen.add(key)
                        c["source_payload"] += length
                        n["source"] += 1
                else:
                    c["other"] += length
                    n["other"] += 1
            c["symbol_around"] += size - payload
        elif "ping" in kinds:
            c["ping"] += size
            n["ping"] += 1
        elif kinds <= {"ack", "block_ack", "max_data", "max_stream_data", "padding"}:
            c["ack_only"] += size
            n["ack_only"] += 1
        else:
            c["other"] += size
            n["other"] += 1
    return c, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("qlog")
    ap.add_argument("--payload", type=int, required=True, help="the application's bytes (the video's)")
    ap.add_argument("--tun-bytes", type=int, help="the testbed's path_fwd_tx_bytes for the same run")
    a = ap.parse_args()
    c, n = breakdown(a.qlog)
    total = sum(c.values())
    video = a.payload
    padding = c["source_payload"] - video
    lines = [
        ("video (the application's bytes)", video, n["source"]),
        ("pipe STREAM headers + padding of symbols ending a write", padding, None),
        ("around symbols: IP/UDP/tag, packet and SYMBOL headers, piggybacked ACKs", c["symbol_around"],
         n["source"] + n["source_again"] + n["repair"]),
        ("repair symbols' payload", c["repair_payload"], n["repair"]),
        ("sources sent again (payload)", c["source_again_payload"], n["source_again"]),
        ("PING-only packets (tail / path probes)", c["ping"], n["ping"]),
        ("ACK / control-only packets", c["ack_only"], n["ack_only"]),
        ("handshake", c["handshake"], n["handshake"]),
        ("other", c["other"], n["other"]),
    ]
    if a.tun_bytes:
        lines.append(("not in the qlog (PMTU probes, closing)", a.tun_bytes - total, None))
        total = a.tun_bytes
    for what, b, k in lines:
        print(f"{what:<75} {b:>11,d} B  {b / video:7.4f} x  {'' if k is None else f'{k:>6d} pkts'}")
    print(f"{'total':<75} {total:>11,d} B  {total / video:7.4f} x  {n['packets']:>6d} pkts in qlog, "
          f"{n['lost']} declared lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
