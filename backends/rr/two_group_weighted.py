"""RRreg's two-group designs (``uqm``, ``cdm``, ``sld``: :mod:`privspec.backends.rr.two_groups`)
from weighted, stratified, clustered reports (a survey design bound with the data:
:mod:`privspec.backends.data.survey`).

The estimate is the Hajek version of the two-group MLE: each group's yes rate is the
weighted share ``lambda_g = Y_g / N_g``, ``Y_g`` the sum of the weights of group ``g``'s yes
reports and ``N_g`` of all its reports (so the split into groups is itself estimated with
the weights), and ``theta = A^-1 (lambda - a)`` as without weights (on the polygon's
boundary where that falls outside: the maximum of the weighted pseudo-likelihood, which
depends on the weights through these shares only).

Standard errors are design-based, by Taylor linearization
(:func:`~privspec.backends.core.survey_design.linearized_covariance`): a report of group
``g`` with answer ``y`` (1 yes, 0 no) moves ``lambda_g`` by ``(y - lambda_g) / N_g`` per unit
of weight (the ratio's influence) and ``theta`` by ``A^-1`` of that; the design's
parameters (cdm's ``gamma``, sld's ``t``) by the delta method.  With replicate weights the
estimate is re-fitted on each replicate's sums of weights, and each parameter's variance
is the replicates' (:meth:`~privspec.backends.data.replicates.Replicates.covariance`).

The design effect is the design variance over the variance of the same estimator from a
simple random sample of the same ``n`` rows (the expected information at the estimate
with the groups' weighted shares of ``n``).

Examples
--------
>>> import pandas as pd, privspec
>>> spec = privspec.load('''variable y: categorical {yes, no}
... variable g: categorical {first, second}
... mechanism m = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
... query gamma = estimate cheaters(y) from m by mle''')
>>> df = pd.DataFrame({"y": ["yes", "no", "no"] * 100, "g": ["first"] * 150 + ["second"] * 150,
...                    "w": [1.0, 1.0, 2.0] * 50 + [2.0, 1.0, 1.0] * 50})
>>> r = spec.run(df, weights="w")["gamma"]      # yes rates 50/200 and 100/200 by weight
>>> round(r.value, 4), r.extras["weighted_n"], r.extras["design"]
(0.3125, 400.0, 'weights w, one stratum, each row its own PSU')
>>> round(spec.run(df)["gamma"].value, 4)        # unweighted: 1/3 in both groups
0.6667
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.results.values import Vector
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.survey_design import linearized_covariance
from privspec.backends.data.survey import (SurveyDesign, design_cells, design_tally, refuse_conditional_se,
                                           replicate_sums)
from privspec.backends.rr.two_groups import (LATENT_PARAMETER, Design, covariance, design_of, fit, group_counts,
                                              loglik, observations, probabilities, share_inference, wald)

#: the observations of :func:`~privspec.backends.rr.two_groups.observations`: 2 groups x (yes, no)
N_OBS = 4


def influence(design: Design, yes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Influence values per unit of weight (``2 x 4``: theta's coordinates by observation
    ``2 g + r``) of ``theta = A^-1 (Y / N - a)``: ``A^-1 e_g (y - lambda_g) / N_g``.

    Examples
    --------
    >>> d = design_of("cdm", 0.3, 0.7)
    >>> psi = influence(d, np.array([30.0, 60.0]), np.array([100.0, 100.0]))
    >>> psi.shape, bool(np.allclose(psi @ [30, 70, 60, 40], 0))   # centred: the weighted sum is 0
    ((2, 4), True)
    """
    lam = yes / n
    per_group = np.zeros((2, N_OBS))
    for g in range(2):
        per_group[g, 2 * g:2 * g + 2] = (np.array([1.0, 0.0]) - lam[g]) / n[g]
    return np.linalg.solve(design.A, per_group)


def parameter_covariance(design: Design, theta: np.ndarray, V: np.ndarray) -> np.ndarray:
    """The design's parameters' covariance from theta's, by the delta method (NaN rows where
    a parameter has no gradient: sld's honesty at no carriers)."""
    G = np.array([f(theta)[1] for _, _, f in design.parameters])
    return G @ V @ G.T


def _values(design: Design, theta: np.ndarray) -> np.ndarray:
    return np.array([f(theta)[0] for _, _, f in design.parameters])


