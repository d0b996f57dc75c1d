"""The model graph: what a valid spec means, names resolved, values exact.

Everything here is immutable.  Back ends see only these objects (never the AST).  A
finite mechanism says what its design is; building its channel (the matrix of
Pr(observation | value)) is the back ends' job.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Union

import sympy

from privspec.language.arith import fmt
from privspec.language.source import Source, Span

oo = sympy.oo


# ---- variables and parameters ---------------------------------------------------
@dataclass(frozen=True)
class Variable:
    """A survey variable.

    ``kind`` is ``"categorical"`` (with ``labels``) or ``"continuous"`` (with support
    ``[lower, upper]``, infinite ends allowed).  A combined variable (``gender *
    income``) is categorical with ``parts`` naming its components; its labels join the
    parts' labels with ``.`` in row-major order (``Female.Low, Female.High, ...``).
    """

    name: str
    kind: str
    labels: tuple[str, ...] = ()
    lower: sympy.Expr = -oo
    upper: sympy.Expr = oo
    parts: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False)

    @property
    def p(self) -> int:
        """Number of categories."""
        return len(self.labels)

    @property
    def is_categorical(self) -> bool:
        return self.kind == "categorical"

    @property
    def is_combined(self) -> bool:
        return bool(self.parts)

    @property
    def is_bounded(self) -> bool:
        return self.lower.is_finite and self.upper.is_finite

    def components(self) -> tuple[str, ...]:
        """The plain variables this one is made of (itself when not combined)."""
        return self.parts or (self.name,)


@dataclass(frozen=True)
class Parameter:
    """A symbolic parameter (``parameter eps > 0``); ``value`` when one is given."""

    name: str
    symbol: sympy.Symbol
    constraints: tuple[tuple[str, sympy.Expr], ...] = ()
    value: sympy.Expr | None = None
    span: Span | None = field(default=None, compare=False)


# ---- laws (populations and anchors) -----------------------------------------------
#: continuous families: name -> parameter names (in positional order)
CONTINUOUS_FAMILIES: dict[str, tuple[str, ...]] = {
    "uniform": ("a", "b"),
    "normal": ("mean", "sd"),
    "logistic": ("location", "scale"),
    "exponential": ("rate",),
}


@dataclass(frozen=True)
class Law:
    """A probability law.

    ``family`` is ``"categorical"`` (``probs`` in declared label order, flattened
    row-major for several variables), or a continuous family of
    :data:`CONTINUOUS_FAMILIES` with ``params``; ``shift`` and ``scale`` give the
    shifted/scaled version ``shift + scale * X``.  ``counts`` keeps the raw counts of a
    ``counts [[...]]`` population (``probs`` are the normalized counts).
    """

    family: str
    params: tuple[tuple[str, sympy.Expr], ...] = ()
    probs: tuple[sympy.Expr, ...] = ()
    counts: tuple[sympy.Expr, ...] = ()
    shape: tuple[int, ...] = ()
    shift: sympy.Expr = sympy.Integer(0)
    scale: sympy.Expr = sympy.Integer(1)

    def param(self, name: str) -> sympy.Expr:
        return dict(self.params)[name]

    def support(self) -> tuple[sympy.Expr, sympy.Expr]:
        """Closure of the support of a continuous law, shift and scale applied."""
        if self.family == "uniform":
            lo, hi = self.param("a"), self.param("b")
        elif self.family == "exponential":
            lo, hi = sympy.Integer(0), oo
        else:
            lo, hi = -oo, oo
        lo, hi = self.shift + self.scale * lo, self.shift + self.scale * hi
        return (lo, hi) if self.scale.is_nonnegative is not False else (hi, lo)


#: the latent shares a binary variable's population may declare (``categorical(0.3, 0.7,
#: cheaters = 0.1)``): the truth of RRreg's designs that no report shows directly
LATENT_SHARES: dict[str, str] = {
    "cheaters": "the share of respondents who say no whatever they draw (cdm's gamma), carriers or not",
    "honesty": "the share of the carriers who admit the trait when asked (sld's t)",
}


@dataclass(frozen=True)
class Population:
    """The plug-in truth for one variable or a joint one (``(gender, income)``)."""

    variables: tuple[Variable, ...]
    law: Law
    span: Span | None = field(default=None, compare=False)
    #: the latent shares of a binary variable's respondents that RRreg's designs estimate
    #: beside its distribution (:data:`LATENT_SHARES`): ``(("cheaters", 0.1),)``
    latent: tuple[tuple[str, sympy.Expr], ...] = field(default=(), metadata={"dump": "unless default"})

    def latent_share(self, name: str) -> sympy.Expr | None:
        """A declared latent share, or None."""
        return dict(self.latent).get(name)

    @functools.cached_property
    def components(self) -> frozenset[str]:
        """The plain variables the population's law is over (combined ones split)."""
        return frozenset(c for v in self.variables for c in v.components())


