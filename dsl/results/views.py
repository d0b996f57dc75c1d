"""Results as data scientists read them: pandas objects with labels, statsmodels' names.

:class:`ResultViews` is mixed into :class:`privspec.results.result.Result`; every accessor reads
the result's value and its named fields (the JSON contract; each kind's class in
:mod:`privspec.results.kinds` declares those it has), so nothing is computed twice:

* estimates: ``params`` (a Series by category, a MultiIndex Series for joint tables, one
  entry for a mean or moment), ``bse``, ``cov_params()`` (the estimator's covariance,
  labelled), ``conf_int(alpha)`` (one method at every level: ``ci_method``), ``nobs``,
  ``method``, ``se_kind``;
* matrices (``avar``, ``fisher``, one of ``moments``): ``frame()`` / ``cov_params()``, a
  DataFrame labelled by category;
* tests: ``statistic``, ``df``, ``pvalue``, ``method``;
* every result: ``to_frame()`` (a labelled table, the natural one for its kind),
  ``to_long()`` (its numbers, one a row: label, statistic, value), ``plot()`` and
  ``_repr_html_()`` (the table in HTML).

Examples
--------
>>> from privspec.results.kinds import Estimate
>>> from privspec.results.values import Vector
>>> r = Estimate(Vector(("a", "b"), (0.25, 0.75)), method="mom", n=400, se=Vector(("a", "b"), (0.02, 0.02)),
...              se_kind="population")
>>> r.params.round(2).to_dict(), r.nobs
({'a': 0.25, 'b': 0.75}, 400)
>>> r.conf_int(0.1).round(4).values.tolist()        # built by hand, no ci95: Wald at every level
[[0.2171, 0.2829], [0.7171, 0.7829]]
>>> r.ci_method
'wald (estimate +- z se)'

"""
from __future__ import annotations

import html
import numbers
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.results import plots
from privspec.results.layout import NOISE
from privspec.results.values import Matrix, StepFunction, Table, TestResult, Vector, flatten, to_json


def _pd():
    # only the Python API's views need pandas, never the command line's reports
    import pandas as pd  # start-up: about 0.6 s beyond the scipy and sympy a result loads already

    return pd


#: the intervals of a result built by hand with standard errors and no ``ci95``
WALD = "wald (estimate +- z se)"


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


