"""What a query will cost, known before anything is computed.

The back ends compute what they are asked, exactly when they can; some specs ask for
more than any machine holds (a grr channel on 10,000 categories has 10^8 cells, a
product of 40 attributes a joint of 2^40 cells), others for exact arithmetic that runs
for minutes.  This module prices a model's mechanisms and queries from their sizes --
numbers of categories, reports, cells, intervals, rounds -- without enumerating
anything, and the resolver refuses what is over a limit with a diagnostic that names
the size, the limit and what to do instead:

* E701: a variable or mechanism too large to build (categories of a combined
  variable, the channel of a finite mechanism, the intervals of an interval
  mechanism, the rounds of a progressive one);
* E702: a query too costly for its mechanism (exact arithmetic on too many categories,
  a joint table or a product's reports beyond memory, too many permutations, an exact
  coverage integral of too high a degree).

Every limit is a named constant of :mod:`privspec.limits` with the measurement behind
it: what finishes in about 3 seconds on the 2-core reference machine (``bench/fuzz.py
--costs`` measures them again).  The back ends switch on the same constants (exact to
floating point, an enumerated design to its closed forms), read from the same module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import sympy

from privspec.model.graph import (Compare, IntervalMechanism, Method, Population, ProductMechanism,
                    ProgressiveMechanism, Query, RandomizedResponse, SelectiveMechanism, SubsetMechanism, Variable)
from privspec.model.query_kinds import needs_data
from privspec.limits import (CHANNEL_CELL_LIMIT, EXACT_CELL_LIMIT, EXACT_EXP_POWER, EXACT_INTERVAL_LIMIT, EXACT_P_LIMITS,
                             JOINT_CELL_LIMIT, MAX_CATEGORIES, MAX_INTERVALS, MAX_MOMENT_ORDER, MAX_ROUNDS,
                             MAX_SIMULATED_N, PERMUTATION_WORK_LIMIT, RESULT_CELL_LIMIT, SIMULATION_NUMBER_LIMIT,
                             SYMBOLIC_LIMIT, SYMBOLIC_W_P_LIMITS, UNIFORM_ENUM_LIMIT)

#: number classes, cheapest first
CLASSES = ("rational", "irrational", "complex", "intricate", "symbolic")
#: an irrational number stays "irrational" (not "complex") with at most one transcendental
#: (e, pi, a logarithm, exp(sqrt(2))) to a power up to 40 (e^65 cancels slowly) and no
#: radical, or no transcendental and radicals of total degree up to 4 (sqrt(2), 3^(1/4))
_SIMPLE_DEGREE = 4
_SIMPLE_POWER = 40
#: beyond these the number is "intricate": radicals (or roots of e) of degree over 64, a
#: power over 1000, more than 3 transcendentals
_INTRICATE_DEGREE = 64
_INTRICATE_POWER = 1000
_INTRICATE_TRANSCENDENTALS = 3


@dataclass(frozen=True)
class Refusal:
    """Why a variable, mechanism or query is refused: its code, a message naming the size
    and the limit, and what to do instead."""

    code: str
    message: str
    hint: str


# ---- sizes, computed without enumerating ---------------------------------------------------------
def combined_categories(parts: Sequence[Variable]) -> int:
    """Categories of ``a * b * c``: the product of the parts' (exact, never enumerated).

    Examples
    --------
    >>> v = Variable("v", "categorical", ("a", "b"))
    >>> combined_categories([v] * 40)
    1099511627776
    """
    return math.prod(p.p for p in parts)


def combined_refusal(parts: Sequence[Variable], name: str) -> Refusal | None:
    """E701 when a combined variable would have more than :data:`MAX_CATEGORIES` categories."""
    n = combined_categories(parts)
    if n <= MAX_CATEGORIES:
        return None
    sizes = " x ".join(str(p.p) for p in parts) if len(parts) <= 6 else f"{len(parts)} variables"
    return Refusal("E701", f"{name} would have {_count(n)} categories ({sizes}); the limit is "
                           f"{MAX_CATEGORIES:,}",
                   "combine fewer variables; for many attributes use a product mechanism "
                   "(product(grr(a, epsilon = e), grr(b, epsilon = e), ...)), whose factors stay separate")


def reports(mech) -> int:
    """Distinct reports of a finite mechanism (rows of its channel).

    Examples
    --------
    >>> x = Variable("x", "categorical", tuple("abcdefghij"))
    >>> from privspec.model.graph import SubsetDesign
    >>> reports(SubsetMechanism("m", x, SubsetDesign("sizes", ((2, sympy.Integer(1)),))))
    45
    >>> reports(SubsetMechanism("m", x, SubsetDesign("uniform")))
    1002
    """
    if isinstance(mech, ProductMechanism):
        return math.prod(reports(f) for f in mech.factors)
    if isinstance(mech, RandomizedResponse):
        # Kuk's reports are 0 .. k: counted, not listed (a fuzzed k = 1e308 listed them for ever)
        return int(mech.k) + 1 if getattr(mech, "kind", None) == "kuk" else len(mech.reports)
    if isinstance(mech, SubsetMechanism):
        p = mech.variable.p
        kind = mech.design.kind
        dummies = mech.min_coverage is not None
        if kind == "uniform":
            n = 2 ** p - 2 * p - 2 if p >= 4 else 2 ** p - 2
        elif kind == "sizes":
            # a free size (a parameter searched by a comparison) is priced at its worst, p // 2
            n = sum(math.comb(p, k if isinstance(k, int) else p // 2) for k, w in mech.design.weights if w != 0)
        elif kind == "conditional":
            n = len({a for a, w in mech.design.weights if w != 0})
        else:  # independent: each subset and its complement
            full = frozenset(mech.variable.labels)
            n = len({b for a, w in mech.design.weights if w != 0 for b in (a, full - a) if b})
        return 2 * n if dummies else n
    raise TypeError(f"{type(mech).__name__} is not a finite mechanism")


def categories(mech) -> int:
    """Categories of a finite mechanism's channel (joint for products; dummies added)."""
    if isinstance(mech, ProductMechanism):
        return math.prod(categories(f) for f in mech.factors)
    extra = 2 if isinstance(mech, SubsetMechanism) and mech.min_coverage is not None else 0
    return mech.variable.p + extra


