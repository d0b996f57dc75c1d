"""Every limit on what privspec computes, defined once.

The front end prices a query before anything is computed (:mod:`privspec.model.costs`
refuses what is over a limit: E701-E703) and the back ends switch on the same constants
(exact arithmetic to floating point, an enumerated design to its closed forms), so what
the resolver lets through and what the back end then does cannot disagree.  Both read
them from here: the front end never imports a back end, and a limit written twice would
need a test to keep the copies equal.

Each value says why it is what it is: mostly what finishes in about 3 seconds on the
2-core reference machine (``bench/fuzz.py --costs`` measures them again).
"""
from __future__ import annotations

#: Most categories of one variable, declared or combined (``a * b * c``).  A million labels
#: load in about 2 s (0.7 s for 2^20 combined ones; the parser reads a label set by a fast
#: path, about 0.25 s per 100,000 labels, resolver included); no back end can use more:
#: grr's channel alone would have 10^12 cells.
MAX_CATEGORIES = 1_000_000
#: Most cells (reports x categories) of a finite mechanism's channel.  The back ends build
#: it as a sympy matrix and convert it to floats, 10 to 30 microseconds a cell
#: (grr on 300 categories, 90,000 cells: 2.8 s), for privatize, run and analyze alike.
CHANNEL_CELL_LIMIT = 100_000
#: Most cells of a joint estimated from a product mechanism, and most distinct reports of
#: a product read from data (the counts of every combination of the factors' reports).
#: castell on 18 binary attributes (2^18 = 262,144 cells) takes 4.4 s, on 17 about 2 s.
JOINT_CELL_LIMIT = 2 ** 17
#: Most ranges of an interval mechanism (canonical(m, ...), ring(m, ...)).  Selective
#: coverage draws quasi-Monte Carlo anchors in m dimensions (2 s at m = 1000; scipy's Sobol
#: stops at 21,201); past 1000 ranges each holds a thousandth of the anchors' mass and the
#: value is all but disclosed.
MAX_INTERVALS = 1_000
#: Most ranges for the exact coverage of uniform anchors around a uniform population: a
#: polynomial of degree m integrated by sympy (m = 20: 2.2 s, m = 30: 6 s).
EXACT_INTERVAL_LIMIT = 20
#: Most rounds of a progressive mechanism.  Coverage by quadrature takes 30 ms a round
#: (100 rounds: 3.2 s); after 100 rounds the range is (2/3)^100 ~ 2e-18 of the support.
MAX_ROUNDS = 100
#: Most numbers in one query's result (a p x p matrix has p^2): every number is written
#: out, in text or JSON, about 3 microseconds each (moments of the uniform design on 500
#: categories, three 500 x 500 matrices: 2.8 s).  The uniform design's closed forms are
#: the one way to p x p results beyond the channel limit.
RESULT_CELL_LIMIT = 1_000_000
#: Most permutation draws times report-table cells of an independence test: the lrt's
#: permutations cost about 0.4 microseconds a cell (9,999 draws of a 120-cell table: 0.4 s).
PERMUTATION_WORK_LIMIT = 10_000_000
#: Highest order of moment(X, k): E[Y^k] in floating point overflows past about 140 for a
#: variable bounded by 150.
MAX_MOMENT_ORDER = 100
#: Most numbers one simulation holds at once (:func:`privspec.model.costs.simulation_refusal`): its replications
#: times the numbers each keeps (the true table, the reports' counts, the estimate, its
#: target, coverage and interval: about six per category, plus the reports of a finite
#: mechanism; a released table three times), plus, where reports are drawn one respondent at
#: a time (frequency oracles, interval mechanisms), the respondents of one replication times
#: the numbers of a value and its report.  10^8 float64 numbers are 0.8 GB; ``simulate
#: --reps 1000000000`` of grr on 5 categories asked for 37 GiB and ended in MemoryError.
SIMULATION_NUMBER_LIMIT = 100_000_000
#: Most respondents of one simulated data set: counts are drawn as integers and kept as
#: float64, whole numbers exactly up to 2^53.
MAX_SIMULATED_N = 2 ** 53