class ResultViews:
    """Accessors of :class:`privspec.results.result.Result` (see the module docstring)."""

    kind: str
    value: Any
    extras: Any
    fit: Any
    inference: Any
    query: Any

    # -- the fields the views read: None for a result whose kind has none (a kind's class in
    # privspec.results.kinds declares those it has)
    #: the estimator, test or method that produced the result
    method: str | None = None
    #: ``population`` or ``conditional`` (which question the standard errors answer)
    se_kind: str | None = None
    #: respondents
    n: int | None = None
    #: standard errors, labelled like the value
    se: Any = None
    #: the back end's 95% intervals
    ci95: Any = None
    #: how the back end made them
    ci95_method: str | None = None
    #: what the labels of a vector value are (its index's name)
    LABELS = "category"

    @property
    def nobs(self) -> int | None:
        """Respondents the estimate is from."""
        n = self.n
        return int(n) if isinstance(n, (int, float)) else None

    # -- estimates ----------------------------------------------------------------------------------
    @property
    def params(self) -> Any:
        """The estimate as a labelled Series (index: category; joint tables: one level per
        variable; a mean or moment: the query's kind)."""
        if isinstance(self.value, StepFunction):
            raise TypeError("this estimate is a distribution function (masses on innermost intervals): use "
                            "cdf(x), band(x), quantile(q), mean() or to_frame()")
        return self._series(self.value, self.kind)

    @property
    def bse(self) -> Any:
        """Standard errors, labelled like :attr:`params` (None when none were computed)."""
        return None if self.se is None else self._series(self.se, "se")

    @property
    def ci_method(self) -> str | None:
        """How the intervals of :meth:`conf_int` are made, at every level."""
        if self.inference is not None:
            return self.inference.method
        if self.ci95 is None and self.se is not None:
            return WALD
        return self.ci95_method

    def conf_int(self, alpha: float = 0.05) -> Any:
        """Confidence intervals at level ``1 - alpha`` as a DataFrame (``lower``, ``upper``),
        made by one method at every level: the back end's own (profile likelihood, score,
        jackknife t, Wald clipped to [0, 1]: :attr:`ci_method`), asked again at that level.
        At 95% they are the result's ``ci95``.  The frame's ``attrs`` hold ``method`` and
        ``level``.

        A result without a back end behind it (one built by hand) has Wald intervals
        ``params -+ z bse`` at every level where it carries no ``ci95``, and only its
        ``ci95`` otherwise.
        """
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
        pd = _pd()
        params = self.params
        level = 1.0 - alpha
        ci = self.ci95
        method = self.ci_method
        if ci is not None and abs(alpha - 0.05) < 1e-12:  # the back end's own, as printed
            if isinstance(ci, dict) and set(ci) == {"lower", "upper"}:  # joint tables: a table each
                lower, upper = self._series(ci["lower"], "lower"), self._series(ci["upper"], "upper")
            else:
                rows = [_ci_row(ci, k) for k in params.index] if isinstance(ci, dict) else [ci]
                lower, upper = [_float(a) for a, _ in rows], [_float(b) for _, b in rows]
        elif self.inference is not None and self.inference.interval is not None:
            lower, upper = self.inference.interval(level)
        elif ci is None and self.bse is not None:
            z = float(scipy.stats.norm.ppf(1 - alpha / 2))
            lower, upper = params - z * self.bse, params + z * self.bse
        elif ci is not None:
            raise ValueError(f"this {self.kind} result has its 95% intervals only ({method}): ask for alpha = 0.05")
        else:
            raise ValueError(f"no standard errors for this {self.kind} result: no interval")
        out = pd.DataFrame({"lower": np.asarray(lower, dtype=float).ravel(),
                            "upper": np.asarray(upper, dtype=float).ravel()}, index=params.index)
        out.attrs.update(method=method, level=level)
        return out

    def _series(self, value: Any, name: str) -> Any:
        pd = _pd()
        if isinstance(value, Vector):
            return pd.Series([_float(v) for v in value.values], index=pd.Index(value.labels, name=self.LABELS),
                             name=name)
        if isinstance(value, Table):
            index = pd.MultiIndex.from_product([list(lab) for lab in value.labels], names=list(value.variables))
            return pd.Series(np.asarray(value.data, dtype=float).ravel(), index=index, name=name)
        if isinstance(value, dict):
            return pd.Series({k: _float(v) for k, v in value.items()}, name=name)
        if isinstance(value, (list, tuple)):
            return pd.Series([_float(v) for v in value], name=name)
        return pd.Series([_float(value)], index=pd.Index([self.kind]), name=name)

    # -- matrices ------------------------------------------------------------------------------------
    def frame(self, which: str | None = None) -> Any:
        """A matrix result as a DataFrame labelled by its rows and columns (``which``: the
        matrix of a ``moments`` result, ``Q``, ``H`` or ``C``)."""
        value = self.value
        if which is not None:
            value = value[which]
        if not isinstance(value, Matrix):
            raise TypeError(f"this {self.kind} result is not a matrix")
        data = to_json(value)["data"]
        return _pd().DataFrame([[_float(x) for x in row] for row in data], index=list(value.rows),
                               columns=list(value.cols))

    def cov_params(self) -> Any:
        """The covariance as a DataFrame labelled like :attr:`params` (a joint table's cells
        by a MultiIndex): an ``avar`` result's matrix (``n Var`` in the limit), or for an
        estimate the estimator's covariance, the one ``avar`` derives evaluated at the
        estimate and divided by n (of the kind :attr:`se_kind` says; its diagonal is
        ``bse ** 2``, and where the estimate sums to 1 each row sums to 0).

        Raises ValueError where the estimator has none (a projection moved the estimate,
        ``truncated``, a fit on the boundary), saying why.
        """
        if isinstance(self.value, Matrix):
            return self.frame()
        params = self.params
        inf = self.inference
        if inf is not None and inf.covariance is not None:
            cov = np.asarray(inf.covariance(), dtype=float)
        elif inf is not None:
            raise ValueError(f"no covariance for this {self.kind} result: {inf.no_covariance or 'not computed'}")
        elif self.bse is not None and len(params) == 1:  # one number: its variance is all there is
            cov = np.asarray(self.bse, dtype=float).reshape(1, 1) ** 2
        else:
            raise ValueError(f"no covariance for this {self.kind} result: " +
                             ("only standard errors were given (the off-diagonal covariances are not known)"
                              if self.bse is not None else "no standard errors"))
        return _pd().DataFrame(cov, index=params.index, columns=params.index)

    # -- distribution functions (an NPMLE of F) ---------------------------------------------------------
    def _distribution(self) -> Any:
        if self.fit is None or not hasattr(self.fit, "cdf"):
            raise TypeError(f"this {self.kind} result is not an estimated distribution function "
                            "(estimate cdf(Y) from M by npmle)")
        return self.fit

    def cdf(self, x: Any) -> Any:
        """``F(x)`` of the estimate at any points (the NPMLE's mass at the right end of each
        innermost interval)."""
        return self._distribution().cdf(x)

    def survival(self, x: Any) -> Any:
        """``1 - F(x)``."""
        return 1.0 - self.cdf(x)

    def quantile(self, q: Any) -> Any:
        """The estimate's quantiles at probabilities ``q``."""
        return self._distribution().quantile(q)

    def mean(self, alpha: float = 0.05, se: str = "population") -> Any:
        """The mean of the estimated distribution with its standard error: :meth:`moment` 1."""
        return self.moment(1, alpha=alpha, se=se)

    def moment(self, order: int = 1, alpha: float = 0.05, se: str = "population") -> Any:
        """``E[Y^order]`` under the estimate with its jackknife standard error and ``1 - alpha``
        interval, as ``estimate moment(Y, order) from M by npmle`` answers it (each innermost
        interval's mass at its midpoint; ``range`` spans every placement).

        Returns a Series: ``estimate``, ``se``, ``lower``, ``upper``, ``range_lower``,
        ``range_upper``, ``se_kind`` and ``se_method``. ``se``: ``population`` (sampling and
        privacy noise) or ``conditional`` (the respondents' own mean, privacy noise only).
        """
        value, extras = self._distribution().moment(int(order), level=1.0 - alpha, kind=se)
        lower, upper = extras["ci95"]
        lo, hi = extras["range"]
        return _pd().Series({"estimate": float(value), "se": _float(extras["se"]), "lower": _float(lower),
                             "upper": _float(upper), "range_lower": _float(lo), "range_upper": _float(hi),
                             "se_kind": extras["se_kind"], "se_method": extras["se_method"]},
                            name=f"E[Y^{order}]" if order != 1 else "E[Y]")

    def band(self, x: Any, alpha: float = 0.05) -> Any:
        """Pointwise ``1 - alpha`` confidence bounds for ``F(x)`` at any points (the profile
        likelihood ratio), as a DataFrame indexed by ``x``."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        lower, upper = self._distribution().band(x, alpha)
        return _pd().DataFrame({"cdf": self.cdf(x), "lower": lower, "upper": upper}, index=_pd().Index(x, name="x"))

    def plot(self, x: Any = None, alpha: float = 0.05) -> Any:
        """The natural picture of the result, a matplotlib Figure (the ``plot`` extra),
        labelled with the spec's own names (the query, its estimand, mechanism and
        estimator; the variable on the axis): a CDF with its pointwise band at ``x``
        (default: 41 points over the data), estimates with their ``1 - alpha`` intervals
        (:meth:`conf_int`), a matrix as a heat map, a ``power`` result's curve over n and
        a ``sample_size`` result's criterion over n with the target marked."""
        names = self.names()
        if isinstance(self.value, StepFunction):
            band = None
            if self.fit is not None and getattr(self.fit, "rows", False):
                if x is None:
                    ends = np.asarray(self.value.intervals, dtype=float)
                    ends = ends[np.isfinite(ends)]
                    x = np.linspace(ends.min(), ends.max(), 41) if ends.size else None
                if x is not None:
                    b = self.band(x, alpha)
                    band = (b.index.to_numpy(), b["lower"].to_numpy(), b["upper"].to_numpy())
            var = names.variable or "y"
            return plots.figure_cdf(self, band, title=names.title(), xlabel=var, ylabel=f"F({var}) = P({var} <= x)")
        if isinstance(self.value, Matrix):
            return plots.figure_matrix(self.frame(), title=names.title(), xlabel=names.axis, ylabel=names.axis)
        params = self.params
        try:
            ci = self.conf_int(alpha)
        except ValueError:
            return plots.figure_estimates(params, title=names.title(), xlabel=names.value_axis(), ylabel=names.axis)
        return plots.figure_estimates(params, ci["lower"], ci["upper"], title=names.title(),
                                      xlabel=names.value_axis(), ylabel=names.axis,
                                      interval=f"{1 - alpha:.0%} interval, {ci.attrs['method']}")

    def names(self) -> "Names":
        """The result's labels in the spec's own words (for plots)."""
        return Names(self)

    def title_subject(self, estimand: Any, mechanism: str | None) -> str:
        """What a plot's title says the result is: its kind, the spec's estimand and
        mechanism, and the method."""
        what = self.kind
        if estimand is not None:
            what += f" of {estimand}"
        elif mechanism:
            what += f"({mechanism})"
        if estimand is not None and mechanism:
            what += f" from {mechanism}"
        if self.method:
            what += f" by {self.method}"
        return what

    # -- tests -----------------------------------------------------------------------------------------
    @property
    def _test(self) -> Any:
        return self.value if isinstance(self.value, TestResult) else None

    @property
    def statistic(self) -> float | None:
        return None if self._test is None else float(self._test.statistic)

    @property
    def df(self) -> float | None:
        return None if self._test is None or self._test.df is None else float(self._test.df)

    @property
    def pvalue(self) -> float | None:
        return None if self._test is None else float(self._test.p_value)

    # -- tables ---------------------------------------------------------------------------------------
    def to_frame(self) -> Any:
        """The result as a labelled table: estimates with ``estimate``, ``se``, ``lower``,
        ``upper`` per category; a matrix as itself; a test as one row; ``moments`` as the
        stacked matrices; anything else as key/value rows."""
        pd = _pd()
        value = self.value
        if self._test is not None:
            return pd.DataFrame([{"method": self.method, "statistic": self.statistic, "df": self.df,
                                  "pvalue": self.pvalue}])
        if isinstance(value, Matrix):
            return self.frame()
        if isinstance(value, dict) and value and any(isinstance(v, Matrix) for v in value.values()):
            # moments: the matrices stacked (Q, H, C), a vector (gamma) as one row
            blocks = {k: self.frame(k) if isinstance(v, Matrix) else self._series(v, k).to_frame().T
                      for k, v in value.items()}
            return pd.concat(blocks, names=["matrix", "row"])
        if isinstance(value, StepFunction):
            return pd.DataFrame({"left": [a for a, _ in value.intervals], "right": [b for _, b in value.intervals],
                                 "mass": list(value.mass)})
        if isinstance(value, (Vector, Table)):
            return self.estimate_frame()
        d = self.to_dict()
        if not isinstance(d["value"], (dict, list)):  # one number (coverage, epsilon, a mean)
            row = {"value": d["value"] if d["value"] is not None else d.get("expr")}
            if "expr" in d:
                row["exact"] = d["expr"]
            for k in ("se", "ci95"):
                if k in d:
                    row[k] = d[k]
            return pd.DataFrame([row], index=pd.Index([self.kind]))
        if isinstance(d["value"], dict):
            return _records(d["value"], d.get("expr") if isinstance(d.get("expr"), dict) else None)
        return pd.DataFrame(list(flatten(d["value"])), columns=["key", "value"])

    def estimate_frame(self) -> Any:
        """:attr:`params` as a frame, with ``se``, ``lower`` and ``upper`` where the result has them."""
        out = self.params.to_frame()
        if self.bse is not None:
            out["se"] = self.bse
        try:
            ci = self.conf_int()
            out["lower"], out["upper"] = ci["lower"], ci["upper"]
        except ValueError:
            pass
        return out

    def to_long(self) -> Any:
        """The result's numbers as a tidy long table, one number a row: ``label`` (the row
        of :meth:`to_frame`: a category, a matrix row, a joint table's cell as ``a1, b2``;
        empty for a result of one row), ``statistic`` (its column: ``estimate``, ``se``,
        ``lower``, ``upper``, a matrix column, ``value`` ...) and ``value`` (a float).
        Text cells (a method's name, an exact form) are left out: they are in
        :meth:`to_frame` and the JSON.

        Examples
        --------
        >>> from privspec.results.kinds import Estimate
        >>> from privspec.results.values import Vector
        >>> r = Estimate(Vector(("a", "b"), (0.25, 0.75)), se=Vector(("a", "b"), (0.02, 0.02)))
        >>> r.to_long().head(3).to_dict("records")
        [{'label': 'a', 'statistic': 'estimate', 'value': 0.25}, {'label': 'a', 'statistic': 'se', 'value': 0.02}, {'label': 'a', 'statistic': 'lower', 'value': 0.21080...}]
        """
        pd = _pd()
        frame = self.to_frame()
        one = len(frame) == 1 and (isinstance(frame.index, pd.RangeIndex) or list(frame.index) == [self.kind])
        rows = []
        for idx, row in frame.iterrows():
            label = "" if one else ", ".join(map(str, idx)) if isinstance(idx, tuple) else str(idx)
            for col, cell in row.items():
                x = _number(cell)
                if x is not None:
                    rows.append((label, str(col), x))
        return pd.DataFrame(rows, columns=["label", "statistic", "value"])

    def _repr_html_(self) -> str:
        """:meth:`to_frame` as an HTML table, under the query's kind and method."""
        head = html.escape(self.kind + (f" by {self.method}" if self.method else ""))
        frame = self.to_frame()
        cells = frame.select_dtypes("number").to_numpy(dtype=float, na_value=float("nan")).ravel()
        finite = abs(cells[np.isfinite(cells)])
        floor = NOISE * (finite.max() if finite.size else 0.0)  # rounding noise beside the table's largest entry
        # six significant digits, not pandas' six decimals (0.000380 would hide a digit)
        table = frame.to_html(float_format=lambda v: "0" if abs(v) < floor else f"{v:.6g}")
        return f"<div><strong>{head}</strong>{table}</div>"