def closed_form(mech) -> bool:
    """A uniform design served in closed form (no channel is ever enumerated)."""
    return isinstance(mech, SubsetMechanism) and mech.design.kind == "uniform" \
        and mech.min_coverage is None and mech.variable.p > UNIFORM_ENUM_LIMIT


def channel_cells(mech) -> int:
    """Reports x categories of a finite mechanism's channel (the whole Kronecker product for
    a product mechanism)."""
    return reports(mech) * categories(mech)


# ---- the kind of numbers exact arithmetic meets ------------------------------------------------------
def number_class(values: Iterable[sympy.Expr]) -> str:
    """The costliest of :data:`CLASSES` among ``values``.

    Exact linear algebra on numbers costs with the field sympy must compute in: the
    transcendentals involved (e, pi, log(3)), the degree of the radicals (3^(1/13)) and
    the powers of e (e^65 is a polynomial of degree 65 in e).

    Examples
    --------
    >>> number_class([sympy.Rational(1, 3)]), number_class([sympy.E]), number_class([sympy.Symbol("e")])
    ('rational', 'irrational', 'symbolic')
    >>> number_class([sympy.exp(65)]), number_class([sympy.exp(sympy.Rational(10 ** 10 + 1, 10 ** 9))])
    ('complex', 'intricate')
    """
    worst = 0
    for v in values:
        v = sympy.sympify(v)
        if isinstance(v, sympy.Rational):
            continue
        if v.free_symbols:
            return "symbolic"
        worst = max(worst, CLASSES.index(_field_class(v)))
    return CLASSES[worst]


def _field_class(v: sympy.Expr) -> str:
    """The class of one irrational number, from the field it lives in (see :data:`CLASSES`)."""
    transcendentals, radicals, e_root, power, inner = _anatomy(v)
    worst = max((CLASSES.index(_field_class(a)) for a in inner if not isinstance(a, sympy.Rational)), default=0)
    if CLASSES[worst] == "intricate":
        return "intricate"
    degree = math.prod(radicals.values())
    if degree > _INTRICATE_DEGREE or e_root > _INTRICATE_DEGREE or power > _INTRICATE_POWER \
            or len(transcendentals) > _INTRICATE_TRANSCENDENTALS:
        return "intricate"
    if worst <= 1 and ((len(transcendentals) <= 1 and not radicals and e_root <= _SIMPLE_DEGREE
                        and power <= _SIMPLE_POWER) or (not transcendentals and degree <= _SIMPLE_DEGREE)):
        return "irrational"
    return "complex"


