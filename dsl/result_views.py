"""Results as data scientists read them: pandas objects with labels, statsmodels' names.

:class:`ResultViews` is mixed into :class:`privspec.results.Result`; every accessor reads
the result's value and extras (the JSON contract), so nothing is computed twice:

* estimates: ``params`` (a Series by category, a MultiIndex Series for joint tables, one
  entry for a mean or moment), ``bse``, ``conf_int(alpha)``, ``nobs``, ``method``,
  ``se_kind``;
* matrices (``avar``, ``fisher``, one of ``moments``): ``frame()`` / ``cov_params()``, a
  DataFrame labelled by category;
* tests: ``statistic``, ``df``, ``pvalue``, ``method``;
* every result: ``to_frame()`` (a labelled table, the natural one for its kind) and
  ``_repr_html_()`` (that table in HTML).

Examples
--------
>>> from privspec.results import Result, Vector
>>> r = Result("estimate", Vector(("a", "b"), (0.25, 0.75)),
...            {"method": "mom", "n": 400, "se": Vector(("a", "b"), (0.02, 0.02)), "se_kind": "population"})
>>> r.params.round(2).to_dict(), r.nobs
({'a': 0.25, 'b': 0.75}, 400)
>>> r.conf_int(0.1).round(4).values.tolist()        # Wald at 90%: no interval of that level was computed
[[0.2171, 0.2829], [0.7171, 0.7829]]
"""
from __future__ import annotations

from typing import Any

from scipy import stats


def _pd():
    import pandas as pd

    return pd


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


