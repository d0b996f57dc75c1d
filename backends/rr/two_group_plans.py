"""Planning RRreg's two-group designs (:mod:`privspec.backends.rr.two_groups`): the truth
declared in the population section, the estimates' asymptotic covariance from the two
groups' expected Fisher information, and seeded simulations of the estimates.

The truth (docs/randomized-response.md):

* the trait's share ``p``: the variable's population (its first category);
* the groups' shares ``w_1, w_2``: the group variable's population (``population group ~
  categorical(0.5, 0.5)``): ``n`` respondents are ``w_g n`` in group ``g``;
* ``uqm``: the unrelated question's share ``pi_u``: its variable's population;
* ``cdm``: the cheaters ``gamma`` (``categorical(0.3, 0.7, cheaters = 0.1)``, 0 unless
  declared), a share of the respondents whatever their trait (RRreg's ``RRgen`` with equal
  compliance of carriers and non-carriers): ``theta = (p (1 - gamma), (1 - p)(1 - gamma))``;
  the design's ``pi`` (the honest carriers, what ``distribution(Y)`` estimates) is then
  ``p (1 - gamma)``, a lower bound of the trait's share;
* ``sld``: the carriers' honesty ``t`` (``honesty = 0.8``, 1 unless declared):
  ``theta = (p, p t)``.

The expected information of the yes counts, ``n_g ~ w_g n`` binomial in each group with
rates ``lambda = a + A theta``, is ``n A^T diag(w_g / (lambda_g (1 - lambda_g))) A``, so
``n Cov(theta_hat) -> A^-1 diag(lambda_g (1 - lambda_g) / w_g) A^-T``
(:func:`~privspec.backends.rr.two_groups.covariance` at ``n = w``), and each parameter's
by the delta method.

Examples
--------
The cheating-detection model at 30% carriers, 10% cheaters, the groups half and half:

>>> import privspec
>>> spec = privspec.load('''variable y: categorical {yes, no}
... variable g: categorical {first, second}
... population y ~ categorical(0.3, 0.7, cheaters = 0.1)
... population g ~ categorical(0.5, 0.5)
... mechanism m = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
... query v = avar(distribution(y) from m by mle)''')
>>> r = spec.analyze()["v"]
>>> [(p["name"], round(p["truth"], 3), round(p["avar"], 4)) for p in r.parameters]
[('pi', 0.27, 1.7521), ('beta', 0.63, 5.6725), ('gamma', 0.1, 1.5379)]
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query, Variable
from privspec.results.kinds import Avar, Leakage, Simulation
from privspec.results.result import Result
from privspec.results.values import Matrix, Vector
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.populations import population_vector
from privspec.backends.rr.two_groups import (LATENT_PARAMETER, Design, covariance, design_of, fit, parameter_table,
                                              probabilities)


def declared_share(model: ModelGraph, var: Variable, what: str) -> np.ndarray:
    """The declared shares of a binary variable (B121 without a population)."""
    w = population_vector(model, [var])
    if w is None:
        raise BackendError(Diagnostic("B121", f"no population for {var.name}: planning a two-group design needs "
                                              f"{what}", hint=f"declare it: population {var.name} ~ "
                                                              "categorical(0.5, 0.5)"))
    try:
        return np.array([float(x) for x in w], dtype=float)
    except TypeError:
        raise BackendError(Diagnostic("B001", f"the population of {var.name} is symbolic",
                                      hint="give its parameters values")) from None


def declared_latent(model: ModelGraph, var: Variable, name: str, default: float) -> float:
    """The latent share ``name`` (cheaters, honesty) declared in ``var``'s population, or ``default``."""
    pop = model.population_of(var.name)
    value = pop.latent_share(name) if pop is not None else None
    return default if value is None else float(value)


def truth(model: ModelGraph, mech: Any) -> tuple[Design, np.ndarray, np.ndarray]:
    """The design at its probabilities, the true ``theta`` and the groups' shares ``w``."""
    design = design_of(mech.kind, *probabilities(model, mech))
    p = float(declared_share(model, mech.variable, "the trait's share")[0])
    w = declared_share(model, mech.group, "the share of each group")
    if np.any(w <= 0):
        raise BackendError(Diagnostic("B121", f"a group of {mech.group.name} has no respondent in its population: "
                                              f"{mech.kind}() needs both groups", hint="give each group a share > 0"))
    if mech.kind == "uqm":
        theta = np.array([p, float(declared_share(model, mech.unrelated, "the unrelated question's share")[0])])
    elif mech.kind == "cdm":
        gamma = declared_latent(model, mech.variable, "cheaters", 0.0)
        theta = np.array([p * (1 - gamma), (1 - p) * (1 - gamma)])
    else:
        theta = np.array([p, p * declared_latent(model, mech.variable, "honesty", 1.0)])
    return design, theta, w