def exact_exp(epsilon: sympy.Expr) -> bool:
    """Whether exact (sympy) arithmetic in ``e^epsilon`` is affordable (see
    :data:`EXACT_EXP_POWER`): ``e^epsilon`` rational or symbolic, or a power of at most
    :data:`EXACT_EXP_POWER` of its generator in a field that is not intricate.  The back
    ends compute in floating point otherwise.

    Examples
    --------
    >>> exact_exp(sympy.log(3) * 700), exact_exp(sympy.Integer(2)), exact_exp(sympy.Rational(7, 2))
    (True, True, True)
    >>> exact_exp(sympy.Integer(700)), exact_exp(sympy.Rational(1, 10 ** 300)), exact_exp(sympy.Float(0.5))
    (False, False, False)
    """
    eps = sympy.sympify(epsilon)
    if eps.free_symbols:
        return True
    if eps.atoms(sympy.Float):
        return False
    e = sympy.exp(eps)
    if isinstance(e, sympy.Rational):
        return True
    return _field_class(e) != "intricate" and _anatomy(e)[3] <= EXACT_EXP_POWER


def _anatomy(v: sympy.Expr) -> tuple[set, dict, int, int, list]:
    """What exact arithmetic with ``v`` computes in: its transcendental generators, its
    radicals (rational base -> lcm of the root orders), the lcm of the denominators of e's
    exponents, the largest power of a generator, and the generators' own arguments."""
    transcendentals: set = set()   # generators for sympy's cancellation: e, pi, exp(sqrt(2)), log(3)
    radicals: dict = {}            # rational base -> lcm of its root orders (3^(1/7): 7)
    e_root = 1                     # e^(a/b): lcm of the b
    power = 0                      # e^a, pi^a: the largest |a|

    def walk(node: sympy.Basic) -> None:
        nonlocal e_root, power
        if node in (sympy.pi, sympy.E):
            transcendentals.add(node)
            power = max(power, 1)
        elif isinstance(node, sympy.exp):
            arg = node.args[0]
            if isinstance(arg, sympy.Rational):
                transcendentals.add(sympy.E)
                power = max(power, abs(arg.p))
                e_root = math.lcm(e_root, arg.q)
            else:
                # exp(pi - 314159/100000) = exp(pi) * e^(-314159/100000) once sympy expands it: each
                # term is a generator (exp(pi), exp(sqrt(2))) to the power of its rational coefficient
                for term in sympy.Add.make_args(arg):
                    coeff, rest = term.as_coeff_Mul()
                    transcendentals.add(sympy.E if rest == 1 else sympy.exp(rest))
                    if isinstance(coeff, sympy.Rational):
                        power = max(power, abs(coeff.p))
                        e_root = math.lcm(e_root, coeff.q)
                inner.append(arg)
        elif isinstance(node, sympy.log):
            transcendentals.add(node)
            inner.append(node.args[0])
        elif isinstance(node, sympy.Pow):
            base, exp = node.args
            if isinstance(exp, sympy.Rational):
                if isinstance(base, sympy.Rational):
                    radicals[base] = math.lcm(radicals.get(base, 1), exp.q)
                else:
                    power = max(power, abs(exp.p))
                    walk(base)
            else:  # 2^pi: one more generator
                transcendentals.add(node)
                inner.extend(node.args)
        else:
            for a in node.args:
                walk(a)

    inner: list = []  # arguments of the generators: their own numbers cost too (exp(e^(1/10^9)))
    walk(v)
    return transcendentals, radicals, e_root, power, inner


def _worse(*classes: str) -> str:
    return max(classes, key=CLASSES.index)


def channel_class(mech) -> str:
    """The kind of numbers in a finite mechanism's channel."""
    if isinstance(mech, ProductMechanism):
        return _worse(*(channel_class(f) for f in mech.factors))
    if isinstance(mech, RandomizedResponse):
        if mech.kind != "grr":
            return number_class(x for row in mech.randomization_matrix() for x in row)
        # grr's probabilities are e^eps / (e^eps + d - 1): rational when e^eps is
        return number_class([sympy.exp(mech.epsilon)])
    extra = [mech.min_coverage] if mech.min_coverage is not None else []
    return number_class([w for _, w in mech.design.weights] + extra)


