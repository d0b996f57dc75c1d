"""One report model per interval-family mechanism: what its reports look like.

The interval back end (:mod:`.backend`) asks the same questions of every mechanism it
answers for: which data columns hold the reports, how to read and check them, where
the anchors fall, which pieces of the line a report allows, whether there are anchors
at all (censored data have none), which interval mechanism sits underneath for
coverage, which standard errors are honest, how to draw reports.  A
:class:`ReportModel` answers them; :func:`report_model` builds it (once per mechanism
object, weakly cached, as :func:`.compile.channel_of` does for finite mechanisms) and is
the only place that knows which mechanism kind is which, so the back end holds no
branch on a mechanism's kind, only on the capabilities a report model states.

Four report models:

* :class:`IntervalReports` — ``interval(X, scheme(anchor), disclose [a, b])``: written
  ranges, never null; ring ranges only for ``ring``, one-sided Case-I reports for
  ``case1`` without an acceptable range;
* :class:`SelectiveReports` — ``selective(M, tau, rho)``: its base's reports, null where
  not collected; no conditional standard error (not coarsened at random);
* :class:`ProgressiveReports` — ``progressive(X, rounds = h)``: ranges of the support,
  null where the first answer is refused; anchors anywhere in the support;
* :class:`CensoredReports` — ``censored(Y, ...)``: observations as they come, in one
  written column or two end columns; no anchors (B106 for what needs them).

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable y: continuous [0, 10]
... mechanism c1 = interval(y, case1(uniform(0, 10)))
... mechanism sel = selective(c1, tau = 1/10, rho = 1/2)
... ''')
>>> rm = report_model(spec.model.mechanisms["sel"])
>>> type(rm).__name__, rm.has_anchors, rm.allows_null, rm.base.name
('SelectiveReports', True, True, 'c1')
>>> report_model(spec.model.mechanisms["sel"]) is rm     # one per mechanism
True
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np
import pandas as pd

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import (CensoredMechanism, IntervalMechanism, Law, ModelGraph, ProgressiveMechanism,
                     SelectiveMechanism)
from privspec.backends.data.tally import ROWS, Rows, Tally
from privspec.backends.interval.coverage import (Coverage, interval_mechanism_coverage, progressive_mechanism_coverage,
                                                 selective_coverage, symbolic_coverage)
from privspec.backends.interval.estimators import case1_anchor
from privspec.backends.interval.laws import law_distribution, law_support, nearest_double, population_law, support_of
from privspec.backends.interval.mechanisms import (Censored, ends_form, parse_bounds, parse_censored, parse_ranges,
                                                   ranges_sql)
from privspec.backends.interval.range_text import plain_ranges
from privspec.backends.interval.ranges import likelihood_pieces, range_coverage
from privspec.backends.interval.sampling import sample_interval, sample_progressive, sample_selective

__all__ = ["ReportModel", "IntervalReports", "SelectiveReports", "ProgressiveReports", "CensoredReports",
           "report_model", "is_interval_family", "check_censored", "values_and_rows", "mechanism_coverage",
           "coverage_from_data", "sample_reports"]

#: reports checked a block at a time (:meth:`ReportModel.check`)
_CHECK_BLOCK = 1 << 20


# ---- the interface -----------------------------------------------------------------------------------
class ReportModel:
    """What the interval back end needs to know of a mechanism's reports.

    Subclasses set the capabilities (class attributes) and override what differs;
    the defaults describe written ranges ``(l, r]`` (points for disclosed values, ring
    ranges as ``l > r``) in the mechanism's variable's column.

    Attributes
    ----------
    mechanism : Any
        The mechanism described.
    has_anchors : bool
        Whether privspec drew (or could draw) the reports with anchors: False for
        censored data, for which coverage, epsilon, avar, privatize and simulate are
        refused (B106).
    allows_null : bool
        Whether a report may be null (not collected).
    written_ends : bool
        Whether estimates give innermost intervals with their ends as written
        (censored data: closed ends are data ends too) rather than as ``(l, r]``.
    """

    has_anchors: bool = True
    allows_null: bool = False
    #: reports written as parse_ranges reads them (one column): an engine may parse the
    #: plain ones in SQL (:meth:`read_counts`)
    written_as_ranges: bool = True
    written_ends: bool = False

    def __init__(self, mechanism: Any, *, weak: bool = False):
        # the cache of report_model holds its models weakly to their mechanism: a strong
        # reference would keep every mechanism ever read alive through the cache
        ref = None
        if weak:
            try:
                ref = weakref.ref(mechanism)
            except TypeError:  # not weakly referable: hold it
                pass
        self._mechanism = ref if ref is not None else (lambda: mechanism)

    @property
    def mechanism(self) -> Any:
        """The mechanism described."""
        return self._mechanism()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self.mechanism, 'name', None)!r})"

    # -- the design --------------------------------------------------------------------------------------
    @property
    def variable(self) -> Any:
        return self.mechanism.variable

    @property
    def base(self) -> IntervalMechanism | None:
        """The interval mechanism whose anchors cut the line (for coverage); None if none."""
        return None

    @property
    def disclose(self) -> tuple | None:
        """The acceptable range ``[a, b]`` whose values are reported exactly, or None."""
        base = self.base
        return base.disclose if base is not None else None

    @property
    def rings(self) -> bool:
        """Whether ring ranges ``(-inf, a] U (b, inf]`` (written ``l > r``) can be reported:
        the base's scheme is ``ring``."""
        base = self.base
        return base is not None and base.scheme == "ring"

    @property
    def one_sided(self) -> bool:
        """Whether every report is Case-I: ``(-inf, U]`` or ``(U, inf]`` (or cut at the
        support): the base's scheme is ``case1`` and it discloses no range."""
        base = self.base
        return base is not None and base.scheme == "case1" and base.disclose is None

    def anchor_range(self) -> tuple[float, float]:
        """Where the anchors can fall (finite report ends lie there): the anchor law's
        support, or the variable's where the anchors are uniform on the range left."""
        base = self.base
        if base is None:
            return support_of(self.variable)
        return law_support(base.anchor)

    # -- reading data ----------------------------------------------------------------------------------
    def columns(self, column: str) -> list[str]:
        """The data columns the reports of ``column`` (the variable's name) are read from."""
        return [column]

    def read(self, frame: pd.DataFrame | Tally, column: str) -> tuple[np.ndarray, np.ndarray]:
        """The reports in ``frame`` as ``(left, right)`` floats (NaN for nulls), checked:
        one entry per row, or per distinct tuple of a :class:`~.tally.Tally` (weigh them
        by its counts).

        D101 for what is not a report (or a null where none can be), D102 for reports
        the mechanism cannot produce (:meth:`check`).
        """
        values, where = values_and_rows(frame)
        left, right = parse_ranges(values[column], column, allow_null=self.allows_null, where=where)
        self.check(left, right, column, where)
        return left, right

    def read_counts(self, engine: Any, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The reports an engine counts, as ``(left, right, counts)`` per distinct report,
        checked (:meth:`read`).  An engine that parses in SQL (DuckDB) reads the plain
        reports' numbers itself (:func:`.mechanisms.ranges_sql`): no report text
        reaches Python but the few others; the values and the messages are the same."""
        parsed_tally = getattr(engine, "tally_parsed", None)
        if parsed_tally is None or getattr(engine, "_fallback", None) is not None or not self.written_as_ranges:
            tally = engine.tally(self.columns(column))
            left, right = self.read(tally, column)
            return left, right, tally.counts
        prepare, ok, exprs = ranges_sql()
        parsed, counts, rest = parsed_tally(column, prepare, ok, exprs, plain_ranges)
        lt, rt = parse_ranges(rest.values[column], column, allow_null=self.allows_null, where=Rows(rest))
        k = len(counts)
        left, right = parsed.values["e0"].to_numpy(), parsed.values["e1"].to_numpy()
        if len(lt):   # (no copy of millions of ends where every report parsed in SQL)
            left, right = np.concatenate([left, lt]), np.concatenate([right, rt])
            counts = np.concatenate([counts, rest.counts])

        def rows(mask: np.ndarray) -> tuple[int, ...]:
            return tuple(sorted(set(parsed.locate(mask[:k])) | set(rest.locate(mask[k:]))))

        self.check(left, right, column, Rows(locator=rows))
        return left, right, counts

    def check(self, left: np.ndarray, right: np.ndarray, column: str, where: Rows = ROWS) -> None:
        """DataError (D102) naming the rows whose reports the mechanism cannot have produced."""
        # millions of reports are checked a block at a time, the dozen masks of a block
        # staying in cache (at 1e7 reports: 0.10-0.11 s where all at once took 0.15-0.41
        # s); the rows are named from the masks of all reports, computed only when some
        # block fails
        block = _CHECK_BLOCK
        if left.size > block and not any(
                mask.any() for s in range(0, left.size, block)
                for mask, _, _ in self._problems(left[s:s + block], right[s:s + block])):
            return
        for mask, message, hint in self._problems(left, right):
            if mask.any():
                rows = where(mask)
                raise DataError(Diagnostic("D102", f"{len(rows)} report(s) the mechanism '{self.mechanism.name}' "
                                                   f"cannot produce: {message}", rows=rows,
                                           columns=(column,), hint=hint))

    def _problems(self, left: np.ndarray, right: np.ndarray) -> list[tuple[np.ndarray, str, str]]:
        """What :meth:`check` looks for: per kind of impossible report, its mask over the
        reports, the message and the hint."""
        mech = self.mechanism
        var = mech.variable
        lo, hi = support_of(var)
        disclose = self.disclose
        point = left == right
        ring = left > right
        problems = []
        if disclose is None and point.any():
            problems.append((point, "disclosed values, but the mechanism has no acceptable range",
                             "declare one: interval(X, case1(...), disclose [a, b])"))
        elif disclose is not None:
            a, b = nearest_double(disclose[0]), nearest_double(disclose[1])
            bad = point & ((left < a) | (left > b))
            problems.append((bad, f"disclosed values outside the acceptable range [{a:g}, {b:g}]",
                             "only values in the acceptable range are reported exactly"))
        if not self.rings and ring.any():
            problems.append((ring, "ring ranges (-inf, a] | (b, inf], but the mechanism is not a ring design",
                             "ring ranges come from interval(X, ring(q, ...))"))
        if self.one_sided:
            # Case I reports are open on one side: (-inf, U] or (U, inf] (or cut at the support)
            closed = (left < right) & (left > lo) & (right < hi)
            problems.append((closed, "bounded intervals, but Case-I reports are (-inf, U] or (U, inf]",
                             "is the data bound to the right mechanism? --data MECHANISM=FILE"))
        interval = left < right
        # the whole line is never a report: one anchor always cuts it (nothing collected is null).
        # An end beyond the support is an anchor (the stray check below tests it), so (U, inf]
        # with U < lo is a report (Case I with anchors wider than the support, as in the
        # interval paper's Fig. 14); only ends at the bounds or infinite make the whole line
        whole = interval & ((left == lo) | np.isneginf(left)) & ((right == hi) | np.isposinf(right))
        problems.append((whole, f"the whole range of {var.name} ((-inf, inf]): every report of this mechanism "
                                "rules some values out", "a respondent who reported nothing is written null"))
        # finite ends are anchors: they lie where the anchor law puts mass (an end exactly at the
        # variable's support bound stands for -inf or inf, as when reports are written within the
        # support; an end beyond it is an anchor, possible only where the anchor law reaches)
        alo, ahi = self.anchor_range()
        end_l = np.isfinite(left) & (ring | (interval & (left != lo)))
        end_r = np.isfinite(right) & (ring | (interval & (right != hi)))
        stray = (end_l & ((left < alo) | (left > ahi))) | (end_r & ((right < alo) | (right > ahi)))
        problems.append((stray, f"interval ends outside [{alo:g}, {ahi:g}], where this mechanism's anchors fall",
                         "is the data bound to the right mechanism? --data MECHANISM=FILE"))
        # a range must meet the support (cut to it: (l, r] with l < hi and r > lo)
        outside = (interval & ((left >= hi) | (right <= lo))) | (point & ((left < lo) | (left > hi)))
        problems.append((outside, f"reports outside the support [{lo:g}, {hi:g}] of {var.name}",
                         "a report must contain possible values of the variable"))
        return problems

    def conditional_se_refusal(self) -> str | None:
        """Why ``se = conditional`` has no honest standard error here (B140's message), or None."""
        return None

    def extras(self) -> dict:
        """What a result from these data says about how they were read (nothing by default)."""
        return {}

    # -- the likelihood ----------------------------------------------------------------------------------
    def likelihood_pieces(self, left: np.ndarray, right: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pieces whose union a report allows: cut to the support, the acceptable
        range taken out (:func:`.ranges.likelihood_pieces`)."""
        return likelihood_pieces(left, right, support_of(self.variable), self.disclose)

    # -- coverage ------------------------------------------------------------------------------------------
    def coverage(self, population: Law | None) -> Coverage:
        """tau(M) as a :class:`.coverage.Coverage`; symbolic in F without a population."""
        if population is None:
            return symbolic_coverage(self.mechanism)
        return self._coverage(population)

    def _coverage(self, population: Law) -> Coverage:
        # no design to cover with (censored data never get here: B106 comes first)
        raise BackendError(Diagnostic("B103", f"'{self.mechanism.name}' is not an interval mechanism"))

    def coverage_from_data(self, left: np.ndarray, right: np.ndarray, counts: np.ndarray,
                           cdf: Callable) -> tuple[float, str]:
        """The data-based coverage estimate and which estimator it is.

        Case I (one-sided reports): Theorem 1's estimator with the anchor in each
        report; otherwise the mean individual coverage L(S_z), nulls counting 1.
        """
        counts = np.asarray(counts, dtype=float)
        n = counts.sum()
        # Theorem 1's estimator needs every respondent's anchor: nulls (selective) hide theirs
        if self.one_sided and not self.allows_null:
            u, _ = case1_anchor(left, right, *support_of(self.variable))
            fu = cdf(u)
            return float(np.sum(counts * (fu ** 2 + (1 - fu) ** 2)) / n), "Theorem 1 estimator (anchors in the data)"
        cov = range_coverage(left, right, cdf, self.disclose)
        cov = np.where(np.isnan(left), 1.0, cov)
        return float(np.sum(counts * cov) / n), "mean individual coverage L(S_z)"

    # -- drawing reports -----------------------------------------------------------------------------------
    def draw(self, model: ModelGraph, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Reports for true values ``y`` (NaN where not collected); B103 where privspec draws none."""
        raise BackendError(Diagnostic("B103", f"'{getattr(self.mechanism, 'name', self.mechanism)}' is not an "
                                              "interval mechanism"))


# ---- privacy mechanisms ------------------------------------------------------------------------------
class IntervalReports(ReportModel):
    """``interval(X, scheme(anchor), disclose [a, b])``: one range per respondent, never null.

    Examples
    --------
    >>> import numpy as np, privspec
    >>> m = privspec.load("variable y: continuous [0, 10]\\n"
    ...                   "mechanism r = interval(y, ring(3, uniform(0, 10)))").model.mechanisms["r"]
    >>> rm = report_model(m)
    >>> rm.rings, rm.one_sided, rm.anchor_range()
    (True, False, (0.0, 10.0))
    >>> rm.check(np.array([7.0, 2.0]), np.array([2.0, 5.0]), "y")   # a ring range and an interval: fine
    """

    @property
    def base(self) -> IntervalMechanism:
        return self.mechanism

    def _coverage(self, population: Law) -> Coverage:
        return interval_mechanism_coverage(self.mechanism, population)

    def draw(self, model: ModelGraph, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return sample_interval(self.mechanism, y, rng)


class SelectiveReports(IntervalReports):
    """``selective(M, tau, rho)``: the base's reports, collected only where their coverage
    reaches tau and a coin says so (null otherwise).

    Whether a report is collected depends on the value, so the reports are not
    coarsened at random: no conditional standard error (B140).
    """

    allows_null = True

    def conditional_se_refusal(self) -> str | None:
        return (f"se = conditional is not offered for the selective mechanism '{self.mechanism.name}': whether a "
                "report is collected depends on the value (its coverage must reach tau), so the reports are "
                "not coarsened at random and the conditional variance is not the population one less "
                "Var(Y)/n")

    @property
    def base(self) -> IntervalMechanism:
        return self.mechanism.base

    def _coverage(self, population: Law) -> Coverage:
        # a null report counts with coverage 1 (quasi-Monte Carlo over the base's anchors)
        return selective_coverage(self.mechanism, law_distribution(population).cdf)

    def draw(self, model: ModelGraph, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        mech = self.mechanism
        return sample_selective(mech, y, rng, law_distribution(selective_population(model, mech)).cdf)


class ProgressiveReports(ReportModel):
    """``progressive(X, rounds = h)``: the range left after the answered rounds (null when
    the first answer is refused); anchors uniform on the current range, so anywhere in
    the variable's support; no acceptable range."""

    allows_null = True

    def _coverage(self, population: Law) -> Coverage:
        return progressive_mechanism_coverage(self.mechanism, population)

    def draw(self, model: ModelGraph, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return sample_progressive(self.mechanism, y, rng)


# ---- censored data as they come ----------------------------------------------------------------------
class CensoredReports(ReportModel):
    """``censored(Y, ...)``: interval-censored observations as they come, no anchors.

    One column named after ``Y`` (each row with its brackets) or the two columns
    ``lower``/``upper``; the ends become half-open intervals of doubles
    (:meth:`.mechanisms.Censored.encoded`, exact).

    Examples
    --------
    >>> import pandas as pd, privspec
    >>> m = privspec.load("variable t: continuous [0, inf]\\n"
    ...                   "mechanism v = censored(t, lower = a, upper = b)").model.mechanisms["v"]
    >>> rm = report_model(m)
    >>> rm.has_anchors, rm.columns("t")
    (False, ['a', 'b'])
    >>> left, right = rm.read(pd.DataFrame({"a": ["0", "2"], "b": ["3", ""]}), "t")
    >>> left.tolist(), right.tolist()
    ([0.0, 2.0], [3.0, inf])
    """

    has_anchors = False
    written_ends = True
    written_as_ranges = False

    def columns(self, column: str) -> list[str]:
        return list(self.mechanism.columns)

    def observations(self, frame: pd.DataFrame | Tally) -> Censored:
        """The observations, parsed in the mechanism's layout and checked (D1xx name rows and
        columns); per row, or per distinct tuple of a tally."""
        mech = self.mechanism
        values, where = values_and_rows(frame)
        if mech.lower is not None:
            columns = (mech.lower, mech.upper)
            obs = parse_bounds(values[mech.lower], values[mech.upper], columns, mech.ends, where)
        else:
            columns = (mech.variable.name,)
            obs = parse_censored(values[columns[0]], columns[0], mech.ends, where)
        check_censored(mech, obs, columns, where)
        return obs

    def read(self, frame: pd.DataFrame | Tally, column: str) -> tuple[np.ndarray, np.ndarray]:
        return self.observations(frame).encoded()

    def extras(self) -> dict:
        mech = self.mechanism
        if mech.ends is not None:
            ends = f"{ends_form(mech.ends)} ({mech.ends}, declared)"
        elif mech.lower is not None:
            ends = "(a, b] (right_closed, the default of the two-column layout)"
        else:
            ends = "as each row is written"
        layout = (f"columns {mech.lower} (lower end) and {mech.upper} (upper end)" if mech.lower is not None
                  else f"one column {mech.variable.name}, written intervals")
        return {"data": f"interval-censored observations ({layout}); ends {ends}",
                "assumes": "non-informative censoring: the censoring sets carry no information on Y beyond "
                           "holding it (as Turnbull's NPMLE and every parametric fit of censored data do)"}


def values_and_rows(data: pd.DataFrame | Tally) -> tuple[pd.DataFrame, Rows]:
    """The values to parse and where they sit in the file: a frame's rows, or a tally's
    distinct tuples."""
    if isinstance(data, Tally):
        return data.values, Rows(data)
    return data, ROWS


def check_censored(mech: CensoredMechanism, obs: Censored, columns: tuple[str, ...], where: Rows = ROWS) -> None:
    """D110 naming the rows whose observation leaves the variable's support.

    A finite end must lie in the support ``[lower, upper]`` (an infinite end says only
    "beyond", and is always allowed), and the observed set must hold a value of it:
    ``(upper, inf)`` and ``(-inf, lower)`` hold none.

    Examples
    --------
    >>> import sympy
    >>> from privspec.model.graph import Variable
    >>> m = CensoredMechanism("obs", Variable("t", "continuous", lower=sympy.Integer(0)))
    >>> check_censored(m, parse_censored(["(0, 3]", "[2, inf)", "(-inf, 0]", "(-inf, 0)"]), ("t",))
    Traceback (most recent call last):
    ...
    privspec.errors.DataError: ...D110...1 observation(s) of t that hold no value of its support [0, inf]...
    """
    var = mech.variable
    lo, hi = support_of(var)
    left, right = obs.left, obs.right
    first, last = columns[0], columns[-1]
    two = len(columns) > 1
    support = f"its support [{lo:g}, {hi:g}]"
    problems = [(np.isfinite(left) & ((left < lo) | (left > hi)),
                 f"{'lower ends' if two else 'values or ends'} of {var.name} outside {support}", (first,)),
                (np.isfinite(right) & ((right < lo) | (right > hi)) & (left != right),
                 f"{'upper ends' if two else 'ends'} of {var.name} outside {support}", (last,))]
    # the set meets [lo, hi]: its left end against hi, its right end against lo
    a, b = np.maximum(left, lo), np.minimum(right, hi)
    a_in = np.where(a == left, obs.left_closed, True)
    b_in = np.where(b == right, obs.right_closed, True)
    empty = (a > b) | ((a == b) & ~(a_in & b_in))
    problems.append((empty, f"observation(s) of {var.name} that hold no value of {support}",
                     tuple(dict.fromkeys(columns))))
    for mask, message, cols in problems:
        if mask.any():
            rows = where(mask)
            raise DataError(Diagnostic(
                "D110", f"{len(rows)} {message}", rows=rows, columns=cols,
                hint=f"correct these rows, or declare the support the data need: variable {var.name}: "
                     "continuous [a, b] (an unknown end is -inf or inf)"))


# ---- the one place that knows the kinds --------------------------------------------------------------
#: mechanism class -> its report model (the only table of interval mechanism kinds)
_KINDS: dict[type, type[ReportModel]] = {
    IntervalMechanism: IntervalReports,
    SelectiveMechanism: SelectiveReports,
    ProgressiveMechanism: ProgressiveReports,
    CensoredMechanism: CensoredReports,
}
#: id(mechanism) -> its report model, dropped when the mechanism is collected
_MODELS: dict[int, ReportModel] = {}


def is_interval_family(mechanism: Any) -> bool:
    """Whether ``mechanism`` has a report model (an interval-family mechanism).

    >>> is_interval_family(None), is_interval_family("c1")
    (False, False)
    """
    return _kind_of(mechanism) is not None


def _kind_of(mechanism: Any) -> type[ReportModel] | None:
    for cls, kind in _KINDS.items():
        if isinstance(mechanism, cls):
            return kind
    return None


def report_model(mechanism: Any) -> ReportModel:
    """The report model of an interval-family mechanism, built once per mechanism object
    (cached weakly, as :func:`.compile.channel_of` caches channels).

    Raises TypeError for anything else (:func:`is_interval_family` asks first).

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("variable y: continuous [0, 10]\\n"
    ...                   "mechanism p = progressive(y, rounds = 2)").model.mechanisms["p"]
    >>> rm = report_model(m)
    >>> rm, rm.base, rm.allows_null, rm.anchor_range()
    (ProgressiveReports('p'), None, True, (0.0, 10.0))
    """
    kind = _kind_of(mechanism)
    if kind is None:
        raise TypeError(f"{type(mechanism).__name__} is not an interval-family mechanism")
    # keyed by identity, not equality: a model describes this very object (its name and
    # spans), and equal mechanisms from two specs must not keep each other alive
    hit = _MODELS.get(id(mechanism))
    if hit is not None and hit.mechanism is mechanism:
        return hit
    try:
        weakref.finalize(mechanism, _MODELS.pop, id(mechanism), None)
    except TypeError:  # not weakly referable (never from the front end): no cache
        return kind(mechanism)
    hit = _MODELS[id(mechanism)] = kind(mechanism, weak=True)
    return hit


# ---- what every report model answers, asked of a mechanism ---------------------------------------------
def mechanism_coverage(mech: Any, population: Law | None) -> Coverage:
    """tau(M) for any interval-family mechanism; symbolic in F when no population is given.

    Which formula applies is the mechanism's report model's to say
    (:meth:`ReportModel.coverage`: :func:`.coverage.interval_mechanism_coverage`,
    :func:`.coverage.selective_coverage` or :func:`.coverage.progressive_mechanism_coverage`).
    """
    if population is None:
        return symbolic_coverage(mech)
    if not is_interval_family(mech):
        raise BackendError(Diagnostic("B103", f"'{mech.name}' is not an interval mechanism"))
    return report_model(mech).coverage(population)


def coverage_from_data(left: np.ndarray, right: np.ndarray, counts: np.ndarray, mech: Any,
                       cdf: Callable) -> tuple[float, str]:
    """The data-based coverage estimate, with a word on which estimator it is.

    Case I (no acceptable range): n^-1 sum_i [F(u_i)^2 + (1 - F(u_i))^2] with u_i the
    anchor in each report (the by-product of Theorem 1's proof).  Otherwise the mean
    individual coverage n^-1 sum_i L(S_{z_i}) (nulls count 1), which is unbiased for
    E[L(S_Z)] but uses only the collected range, as the data hold no other anchors.
    The report model knows which estimator the mechanism's reports allow
    (:meth:`ReportModel.coverage_from_data`).
    """
    return report_model(mech).coverage_from_data(left, right, counts, cdf)


def sample_reports(model: ModelGraph, mech: Any, y: np.ndarray, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Reports of any interval-family mechanism for true values ``y`` (its report model
    draws them: :meth:`ReportModel.draw`); B103 for anything else."""
    if not is_interval_family(mech):
        raise BackendError(Diagnostic("B103", f"'{getattr(mech, 'name', mech)}' is not an interval mechanism"))
    return report_model(mech).draw(model, y, rng)


def selective_population(model: ModelGraph, mechanism: Any, name: str | None = None) -> Any:
    """The population law a selective mechanism's draw needs (it keeps a report by its
    coverage under it: Definition 5); B102 without one.  ``name``: the mechanism's name in
    the message (its own by default)."""
    law = population_law(model, mechanism.variable)
    if law is None:
        raise BackendError(Diagnostic(
            "B102", f"the selective mechanism '{name or mechanism.name}' keeps a report only if its coverage "
                    f"L(S_Z) >= {mechanism.tau}, and coverage needs the population of {mechanism.variable.name}",
            hint=f"declare it: population {mechanism.variable.name} ~ normal(0, 1) (or an estimate of it: "
                 "Way II of section III-D)"))
    return law