class ResultViews:
    """Accessors of :class:`privspec.results.Result` (see the module docstring)."""

    kind: str
    value: Any
    extras: Any
    fit: Any

    # -- what any result is -------------------------------------------------------------------------
    @property
    def method(self) -> str | None:
        """The estimator, test or method that produced the result."""
        v = self.extras.get("method")
        if v is None and self._test is not None:
            return self._test.method
        return v

    @property
    def se_kind(self) -> str | None:
        """``population`` or ``conditional`` (which question the standard errors answer)."""
        return self.extras.get("se_kind")

    @property
    def nobs(self) -> int | None:
        """Respondents the estimate is from."""
        n = self.extras.get("n")
        return int(n) if isinstance(n, (int, float)) else None

    # -- estimates ----------------------------------------------------------------------------------
    @property
    def params(self) -> Any:
        """The estimate as a labelled Series (index: category; joint tables: one level per
        variable; a mean or moment: the query's kind)."""
        return self._series(self.value, "estimate" if self.kind == "estimate" else self.kind)

    @property
    def bse(self) -> Any:
        """Standard errors, labelled like :attr:`params` (None when none were computed)."""
        se = self.extras.get("se")
        return None if se is None else self._series(se, "se")

    def conf_int(self, alpha: float = 0.05) -> Any:
        """Confidence intervals at level ``1 - alpha`` as a DataFrame (``lower``, ``upper``).

        At 95% these are the intervals the back end computed (profile likelihood, score,
        jackknife t: ``extras["ci_method"]``); at another level, Wald intervals
        ``params -+ z bse`` with ``z`` the normal quantile (scipy).
        """
        pd = _pd()
        params = self.params
        ci = self.extras.get("ci95")
        if ci is not None and abs(alpha - 0.05) < 1e-12:
            if isinstance(ci, dict) and set(ci) == {"lower", "upper"}:  # joint tables: a table each
                return pd.DataFrame({"lower": self._series(ci["lower"], "lower"),
                                     "upper": self._series(ci["upper"], "upper")})
            if isinstance(ci, dict):
                rows = [ci[str(k)] if str(k) in ci else ci.get(k) for k in params.index]
            else:
                rows = [ci]
            return pd.DataFrame([[_float(a), _float(b)] for a, b in rows], index=params.index,
                                columns=["lower", "upper"])
        bse = self.bse
        if bse is None:
            raise ValueError(f"no standard errors for this {self.kind} result: no interval")
        z = float(stats.norm.ppf(1 - alpha / 2))
        return pd.DataFrame({"lower": params - z * bse, "upper": params + z * bse})

    def _series(self, value: Any, name: str) -> Any:
        from .results import Table, Vector

        pd = _pd()
        if isinstance(value, Vector):
            index_name = "variable" if self.kind == "budget" else "category"
            return pd.Series([_float(v) for v in value.values], index=pd.Index(value.labels, name=index_name),
                             name=name)
        if isinstance(value, Table):
            import numpy as np

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
        from .results import Matrix, to_json

        value = self.value
        if which is not None:
            value = value[which]
        if not isinstance(value, Matrix):
            raise TypeError(f"this {self.kind} result is not a matrix")
        data = to_json(value)["data"]
        return _pd().DataFrame([[_float(x) for x in row] for row in data], index=list(value.rows),
                               columns=list(value.cols))

    def cov_params(self) -> Any:
        """The covariance as a labelled DataFrame: an ``avar`` result's matrix (``n Var`` in
        the limit), or for an estimate the diagonal ``bse^2`` (the full covariance is the
        matching ``avar`` query's)."""
        from .results import Matrix

        if isinstance(self.value, Matrix):
            return self.frame()
        bse = self.bse
        if bse is None:
            raise ValueError(f"no covariance for this {self.kind} result")
        pd = _pd()
        import numpy as np

        return pd.DataFrame(np.diag(bse.to_numpy() ** 2), index=bse.index, columns=bse.index)

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
        import numpy as np

        x = np.atleast_1d(np.asarray(x, dtype=float))
        lower, upper = self._distribution().band(x, alpha)
        return _pd().DataFrame({"cdf": self.cdf(x), "lower": lower, "upper": upper}, index=_pd().Index(x, name="x"))

    def plot(self, x: Any = None, alpha: float = 0.05) -> Any:
        """The natural picture of the result, a matplotlib Figure (the ``plot`` extra): a CDF
        with its pointwise band at ``x`` (default: 41 points over the data), estimates with
        their intervals, a matrix as a heat map."""
        from .backends import plots
        from .results import Matrix, StepFunction

        if isinstance(self.value, StepFunction):
            band = None
            if self.fit is not None and getattr(self.fit, "rows", False):
                import numpy as np

                if x is None:
                    ends = np.asarray(self.value.intervals, dtype=float)
                    ends = ends[np.isfinite(ends)]
                    x = np.linspace(ends.min(), ends.max(), 41) if ends.size else None
                if x is not None:
                    b = self.band(x, alpha)
                    band = (b.index.to_numpy(), b["lower"].to_numpy(), b["upper"].to_numpy())
            return plots.figure_cdf(self, band, title=self.method)
        if isinstance(self.value, Matrix):
            return plots.figure_matrix(self.frame(), title=self.kind)
        params = self.params
        try:
            ci = self.conf_int(alpha)
            return plots.figure_estimates(params, ci["lower"], ci["upper"], title=self.method)
        except ValueError:
            return plots.figure_estimates(params, title=self.method)

    # -- tests -----------------------------------------------------------------------------------------
    @property
    def _test(self) -> Any:
        from .results import TestResult

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
        from .results import Matrix, StepFunction, Table, Vector, _flatten

        pd = _pd()
        value = self.value
        if self.kind == "comparison":
            from .comparison_tables import frame

            return frame(value)
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
        if isinstance(value, (Vector, Table)) or (self.kind == "estimate" and not isinstance(value, dict)):
            out = self.params.to_frame()
            if self.bse is not None:
                out["se"] = self.bse
            try:
                ci = self.conf_int()
                out["lower"], out["upper"] = ci["lower"], ci["upper"]
            except ValueError:
                pass
            return out
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
        return pd.DataFrame(list(_flatten(d["value"])), columns=["key", "value"])

    def _repr_html_(self) -> str:
        """:meth:`to_frame` as an HTML table, under the query's kind and method."""
        import html

        import numpy as np

        from .report import NOISE

        head = html.escape(self.kind + (f" by {self.method}" if self.method else ""))
        frame = self.to_frame()
        numbers = frame.select_dtypes("number").to_numpy(dtype=float, na_value=float("nan")).ravel()
        finite = abs(numbers[np.isfinite(numbers)])
        floor = NOISE * (finite.max() if finite.size else 0.0)  # rounding noise beside the table's largest entry
        # six significant digits, not pandas' six decimals (0.000380 would hide a digit)
        table = frame.to_html(float_format=lambda v: "0" if abs(v) < floor else f"{v:.6g}")
        return f"<div><strong>{head}</strong>{table}</div>"


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
