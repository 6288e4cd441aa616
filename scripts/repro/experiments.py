"""The experiments: a scenario file and the braid-sim runs of it (EXPERIMENTS).

An experiment's `seeds` and `set` replace top-level keys of the scenario (the committed files keep
theirs, so their tables elsewhere stay as they are); a run's `args` go before the scenario file. A
run with a `tag` stores its rows in a directory of that name and its modes are reported as
`mode@tag` (another controller, say)."""

from collections import OrderedDict


def run(args, tag=None):
    return dict(args=args, tag=tag)


def experiment(scenario, *runs, seeds=None, keys=None, phases=None, links=False, outage=None):
    """`links`: keep each run's link counters (braid-sim --json's metrics.links) in links.csv.
    `outage`: (start s, end s) of an outage in the scenario; each run's recovery from it
    (`recovery` below) is kept in recovery.csv."""
    return dict(scenario=scenario, runs=list(runs), seeds=seeds, keys=keys or {}, phases=phases, links=links,
                outage=outage)


# Sato et al. split their 60 s at 20 s into a transient and a steady state (Figs. 8 and 9): a
# phase is (name, from s, to s or None for the run's end); its goodput is the mean of the
# time series' intervals that end inside it, kept per run in phases.csv.
SATO_PHASES = [("start", 0.0, 5.0), ("transient", 0.0, 20.0), ("steady", 20.0, None)]


# The paper's TCP in Sato et al.'s ns-3 runs; FMTCP's subflows (IETF-MPTCP in ns-2).
NS3 = ["--cc", "newreno-ns3"]


RENO = ["--cc", "newreno"]


# The paper's TCP recovered as ns-3's NewReno without SACK: the cumulative point and duplicate ACKs
# only, one hole per round trip, go-back-N after a timeout (docs/SIMULATOR.md, `--recovery`).
CUMULATIVE = ["--recovery", "cumulative"]


# FMTCP's 32 KB blocks: 26 symbols of 1232 bytes; Table II's 128 KB receive buffer.
FMTCP_BLOCK = {"block_len": "26"}


FMTCP_TABLE2_KEYS = {"receive_window": '"128KiB"', **FMTCP_BLOCK}