#: Largest number of categories analysed exactly, by query kind and by the numbers the
#: channel and the population hold (:func:`privspec.model.costs.number_class`): rational (``epsilon = log(3)``,
#: ``1/4``), irrational (one transcendental such as e^1 or pi, or a small radical),
#: complex (several of them mixed, e^65, 3^(1/13)), intricate (e^(1/10^9), nested
#: transcendentals: sympy's cancellation works in an extension of huge degree) and
#: symbolic (a parameter).  None: no limit below the exact/floating switch.  Measured a
#: query at a time (bench/fuzz.py --costs), identifiable (an exact rank): rational
#: p = 18 1.3 s, 19 6.8 s; e^1 p = 6 1.1 s, 8 13.8 s.  avar by mom, e^1: p = 8 1.8 s,
#: 12 3.6 s, 15 5.7 s; e^65 p = 4: 17 s at a population of unequal fractions.  avar by
#: mle: rational p = 100 2.7 s; e^1 p = 10 1.7 s, 15 7.6 s; e * 5^(1/3) p = 4 8.7 s.
#: fisher: rational p = 100 3.4 s; e^1 p = 20 3.5 s.  moments: e^1 p = 100 3 s.
EXACT_P_LIMITS: dict[str, dict[str, int | None]] = {
    "identifiable": {"rational": 18, "irrational": 6, "complex": 3, "intricate": 0, "symbolic": 5},
    "avar_mom": {"rational": None, "irrational": 8, "complex": 3, "intricate": 0, "symbolic": 8},
    "avar_mle": {"rational": 100, "irrational": 10, "complex": 3, "intricate": 0, "symbolic": 8},
    "fisher": {"rational": 100, "irrational": 20, "complex": 3, "intricate": 0, "symbolic": 8},
    "moments": {"rational": None, "irrational": 100, "complex": 50, "intricate": 8, "symbolic": 8},
    "privacy": {"rational": None, "irrational": None, "complex": 100, "intricate": 8, "symbolic": 8},
}
#: the same without a population (results symbolic in w): fisher rational p = 4 0.9 s,
#: 5 5.6 s; e^1 p = 3 0.8 s, 4 3.5 s, 5 over 30 s
SYMBOLIC_W_P_LIMITS: dict[str, dict[str, int | None]] = {
    "fisher": {"rational": 4, "irrational": 3, "complex": 2, "intricate": 0, "symbolic": 3},
    "avar_mle": {"rational": 3, "irrational": 3, "complex": 2, "intricate": 0, "symbolic": 2},
}
#: Largest power of e (of its generator: e^(7/2) is a cube of e^(1/2)... to the 7th) with which the
#: back ends compute exactly in e^epsilon: grr's Warner covariance and the frequency oracles'
#: covariances and read-back epsilon factor rational functions of degree about twice that
#: power.  Measured on 4 categories, 2 cores under load (about 4 times slower than alone):
#: grr epsilon = 1 6.0 s, 10 7.6 s, 20 13.6 s, 40 18 s, 65 over 30 s, 700 over 120 s; hr on 16
#: categories 1 7.1 s, 10 14.7 s, 20 49 s.  Beyond it they compute in floating point (to
#: rounding; e^700 is a double).
EXACT_EXP_POWER = 10

# ---- the back ends' switches, priced by the front end ---------------------------------------------
#: Up to this many channel cells (observations x categories) a finite mechanism is analysed
#: in exact (sympy) arithmetic, beyond it in floating point (``Channel.exact_ok``): the
#: channel alone is built at 10 to 30 microseconds a cell (:data:`CHANNEL_CELL_LIMIT`),
#: exact matrix algebra on it costs far more, and below it each exact query is priced by
#: the numbers involved (:data:`EXACT_P_LIMITS`).
EXACT_CELL_LIMIT = 20_000
#: Most categories of a result kept symbolic in w (no population declared): beyond it the
#: symbolic matrices take minutes.  The back end refuses more (B006,
#: ``Channel.symbolic_limit``) and the front end leaves that refusal to it.
SYMBOLIC_LIMIT = 8
#: A uniform subset design on more categories is served in closed form
#: (:mod:`privspec.backends.core.uniform`), never enumerated: 12 categories have 4,070
#: subsets (a 48,840-cell channel, past :data:`EXACT_CELL_LIMIT` already), 20 a million.
UNIFORM_ENUM_LIMIT = 12
#: Most cells whose full covariance (cells x cells, float64) ``cov_params`` forms for a
#: joint table (randomized response) or a released margin: 4096 cells make a 128 MiB
#: matrix; past it the standard errors (``bse``) are still there.
COV_CELL_LIMIT = 4096