def weighted_estimate(model: ModelGraph, q: Query, engine: Any, survey: SurveyDesign) -> Result:
    """The Hajek estimate of ``q`` (the trait's share, or the cheaters' or the honesty) from
    the table ``engine`` counts, with its design-based standard errors, intervals, design
    effects and the design's other parameters (the module docstring)."""
    refuse_conditional_se(str(q.method.options.get("se", "population")) if q.method else "population")
    mech = q.mechanism
    p1, p2 = probabilities(model, mech)
    design = design_of(mech.kind, p1, p2)
    tally = design_tally(engine, survey, [mech.variable.name, mech.group.name])
    obs = observations(mech, tally)
    n_rows = tally.n
    if survey.replicates is None:
        cells = design_cells(tally, survey, obs)
        sums = cells.weighted_counts(N_OBS)[:, None]
        layout = cells.layout()
    else:
        sums = replicate_sums(tally, survey, obs, N_OBS)
        layout = {"replicates": sums.shape[1] - 1}
    total = float(sums[:, 0].sum())
    yes, n = group_counts(mech, sums[:, 0], tally.source, "weight")
    # the shares at the rows' n: the same closed form, the pseudo-log-likelihood on the scale of the rows
    theta, boundary = fit(design, yes / total * n_rows, n / total * n_rows)
    values = _values(design, theta)
    if survey.replicates is None:
        V = linearized_covariance(influence(design, yes, n), cells)
        P = parameter_covariance(design, theta, V)
    else:
        thetas = np.array([fit(design, *group_counts(mech, sums[:, r], tally.source, f"weight (replicate {r})"))[0]
                           for r in range(1, sums.shape[1])])
        P = survey.replicates.covariance(values, np.array([_values(design, t) for t in thetas]))
    srs = parameter_covariance(design, theta, covariance(design, theta, n / total * n_rows))
    params = _table(design, values, P, srs)
    return _result(q, params, boundary, layout, total, n_rows, survey, (p1, p2),
                   loglik(design, theta, yes / total * n_rows, n / total * n_rows))


def _table(design: Design, values: np.ndarray, P: np.ndarray, srs: np.ndarray) -> dict[str, dict[str, Any]]:
    """Each parameter's estimate, design-based se, 95% Wald interval, design effect and meaning."""
    out = {}
    z = z_quantile(0.95)
    for i, (name, meaning, _) in enumerate(design.parameters):
        var = float(P[i, i])
        se = math.sqrt(max(var, 0.0)) if math.isfinite(var) else math.nan
        deff = var / float(srs[i, i]) if math.isfinite(var) and srs[i, i] > 0 else math.nan
        out[name] = {"estimate": float(values[i]), "se": se, "ci95": wald(float(values[i]), se, z), "deff": deff,
                     "meaning": meaning}
    return out


def _result(q: Query, params: dict[str, dict[str, Any]], boundary: bool, layout: dict, total: float, n_rows: int,
            survey: SurveyDesign, p: tuple[float, float], pseudo_loglik: float) -> Result:
    mech = q.mechanism
    variance = ("design-based standard errors by linearization, the stratified with-replacement variance over "
                "PSUs" if survey.replicates is None else
                f"design-based standard errors from {layout['replicates']} {survey.replicates.type} replicate "
                "weights, the estimate re-fitted on each")
    notes = [f"groups: {mech.group.labels[0]} (p1 = {p[0]:g}), {mech.group.labels[1]} (p2 = {p[1]:g})",
             f"Hajek (weighted) estimate: each group's yes rate the weighted share of its reports; {variance}; "
             "deff: design variance over simple random sampling's at the same n"]
    if boundary:
        notes.append("the closed form fell outside the parameter space: the maximum of the pseudo-likelihood on its "
                     "boundary, where the standard errors (the closed form's) understate the uncertainty")
    extras: dict = {"method": "mle", "n": n_rows, "se_kind": survey.se_kind,
                    "ci_method": "Wald: estimate +- z se (design-based), cut to [0, 1]",
                    "se_method": "design-based: the weighted yes rates' influence through A^-1 (delta method for "
                                 "the parameters)" if survey.replicates is None else
                                 "design-based: the replicate weights' estimates",
                    "design": survey.describe(), "weighted_n": total, **layout, "pseudo_loglik": pseudo_loglik,
                    "parameters": params, "note": "; ".join(notes)}
    if q.estimand.kind in LATENT_PARAMETER:
        share = params[LATENT_PARAMETER[q.estimand.kind]]
        return Estimate(share["estimate"], se=share["se"], ci95=share["ci95"], deff=share["deff"], **extras)
    pi = params["pi"]
    labels = mech.variable.labels
    z = z_quantile(0.95)
    return Estimate(Vector(labels, (pi["estimate"], 1 - pi["estimate"])), se=Vector(labels, (pi["se"], pi["se"])),
                    ci95=dict(zip(labels, (pi["ci95"], wald(1 - pi["estimate"], pi["se"], z)))),
                    deff=Vector(labels, (pi["deff"], pi["deff"])), **extras,
                    inference=share_inference(pi["estimate"], pi["se"]))

