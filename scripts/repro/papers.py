"""The papers' numbers, typed in from their text (cited by table), and the project's targets."""

from collections import OrderedDict


# CTCP (Kim, Médard et al.), Table IV: loss p → (TCP Mbit/s, CTCP Mbit/s), 5 runs each.
CTCP_TABLE4 = OrderedDict([(0.0, (19.04, 20.40)), (0.01, (3.07, 18.99)), (0.02, (1.07, 16.52)),
                           (0.03, (0.82, 15.20)), (0.04, (0.53, 13.46)), (0.05, (0.47, 13.53))])


# The testbed's three-runs-per-point CTCP file and the target every run must meet (Mbit/s).
CTCP_RUNS_SCENARIO = "ctcp-table4-runs"


CTCP_RUNS_TARGET = 13.5


# The recovery target after a burst of timeouts: back to ≥ RECOVERY_SHARE × the rate before the
# outage within RECOVERY_BY s of its end. The rate: goodput over the RECOVERY_BEFORE s before the
# outage; back: the end of the first 1-s window (on a 100 ms grid) starting at or after the
# outage's end that delivers ≥ RECOVERY_SHARE × that rate.
CTCP_RECOVERY_SCENARIO = "ctcp-recovery"


CTCP_OUTAGE = (5.0, 5.5)  # the ACK direction's outage in scenarios/testbed/ctcp-recovery.toml


RECOVERY_SHARE, RECOVERY_BY, RECOVERY_BEFORE, RECOVERY_WINDOW = 0.8, 5.0, 2.0, 1.0


# CTCP Table V: p → (single-path CTCP, multi-path wlan0, wlan1, combined), Mbit/s, 5 runs.
CTCP_TABLE5 = OrderedDict([(0.0, (7.75, 6.71, 6.70, 13.60)), (0.01, (7.80, 6.15, 6.12, 12.39)),
                           (0.02, (7.75, 6.23, 6.27, 12.57)), (0.03, (6.09, 5.32, 5.25, 10.45)),
                           (0.04, (6.62, 4.95, 4.96, 9.71)), (0.05, (6.26, 4.57, 4.68, 10.90))])
