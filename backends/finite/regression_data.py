"""A regression on a privatized categorical response, from data: the reports and the raw
covariates of the same file, counted per distinct (covariates, report) tuple by the
engine, the design matrix built from those few tuples, the fit of
:mod:`privspec.backends.finite.regression`, and its result.

Covariates: a continuous variable is a numeric column (D107 names the rows that are not
numbers); a categorical one enters as dummies of its categories after the first (D107
names values outside its categories).  A missing column is D003, a missing value D004.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.estimands import coefficient_labels
from privspec.model.graph import Query, SubsetMechanism, Variable
from privspec.results.kinds import Estimate
from privspec.results.values import Inference
from privspec.results.values import Vector
from privspec.backends.core.compile import channel_of, large_uniform
from privspec.backends.core.numbers import parse_numbers
from privspec.backends.data.checks import require_columns
from privspec.backends.data.tally import Tally
from privspec.backends.finite.data import factor_codes, report_columns
from privspec.backends.finite.regression import LogitFit, fit_logit, lr_test, probabilities, wald

#: how the intervals and tests are made
CI_METHOD = "Wald: estimate +- z se, se from the observed information"
#: the same intervals on a survey design's standard errors (the weighted regressions)
DESIGN_CI_METHOD = "Wald: estimate +- z se, se design-based"


def design_matrix(tally: Tally, covariates: Sequence[Variable]) -> tuple[np.ndarray, tuple[str, ...]]:
    """The intercept, then each covariate's column (a categorical one: a dummy per category
    after the first, named ``var=label``), per distinct tuple of the tally."""
    tally.check_no_missing([v.name for v in covariates])
    columns, terms = [np.ones(len(tally.counts))], ["intercept"]
    for v in covariates:
        raw = tally.values[v.name]
        if v.is_categorical:
            text = raw.astype(str).str.strip().to_numpy()
            bad = ~np.isin(text, v.labels)
            if bad.any():
                shown = ", ".join(repr(t) for t in dict.fromkeys(text[bad]))
                raise DataError(Diagnostic("D107", f"covariate {v.name}: values {shown} are not among its "
                                                   f"categories", rows=tally.locate(bad), columns=(v.name,),
                                           hint=f"{v.name} takes {', '.join(v.labels)}"))
            for label in v.labels[1:]:
                columns.append((text == label).astype(float))
                terms.append(f"{v.name}={label}")
            continue
        x = parse_numbers(raw)[0]
        bad = ~np.isfinite(x)
        if bad.any():
            rows = tally.locate(bad)
            raise DataError(Diagnostic("D107", f"{len(rows)} value(s) of the covariate {v.name} are not numbers",
                                       rows=rows, columns=(v.name,), hint="numeric covariates are plain numbers"))
        columns.append(x)
        terms.append(v.name)
    return np.column_stack(columns), tuple(terms)


def check_response(q: Query) -> None:
    """B016 unless the regression's response is the mechanism's own variable, without dummy
    categories."""
    mech, response = q.mechanism, q.estimand.variables[0]
    if response.name != mech.variable.name or (isinstance(mech, SubsetMechanism) and mech.min_coverage is not None):
        raise BackendError(Diagnostic("B016", f"a regression needs the mechanism's own variable as the response, "
                                              f"without dummy categories ({mech.name} privatizes {mech.variable.name})",
                                      hint=f"estimate regression({mech.variable.name} ~ ...) from {mech.name}"))


def regression_reports(q: Query, engine: Any, extra: Sequence[str] = ()
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...], Tally]:
    """The design per distinct tuple, the channel's row of each tuple's report, the counts,
    the terms' names and the tally (of the reports, covariates and the ``extra`` columns:
    a survey design's)."""
    mech = q.mechanism
    covariates = list(q.estimand.variables[1:])
    check_response(q)
    header = engine.columns()
    names = [v.name for v in covariates]
    found = ", ".join(map(str, header))
    require_columns(pd.DataFrame(columns=header), report_columns(mech, header), engine.source,
                    hint=f"the reports of {mech.variable.name} are read from the column '{mech.variable.name}'; "
                         f"found: {found}")
    require_columns(pd.DataFrame(columns=header), names, engine.source,
                    hint=f"a regression reads its covariates beside the reports of {mech.name}; found: {found}")
    # one count of the distinct (report, covariates) tuples: the only pass over the rows
    tally = engine.tally(list(dict.fromkeys(report_columns(mech, header) + names + list(extra))))
    codes, ch = factor_codes(mech if large_uniform(mech) else channel_of(mech), tally, mech.variable, mech.name)
    X, terms = design_matrix(tally, covariates)
    return X, ch.Kn[codes], tally.counts.astype(float), terms, tally


