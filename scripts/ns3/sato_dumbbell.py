#!/usr/bin/env python3
"""ns-3's own NewReno in Sato et al.'s dumbbell (§4, Table 1, Fig. 5): a check of braid's
`newreno-ns3` model against the simulator the paper used.

Not part of braid's build or tests: it needs ns-3's Python bindings,

    python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3==3.44.post0
    /tmp/ns3venv/bin/python scripts/ns3/sato_dumbbell.py --seeds 1,2,3 [--sack] > rows.jsonl

and prints one JSON row per seed (docs/results/repro/sato-dumbbell-ns3/ keeps the rows that
scripts/reproduce.py reports, packed: write rows.jsonl there, then
`python3 scripts/raw_pack.py docs/results/repro`). The setting is sato-dumbbell.toml's: 16 flows, each sender behind
its own 100 Mbit/s link into the router and each receiver behind one out of the other, both
with a delay drawn from 1..5 ms per flow and seed; the 50 Mbit/s, 50 ms bottleneck with a
300-packet drop-tail queue; flows started 10 ms apart; a bulk sender each for 60 s; 1000-byte
segments. ns-3's TCP as the paper's (ns-3.25–3.26, docs/DEVIATIONS.md "Sato et al."): NewReno,
SACK off (`--sack` turns it on, as ns-3.27 and later default), classic RFC 6582 recovery
(ns-3.44 defaults to PRR), limited transmit off, initial window 1 segment, delayed ACKs every
2 segments, minimum RTO 1 s, no pacing, end-node buffers unbounded (Table 1's ∞; 128 MiB).
ns-3.44 is the oldest release with bindings in the package registry; its TCP is not 3.25's
(a scoreboard since 3.27), so this is ns-3's NewReno without SACK, not the paper's exact code.

Per row: goodput (application bytes received × 8 / 60 s), the 0–20 s and 20–60 s goodput,
the bottleneck's bytes sent × 8 over 50 Mbit/s × 60 s (retransmissions included), and the fast
recoveries and retransmission timeouts the 16 senders entered (their congestion-state trace).

`--trace FILE` (one seed) also writes each sender's congestion-state changes and every segment
it sends again, time-stamped, with whether a copy of that segment had already crossed the
bottleneck (seen arriving at the far router) when it was resent, and prints a summary: which
recoveries began by resending such a segment (spurious), and the resends by state. The bottleneck
queue's own drop counter stays 0 here: with no queue disc, a full device queue stops the
interface and the traffic-control layer discards without a trace, so crossings are what is
counted. Lines: `S time flow from to cwnd ssthresh` (states 0 open, 1 disorder, 3 recovery,
4 loss) and `R time flow seq state crossed`.
"""

import argparse
import json

from ns import ns  # noqa: F401  (loads ns-3's libraries into cppyy)
import cppyy

