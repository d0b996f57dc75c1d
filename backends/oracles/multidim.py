"""The multidimensional protocols, one class per protocol: SPL, SMP, RS+FD (Arcolezi et
al., CIKM 2021; :mod:`privspec.backends.oracles.multi` says what they are and holds their
functions); RS+FD's fake data are :mod:`privspec.backends.oracles.fakes`.

A protocol declares the epsilon of each attribute's oracle, how a respondent's tuple is
reported (:meth:`MultiOracle.sample`), each attribute's estimate and covariance, the
covariance between two attributes' estimates, the privacy of a whole report, and the
texts a result quotes; the single-attribute oracles (:mod:`privspec.backends.oracles.pure`)
do the rest.  :class:`MultiOracle` answers what a back end asks of any frequency oracle
(:class:`~privspec.backends.oracles.protocol.FrequencyOracle`): the sampler, the reports'
text columns, the covariance, the epsilon read back, what a result quotes.
"""
from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, NamedTuple, Sequence

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.backends.core import projections
from privspec.backends.core.algebra import Float
from privspec.backends.core.frequency import pure_covariance
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.oracles.fakes import FAKES
from privspec.backends.oracles.guessing import Guessing
from privspec.backends.oracles.protocol import FrequencyOracle, Oracle
from privspec.backends.oracles.pure import oracle
from privspec.backends.oracles.sampling import uniform_index

__all__ = ["MultiOracle", "SPL", "SMP", "RSFD", "MultiReports", "MultiStats", "SAMPLED", "amplified_epsilon",
           "inverse_binomial_mean"]

#: the name of SMP's column of sampled attributes
SAMPLED = "sampled"


class MultiReports(NamedTuple):
    """Collected reports.  ``values[j]``: attribute ``j``'s reports, in the format of
    :func:`privspec.backends.oracles.pure.privatize` for its oracle; one per respondent (spl,
    rsfd) or, for smp, one per respondent who sampled ``j``, in row order.  ``attribute``:
    smp's sampled attribute per respondent (None otherwise: RS+FD's sampled attribute is
    what the fake data hide, so it is never kept)."""

    values: tuple
    attribute: np.ndarray | None = None


class MultiStats(NamedTuple):
    """The sufficient statistics of :func:`~privspec.backends.oracles.multi.estimate`: per
    attribute the support counts ``C_j`` (:func:`privspec.backends.oracles.pure.support_counts`
    of its reports) and the number of its reports ``n_j`` (n for spl and rsfd)."""

    counts: tuple
    n: tuple


def amplified_epsilon(epsilon: float, A: int) -> float:
    """RS+FD's ``eps' = ln(A (e^eps - 1) + 1)`` (the paper's amplification by sampling),
    by multi-freq-ldpy's numpy expression (so that its floats agree with theirs).

    Examples
    --------
    >>> round(amplified_epsilon(1.0, 3), 6)
    1.81724
    """
    return float(np.log(A * (np.exp(epsilon) - 1) + 1))


def inverse_binomial_mean(n: int, pi: float) -> float:
    """``E[1/N | N >= 1]`` for ``N ~ Binomial(n, pi)``, summed over the pmf within 40
    standard deviations of the mean (the rest weighs below 1e-300).  About ``1/(n pi) (1 +
    (1 - pi)/(n pi))``.

    Examples
    --------
    >>> round(inverse_binomial_mean(1000, 1 / 3) * 1000 / 3, 5)
    1.00201
    """
    n = int(n)
    if n < 1 or not 0 < pi <= 1:
        raise ValueError("n >= 1 and 0 < pi <= 1")
    mu, sd = n * pi, math.sqrt(n * pi * (1 - pi))
    lo, hi = max(1, int(mu - 40 * sd) - 1), min(n, int(mu + 40 * sd) + 2)
    k = np.arange(lo, hi + 1)
    w = scipy.stats.binom.pmf(k, n, pi)
    return float(np.sum(w / k) / -math.expm1(n * math.log1p(-pi)) if pi < 1 else 1.0 / n)