# ---- mechanisms -------------------------------------------------------------------
#: the independent designs (nu_a, Def. 3): the uniform design (Def. 4) is one
INDEPENDENT_DESIGNS = frozenset({"independent", "uniform"})


class _OneVariable:
    """Mixin: a mechanism that privatizes one (possibly combined) variable."""

    variable: Variable

    @property
    def variables(self) -> tuple[Variable, ...]:
        return (self.variable,)


@dataclass(frozen=True)
class SubsetDesign:
    """A subset-privacy design.

    ``kind``: ``"uniform"`` (Def. 4), ``"conditional"`` (mu_a, Def. 2),
    ``"independent"`` (nu_a, Def. 3) or ``"sizes"`` (given X = x, a uniformly random
    subset of size k containing x, k drawn with the weights).  ``weights`` maps a
    subset (frozenset of labels) or a size (int) to its weight.
    """

    kind: str
    weights: tuple[tuple[Union[frozenset, int], sympy.Expr], ...] = ()

    @property
    def is_independent(self) -> bool:
        """Whether the design is independent (:data:`INDEPENDENT_DESIGNS`)."""
        return self.kind in INDEPENDENT_DESIGNS


@dataclass(frozen=True)
class SubsetMechanism(_OneVariable):
    """``subset(X, design, min_coverage = alpha)`` (subset privacy)."""

    name: str | None
    variable: Variable
    design: SubsetDesign
    min_coverage: sympy.Expr | None = None
    span: Span | None = field(default=None, compare=False)
    family = "subset"
    is_finite = True

    def conditional_design(self) -> dict[frozenset, sympy.Expr]:
        """The conditional design mu_a (Def. 2) on the variable's own labels.

        For an independent design mu_a = nu_a + nu_{a^c}; for the uniform design
        (Def. 4) nu_a = 1/(2^p - 2p - 2) on subsets of size 2..p-2; for ``sizes`` mu_a =
        w_k / C(p-1, k-1) on subsets of size k.  The dummy categories of
        ``min_coverage`` (Appendix II) are not included: they enlarge the domain and
        are the channel builder's business.  Enumerates subsets, so meant for
        moderate p.

        Examples
        --------
        >>> v = Variable("c", "categorical", ("a", "b", "c", "d"))
        >>> m = SubsetMechanism("u", v, SubsetDesign("uniform"))
        >>> sorted(set(m.conditional_design().values()))
        [1/3]
        """
        labels = self.variable.labels
        p = len(labels)
        mu: dict[frozenset, sympy.Expr] = {}
        kind = self.design.kind
        if kind == "conditional":
            for a, w in self.design.weights:
                mu[a] = mu.get(a, 0) + w
        elif kind == "independent":
            full = frozenset(labels)
            for a, w in self.design.weights:
                for b in (a, full - a):
                    if b:
                        mu[b] = mu.get(b, 0) + w
        elif kind == "uniform":
            lo, hi = (2, p - 2) if p >= 4 else (1, p - 1)
            count = sum(math.comb(p, k) for k in range(lo, hi + 1))
            for k in range(lo, hi + 1):
                for a in itertools.combinations(labels, k):
                    s = frozenset(a)
                    mu[s] = mu.get(s, 0) + sympy.Rational(1, count)
                    c = frozenset(labels) - s
                    mu[c] = mu.get(c, 0) + sympy.Rational(1, count)
        elif kind == "sizes":
            for k, w in self.design.weights:
                for a in itertools.combinations(labels, k):
                    mu[frozenset(a)] = w / math.comb(p - 1, k - 1)
        return {a: sympy.nsimplify(w) if isinstance(w, float) else sympy.sympify(w)
                for a, w in mu.items() if w != 0}


