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
static void At20s() { g_rx20.clear(); for (auto &s : g_sinks) g_rx20.push_back(s->GetTotalRx()); }

// goodput, goodput 0-20 s, goodput 20 s-end (Mbit/s), bottleneck carried (share), fast
// recoveries, timeouts.
std::vector<double> Run(uint32_t seed, bool sack, uint32_t flows, double seconds) {
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
    }
    Simulator::Schedule(Seconds(20), &At20s);
    Simulator::Stop(Seconds(seconds));
    Simulator::Run();
    uint64_t total = 0, early = 0;
    for (size_t i = 0; i < g_sinks.size(); i++) {
        total += g_sinks[i]->GetTotalRx();
        early += i < g_rx20.size() ? g_rx20[i] : 0;
    }
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
    a = ap.parse_args()
    keys = ["goodput_mbps", "transient_mbps", "steady_mbps", "bottleneck_carried", "fast_recoveries", "timeouts"]
    for seed in (int(s) for s in a.seeds.split(",")):
        out = cppyy.gbl.sato_ns3.Run(seed, a.sack, a.flows, a.seconds)
        row = {"ns3": "3.44", "sack": a.sack, "seed": seed}
        row.update({k: round(v, 4) for k, v in zip(keys, out)})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