cppyy.cppdef(r'''
#include <cstdint>
#include <vector>
namespace sato_ns3 {
using namespace ns3;
static uint64_t g_recoveries, g_timeouts, g_neck_bytes;
static std::vector<Ptr<PacketSink>> g_sinks;
static std::vector<uint64_t> g_rx20;

static void OnCongState(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to) {
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY) g_recoveries++;
    if (to == TcpSocketState::CA_LOSS && from != TcpSocketState::CA_LOSS) g_timeouts++;
}
static void OnNeckTx(Ptr<const Packet> p) { g_neck_bytes += p->GetSize(); }
static void HookSender(uint32_t node) {
    Config::ConnectWithoutContext("/NodeList/" + std::to_string(node) +
                                  "/$ns3::TcpL4Protocol/SocketList/*/CongState", MakeCallback(&OnCongState));
}
// --trace: per-flow congestion states and resends; segments seen crossing the bottleneck.
static FILE* g_trace = nullptr;
static std::vector<int> g_state;
static std::vector<uint32_t> g_highest, g_cwnd, g_ssthresh;
static std::vector<std::vector<uint8_t>> g_crossed;  // per flow, per 1000-byte segment
static void OnFlowState(uint32_t f, TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to) {
    g_state[f] = to;
    fprintf(g_trace, "S %.6f %u %d %d %u %u\n", Simulator::Now().GetSeconds(), f, int(from), int(to),
            g_cwnd[f], g_ssthresh[f]);
}
static void OnFlowCwnd(uint32_t f, uint32_t, uint32_t now) { g_cwnd[f] = now; }
static void OnFlowSsthresh(uint32_t f, uint32_t, uint32_t now) { g_ssthresh[f] = now; }
static void OnFlowTx(uint32_t f, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
    uint32_t len = p->GetSize(), seq = h.GetSequenceNumber().GetValue();
    if (len == 0) return;
    if (seq + len > g_highest[f]) { g_highest[f] = seq + len; return; }
    uint32_t k = (seq - 1) / 1000;
    int crossed = k < g_crossed[f].size() && g_crossed[f][k] > 0;
    fprintf(g_trace, "R %.6f %u %u %d %d\n", Simulator::Now().GetSeconds(), f, seq, g_state[f], crossed);
}
static void OnFarRouterRx(Ptr<const Packet> p0) {
    Ptr<Packet> p = p0->Copy();
    PppHeader ppp; p->RemoveHeader(ppp);
    Ipv4Header ip; p->RemoveHeader(ip);
    if (ip.GetProtocol() != 6) return;
    TcpHeader t; p->RemoveHeader(t);
    uint8_t a[4]; ip.GetSource().Serialize(a);
    if (p->GetSize() == 0 || a[1] != 1) return;  // data from a sender (10.1.f.1)
    auto& v = g_crossed[a[2]];
    uint32_t k = (t.GetSequenceNumber().GetValue() - 1) / 1000;
    if (v.size() <= k) v.resize(k + 100000, 0);
    if (v[k] < 255) v[k]++;
}
static void HookFlow(uint32_t f, Ptr<BulkSendApplication> app) {
    Ptr<Socket> s = app->GetSocket();
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnFlowState, f));
    s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnFlowCwnd, f));
    s->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&OnFlowSsthresh, f));
    s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnFlowTx, f));
}

static void At20s() { g_rx20.clear(); for (auto &s : g_sinks) g_rx20.push_back(s->GetTotalRx()); }

// goodput, goodput 0-20 s, goodput 20 s-end (Mbit/s), bottleneck carried (share), fast
// recoveries, timeouts.
std::vector<double> Run(uint32_t seed, bool sack, uint32_t flows, double seconds, std::string trace) {
    g_recoveries = g_timeouts = g_neck_bytes = 0;
    g_sinks.clear();
    g_rx20.clear();
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1000));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1u << 27));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1u << 27));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));

    NodeContainer senders, receivers, routers;
    senders.Create(flows);
    receivers.Create(flows);
    routers.Create(2);
    InternetStackHelper stack;
    stack.InstallAll();
    Ipv4AddressHelper addr;
    TrafficControlHelper tc;  // no queue discs: the device queues are the routers' buffers

    PointToPointHelper neck;
    neck.SetDeviceAttribute("DataRate", StringValue("50Mbps"));
    neck.SetChannelAttribute("Delay", StringValue("50ms"));
    neck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("300p"));
    NetDeviceContainer core = neck.Install(routers.Get(0), routers.Get(1));
    addr.SetBase("10.0.0.0", "255.255.255.252");
    addr.Assign(core);
    tc.Uninstall(core);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100000p"));
    Ptr<UniformRandomVariable> delay = CreateObject<UniformRandomVariable>();
    delay->SetAttribute("Min", DoubleValue(1.0));
    delay->SetAttribute("Max", DoubleValue(5.0));
    std::vector<Ipv4Address> to;
    for (uint32_t i = 0; i < flows; i++) {
        access.SetChannelAttribute("Delay", TimeValue(Seconds(delay->GetValue() / 1000.0)));
        NetDeviceContainer s = access.Install(senders.Get(i), routers.Get(0));
        access.SetChannelAttribute("Delay", TimeValue(Seconds(delay->GetValue() / 1000.0)));
        NetDeviceContainer r = access.Install(routers.Get(1), receivers.Get(i));
        addr.SetBase(("10.1." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
        addr.Assign(s);
        tc.Uninstall(s);
        addr.SetBase(("10.2." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
        to.push_back(addr.Assign(r).GetAddress(1));
        tc.Uninstall(r);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    core.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnNeckTx));
    g_trace = trace.empty() ? nullptr : fopen(trace.c_str(), "w");
    if (g_trace) {
        g_state.assign(flows, 0);
        g_highest.assign(flows, 0);
        g_cwnd.assign(flows, 0);
        g_ssthresh.assign(flows, 0);
        g_crossed.assign(flows, {});
        core.Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&OnFarRouterRx));
    }

    for (uint32_t i = 0; i < flows; i++) {
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 9));
        ApplicationContainer sa = sink.Install(receivers.Get(i));
        sa.Start(Seconds(0));
        g_sinks.push_back(DynamicCast<PacketSink>(sa.Get(0)));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(to[i], 9));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(1000));
        ApplicationContainer ba = bulk.Install(senders.Get(i));
        Time start = MilliSeconds(10 * i);
        ba.Start(start);
        Simulator::Schedule(start + MicroSeconds(1), &HookSender, senders.Get(i)->GetId());
        if (g_trace) Simulator::Schedule(start + MicroSeconds(1), &HookFlow, i, DynamicCast<BulkSendApplication>(ba.Get(0)));
    }
    Simulator::Schedule(Seconds(20), &At20s);
    Simulator::Stop(Seconds(seconds));
    Simulator::Run();
    uint64_t total = 0, early = 0;
    for (size_t i = 0; i < g_sinks.size(); i++) {
        total += g_sinks[i]->GetTotalRx();
        early += i < g_rx20.size() ? g_rx20[i] : 0;
    }
    if (g_trace) { fclose(g_trace); g_trace = nullptr; }
    Simulator::Destroy();
    return {total * 8.0 / seconds / 1e6, early * 8.0 / 20.0 / 1e6, (total - early) * 8.0 / (seconds - 20.0) / 1e6,
            g_neck_bytes * 8.0 / (50e6 * seconds), double(g_recoveries), double(g_timeouts)};
}
}
''')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--sack", action="store_true", help="SACK on (ns-3.27 and later's default)")
    ap.add_argument("--flows", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--trace", metavar="FILE", help="write the per-flow trace (one seed) and print its summary")
    a = ap.parse_args()
    keys = ["goodput_mbps", "transient_mbps", "steady_mbps", "bottleneck_carried", "fast_recoveries", "timeouts"]
    for seed in (int(s) for s in a.seeds.split(",")):
        out = cppyy.gbl.sato_ns3.Run(seed, a.sack, a.flows, a.seconds, a.trace or "")
        row = {"ns3": "3.44", "sack": a.sack, "seed": seed}
        row.update({k: round(v, 4) for k, v in zip(keys, out)})
        print(json.dumps(row), flush=True)
        if a.trace:
            summarize(a.trace)
            break


def summarize(path):
    """Recoveries begun by resending a segment that had crossed the bottleneck (a spurious fast
    retransmit), and the resends by congestion state and crossing."""
    names = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}
    resends, entries, per_flow = {}, {"spurious": 0, "lost": 0}, {}
    opening = set()
    for line in open(path):
        f = line.split()
        flow = int(f[2])
        if f[0] == "S" and f[4] == "3" and f[3] != "3":
            opening.add(flow)
            per_flow.setdefault(flow, [0, 0])[0] += 1
        elif f[0] == "R":
            key = (names[int(f[4])], "crossed" if f[5] == "1" else "not crossed")
            resends[key] = resends.get(key, 0) + 1
            per_flow.setdefault(flow, [0, 0])[1] += 1
            if flow in opening:
                opening.discard(flow)
                entries["spurious" if f[5] == "1" else "lost"] += 1
    print(json.dumps({"recoveries_opened_by": entries,
                      "resends": {f"{s} / {c}": n for (s, c), n in sorted(resends.items())},
                      "per_flow_recoveries_resends": {f: per_flow[f] for f in sorted(per_flow)}}))


if __name__ == "__main__":
    main()