@dataclass(frozen=True)
class RandomizedResponse(_OneVariable):
    """``grr(X, epsilon = e)`` (k-ary RR) or ``rr(X, matrix [[...]])``.

    ``matrix[u][v] = Pr(Y = v | X = u)``; for GRR it is derived from ``epsilon``.
    """

    name: str | None
    variable: Variable
    epsilon: sympy.Expr | None = None
    matrix: tuple[tuple[sympy.Expr, ...], ...] | None = None
    span: Span | None = field(default=None, compare=False)
    family = "rr"
    is_finite = True

    @property
    def kind(self) -> str:
        return "grr" if self.matrix is None else "matrix"

    @property
    def reports(self) -> tuple[str, ...]:
        """The labels of the reports: the categories (a square matrix)."""
        return self.variable.labels

    @property
    def square(self) -> bool:
        """The reports are the categories: the matrix is square, and the estimators that
        invert it (castell, RR-Joint) apply."""
        return True

    def randomization_matrix(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        """P[u][v] = Pr(Y = v | X = u); for GRR p = e^eps/(e^eps + d - 1) on the diagonal.

        Examples
        --------
        >>> v = Variable("g", "categorical", ("F", "M"))
        >>> RandomizedResponse("r", v, epsilon=sympy.log(3)).randomization_matrix()
        ((3/4, 1/4), (1/4, 3/4))
        """
        if self.matrix is not None:
            return self.matrix
        d = self.variable.p
        e = sympy.exp(self.epsilon)
        keep, other = e / (e + d - 1), 1 / (e + d - 1)
        return tuple(tuple(keep if u == v else other for v in range(d)) for u in range(d))


@dataclass(frozen=True)
class FrequencyOracle(_OneVariable):
    """A local-DP frequency oracle on one categorical variable (``docs/oracles.md``).

    ``protocol``: ``sue`` (symmetric unary encoding, basic RAPPOR), ``oue`` (optimized
    unary encoding), ``blh`` / ``olh`` (binary / optimized local hashing, ``hash_range``
    g), ``ss`` (subset selection, ``subset_size`` k), ``hr`` (Hadamard response), ``adp``
    (GRR or OUE, whichever has the smaller variance at this epsilon and domain size).
    Longitudinal forms (``l_grr``, ``l_sue``, ``l_oue``, ``l_osue``) memoize a permanent
    report at ``epsilon`` (the privacy of any number of collections) and randomize it again
    at ``first`` (the privacy of one collection) each time.  ``None``: the protocol's
    default (g = round(e^epsilon) + 1 for olh; k = d / (e^epsilon + 1) rounded for ss).
    """

    name: str | None
    variable: Variable
    protocol: str
    epsilon: sympy.Expr
    hash_range: sympy.Expr | None = None
    subset_size: sympy.Expr | None = None
    first: sympy.Expr | None = None
    span: Span | None = field(default=None, compare=False)
    family = "oracle"
    is_finite = False

    @property
    def kind(self) -> str:
        return self.protocol


@dataclass(frozen=True)
class MultiAttributeOracle:
    """Several categorical attributes collected under one local-DP budget ``epsilon``
    (Arcolezi et al. 2021, ``docs/oracles.md``): ``spl`` (every attribute through its
    oracle at epsilon / A), ``smp`` (one attribute drawn at random, at epsilon; the server
    learns which) or ``rsfd`` (one attribute drawn at random, at the amplified epsilon, and
    fake reports for the others; ``fake``: grr, oue_z, oue_r, sue_z, sue_r, adp).
    ``oracles``: the oracle of each attribute (spl, smp; for rsfd the fake variant's)."""

    name: str | None
    protocol: str
    oracles: tuple[str, ...]
    attributes: tuple[Variable, ...]
    epsilon: sympy.Expr
    fake: str | None = None
    span: Span | None = field(default=None, compare=False)
    family = "multi_oracle"
    is_finite = False

    @property
    def variables(self) -> tuple[Variable, ...]:
        return self.attributes

    @property
    def kind(self) -> str:
        return self.protocol


@dataclass(frozen=True)
class ProductMechanism:
    """``product(M1, ..., Md)`` (Def. 8; RR-Independent): factors kept separate."""

    name: str | None
    factors: tuple["Mechanism", ...]
    span: Span | None = field(default=None, compare=False)
    family = "product"
    is_finite = True

    @property
    def variables(self) -> tuple[Variable, ...]:
        return tuple(v for f in self.factors for v in f.variables)


@dataclass(frozen=True)
class IntervalMechanism(_OneVariable):
    """``interval(X, scheme(anchor), disclose [a, b])``.

    ``scheme``: ``case1`` (one anchor U; observe (-inf, U] or (U, inf)), ``case2`` (two
    sorted iid anchors), ``canonical`` (m intervals from m - 1 sorted anchors) or
    ``ring`` (m anchors T(1) < ... < T(m) and m ranges: (T(i-1), T(i)] and the two ends
    (-inf, T(1)] and (T(m), inf) joined into one range, Example 3).  ``m`` is always the
    number of ranges a respondent chooses from.  Intervals are (l, r].
    """

    name: str | None
    variable: Variable
    scheme: str
    anchor: Law
    m: int = 2
    disclose: tuple[sympy.Expr, sympy.Expr] | None = None
    span: Span | None = field(default=None, compare=False)
    family = "interval"
    is_finite = False


@dataclass(frozen=True)
class SelectiveMechanism(_OneVariable):
    """``selective(M, tau, rho)`` (Definition 5 of the interval-privacy paper)."""

    name: str | None
    base: IntervalMechanism
    tau: sympy.Expr
    rho: sympy.Expr
    span: Span | None = field(default=None, compare=False)
    family = "interval"
    is_finite = False

    @property
    def variable(self) -> Variable:
        return self.base.variable


@dataclass(frozen=True)
class ProgressiveMechanism(_OneVariable):
    """``progressive(X, rounds = h)`` (Example 4: anchors uniform in the current range)."""

    name: str | None
    variable: Variable
    rounds: int
    span: Span | None = field(default=None, compare=False)
    family = "interval"
    is_finite = False


@dataclass(frozen=True)
class CensoredMechanism(_OneVariable):
    """``censored(Y, ends = ..., lower = L, upper = R)``: interval-censored data as they come.

    Not a privacy mechanism: the data were censored elsewhere (inspection times, a
    detection limit, a survey's brackets) and privspec only reads them, so there are no
    anchors, nothing to privatize, simulate or cover.  Each observation is a set
    known to hold ``Y``: an interval with stated ends, an exact value, a right- or
    left-censored ray.  ``ends`` is the endpoint convention of finite ends:
    ``right_closed`` ``(l, r]``, ``closed`` ``[l, r]``, ``left_closed`` ``[l, r)`` or ``open``
    ``(l, r)``; None lets each written row say it with its brackets (the two-column
    layout then reads ``(l, r]``).  ``lower``/``upper`` name the columns of the
    two-column layout; without them the column named after ``Y`` holds written intervals.
    """

    name: str | None
    variable: Variable
    ends: str | None = None
    lower: str | None = None
    upper: str | None = None
    span: Span | None = field(default=None, compare=False)
    # queries treat it as interval data (cdf, mean, moment by npmle or mle; regression)
    family = "interval"
    is_finite = False

    @property
    def columns(self) -> tuple[str, ...]:
        """The data columns the observations are read from."""
        return (self.lower, self.upper) if self.lower is not None else (self.variable.name,)


@dataclass(frozen=True)
class NumericMechanism(_OneVariable):
    """A local-DP mechanism on one bounded continuous variable (``docs/numeric.md``):
    ``protocol`` is ``laplace``, ``duchi`` (Duchi et al. 2018), ``piecewise`` or ``hm``
    (Wang et al. 2019), or ``square_wave`` (Li et al. 2020).  The value is mapped
    linearly from the variable's declared range onto [-1, 1] (square wave: [0, 1])."""

    name: str | None
    variable: Variable
    protocol: str
    epsilon: sympy.Expr
    span: Span | None = field(default=None, compare=False)
    family = "numeric"
    is_finite = False

    @property
    def kind(self) -> str:
        return self.protocol


Mechanism = Union[SubsetMechanism, RandomizedResponse, ProductMechanism, IntervalMechanism,
                  SelectiveMechanism, ProgressiveMechanism, CensoredMechanism, FrequencyOracle,
                  MultiAttributeOracle, NumericMechanism]


# ---- releases, queries, comparisons ---------------------------------------------------
@dataclass(frozen=True)
class Release:
    """A count table released with noise (epsilon-privacy on a subset of variables).

    ``protect`` are the protected variables (all of the table's when not given);
    ``exact_totals`` the unprotected variables whose margins are released exactly
    (Algorithm 1).  ``calibration`` sets the noise for ``epsilon``: ``"tight"`` (the
    default) spends exactly ``epsilon``; ``"paper"`` is Algorithm 1 as published,
    whose noise is in fact ``epsilon/2``-private (the same noise as ``"tight"``
    without exact totals; ``docs/releases.md``).
    """

    name: str
    variables: tuple[Variable, ...]
    noise: str
    epsilon: sympy.Expr
    protect: tuple[str, ...]
    exact_totals: tuple[str, ...] = ()
    calibration: str = "tight"
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Estimand:
    """What a query estimates or tests.

    ``kind``: distribution, joint, mean, cdf, moment, regression, independence.
    ``variables``: the variables involved (for regression: response first, then the
    covariates); ``order`` for ``moment(X, k)``; ``coefficients`` for a regression whose
    truth is declared (``regression(Y ~ X, coefficients = {...})``, for planning): every
    coefficient's label and value, in the fit's order (terms left out are 0), else ();
    ``focus``: the coefficients a plan is for (``of = age``), in the fit's order; () for all.
    """

    kind: str
    variables: tuple[Variable, ...]
    order: int | None = None
    span: Span | None = field(default=None, compare=False)
    coefficients: tuple[tuple[str, sympy.Expr], ...] = field(default=(), metadata={"dump": "unless default"})
    focus: tuple[str, ...] = field(default=(), metadata={"dump": "unless default"})

    def __str__(self) -> str:
        """As a spec writes it: ``distribution(color)``, ``joint(A, B)``, ``moment(Y, 2)``,
        ``regression(Y ~ X1 + X2)``."""
        if self.kind == "regression":
            return f"regression({self.variables[0].name} ~ {' + '.join(v.name for v in self.variables[1:])})"
        inner = ", ".join(v.name for v in self.variables)
        return f"{self.kind}({inner}, {self.order})" if self.kind == "moment" else f"{self.kind}({inner})"


@dataclass(frozen=True)
class Method:
    """An estimator or test: ``mom``, ``iterative(linear)``, ``permutation(999)``.

    Keyword options (``castell(project = euclidean)``) are kept in ``args`` as
    ``(name, value)`` pairs; :attr:`options` reads them.
    """

    name: str
    args: tuple[Union[str, sympy.Expr, tuple], ...] = ()
    span: Span | None = field(default=None, compare=False)

    @property
    def options(self) -> dict:
        """Keyword options by name (``{"project": "euclidean"}``)."""
        return {a[0]: a[1] for a in self.args if isinstance(a, tuple)}


@dataclass(frozen=True)
class Target:
    """A requirement on a comparison criterion: ``max_se <= 0.01``, ``epsilon <= 2``,
    ``power >= 0.8``."""

    criterion: str
    op: str
    value: sympy.Expr
    span: Span | None = field(default=None, compare=False)

    def met(self, x: float) -> bool:
        """Whether the criterion's value ``x`` meets the target (NaN never does)."""
        v = float(self.value)
        return {"<=": x <= v, "<": x < v, ">=": x >= v, ">": x > v}[self.op]

    def __str__(self) -> str:
        return f"{self.criterion} {self.op} {float(self.value):g}"


@dataclass(frozen=True)
class PowerTest:
    """The test a plan is powered for.

    ``proportion``: a one-sample two-sided Wald test of ``w[label] = value``;
    ``difference``: two independent samples of n respondents each, testing equal
    ``w[label]`` when the true difference is ``value``; ``independence``: the Pearson
    test of independence of ``variables`` on the table of a product mechanism's reports;
    ``coefficient``: the Wald test of a regression's coefficient ``label`` = ``value``.
    """

    kind: str
    label: str | None = None
    value: sympy.Expr | None = None
    variables: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if self.kind == "independence":
            return f"independence({', '.join(self.variables)})"
        return f"{self.kind}({self.label}, {fmt(self.value)})"


@dataclass(frozen=True)
class PlausiblePopulations:
    """The populations a comparison is also evaluated at (``at populations = ...``), for
    the estimand's plain ``variables`` (their joint, row-major): a list of ``laws`` as
    written (``spans``), or ``draws`` seeded (``seed``) draws from a Dirichlet with mean the
    declared population and total ``concentration``."""

    variables: tuple[str, ...]
    laws: tuple[Law, ...] = ()
    spans: tuple[Span, ...] = field(default=(), compare=False)
    concentration: sympy.Expr | None = None
    draws: int = 200
    seed: int = 0


@dataclass(frozen=True)
class Plan:
    """What a comparison or a planning query asks beyond the criteria: the sample size
    ``n``, the level ``alpha`` of intervals and tests, the ``test`` to power, the
    ``targets`` to meet, the plausible ``populations`` (None: the declared one only) and
    the ``tolerance`` within which a guess of a continuous variable counts as right
    (``prediction`` of an interval design)."""

    n: sympy.Integer | None = None
    alpha: sympy.Expr = sympy.Rational(1, 20)
    test: PowerTest | None = None
    targets: tuple[Target, ...] = ()
    populations: PlausiblePopulations | None = None
    tolerance: sympy.Expr | None = None


@dataclass(frozen=True)
class Query:
    """One named result.

    ``kind``: a key of :data:`privspec.model.query_kinds.QUERY_KINDS` (estimate, test, avar, moments,
    fisher, coverage, leakage, epsilon, identifiable, optimal_anchor, budget, variance, table,
    individual, bounds, thresholds), which says what each takes, whether it needs data and
    which mechanism families it accepts.  ``metrics`` for coverage and
    leakage; ``scope`` for budget (``per variable``, ``per release`` or a set of
    variables) and the release's name for variance and table (``estimand`` then names
    the margin's variables, None for the whole table).
    """

    name: str
    kind: str
    mechanism: Mechanism | None = None
    estimand: Estimand | None = None
    method: Method | None = None
    calibrate: Method | None = None
    metrics: tuple[str, ...] = ()
    scope: Union[str, tuple[str, ...], None] = None
    span: Span | None = field(default=None, compare=False)
    #: ``individual(M, {a, b}, x)``: the observed subset and, if given, the true category
    observed: tuple[str, ...] = ()
    truth: str | None = None
    #: ``sample_size(...)`` and ``power(...)``: the targets, test, n and alpha
    plan: Plan | None = None


@dataclass(frozen=True)
class Compare:
    """``compare NAME for ESTIMAND at n = N { name = mechanism ... } by criteria``."""

    name: str
    estimand: Estimand
    settings: tuple[tuple[str, sympy.Expr], ...]
    candidates: tuple[tuple[str, Mechanism], ...]
    criteria: tuple[str, ...]
    span: Span | None = field(default=None, compare=False)
    #: each candidate's estimator (``name = M by ESTIMATOR``, else the family's default)
    estimators: tuple[tuple[str, Method], ...] = ()
    #: n, alpha, the test to power and the targets to meet
    plan: Plan = field(default_factory=Plan)

    @property
    def n(self) -> int | None:
        return None if self.plan.n is None else int(self.plan.n)

    def estimator(self, candidate: str) -> Method:
        return dict(self.estimators)[candidate]

    @property
    def kind(self) -> str:
        """What a compare block's answer is (as a query's kind names its result)."""
        return "comparison"


@dataclass(frozen=True)
class ModelGraph:
    """A validated spec: every name resolved, every value exact."""

    title: str | None
    variables: Mapping[str, Variable]
    parameters: Mapping[str, Parameter]
    populations: tuple[Population, ...]
    mechanisms: Mapping[str, Mechanism]
    releases: Mapping[str, Release]
    queries: Mapping[str, Query]
    compares: Mapping[str, Compare]
    source: Source | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("variables", "parameters", "mechanisms", "releases", "queries", "compares"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def population_of(self, variable: str) -> Population | None:
        """The population declared for ``variable`` (alone or in a joint declaration)."""
        for pop in self.populations:
            if any(v.name == variable for v in pop.variables):
                return pop
        return None

    def summary(self) -> dict:
        """Counts of each kind of declaration (for ``privspec check``)."""
        return {"variables": len(self.variables), "parameters": len(self.parameters),
                "populations": len(self.populations), "mechanisms": len(self.mechanisms),
                "releases": len(self.releases), "queries": len(self.queries),
                "compares": len(self.compares)}