def _rowwise(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where ``mask`` (per row) else ``b``; reports may be 1-D or (n, width)."""
    return np.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)


# ---- the protocols ---------------------------------------------------------------------------------
#: respondents drawn for RS+FD's best guess (:meth:`RSFD.guessing`), and their seed (fixed:
#: a comparison gives the same number every run)
GUESS_DRAWS = 200_000
GUESS_SEED = 20211101


@dataclass(frozen=True)
class MultiOracle(FrequencyOracle):
    """A multidimensional protocol (the class): the per-attribute oracle ``kinds`` (``adp``
    already resolved), domain sizes ``ds``, the total ``epsilon``, and for RS+FD its
    ``variant`` and per attribute the ``fakes`` (:data:`FAKES`).  Build it with
    :func:`privspec.backends.oracles.multi.multi_oracle`.

    Examples
    --------
    >>> mo = SPL(("grr", "oue"), (3, 5), 2.0)
    >>> mo.protocol, mo.A, mo.attribute_epsilon, [o.kind for o in mo.oracles]
    ('spl', 2, 1.0, ['grr', 'oue'])
    """

    kinds: tuple[str, ...]
    ds: tuple[int, ...]
    epsilon: float
    variant: str | None = None
    fakes: tuple[str, ...] | None = None

    #: the spec's name of the protocol
    protocol: ClassVar[str]
    #: the report's columns beyond the attributes'
    EXTRA_COLUMNS: ClassVar[tuple[str, ...]] = ()
    #: why a report spends what it does (a result's reason)
    REASON: ClassVar[str] = ""
    #: how an attribute's covariance comes about (a result's note)
    NOTE: ClassVar[str] = ""
    #: a whole report spends the declared epsilon (RS+FD's spends the amplified one)
    SPENDS_DECLARED: ClassVar[bool] = True
    #: the server learns each respondent's sampled attribute, and has the reports of an
    #: attribute from the rows that sampled it only (smp)
    KEEPS_SAMPLED: ClassVar[bool] = False

    @property
    def A(self) -> int:
        """The number of attributes."""
        return len(self.ds)

    @property
    @abstractmethod
    def attribute_epsilon(self) -> float:
        """The epsilon of each attribute's oracle."""

    @property
    def oracles(self) -> tuple[Oracle, ...]:
        """Each attribute's oracle at :attr:`attribute_epsilon` (for RS+FD: the real report's)."""
        e = self.attribute_epsilon
        return tuple(oracle(k, d, e) for k, d in zip(self.kinds, self.ds))

    @abstractmethod
    def guessing(self, j: int, ws: Sequence[np.ndarray | None]) -> Guessing:
        """The adversary's best guess of attribute ``j`` from one respondent's whole report,
        the attributes independent with populations ``ws`` (None: not declared; only
        RS+FD needs the others') (:mod:`privspec.backends.oracles.guessing`)."""

    @classmethod
    def build(cls, kinds: Any, ds: tuple[int, ...], epsilon: float, variant: str | None) -> "MultiOracle":
        """The protocol with its attributes' oracles resolved (``ds`` and ``epsilon`` checked)."""
        if variant is not None:
            raise ValueError(f"a variant is a parameter of rsfd, not of {cls.protocol}")
        A = len(ds)
        kinds_t = (kinds,) * A if isinstance(kinds, str) else tuple(kinds) if kinds is not None else ()
        if len(kinds_t) != A:
            raise ValueError(f"one oracle kind for all attributes or one per attribute ({A}), not {kinds!r}")
        e_attr = cls(kinds_t, ds, epsilon).attribute_epsilon
        return cls(tuple(oracle(k, d, e_attr).kind for k, d in zip(kinds_t, ds)), ds, epsilon)

    @abstractmethod
    def sample(self, x: np.ndarray, rng: RowRandom) -> MultiReports:
        """The reports of the int64 tuples ``x`` (validated), one per row of ``rng``."""

    def report_numbers(self, values: tuple) -> tuple:
        """The number of reports of each attribute: one per respondent."""
        lengths = {len(v) for v in values}
        if len(lengths) > 1:
            raise ValueError(f"{self.protocol}: every attribute has one report per respondent")
        return (lengths.pop(),) * self.A

    def attribute_probs(self, j: int) -> tuple[float, float]:
        """``(p*, q*)`` of attribute ``j``'s reports."""
        return self.oracles[j].support_probs()

    def attribute_estimate(self, j: int, o: Oracle, C: np.ndarray, n: float, project: str) -> np.ndarray:
        """Attribute ``j``'s unbiased estimate from its support counts and reports."""
        return o.unbiased(C, n, project)

    @abstractmethod
    def attribute_covariance(self, j: int, o: Oracle, f: np.ndarray, n: int, conditional: bool,
                             n_attribute: Sequence[int] | None) -> np.ndarray:
        """The covariance of attribute ``j``'s estimate at its marginal ``f``."""

    def check_split(self, n_attribute: Sequence[int] | None) -> None:
        """ValueError for a split of the respondents (smp's only)."""
        if n_attribute is not None:
            raise ValueError("n_attribute (one count per attribute) is smp's split")

    def asymptotic_covariance(self, j: int, f: np.ndarray, conditional: bool) -> np.ndarray:
        """``n`` times the covariance of attribute ``j``'s estimate as n grows (it does not
        depend on n)."""
        return 1 * self.attribute_covariance(j, self.oracles[j], f, 1, conditional, None)

    def asymptotic_cross(self, D: np.ndarray, conditional: bool) -> np.ndarray | None:
        """``n`` times the cross-attribute covariance as n grows where it is not the ``n = 1``
        value (``D``: the answers' covariance); None where it is."""
        return None

    def protocol_facts(self) -> dict:
        """What a result quotes beyond the attributes' oracles."""
        return {}

    def likelihood_pair(self, j: int) -> tuple[float, float]:
        """Attribute ``j``'s report likelihood for a category in / not in its support, up to a
        common factor (the IBU's ``pair``): its oracle's."""
        return self.oracles[j].likelihood_pair()

    @abstractmethod
    def cross(self, j: int, l: int, fj: np.ndarray, fl: np.ndarray, n: int, conditional: bool,
              need: Callable[[], np.ndarray]) -> np.ndarray:
        """The covariance of attributes ``j``'s and ``l``'s estimates (``need()``: the answers'
        covariance ``P_jl - f_j f_l^T``, ValueError where not given)."""

    @abstractmethod
    def composed_epsilon(self, eps: list[float], neighbours: str) -> float:
        """The loss of a whole report, from the attributes' oracles' epsilons ``eps``."""

    def format(self, cols: list[str], text: list[np.ndarray], reports: MultiReports) -> dict[str, np.ndarray]:
        """The text columns of the reports, from each attribute's texts."""
        return {c: t for c, t in zip(cols, text)}

    def parse(self, cols: list[str], columns: dict[str, Sequence[Any]], m: int) -> tuple[MultiReports, np.ndarray]:
        """The reports of ``m`` rows of text columns, and the positions of the invalid rows
        (any attribute's string invalid)."""
        ok = np.ones(m, dtype=bool)
        parsed = []
        for j, o in enumerate(self.oracles):
            vals, bad = o.parse_reports(columns[cols[j]])
            okj = np.ones(m, dtype=bool)
            okj[bad] = False
            ok &= okj
            parsed.append((okj, vals))
        values = tuple(vals[ok[okj]] for okj, vals in parsed)
        return MultiReports(values), np.flatnonzero(~ok)

    # -- what a back end asks (FrequencyOracle), from what a protocol declares ------------------------
    def privatize(self, codes: np.ndarray, rng: RowRandom) -> MultiReports:
        x = np.asarray(codes)
        if x.ndim != 2 or x.shape[1] != self.A:
            raise ValueError(f"codes is an (n, {self.A}) array: one column per attribute")
        if x.size and not np.issubdtype(x.dtype, np.integer):
            raise ValueError("codes are integer category codes")
        x = x.astype(np.int64, copy=False)
        if x.size and (x.min() < 0 or np.any(x.max(axis=0) >= np.asarray(self.ds))):
            raise ValueError(f"column j holds codes in [0, d_j), d = {self.ds}")
        if len(rng) != len(x):
            raise ValueError(f"rng has {len(rng)} rows for {len(x)} tuples")
        return self.sample(x, rng)

    def column_names(self, names: Sequence[str] | None = None) -> list[str]:
        """The report columns: the attributes' ``names`` (default ``x0 ..``) and the protocol's own."""
        names = [f"x{j}" for j in range(self.A)] if names is None else [str(s) for s in names]
        if len(names) != self.A or len(set(names)) != self.A or set(names) & set(self.EXTRA_COLUMNS):
            raise ValueError(f"{self.A} distinct attribute names (not {SAMPLED!r} for smp)")
        return names + list(self.EXTRA_COLUMNS)

    def format_reports(self, reports: MultiReports, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        text = [o.format_reports(v) for o, v in zip(self.oracles, reports.values)]
        return self.format(self.column_names(names), text, reports)

    def parse_reports(self, texts: dict[str, Sequence[Any]], names: Sequence[str] | None = None
                      ) -> tuple[MultiReports, np.ndarray]:
        cols = self.column_names(names)
        missing = [c for c in cols if c not in texts]
        if missing:
            raise ValueError(f"missing columns {missing}")
        lengths = {len(texts[c]) for c in cols}
        if len(lengths) > 1:
            raise ValueError("the columns have different lengths")
        return self.parse(cols, texts, lengths.pop())

    def covariance(self, f: Sequence[Sequence[float]], n: float, conditional: bool = False,
                   n_attribute: Sequence[int] | None = None) -> list[np.ndarray]:
        """Each attribute's covariance at its marginal ``f[j]`` (smp: given the split
        ``n_attribute``, or averaged over it)."""
        if len(f) != self.A:
            raise ValueError(f"f holds one distribution per attribute ({self.A})")
        if not n >= 1:
            raise ValueError("n >= 1")
        self.check_split(n_attribute)
        out = []
        for j, o in enumerate(self.oracles):
            fj = np.asarray(f[j], dtype=float)
            if fj.shape != (o.d,) or not abs(fj.sum() - 1.0) <= 1e-6:
                raise ValueError(f"f[{j}] is a distribution over {o.d} categories")
            out.append(self.attribute_covariance(j, o, fj, n, conditional, n_attribute))
        return out

    def cross_covariance(self, j: int, l: int, f_j: Sequence[float], f_l: Sequence[float], n: int,
                         conditional: bool = False, joint: Any = None) -> np.ndarray:
        """The covariance of attributes ``j``'s and ``l``'s estimates (``joint``: their table,
        where the form needs it)."""
        if j == l or not (0 <= j < self.A and 0 <= l < self.A):
            raise ValueError(f"two different attributes in [0, {self.A})")
        if not n >= 1:
            raise ValueError("n >= 1")
        fj, fl = np.asarray(f_j, dtype=float), np.asarray(f_l, dtype=float)
        dj, dl = self.ds[j], self.ds[l]
        if fj.shape != (dj,) or fl.shape != (dl,):
            raise ValueError(f"f_j and f_l are distributions over {dj} and {dl} categories")
        D = None
        if joint is not None:
            P = np.asarray(joint, dtype=float)
            if P.shape != (dj, dl) or not abs(P.sum() - 1.0) <= 1e-6:
                raise ValueError(f"joint is a {dj} x {dl} table of probabilities")
            if not (np.allclose(P.sum(axis=1), fj, atol=1e-9) and np.allclose(P.sum(axis=0), fl, atol=1e-9)):
                raise ValueError("joint's margins differ from f_j and f_l")
            D = P - np.outer(fj, fl)

        def need() -> np.ndarray:
            if D is None:
                raise ValueError(f"{self.protocol}'s {'conditional' if conditional else 'population'} "
                                 "cross-attribute covariance needs the attributes' joint table")
            return D

        return self.cross(j, l, fj, fl, n, conditional, need)

    def epsilon_of(self, neighbours: str = "any") -> float:
        """The loss of a whole report: any two tuples (``any``), or two that differ in one
        attribute (``attribute``)."""
        if neighbours not in ("any", "attribute"):
            raise ValueError(f"neighbours is 'any' or 'attribute', not {neighbours!r}")
        return self.composed_epsilon([o.epsilon_of() for o in self.oracles], neighbours)

    def facts(self, j: int | None = None) -> dict:
        """What the protocol is: its attributes' oracles and epsilons, the two privacy levels
        (and attribute ``j``'s report law)."""
        out: dict = {"protocol": self.protocol, "attributes": self.A, "oracles": list(self.kinds),
                     "attribute_epsilon": self.attribute_epsilon, "epsilon_any_change": self.epsilon_of("any"),
                     "epsilon_one_attribute": self.epsilon_of("attribute")}
        out.update(self.protocol_facts())
        if j is not None:
            pe, qe = self.attribute_probs(j)
            out.update(attribute=j, p_star=pe, q_star=qe)
        return out


class SPL(MultiOracle):
    """Split the budget: every attribute through its oracle at ``eps / A``."""

    protocol = "spl"
    REASON = "sequential composition of the attributes' oracles at epsilon / A"
    NOTE = "its oracle at epsilon / A"

    @property
    def attribute_epsilon(self) -> float:
        return self.epsilon / self.A          # multi-freq-ldpy's eps_spl = epsilon / d

    def sample(self, x: np.ndarray, rng: RowRandom) -> MultiReports:
        return MultiReports(tuple(o.privatize(x[:, j], rng) for j, o in enumerate(self.oracles)))

    def attribute_covariance(self, j: int, o: Oracle, f: np.ndarray, n: int, conditional: bool,
                             n_attribute: Sequence[int] | None) -> np.ndarray:
        return o.covariance(f, n, conditional)

    def cross(self, j: int, l: int, fj: np.ndarray, fl: np.ndarray, n: int, conditional: bool,
              need: Callable[[], np.ndarray]) -> np.ndarray:
        # given x the attributes are randomized independently: only the answers' own dependence
        return np.zeros((len(fj), len(fl))) if conditional else need() / n

    def composed_epsilon(self, eps: list[float], neighbours: str) -> float:
        return float(sum(eps)) if neighbours == "any" else float(max(eps))

    def guessing(self, j: int, ws: Sequence[np.ndarray | None]) -> Guessing:
        # the other attributes' reports depend on their own answers only, which are
        # independent of x_j: attribute j's report at eps / A is all the adversary has
        g = self.oracles[j].guessing(ws[j])
        return Guessing(g.prediction, g.individual, f"attribute {j + 1}'s oracle at epsilon / A: {g.evaluation}", g.se)


class SMP(MultiOracle):
    """Sample: one attribute drawn uniformly, through its oracle at ``eps``; the server
    learns which (the column :data:`SAMPLED`)."""

    protocol = "smp"
    EXTRA_COLUMNS = (SAMPLED,)
    KEEPS_SAMPLED = True
    REASON = "one attribute's oracle at epsilon; which attribute does not depend on the answers"
    NOTE = ("n_j ~ n / A respondents report the attribute: A times its oracle's covariance (and the sampled "
            "respondents' spread, given the table)")

    @property
    def attribute_epsilon(self) -> float:
        return self.epsilon

    def sample(self, x: np.ndarray, rng: RowRandom) -> MultiReports:
        s = uniform_index(rng.random(len(x)), self.A)
        values = tuple(o.privatize(x[:, j], rng)[s == j] for j, o in enumerate(self.oracles))
        return MultiReports(values, s)

    def report_numbers(self, values: tuple) -> tuple:
        return tuple(len(v) for v in values)

    def guessing(self, j: int, ws: Sequence[np.ndarray | None]) -> Guessing:
        # the server learns the sampled attribute: with probability 1/A it is j and the
        # report is j's oracle's at eps; otherwise it is another's, independent of x_j,
        # and the best guess is j's most common category
        w = ws[j]
        g = self.oracles[j].guessing(w)
        prior = float(np.max(w) / np.sum(w))
        return Guessing(g.prediction / self.A + (1 - 1 / self.A) * prior, g.individual,
                        f"1/A times attribute {j + 1}'s oracle at epsilon ({g.evaluation}) plus (1 - 1/A) times its "
                        "most common share (another attribute sampled)", g.se / self.A)

    def attribute_estimate(self, j: int, o: Oracle, C: np.ndarray, n: float, project: str) -> np.ndarray:
        if n == 0:
            return np.full(o.d, np.nan)  # no respondent sampled this attribute
        return o.unbiased(C, n, project)

    def check_split(self, n_attribute: Sequence[int] | None) -> None:
        if n_attribute is not None and len(n_attribute) != self.A:
            raise ValueError("n_attribute (one count per attribute) is smp's split")

    def attribute_covariance(self, j: int, o: Oracle, f: np.ndarray, n: int, conditional: bool,
                             n_attribute: Sequence[int] | None) -> np.ndarray:
        D = np.diag(f) - np.outer(f, f)
        if n_attribute is not None:
            nj = n_attribute[j]
            if nj < 1:
                return np.full((o.d, o.d), np.nan)
            inv, spread = 1.0 / nj, ((n - nj) / (nj * (n - 1)) if n > 1 else 0.0)
        else:
            inv = inverse_binomial_mean(n, 1.0 / self.A)
            spread = (n * inv - 1) / (n - 1) if n > 1 else 0.0
        one = o.covariance(f, 1, conditional)
        return one * inv + D * spread if conditional else one * inv

    def asymptotic_covariance(self, j: int, f: np.ndarray, conditional: bool) -> np.ndarray:
        """``n`` times the covariance as n grows: the split averaged over ``n_j ~ Binomial(n,
        1/A)`` enters beyond 1/n, so asymptotically ``A Sigma`` (and the sampled
        respondents' spread given the table)."""
        V = self.A * self.oracles[j].covariance(f, 1.0, conditional=conditional)
        return V + (self.A - 1) * (np.diag(f) - np.outer(f, f)) if conditional else V

    def asymptotic_cross(self, D: np.ndarray, conditional: bool) -> np.ndarray | None:
        return -D if conditional else None            # -n D / (n - 1) -> -D

    def cross(self, j: int, l: int, fj: np.ndarray, fl: np.ndarray, n: int, conditional: bool,
              need: Callable[[], np.ndarray]) -> np.ndarray:
        # disjoint i.i.d. respondents; given the table, disjoint parts of one table
        if not conditional:
            return np.zeros((len(fj), len(fl)))
        return -need() / (n - 1) if n > 1 else np.full((len(fj), len(fl)), np.nan)

    def composed_epsilon(self, eps: list[float], neighbours: str) -> float:
        return float(max(eps))

    def format(self, cols: list[str], text: list[np.ndarray], reports: MultiReports) -> dict[str, np.ndarray]:
        s = np.asarray(reports.attribute, dtype=np.int64)
        out: dict[str, np.ndarray] = {}
        for j, t in enumerate(text):
            where = s == j
            if int(where.sum()) != len(t):
                raise ValueError(f"attribute {j}: {len(t)} reports but {int(where.sum())} rows sampled it")
            col = np.full(len(s), "", dtype=t.dtype if len(t) else "<U1")
            col[where] = t
            out[cols[j]] = col
        out[SAMPLED] = s.astype(str)
        return out

    def parse(self, cols: list[str], columns: dict[str, Sequence[Any]], m: int) -> tuple[MultiReports, np.ndarray]:
        # an invalid sampled index or an invalid string in the sampled attribute's column
        s_val, s_bad = oracle("grr", self.A, 1.0).parse_reports(columns[SAMPLED])
        s = np.full(m, -1, dtype=np.int64)
        s[np.setdiff1d(np.arange(m), s_bad)] = s_val
        ok = s >= 0
        parsed = []
        for j, o in enumerate(self.oracles):
            rows = np.flatnonzero(s == j)
            col = columns[cols[j]]
            vals, bad = o.parse_reports([col[i] for i in rows])
            ok[rows[bad]] = False
            good = np.ones(len(rows), dtype=bool)
            good[bad] = False
            parsed.append((rows[good], vals))
        values = tuple(v for _, v in parsed)
        return MultiReports(values, s[ok]), np.flatnonzero(~ok)


class RSFD(MultiOracle):
    """Random sampling plus fake data: every attribute reported, the sampled one through
    its oracle at the amplified ``eps'`` (:func:`amplified_epsilon`), the others fake
    data (:data:`FAKES`); a pure protocol per attribute with ``p_eff, q_eff``
    (:meth:`probs`)."""

    protocol = "rsfd"
    REASON = ("random sampling plus fake data: the sampled attribute is privatized at eps' = "
              "ln(A (e^eps - 1) + 1); two respondents' tuples that differ in every attribute are "
              "separated by eps' (the report that equals x everywhere), tuples that differ in one "
              "attribute by epsilon_one_attribute; the paper's eps is the latter")
    NOTE = "a pure protocol per attribute with p_eff, q_eff (real report with probability 1/A, else fake)"
    SPENDS_DECLARED = False
    #: the variants (``adp``: per attribute grr or oue-z, :meth:`_adp`)
    VARIANTS: ClassVar[tuple[str, ...]] = ("grr", "oue-z", "oue-r", "sue-z", "sue-r", "adp")
    #: each variant's oracle and fake data
    _FAKE: ClassVar[dict[str, tuple[str, str]]] = {
        "grr": ("grr", "uniform"), "oue-z": ("oue", "zero"), "oue-r": ("oue", "random"), "sue-z": ("sue", "zero"),
        "sue-r": ("sue", "random")}

    @property
    def attribute_epsilon(self) -> float:
        return amplified_epsilon(self.epsilon, self.A)

    @classmethod
    def build(cls, kinds: Any, ds: tuple[int, ...], epsilon: float, variant: str | None) -> "RSFD":
        names = ", ".join(cls.VARIANTS)
        if kinds is not None:
            raise ValueError(f"rsfd takes a variant (one of {names}), not kinds")
        if variant not in cls.VARIANTS:
            raise ValueError(f"unknown RS+FD variant {variant!r}: one of {names}")
        A = len(ds)
        e_amp = amplified_epsilon(epsilon, A)
        per = [cls._adp(d, A, e_amp) if variant == "adp" else variant for d in ds]
        mo = cls(tuple(cls._FAKE[v][0] for v in per), ds, epsilon, variant, tuple(cls._FAKE[v][1] for v in per))
        mo.oracles  # validates (e.g. a domain the oracle refuses)
        return mo

    @staticmethod
    def _adp(d: int, A: int, eps_amp: float) -> str:
        """multi-freq-ldpy's ``RSpFD_ADP_Client`` rule: RS+FD[GRR] when ``VAR_RSpFD_GRR <=
        VAR_RSpFD_UE_zero`` at ``n = 1, f = 0`` (OUE parameters), with their float expressions."""
        e = np.exp(eps_amp)
        p_grr = e / (e + d - 1)
        q_grr = (1 - p_grr) / (d - 1)
        p_ue, q_ue = 0.5, 1 / (e + 1)
        s_grr = (1 / A) * (q_grr + 0 * (p_grr - q_grr) + (A - 1) / d)
        s_ue = (1 / A) * (A * q_ue + 0 * (p_ue - q_ue))
        var_grr = (A ** 2 * s_grr * (1 - s_grr)) / (1 * (p_grr - q_grr) ** 2)
        var_ue = (A ** 2 * s_ue * (1 - s_ue)) / (1 * (p_ue - q_ue) ** 2)
        return "grr" if var_grr <= var_ue else "oue-z"

    def fake_support(self, j: int) -> tuple[float, float]:
        """The fake report on attribute ``j``: ``(phi, c)`` (:meth:`Fake.support`)."""
        o = self.oracles[j]
        return FAKES[self.fakes[j]].support(o, *o.support_probs())

    def probs(self, j: int) -> tuple[float, float, float, float]:
        """``(p_eff, q_eff, one_eff, neither_eff)`` of attribute ``j``: support probabilities
        given ``x = v`` / ``x != v``, and both-in-support probabilities of two categories
        given ``x`` is one of them / neither."""
        A = self.A
        o = self.oracles[j]
        p, q = o.support_probs()
        one, neither, _ = o.pairs(Float, p, q)
        phi, c = self.fake_support(j)
        return ((p + (A - 1) * phi) / A, (q + (A - 1) * phi) / A,
                (one + (A - 1) * c) / A, (neither + (A - 1) * c) / A)

    def attribute_probs(self, j: int) -> tuple[float, float]:
        pe, qe, _, _ = self.probs(j)
        return pe, qe

    def guessing(self, j: int, ws: Sequence[np.ndarray | None]) -> Guessing:
        """``Pr(y | x) = prod_i F_i(y_i) / A * sum_i T_i(y_i, x_i)`` (:class:`Fake`), so given
        the others' answers integrated out the posterior of ``x_j`` is ``w_j(x) (T_j(y_j, x) +
        rho)``, ``rho = sum_{i != j} sum_x w_i(x) T_i(y_i, x)``: the other reports say how
        likely it is that ``y_j`` is the real one.  ``prediction`` is ``E[max_x posterior]``
        over reports privatized as the sampler privatizes (a seeded Monte Carlo, its standard
        error stated); ``individual`` the report supporting the most likely category alone
        while every other report says as little as it can (``rho`` least): exact."""
        if any(w is None for w in ws):
            raise ValueError("RS+FD's best guess of one attribute needs every attribute's population")
        ws = [np.asarray(w, dtype=float) / np.sum(w) for w in ws]
        rng = np.random.default_rng(GUESS_SEED)
        x = np.column_stack([rng.choice(d, GUESS_DRAWS, p=w) for d, w in zip(self.ds, ws)])
        reports = self.sample(x, RowRandom(GUESS_SEED, rows=range(GUESS_DRAWS)))
        rho, rho_least, T_j = np.zeros(GUESS_DRAWS), 0.0, None
        for i, o in enumerate(self.oracles):
            p, q = o.support_probs()
            fake = FAKES[self.fakes[i]]
            T = fake.ratios(o, p, q, o.membership(reports.values[i]))
            if i == j:
                T_j = T
            else:
                rho += T @ ws[i]
                rho_least += fake.least_mean(o, p, q, ws[i])
        post = ws[j][None, :] * (T_j + rho[:, None])
        best = post.max(axis=1) / post.sum(axis=1)
        se = float(best.std(ddof=1) / math.sqrt(GUESS_DRAWS))
        o = self.oracles[j]
        hi, lo = FAKES[self.fakes[j]].alone(o, *o.support_probs())
        top = float(ws[j].max())
        worst = top * (hi + rho_least) / (top * (hi + rho_least) + (1 - top) * (lo + rho_least))
        return Guessing(float(best.mean()), worst,
                        f"Monte Carlo over {GUESS_DRAWS:,} respondents privatized as the sampler does (seed "
                        f"{GUESS_SEED}), the posterior exact given each whole report: standard error {se:.2g}; "
                        "individual: exact", se)

    def protocol_facts(self) -> dict:
        return {"fake": self.variant, "fakes": list(self.fakes)}

    def likelihood_pair(self, j: int) -> tuple[float, float]:
        """The mixture ``(1/A) real + ((A-1)/A) fake`` of the oracle at the amplified epsilon
        and a fake report (:meth:`Fake.likelihood_pair`); B415 for a random value's bits
        (``_r``), which make the fake's likelihood depend on the support's size: no MLE."""
        o = self.oracles[j]
        pair = FAKES[self.fakes[j]].likelihood_pair(o, *o.support_probs(), self.A)
        if pair is None:
            raise BackendError(Diagnostic("B415", f"rsfd with fake = {self.variant.replace('-', '_')}: a fake report "
                                          "of a random value makes the likelihood depend on the support's size, so "
                                          "there is no IBU here", hint="use by mom, or fake = grr | oue_z | sue_z"))
        return pair

    def sample(self, x: np.ndarray, rng: RowRandom) -> MultiReports:
        n = len(x)
        s = uniform_index(rng.random(n), self.A)
        values = []
        for j, o in enumerate(self.oracles):
            real = o.privatize(x[:, j], rng)
            fake = FAKES[self.fakes[j]].draw(o, n, rng)
            values.append(_rowwise(s == j, real, fake))
        return MultiReports(tuple(values))

    def attribute_estimate(self, j: int, o: Oracle, C: np.ndarray, n: float, project: str) -> np.ndarray:
        if C.shape != (o.d,) or not n > 0:
            raise ValueError(f"attribute {j}: {o.d} counts and n > 0")
        pe, qe, _, _ = self.probs(j)
        return projections.project((C / n - qe) / (pe - qe), project)

    def attribute_covariance(self, j: int, o: Oracle, f: np.ndarray, n: int, conditional: bool,
                             n_attribute: Sequence[int] | None) -> np.ndarray:
        return pure_covariance(*self.probs(j), f, n, conditional)

    def cross(self, j: int, l: int, fj: np.ndarray, fl: np.ndarray, n: int, conditional: bool,
              need: Callable[[], np.ndarray]) -> np.ndarray:
        # at most one of the two is real, the fake one independent of everything
        A, dj, dl = self.A, len(fj), len(fl)
        (pj, qj), (pl, ql) = self.oracles[j].support_probs(), self.oracles[l].support_probs()
        phj, phl = self.fake_support(j)[0], self.fake_support(l)[0]
        mu_j, mu_l = qj + (pj - qj) * fj, ql + (pl - ql) * fl
        both = (np.outer(mu_j, np.full(dl, phl)) + np.outer(np.full(dj, phj), mu_l) + (A - 2) * phj * phl) / A
        cov_z = both - np.outer(mu_j + (A - 1) * phj, mu_l + (A - 1) * phl) / A ** 2
        pop = A ** 2 * cov_z / (n * (pj - qj) * (pl - ql))
        return pop - need() / n if conditional else pop

    def composed_epsilon(self, eps: list[float], neighbours: str) -> float:
        if neighbours == "any":
            return float(max(eps))
        terms = []
        for j, o in enumerate(self.oracles):
            terms.append(FAKES[self.fakes[j]].ratio_terms(o, *o.support_probs()))
        lows = np.array([t[0] for t in terms])
        return float(max(math.log(terms[j][1](lows.sum() - lows[j])) for j in range(self.A)))