class PopulationIndex:
    """A spec's populations indexed by the plain variables they cover, so that pricing a
    query looks up its mechanism's variables instead of scanning every population (the
    resolver prices each query: a scan per query was quadratic in the spec's length).

    Examples
    --------
    >>> from privspec.model.graph import Law
    >>> x, y = (Variable(n, "categorical", ("a", "b")) for n in "xy")
    >>> law = Law("categorical", probs=(sympy.Rational(1, 2), sympy.Rational(1, 2)))
    >>> index = PopulationIndex([Population((x,), law), Population((y,), law)])
    >>> [p.variables[0].name for p in index.covering({"y"})], index.naming("x").variables[0].name
    (['y'], 'x')
    """

    def __init__(self, populations: Sequence[Population]):
        self.populations = tuple(populations)
        self._by_component: dict[str, list[int]] = {}
        self._first_naming: dict[str, int] = {}
        for i, pop in enumerate(self.populations):
            for c in pop.components:
                self._by_component.setdefault(c, []).append(i)
            for v in pop.variables:
                self._first_naming.setdefault(v.name, i)

    @classmethod
    def of(cls, populations: Populations) -> PopulationIndex:
        """``populations`` indexed (an index is returned as it is)."""
        return populations if isinstance(populations, cls) else cls(populations)

    def covering(self, components: Iterable[str]) -> list[Population]:
        """The populations over any of ``components``, in declaration order."""
        found = {i for c in components for i in self._by_component.get(c, ())}
        return [self.populations[i] for i in sorted(found)]

    def naming(self, name: str) -> Population | None:
        """The first population declared over a variable called ``name`` (None: none)."""
        i = self._first_naming.get(name)
        return None if i is None else self.populations[i]


#: what the pricing functions accept: the populations, or an index of them built once
Populations = Union[Sequence[Population], PopulationIndex]


def population_class(mech, populations: Populations) -> str | None:
    """The kind of numbers in the population the mechanism's results are evaluated at;
    None when some observed variable has no population (results symbolic in w)."""
    wanted = {c for v in mech.variables for c in v.components()}
    covered: set[str] = set()
    values: list = []
    for pop in PopulationIndex.of(populations).covering(wanted):
        covered |= pop.components
        values.extend(pop.law.probs)
    if not wanted <= covered:
        return None
    return number_class(values)


# ---- mechanisms ------------------------------------------------------------------------------------
def mechanism_refusal(mech) -> Refusal | None:
    """E701 when a mechanism cannot be built: a channel over :data:`CHANNEL_CELL_LIMIT`
    cells (products are priced per factor here, and as a whole by the queries that need
    the whole), too many ranges or rounds."""
    if isinstance(mech, (SubsetMechanism, RandomizedResponse)):
        if closed_form(mech):
            return None
        n, p = reports(mech), categories(mech)
        if n * p <= CHANNEL_CELL_LIMIT:
            return None
        what = _design_words(mech)
        return Refusal("E701", f"{what} on {p:,} categories has {_count(n)} reports: its channel would have "
                               f"{_count(n * p)} cells (reports x categories); the limit is "
                               f"{CHANNEL_CELL_LIMIT:,}", _channel_hint(mech))
    if isinstance(mech, IntervalMechanism) and mech.m > MAX_INTERVALS:
        return Refusal("E701", f"{mech.scheme}() with {_count(mech.m)} ranges; the limit is {MAX_INTERVALS:,}",
                       f"use at most {MAX_INTERVALS:,} ranges: with m ranges each holds about 1/m of the "
                       "anchors' mass, so beyond a few dozen the value is all but disclosed")
    if isinstance(mech, ProgressiveMechanism) and mech.rounds > MAX_ROUNDS:
        return Refusal("E701", f"progressive() with {_count(mech.rounds)} rounds; the limit is {MAX_ROUNDS}",
                       f"use at most {MAX_ROUNDS} rounds: each keeps 2/3 of the range in expectation, so after "
                       f"{MAX_ROUNDS} the range is about 2e-18 of the support")
    return None


def _design_words(mech) -> str:
    if isinstance(mech, RandomizedResponse):
        return mech.kind if mech.kind in ("grr", "kuk") else "rr"
    extra = " with min_coverage" if mech.min_coverage is not None else ""
    return f"subset({mech.variable.name}, {mech.design.kind}){extra}"