class Names:
    """A result's labels in the spec's own words: the query's name, its estimand
    (``distribution(color)``), mechanism and estimator, and the variables on the axes
    (the result's kind and method only where it was built outside a spec)."""

    def __init__(self, result: Any) -> None:
        self.result = result
        q = result.query
        self.name = getattr(q, "name", None)
        self.estimand = getattr(q, "estimand", None)
        mech = getattr(q, "mechanism", None)
        self.mechanism = getattr(mech, "name", None)
        variables = [v.name for v in self.estimand.variables] if self.estimand is not None else []
        if not variables and getattr(mech, "variable", None) is not None:
            variables = [mech.variable.name]
        self.variables = variables
        self.variable = variables[0] if variables else None
        #: what the labels of a vector, matrix or table are (the categories of these variables)
        self.axis = " / ".join(variables) or None

    def title(self) -> str:
        """The query's name and what the result is (:meth:`ResultViews.title_subject`)."""
        what = self.result.title_subject(self.estimand, self.mechanism)
        return f"{self.name}: {what}" if self.name else what

    def value_axis(self) -> str:
        """The x axis of estimates: what each number is."""
        est, v = self.estimand, self.variables
        if est is None:
            return "estimate"
        axes = {"distribution": lambda: f"P({v[0]} = category)",
                "joint": lambda: f"P({', '.join(v)} = cell)",
                "mean": lambda: f"E[{v[0]}]",
                "moment": lambda: f"E[{v[0]}^{est.order}]",
                "cdf": lambda: f"the law of {v[0]}: location and scale",
                "regression": lambda: f"coefficient in the regression of {v[0]}"}
        if est.kind in axes:
            return axes[est.kind]()
        return "estimate"