def report_law(model: ModelGraph, mech: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One report's law at the declared truth: ``K[g, r, x] = Pr(report r | trait x, group
    g)`` (``r``: yes, no; ``x``: carrier, non-carrier), the trait's shares ``(p, 1 - p)``
    and the groups' shares.  The law is of every respondent, as the population has them
    (the subset paper's Def. 7 takes the joint law of the trait and the report): cdm's
    cheaters (a share ``gamma`` of carriers and non-carriers alike) say no whatever they
    draw, so ``Pr(yes | carrier) = 1 - gamma`` and ``Pr(yes | non-carrier) = (1 - gamma) p_g``;
    sld's carriers say yes with their honesty ``t``, its non-carriers with ``1 - p_g``; uqm's
    yes is ``p_g x + (1 - p_g) pi_u`` (the unrelated question independent of the trait).

    Examples
    --------
    >>> import privspec
    >>> spec = privspec.load('''variable y: categorical {yes, no}
    ... variable g: categorical {first, second}
    ... population y ~ categorical(0.3, 0.7, cheaters = 0.1)
    ... population g ~ categorical(0.5, 0.5)
    ... mechanism m = cdm(y, p1 = 0.3, p2 = 0.7, group = g)''')
    >>> K, prior, w = report_law(spec.model, spec.model.mechanisms["m"])
    >>> K[0, 0].round(3).tolist(), prior.tolist(), w.tolist()   # the first group's yes: carrier, non-carrier
    ([0.9, 0.27], [0.3, 0.7], [0.5, 0.5])
    """
    p1, p2 = probabilities(model, mech)
    prior = declared_share(model, mech.variable, "the trait's share")
    w = declared_share(model, mech.group, "the share of each group")
    p = np.array([p1, p2])
    if mech.kind == "uqm":
        pi_u = float(declared_share(model, mech.unrelated, "the unrelated question's share")[0])
        yes = np.column_stack([p + (1 - p) * pi_u, (1 - p) * pi_u])
    elif mech.kind == "cdm":
        honest = 1 - declared_latent(model, mech.variable, "cheaters", 0.0)
        yes = np.column_stack([np.full(2, honest), honest * p])
    else:
        yes = np.column_stack([np.full(2, declared_latent(model, mech.variable, "honesty", 1.0)), 1 - p])
    return np.stack([yes, 1 - yes], axis=1), prior, w


def prediction_risk(K: np.ndarray, prior: np.ndarray, w: np.ndarray) -> float:
    """``R = sum_g w_g sum_r max_x prior_x K[g, r, x]``: the chance that the best guess of the
    trait from one report and its group is right (the group is part of what is observed).

    >>> K = np.array([[[0.8, 0.2], [0.2, 0.8]]] * 2)     # Warner's p = 0.8 in both groups
    >>> round(prediction_risk(K, np.array([0.5, 0.5]), np.array([0.5, 0.5])), 12)
    0.8
    """
    return float(np.sum(w * np.max(K * prior[None, None, :], axis=2).sum(axis=1)))


def leakage_result(model: ModelGraph, q: Query) -> Result:
    """``leakage(M, prediction)`` of a two-group design at the declared truth
    (:func:`report_law`, :func:`prediction_risk`)."""
    mech = q.mechanism
    K, prior, w = report_law(model, mech)
    if abs(prior.sum() - 1) > 1e-9 or abs(w.sum() - 1) > 1e-9:
        prior, w = prior / prior.sum(), w / w.sum()
    latent = {"cdm": "cdm's cheaters saying no", "sld": "sld's dishonest carriers saying no",
              "uqm": "the unrelated question answered at its declared share"}[mech.kind]
    return Leakage({"prediction": prediction_risk(K, prior, w)}, evaluation="floating point at the declared truth",
                   meaning="prediction: R = sum_g w_g sum_o max_x w_x Pr(o | x, g) (Def. 7): the chance that the "
                           "best guess of the trait from one report and its group is right, w_g the groups' "
                           f"shares; the report's law is of all respondents as declared ({latent})")


def trait_shares(model: ModelGraph, mech: Any, shares: np.ndarray) -> np.ndarray:
    """The trait's population that puts the design's ``pi`` at ``shares[0]``: for cdm the
    honest carriers are ``p (1 - gamma)``, so ``p = pi / (1 - gamma)``; for the others ``p =
    pi`` (ValueError where no share does)."""
    pi = float(shares[0])
    if mech.kind == "cdm":
        gamma = declared_latent(model, mech.variable, "cheaters", 0.0)
        if gamma >= 1 or pi > 1 - gamma:
            raise ValueError(f"honest carriers {pi:.4g} with cheaters {gamma:.4g}: no share of carriers gives them")
        pi /= 1 - gamma
    return np.array([pi, 1 - pi])


def parameter_avars(design: Design, theta: np.ndarray, w: np.ndarray) -> list[dict[str, Any]]:
    """Each parameter's truth and ``n Var`` of its estimate in the limit (B130 where a
    group's yes rate is 0 or 1: the truth is on the boundary, without a normal limit)."""
    rates = design.rates(theta)
    if np.any(rates <= 0) or np.any(rates >= 1):
        raise BackendError(Diagnostic("B130", "at the declared truth a group's yes rate is "
                                              f"{', '.join(f'{x:g}' for x in rates)}: every answer alike, the "
                                              "estimates sit on the boundary with no normal limit",
                                      hint="declare a truth inside the parameter space (e.g. cheaters below 1)"))
    V = covariance(design, theta, w)
    out = []
    for name, meaning, f in design.parameters:
        value, grad = f(theta)
        var = float(grad @ V @ grad) if np.all(np.isfinite(grad)) else math.inf
        out.append({"name": name, "meaning": meaning, "truth": value, "avar": var})
    return out


def estimand_truth(model: ModelGraph, q: Query) -> np.ndarray:
    """The estimand's true value cell by cell, as :func:`avar_result` orders them: ``(pi, 1 -
    pi)`` for ``distribution(Y)`` (for cdm the honest carriers), the share for
    ``cheaters(Y)`` and ``honesty(Y)``."""
    design, theta, _ = truth(model, q.mechanism)
    name = LATENT_PARAMETER.get(q.estimand.kind, "pi")
    return estimand_cells(q.estimand.kind, next(f(theta)[0] for p, _, f in design.parameters if p == name))


def avar_result(model: ModelGraph, q: Query) -> Result:
    """``avar(distribution(Y) from M by mle)``: ``n Cov`` of the trait's shares ``(pi, 1 -
    pi)``; ``avar(cheaters(Y) ...)``, ``avar(honesty(Y) ...)``: ``n Var`` of that share; the
    design's parameters beside it (``parameters``)."""
    mech, kind = q.mechanism, q.estimand.kind
    design, theta, w = truth(model, mech)
    params = parameter_avars(design, theta, w)
    this = next(p for p in params if p["name"] == LATENT_PARAMETER.get(kind, "pi"))
    v = this["avar"]
    if kind == "distribution":
        labels = mech.variable.labels
        matrix = Matrix(labels, labels, [[v, -v], [-v, v]])
    else:
        matrix = Matrix((kind,), (kind,), [[v]])
    groups = ", ".join(f"{g} {x:g}" for g, x in zip(mech.group.labels, w))
    name = this["name"]
    return Avar(matrix, method="mle", se_kind="population", evaluation="closed form at the declared truth",
                formula="A^-1 diag(lambda_g (1 - lambda_g) / w_g) A^-T, lambda = a + A theta: the inverse of the "
                        "two groups' expected Fisher information per respondent (the delta method for a function "
                        "of theta)",
                meaning=f"asymptotic covariance of sqrt(n) ({name}_hat - {name}), {name}: {this['meaning']}; the "
                        f"groups' shares of n: {groups}",
                trace=float(np.trace(matrix.data)), max_variance=v, parameters=params)


def _replicate(design: Design, theta: np.ndarray, w: np.ndarray, n: int, rng: np.random.Generator
               ) -> dict[str, dict[str, Any]] | None:
    """One survey of ``n`` respondents: its parameters' estimates and intervals (None when a
    group drew nobody)."""
    size = rng.multinomial(n, w).astype(float)
    if np.any(size == 0):
        return None
    yes = rng.binomial(size.astype(np.int64), np.clip(design.rates(theta), 0.0, 1.0)).astype(float)
    est, _ = fit(design, yes, size)
    return parameter_table(design, est, covariance(design, est, size))


def _parameter_rows(params: list[dict[str, Any]], runs: list[dict[str, dict[str, Any]]], n: int
                    ) -> dict[str, dict[str, float]]:
    """Per parameter: the truth, the estimates' mean and bias, ``n`` times their variance
    beside the avar, and the coverage of the 95% intervals (with its Monte Carlo error)."""
    rows = {}
    for p in params:
        name, t = p["name"], p["truth"]
        est = np.array([r[name]["estimate"] for r in runs], dtype=float)
        ok = np.isfinite(est)
        hits = np.array([r[name]["ci95"][0] <= t <= r[name]["ci95"][1] for r in runs], dtype=float)[ok]
        cover = float(hits.mean()) if hits.size else math.nan
        rows[name] = {"truth": t, "mean": float(est[ok].mean()) if ok.any() else math.nan,
                      "bias": float(est[ok].mean() - t) if ok.any() else math.nan,
                      "n_var_empirical": float(n * est[ok].var(ddof=1)) if ok.sum() > 1 else math.nan,
                      "analytic": p["avar"], "ci95_coverage": cover,
                      "ci95_coverage_se": math.sqrt(cover * (1 - cover) / hits.size) if hits.size else math.nan}
    return rows


def simulate_result(model: ModelGraph, q: Query, n: int, reps: int, seed: int | None) -> Result:
    """``reps`` surveys of ``n`` respondents drawn from the declared truth (each group's size
    multinomial by the group's population, its yes count binomial): for the estimand's
    cells, as for a finite mechanism, the mean estimate, the truth, the bias, ``n`` times
    the estimates' covariance beside the avar, the scaled loss ``n ||est - truth||^2`` and
    the 95% intervals' coverage; under ``parameters`` the same for each of the design's
    parameters."""
    mech, kind = q.mechanism, q.estimand.kind
    design, theta, w = truth(model, mech)
    params = parameter_avars(design, theta, w)
    rng = np.random.default_rng(seed)
    runs = [r for r in (_replicate(design, theta, w, n, rng) for _ in range(reps)) if r is not None]
    rows = _parameter_rows(params, runs, n)
    name = LATENT_PARAMETER.get(kind, "pi")
    labels = mech.variable.labels if kind == "distribution" else (kind,)
    sign = np.array([1.0, -1.0]) if kind == "distribution" else np.array([1.0])
    t = rows[name]["truth"]
    cells = np.array([r[name]["estimate"] for r in runs], dtype=float)
    loss = n * len(sign) * (cells - t) ** 2
    value: dict[str, Any] = {
        "mean": Vector(labels, tuple(sign * (rows[name]["mean"] - t) + estimand_cells(kind, t))),
        "truth": Vector(labels, tuple(estimand_cells(kind, t))),
        "bias": Vector(labels, tuple(sign * rows[name]["bias"])),
        "n_cov_empirical": Matrix(labels, labels, np.outer(sign, sign) * rows[name]["n_var_empirical"]),
        "n_cov_analytic": Matrix(labels, labels, np.outer(sign, sign) * rows[name]["analytic"]),
        "scaled_loss_mean": float(loss.mean()) if loss.size else math.nan,
        "scaled_loss_se": float(loss.std(ddof=1) / math.sqrt(loss.size)) if loss.size > 1 else math.nan,
        "scaled_loss_limit": float(len(sign) * rows[name]["analytic"]),
        "ci95_coverage": Vector(labels, (rows[name]["ci95_coverage"],) * len(sign)),
        "parameters": rows,
    }
    return Simulation(value, n=n, reps=len(runs), seed=seed, method="mle", se_kind="population",
                      skipped=reps - len(runs), ci_method="Wald: estimate +- z se, cut to [0, 1]",
                      se_method="expected information at the estimate",
                      ci95_target="each parameter's truth", evaluation="analytic: the avar at the declared truth",
                      note=f"each survey: the groups' sizes multinomial by {mech.group.name}'s population "
                           f"({', '.join(f'{x:g}' for x in w)}), each group's yes count binomial at its rate; "
                           f"z = {z_quantile(0.95):.4f}")


def estimand_cells(kind: str, value: float) -> np.ndarray:
    """The estimand's cells at a share: ``(pi, 1 - pi)`` for a distribution, else the share."""
    return np.array([value, 1 - value]) if kind == "distribution" else np.array([value])