def _channel_hint(mech) -> str:
    if getattr(mech, "kind", None) == "kuk":
        return "draw fewer cards (k): each extra card adds a report"
    if isinstance(mech, RandomizedResponse):
        return (f"use fewer categories (at most {math.isqrt(CHANNEL_CELL_LIMIT)} for grr), or a product of "
                "mechanisms on separate variables")
    if mech.design.kind == "sizes":
        return "use smaller subset sizes or fewer categories; the uniform design on many categories is " \
               "served in closed form"
    if mech.min_coverage is not None:
        return f"dummy categories enumerate the design's subsets: use at most {UNIFORM_ENUM_LIMIT} categories, " \
               "or drop min_coverage"
    return "use fewer categories"


# ---- queries --------------------------------------------------------------------------------------
_ANALYTIC_FINITE = {"moments": "moments", "fisher": "fisher", "identifiable": "identifiable",
                    "coverage": "privacy", "leakage": "privacy"}
#: the interval queries that integrate a mechanism's coverage (exactly, for uniform laws)
_COVERAGE_QUERIES = frozenset({"coverage", "leakage", "optimal_anchor"})


def _exact_kind(query: Query) -> str | None:
    """The exact computation a finite mechanism's query runs (the keys of
    :data:`~privspec.limits.EXACT_P_LIMITS`): the avar of a distribution by its estimator,
    or an analytic query's own (None: none)."""
    est = query.estimand
    if query.kind == "avar" and est is not None and est.kind == "distribution":
        return "avar_mom" if query.method.name == "mom" else "avar_mle"
    return _ANALYTIC_FINITE.get(query.kind)