def regression_on_data(q: Query, engine: Any) -> Estimate:
    """Fit the regression of the query on the mechanism's data and say what it found."""
    X, K_rows, counts, terms, _ = regression_reports(q, engine)
    fit = fit_logit(X, K_rows, counts)
    refuse_unfit(fit, X)
    labels = coefficient_labels(q.estimand.variables[0], terms)
    return logit_estimate(fit, labels, meaning(q.estimand.variables[0], fit), lr_test=lr_test(fit, X, K_rows, counts))


def logit_estimate(fit: LogitFit, labels: Sequence[str], meaning: str, **more: Any) -> Estimate:
    """The result of a fitted regression: coefficients, standard errors, Wald intervals and
    tests, and ``more`` extras."""
    test = wald(fit)
    labels = tuple(labels)

    def flat(a: np.ndarray) -> np.ndarray:
        return a.ravel(order="F")

    extras = {"method": "mle(logistic)", "n": fit.n, "se": Vector(labels, tuple(map(float, flat(fit.se)))),
              "ci95": {lab: [float(a), float(b)] for lab, a, b in zip(labels, flat(test.lower), flat(test.upper))},
              "ci_method": CI_METHOD, "loglik": fit.loglik, "iterations": fit.iterations,
              "converged": fit.converged,
              "wald": {lab: {"z": float(z), "p_value": float(p)} for lab, z, p in zip(labels, flat(test.z),
                                                                                      flat(test.p_value))},
              **more, "meaning": meaning}
    return Estimate(Vector(labels, tuple(map(float, flat(fit.coef)))), **extras,
                    inference=_intervals(fit))


#: a fitted category probability below this at an observed covariate pattern: the
#: likelihood keeps rising towards infinite coefficients (eta below -20)
AT_INFINITY = 1e-9


def refuse_unfit(fit: Any, X: np.ndarray, *,
                 separation: str = "the covariates separate the reports, or a category is (almost) never "
                                   "reported: fewer covariates, coarser categories or more respondents",
                 singular: str = "", singular_hint: str = "more respondents, or fewer covariates") -> None:
    """B020 where Newton did not converge; D020 where the data do not determine the
    coefficients: the maximum lies at infinity (separation, or a category the reports never
    support, so some fitted probability goes to 0) or the information is singular.  ``fit``
    has ``converged``, ``iterations``, ``coef`` and ``cov`` (a :class:`LogitFit`, or the
    two-group designs' fit, whose hints and ``singular`` reason say more)."""
    if not fit.converged:
        raise BackendError(Diagnostic("B020", f"the regression's Newton iterations did not converge "
                                              f"({fit.iterations} iterations)", hint="fewer covariates"))
    if probabilities(X, fit.coef).min() < AT_INFINITY:
        raise DataError(Diagnostic("D020", "the data do not determine the regression: the likelihood rises towards "
                                           "infinite coefficients (a fitted probability goes to 0 or 1)",
                                   hint=separation))
    if np.isnan(fit.cov).any():
        raise DataError(Diagnostic("D020", "the data do not determine the regression: its observed information "
                                           f"is singular at the estimate{singular}", hint=singular_hint))


def meaning(response: Variable, fit: LogitFit) -> str:
    first, k = response.labels[0], len(response.labels)
    if k == 2:
        return f"logistic regression: log odds of {response.name} = {response.labels[1]} against {first}"
    return f"multinomial logit: log odds of each category of {response.name} against {first}"


def _intervals(fit: LogitFit) -> Inference:
    """Wald intervals at any level and the covariance, for the Python API."""

    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        t = wald(fit, level)
        return t.lower.ravel(order="F"), t.upper.ravel(order="F")

    return Inference(CI_METHOD, interval, lambda: fit.cov)
