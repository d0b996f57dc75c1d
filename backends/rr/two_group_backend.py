"""The back end of RRreg's two-group designs (``uqm``, ``cdm``, ``sld``): epsilon, the
MLE with its parameters on data (:mod:`privspec.backends.rr.two_groups`; with survey
weights, :mod:`privspec.backends.rr.two_group_weighted`), its avar, the prediction risk at
the declared truth and seeded simulations (:mod:`privspec.backends.rr.two_group_plans`),
privatize."""
from __future__ import annotations

from typing import Any

import pandas as pd

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.model.query_kinds import TWO_GROUP, Answers
from privspec.results.result import Result
from privspec.backends import register
from privspec.backends.rr.two_group_plans import avar_result, leakage_result, simulate_result
from privspec.backends.rr.two_group_regression import regression_result
from privspec.backends.rr.two_group_regression_planning import regression_avar
from privspec.backends.rr.two_group_weighted import weighted_estimate
from privspec.backends.rr.two_group_weighted_regression import weighted_regression_result
from privspec.backends.rr.two_groups import epsilon_result, estimate, privatize

#: the trait's share and the latent shares (cheaters: cdm's, honesty: sld's; the front end checks which)
_ESTIMANDS = ("distribution", "cheaters", "honesty")
_ANSWERS = (
    Answers(("epsilon",), TWO_GROUP),
    Answers(("leakage",), TWO_GROUP),
    Answers(("avar",), TWO_GROUP, estimands=_ESTIMANDS, methods=("mle",)),
    Answers(("estimate",), TWO_GROUP, ("run", "simulate"), estimands=_ESTIMANDS, methods=("mle",)),
    # RRreg's RRlog: the trait's log odds on raw covariates beside the reports (:mod:`.two_group_regression`),
    # planned at its declared coefficients (:mod:`.two_group_regression_planning`)
    Answers(("estimate",), TWO_GROUP, ("run",), estimands=("regression",), methods=("mle",)),
    Answers(("avar",), TWO_GROUP, estimands=("regression",), methods=("mle",)),
)


@register
class TwoGroupBackend:
    """RRreg's two-group designs: epsilon, the MLE with its parameters, its avar, simulate,
    privatize."""

    REGISTER_NAME = "two_group"
    ANSWERS = _ANSWERS

    def supports(self, query: Query, verb: str) -> bool:
        """Its ``ANSWERS``; of the leakages, the prediction risk."""
        if query.kind == "leakage" and not set(query.metrics or ("prediction",)) <= {"prediction"}:
            return False
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def weighted(self, query: Query) -> str:
        """What of ``query`` has no version with survey weights ("" for every estimate:
        :mod:`privspec.backends.rr.two_group_weighted`, the regression's
        :mod:`privspec.backends.rr.two_group_weighted_regression`)."""
        if query.kind != "estimate":
            return f"{query.kind} queries of two-group designs"
        return ""

    def privatizes(self, mechanism: Any) -> bool:
        return getattr(mechanism, "family", None) == "two_group"

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if query.kind == "epsilon":
            return epsilon_result(query.mechanism)
        if query.kind == "avar":
            if query.estimand.kind == "regression":
                return regression_avar(model, query)
            return avar_result(model, query)
        if query.kind == "leakage":
            return leakage_result(model, query)
        if verb == "simulate":
            return simulate_result(model, query, options["n"], options["reps"], options.get("seed"))
        data = options.get("data")
        if data is None:
            raise BackendError(Diagnostic("B002", f"query '{query.name}' needs data"))
        mech = query.mechanism
        if query.estimand.kind == "regression":
            engine = data.engine_for(mech.name or query.name)
            if data.design is not None:
                return weighted_regression_result(model, query, engine, data.design)
            return regression_result(model, query, engine)
        if data.design is not None:
            return weighted_estimate(model, query, data.engine_for(mech.name or query.name), data.design)
        return estimate(model, query, data.engine_for(mech.name or query.name).tally(list(mech.columns)))

    def privatize(self, model: ModelGraph, mechanism: Any, frame: pd.DataFrame, seed: int | None = None,
                  offset: int = 0) -> pd.DataFrame:
        return privatize(model, mechanism, frame, seed, offset)