def query_refusal(query: Query, populations: Populations) -> Refusal | None:
    """E702 when ``query`` would cost more than the limits allow (None when it fits);
    ``populations`` indexed once (:class:`PopulationIndex`) when many queries are priced."""
    mech = query.mechanism
    est = query.estimand
    if est is not None and est.kind == "moment" and est.order is not None and est.order > MAX_MOMENT_ORDER:
        return Refusal("E702", f"moment of order {_count(est.order)}; the limit is {MAX_MOMENT_ORDER}",
                       "E[Y^k] of a higher order overflows floating point; estimate the cdf instead")
    if mech is None:
        return None
    if query.kind == "test" and query.calibrate is not None and query.calibrate.name == "permutation" \
            and query.calibrate.args:
        draws = int(query.calibrate.args[0])
        cells = _test_table_cells(query)
        if draws * cells > PERMUTATION_WORK_LIMIT:
            most = max(1, PERMUTATION_WORK_LIMIT // max(cells, 1))
            return Refusal("E702", f"{_count(draws)} permutations of a {cells:,}-cell report table; the limit is "
                                   f"{PERMUTATION_WORK_LIMIT:,} draws x cells (here {most:,} draws)",
                           "999 draws (the default) give a p-value to about +-0.01; 9,999 to +-0.003")
    if not getattr(mech, "is_finite", False):
        return _interval_query_refusal(query, populations)
    if isinstance(mech, ProductMechanism):
        refusal = _product_refusal(query, mech)
        if refusal is not None:
            return refusal
    kind = query.kind
    if closed_form(mech) and kind in ("coverage", "leakage"):
        other = [m for m in query.metrics if m != "size"]
        if other:
            p = mech.variable.p
            return Refusal("E702", f"{' and '.join(other)} of the uniform design on {p:,} categories would sum over "
                                   f"all its {_count(2 ** p - 2 * p - 2)} subsets; closed forms (no enumeration) "
                                   f"exist for size only",
                           f"ask {kind}({mech.name}, size), or use at most {UNIFORM_ENUM_LIMIT} categories")
    if closed_form(mech) and kind in ("moments", "avar", "fisher"):
        p = mech.variable.p
        cells = (3 if kind == "moments" else 1) * p * p
        if cells > RESULT_CELL_LIMIT:
            return Refusal("E702", f"{kind}() of the uniform design on {p:,} categories is {_count(cells)} numbers "
                                   f"({'three ' if kind == 'moments' else 'a '}{p:,} x {p:,} "
                                   f"matri{'ces' if kind == 'moments' else 'x'}); the limit is {RESULT_CELL_LIMIT:,}",
                           f"ask it of a variable with at most "
                           f"{math.isqrt(RESULT_CELL_LIMIT // (3 if kind == 'moments' else 1)):,} categories; "
                           "coverage(...) and leakage(..., size) are single numbers at any size")
    kind = _exact_kind(query)
    if kind is None:
        return None
    return _exact_refusal(query, mech, kind, populations)


def _product_refusal(query: Query, mech: ProductMechanism) -> Refusal | None:
    est = query.estimand
    n = reports(mech)
    if needs_data(query.kind) and n > JOINT_CELL_LIMIT:
        return Refusal("E702", f"the product's reports are read from data as every combination of its "
                               f"{len(mech.factors)} factors' reports: {_count(n)} of them; the limit is "
                               f"{JOINT_CELL_LIMIT:,}", "collect fewer attributes in one product mechanism, or "
                                                        "estimate from smaller products")
    if est is not None and est.kind == "joint":
        cells = math.prod(v.p for v in est.variables)
        if cells > JOINT_CELL_LIMIT:
            names = ", ".join(v.name for v in est.variables)
            return Refusal("E702", f"the joint of {names} has {_count(cells)} cells; the limit is "
                                   f"{JOINT_CELL_LIMIT:,}", "estimate the joint of fewer variables at a time "
                                                            "(joint(a, b) from the same product)")
    if _exact_kind(query) not in (None, "identifiable"):
        cells = channel_cells(mech)
        if cells > CHANNEL_CELL_LIMIT:
            return Refusal("E702", f"{query.kind}() needs the product's whole channel: {_count(reports(mech))} "
                                   f"reports x {_count(categories(mech))} categories = {_count(cells)} cells; the "
                                   f"limit is {CHANNEL_CELL_LIMIT:,}",
                           "ask it of each factor (a mechanism on its own), or of a product of fewer factors")
    return None


def _exact_refusal(query: Query, mech, kind: str, populations: Populations) -> Refusal | None:
    """Exact (sympy) arithmetic: refused past :data:`EXACT_P_LIMITS` for the numbers involved."""
    if closed_form(mech):
        return None  # O(p^2) closed forms (backends/core/uniform.py)
    if kind == "avar_mom" and getattr(mech, "kind", None) == "grr" and population_class(mech, populations):
        return None  # Warner's closed form: exact where that is cheap, else floating point (GRRChannel)
    p = categories(mech)
    exact = channel_cells(mech) <= EXACT_CELL_LIMIT or kind == "identifiable"  # the rank is always exact
    if not exact:
        return None  # floating point: the channel's own limit is all it needs
    channel = channel_class(mech)
    if kind == "identifiable":
        if isinstance(mech, ProductMechanism):
            # the rank of a Kronecker product is the product of the factors' ranks
            for f in mech.factors:
                refusal = _exact_refusal(query, f, kind, populations)
                if refusal is not None:
                    return refusal
            return None
        numbers = channel
        limit = EXACT_P_LIMITS[kind][numbers]
        symbolic_w = False
    else:
        pop = population_class(mech, populations)
        symbolic_w = pop is None
        numbers = _worse(channel, pop or "rational")
        limits = SYMBOLIC_W_P_LIMITS.get(kind) if symbolic_w else None
        limit = (limits or EXACT_P_LIMITS[kind])[numbers]
        if symbolic_w and p > SYMBOLIC_LIMIT:
            return None  # the back end refuses it at once (B006) with its own hint
    if limit is None or p <= limit:
        return None
    words = {"rational": "rational numbers", "irrational": "irrational numbers",
             "complex": "irrational numbers of several kinds (e, pi, roots) or high powers of e",
             "intricate": "numbers this intricate", "symbolic": "symbols"}[numbers]
    what = {"avar_mom": "avar(... by mom)", "avar_mle": f"avar(... by {query.method.name if query.method else 'mle'})",
            "privacy": f"{query.kind}()"}.get(kind, f"{kind}()")
    hint = _exact_hint(mech, numbers, symbolic_w, kind, populations)
    return Refusal("E702", f"{what} is computed exactly, and exact arithmetic with {words} is limited to "
                           f"{limit} categories here; this mechanism has {p:,}", hint)


def _exact_hint(mech, numbers: str, symbolic_w: bool, kind: str, populations: Populations) -> str:
    tips = []
    if symbolic_w:
        tips.append("declare a population: results are then evaluated at it instead of kept symbolic in w")
    if numbers in ("irrational", "complex", "intricate"):
        if channel_class(mech) in ("irrational", "complex", "intricate"):
            tips.append("keep the probabilities rational: write epsilon as the log of a rational "
                        "(epsilon = log(3)) and design weights as fractions")
        else:
            tips.append("give the population rational probabilities (fractions or counts [...])")
    if numbers == "symbolic" and not symbolic_w:
        tips.append("results stay symbolic in the parameters: evaluate at numbers instead")
    if kind == "avar_mle":
        tips.append("by mom is far cheaper")
    tips.append("use fewer categories")
    return "; ".join(tips)


def _test_table_cells(query: Query) -> int:
    """Cells of the report table an independence test permutes (the two factors' reports)."""
    mech = query.mechanism
    if not isinstance(mech, ProductMechanism) or query.estimand is None:
        return 1
    sizes = []
    for v in query.estimand.variables:
        for f in mech.factors:
            if set(v.components()) <= {c for w in f.variables for c in w.components()}:
                sizes.append(reports(f) if getattr(f, "is_finite", False) else 1)
                break
    return math.prod(sizes) if sizes else 1


def _interval_query_refusal(query: Query, populations: Populations) -> Refusal | None:
    """Exact coverage of uniform anchors around a uniform population: a polynomial of degree m."""
    if query.kind not in _COVERAGE_QUERIES:
        return None
    return exact_interval_refusal(query.mechanism, populations)


def exact_interval_refusal(mech, populations: Populations) -> Refusal | None:
    """E702 when the back end would integrate a polynomial of degree above
    :data:`EXACT_INTERVAL_LIMIT` exactly (uniform anchors, uniform population inside them)."""
    base = mech.base if isinstance(mech, SelectiveMechanism) else mech
    if not isinstance(base, IntervalMechanism) or isinstance(mech, SelectiveMechanism):
        return None
    count = base.m if base.scheme == "ring" else base.m - 1
    if base.anchor.family != "uniform":
        return None
    pop = PopulationIndex.of(populations).naming(base.variable.name)
    if pop is None or pop.law.family != "uniform":
        return None
    numbers = number_class([v for _, v in base.anchor.params + pop.law.params]
                           + [base.anchor.shift, base.anchor.scale, pop.law.shift, pop.law.scale]
                           + list(base.disclose or ()))
    if numbers in ("complex", "intricate"):
        return Refusal("E702", "the coverage of uniform anchors around a uniform population is computed exactly, "
                               "by symbolic integration, and these ends are too intricate for it",
                       "write the ends of the uniform laws as fractions or simple numbers (0, 150, pi)")
    if count <= EXACT_INTERVAL_LIMIT:
        return None
    return Refusal("E702", f"the coverage of uniform anchors around a uniform population is computed exactly: "
                           f"a polynomial of degree {count:,} integrated symbolically; the limit is "
                           f"{EXACT_INTERVAL_LIMIT}",
                   f"use at most {EXACT_INTERVAL_LIMIT + (0 if base.scheme == 'ring' else 1)} ranges, or a "
                   "non-uniform anchor law or population (evaluated by quadrature)")


# ---- simulations ---------------------------------------------------------------------------------
def simulation_numbers(query: Query, release_cells: int = 0) -> tuple[int, int]:
    """The numbers one replication of ``simulate`` keeps for ``query``, and those one
    respondent's value and report take where reports are drawn one respondent at a time (0
    where they are drawn as counts); ``release_cells``: the cells of the released table of a
    ``variance``/``table`` query (its query has no mechanism).

    Examples
    --------
    >>> x = Variable("x", "categorical", tuple("abcde"))
    >>> simulation_numbers(Query("q", "estimate", mechanism=RandomizedResponse("m", x, "grr", sympy.Integer(1))))
    (35, 0)
    """
    mech = query.mechanism
    if mech is None:                    # a release: the noisy tables of every replication
        return 3 * max(release_cells, 1), 0
    if getattr(mech, "is_finite", False):
        if query.kind == "test":        # the report tables alone
            return reports(mech), 0
        return reports(mech) + 6 * categories(mech), 0
    family = getattr(mech, "family", None)
    if family == "oracle":
        return 6 * mech.variable.p, 2 + _report_words(mech.protocol, mech.variable.p)
    if family == "multi_oracle":
        sizes = [v.p for v in mech.attributes]
        kinds = mech.oracles if len(mech.oracles) == len(sizes) else ("oue",) * len(sizes)
        return 6 * max(sizes), sum(2 + _report_words(k, p) for k, p in zip(kinds, sizes))
    return 8, 3                         # interval mechanisms: a few numbers a replication; y and its range


def _report_words(protocol: str, d: int) -> int:
    """8-byte words of one frequency-oracle report: d packed bits (unary encoding, subset
    selection), else one index or a seed and a value."""
    return -(-d // 64) if protocol.removeprefix("l_").split("_")[0] in ("sue", "oue", "osue", "ss", "adp") else 1


def simulation_refusal(query: Query, n: int, reps: int, release_cells: int = 0, what: str | None = None
                       ) -> Refusal | None:
    """E703 when ``simulate`` of ``query`` with ``reps`` replications of ``n`` respondents
    would hold more than :data:`SIMULATION_NUMBER_LIMIT` numbers, or ``n`` is beyond
    :data:`MAX_SIMULATED_N`: refused before anything is drawn.  ``what`` names it in the
    message (default: ``query 'NAME'``).

    Examples
    --------
    >>> x = Variable("x", "categorical", tuple("abcde"))
    >>> q = Query("q", "estimate", mechanism=RandomizedResponse("m", x, "grr", sympy.Integer(1)))
    >>> simulation_refusal(q, 1000, 1000) is None, simulation_refusal(q, 1000, 10 ** 9).code
    (True, 'E703')
    """
    what = what or f"query '{query.name}'"
    if n > MAX_SIMULATED_N:
        return Refusal("E703", f"simulating {what} with n = {_count(n)} respondents; the limit is "
                               f"2^53 = {MAX_SIMULATED_N:,} (counts are kept as float64, whole numbers exactly up "
                               "to it)", "simulate fewer respondents: the analytic answers (privspec analyze) "
                                         "hold at any n")
    per_rep, per_respondent = simulation_numbers(query, release_cells)
    total = reps * per_rep + n * per_respondent
    if total <= SIMULATION_NUMBER_LIMIT:
        return None
    room = SIMULATION_NUMBER_LIMIT - n * per_respondent
    if room >= per_rep:
        hint = (f"use at most {room // per_rep:,} replications at n = {_count(n)} (1,000 estimate a variance to "
                "about 4.5%)")
    else:
        hint = (f"use at most {(SIMULATION_NUMBER_LIMIT - per_rep) // per_respondent:,} respondents: each one's "
                "value and report are drawn")
    parts = f"{_count(reps)} replications x {per_rep:,} numbers"
    if per_respondent:
        parts += f" + {_count(n)} respondents x {per_respondent:,}"
    return Refusal("E703", f"simulating {what} would hold {_count(total)} numbers ({parts}); the "
                           f"limit is {SIMULATION_NUMBER_LIMIT:,} (0.8 GB of doubles)", hint)


def compare_refusal(compare: Compare, populations: Populations) -> tuple[str, Refusal] | None:
    """E702 for the first candidate of a comparison that its criteria could not afford.

    Every candidate's asymptotic covariance (by its estimator) and, for privacy criteria,
    its leakage are computed: each is priced as those queries would be.
    """
    privacy = ("coverage", "size", "mutual_information", "prediction", "individual")
    for name, mech in compare.candidates:
        kinds: list[tuple[str, Method | None]] = []
        if getattr(mech, "is_finite", False):
            kinds.append(("avar", compare.estimator(name) if compare.estimators else Method("mom")))
        if any(c in privacy for c in compare.criteria):
            kinds.append(("leakage", None))
        for kind, method in kinds:
            q = Query(name, kind, mechanism=mech,
                      estimand=compare.estimand if kind == "avar" else None, method=method)
            refusal = query_refusal(q, populations)
            if refusal is not None:
                return name, refusal
    return None


def _count(n: int) -> str:
    """A count as people read it: ``1,099,511,627,776`` or ``~1.9e+3009`` for the huge ones.

    Examples
    --------
    >>> _count(2 ** 40), _count(10 ** 50)
    ('1,099,511,627,776', '~1.0e+50')
    """
    if n < 10 ** 18:
        return f"{n:,}"
    digits = len(str(n)) if n.bit_length() < 10_000 else int(n.bit_length() * math.log10(2)) + 1
    lead = n // 10 ** (digits - 2) if digits < 4000 else 10
    return f"~{lead / 10:.1f}e+{digits - 1}"