def _number(cell: Any) -> float | None:
    """A table cell as a float (booleans as 0/1, ``"inf"`` as infinity), None for text."""
    if isinstance(cell, (bool, numbers.Number)) or hasattr(cell, "dtype"):
        try:
            return float(cell)
        except (TypeError, ValueError):
            return None
    if isinstance(cell, str) and cell in ("inf", "-inf", "nan"):
        return float(cell)
    return None


def _cell(value: Any) -> Any:
    """A JSON leaf as a table cell: lists of labels joined, ``"inf"`` as a float."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if value in ("inf", "-inf"):
        return float(value)
    return value


def _records(value: dict, exact: dict | None) -> Any:
    """A mapping result (leakage, bounds, thresholds, budget) as rows.

    Criterion -> number becomes one ``value`` column (``exact`` beside it where the result
    has exact forms); group -> fields (``w=2 -> {independent, castell, ...}``) becomes one row
    per group with a column per field, a group of groups (Theorem 4's pairs) one row per
    inner group named ``outer[inner]``, and a lone number beside groups (``w_star``) a row
    with its ``value``.
    """
    pd = _pd()
    rows: dict[str, dict] = {}

    def add(name: str, fields: Any) -> None:
        if isinstance(fields, dict) and fields and all(isinstance(v, dict) for v in fields.values()):
            for inner, sub in fields.items():
                add(f"{name}[{inner}]", sub)
        elif isinstance(fields, dict):
            rows[name] = {k: _cell(v) for k, v in _flatten_one(fields)}
        else:
            rows[name] = {"value": _cell(fields)}
            if exact and name in exact:
                rows[name]["exact"] = exact[name]

    for key, fields in value.items():
        add(str(key), fields)
    return pd.DataFrame.from_dict(rows, orient="index")


def _flatten_one(fields: dict) -> Any:
    """A group's fields, with nested mappings spelled ``outer.inner``."""
    for k, v in fields.items():
        if isinstance(v, dict):
            for kk, vv in _flatten_one(v):
                yield f"{k}.{kk}", vv
        else:
            yield k, v


def _ci_row(ci: dict, key: Any) -> Any:
    """The ``[lower, upper]`` of one estimate in a ``ci95`` mapping: by the key, its text,
    or (a cell of a joint table, keyed by its categories) the categories joined by ``.``
    as the estimate's labels join them."""
    names = [str(key), key] + (([".".join(map(str, key))]) if isinstance(key, tuple) else [])
    for name in names:
        if name in ci:
            return ci[name]
    raise KeyError(f"no 95% interval for {key!r} in the result's ci95")