EXPERIMENTS = OrderedDict([
    ("ctcp-table4", experiment("scenarios/ctcp-table4.toml", run(["--modes", "ctcp,tcp,braid"]))),
    ("ctcp-table5", experiment("scenarios/ctcp-table5.toml", run(["--modes", "ctcp,braid"]))),
    # The testbed's file: Table IV's path, its ACKs dark from 5 to 5.5 s (CTCP_OUTAGE).
    ("ctcp-recovery", experiment("scenarios/testbed/ctcp-recovery.toml", run(["--modes", "ctcp,braid"]),
                                 outage=(5.0, 5.5))),
    # FMTCP Table II at the paper's 128 KB receive buffer; the MPTCP baseline on fmtcp's NewReno.
    ("fmtcp-table2-loss", experiment("scenarios/fmtcp-table2-loss.toml", run(["--modes", "fmtcp,mptcp", *RENO]),
                                     run(["--modes", "mptcp,braid"], tag="default"), seeds=[1, 2, 3],
                                     keys=FMTCP_TABLE2_KEYS)),
    ("fmtcp-table2-delay", experiment("scenarios/fmtcp-table2-delay.toml", run(["--modes", "fmtcp,mptcp", *RENO]),
                                      run(["--modes", "mptcp,braid"], tag="default"), seeds=[1, 2, 3],
                                      keys=FMTCP_TABLE2_KEYS)),
    ("fmtcp-receive-buffer", experiment("scenarios/fmtcp-receive-buffer.toml",
                                        run(["--modes", "fmtcp,mptcp", *RENO]),
                                        run(["--modes", "braid"], tag="default"), seeds=[1, 2, 3],
                                        keys=FMTCP_BLOCK)),
    # Both MPTCP modes on uncoupled CUBIC, and on MPTCP's coupled control (LIA) as a second run.
    ("dfec-table3", experiment("scenarios/dfec-table3.toml", run(["--modes", "mptcp-dfec,mptcp,braid"]),
                               run(["--modes", "mptcp-dfec,mptcp", "--cc", "lia"], tag="lia"),
                               seeds=[1, 2, 3])),
    # dFEC Table III with the paper's web pages and live video; TCP-dFEC and TCP-IR on one path.
    ("dfec-table3-web", experiment("scenarios/dfec-table3-web.toml", run(["--modes", "mptcp-dfec,mptcp,braid"]),
                                   seeds=[1, 2, 3])),
    # The same pages with nothing to lose (no loss, 4-BDP queues): what the parities and the
    # per-path blocks cost by themselves. Without loss the seeds give the same runs: one.
    ("dfec-table3-web-lossless", experiment("scenarios/dfec-table3-web-lossless.toml",
                                            run(["--modes", "mptcp-dfec,mptcp"]), seeds=[1])),
    ("dfec-table3-video", experiment("scenarios/dfec-table3-video.toml",
                                     run(["--modes", "mptcp-dfec,mptcp,braid"]), seeds=[1, 2, 3])),
    ("dfec-tcp-bulk", experiment("scenarios/dfec-tcp-bulk.toml", run(["--modes", "dfec,tcp-ir,tcp,braid"]),
                                 seeds=[1, 2, 3])),
    ("dfec-tcp-web", experiment("scenarios/dfec-tcp-web.toml", run(["--modes", "dfec,tcp-ir,tcp,braid"]),
                                seeds=[1, 2, 3])),
    ("dfec-tcp-video", experiment("scenarios/dfec-tcp-video.toml", run(["--modes", "dfec,tcp-ir,tcp,braid"]),
                                  seeds=[1, 2, 3])),
    # The bottleneck's counters (links.csv) say how much of the link each mode used. The paper's
    # comparison: both modes on ns-3's NewReno with TCP's recovery without SACK; beside it the same
    # on braid's recovery from the ACK ranges (`ranges`), and the modes' own controllers. The
    # scenario's 10 seeds are the paper's 10 trials; the stored rows run 5 of them (each seed is
    # seven 60 s runs of 16 flows, ~25 min at this machine's usual load of 12-16 on 2 cores).
    ("sato-dumbbell", experiment("scenarios/sato-dumbbell.toml", run(["--modes", "tcp,sato", *NS3, *CUMULATIVE]),
                                 run(["--modes", "tcp,sato", *NS3], tag="ranges"),
                                 run(["--modes", "sato,tcp,braid"], tag="default"),
                                 seeds=[1, 2, 3, 4, 5], phases=SATO_PHASES, links=True)),
    # The dumbbell with smaller router buffers, where NewReno leaves more of the link idle.
    ("sato-buffer", experiment("scenarios/sato-buffer.toml", run(["--modes", "tcp,sato", *NS3]), seeds=[1, 2, 3],
                               links=True)),
    # The sweeps on 1 of the files' 10 seeds (23 points, each a 60 s run of 16 flows), on the paper's
    # TCP: more seeds did not fit the sessions' CPU.
    ("sato-sweep-l", experiment("scenarios/sato-sweep-l.toml", run(["--modes", "sato", *NS3, *CUMULATIVE]),
                                seeds=[1],
                                phases=SATO_PHASES)),
    ("sato-sweep-r", experiment("scenarios/sato-sweep-r.toml", run(["--modes", "sato", *NS3, *CUMULATIVE]),
                                seeds=[1],
                                phases=SATO_PHASES)),
    ("sato-sweep-g", experiment("scenarios/sato-sweep-g.toml", run(["--modes", "sato", *NS3, *CUMULATIVE]),
                                seeds=[1],
                                phases=SATO_PHASES)),
])
