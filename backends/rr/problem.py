"""A joint estimation problem of randomized response (castell paper): the estimand's
cells, the factors' channels at the parameters' values, the counts read from data, and
the fits (castell, RR-Independent, RR-Joint, the MLE).  Shared by the back end
(:mod:`privspec.backends.rr.backend`), its simulation and its experiments."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, ProductMechanism, Query, RandomizedResponse, Variable
from privspec.backends.core.channel import matrix_channel, product_channel
from privspec.backends.core.compile import channel_of
from privspec.backends.core.estimators import em
from privspec.backends.finite.estimates import require_answer
from privspec.backends.finite.data import count_observations, factor_codes, tally_of
from privspec.backends.core.populations import parameter_values
from privspec.backends.rr.castell import rr_joint
from privspec.backends.rr.fit import SE_KINDS, JointFit, check_cells, linear_covariance
from privspec.backends.rr.joint import estimate_joint, with_projection

#: beyond this many cells the MLE of a joint (dense EM on the Kronecker channel) is refused
MLE_CELL_LIMIT = 2048


def grr_keep(model: ModelGraph, mech: RandomizedResponse) -> tuple[float, float] | None:
    """GRR's keep probabilities ``(p, q)`` at the parameters' values (None for another
    channel); a clear error while epsilon is still a symbol."""
    ch = channel_of(mech)
    if not ch.keeps_truth:
        return None
    ch = ch.at(parameter_values(model))
    if ch.is_symbolic():
        numeric_K(model, mech)  # raises the clear error
    ch.check_floating()
    return ch.keep_probabilities()


def numeric_K(model: ModelGraph, mech: RandomizedResponse) -> np.ndarray:
    """The channel ``K = P^T`` of one RR mechanism in floating point, at the parameters'
    values (:meth:`Channel.at`, built once per mechanism and values); a clear error when
    it is still symbolic."""
    ch = channel_of(mech).at(parameter_values(model))
    if ch.is_symbolic():
        names = ", ".join(sorted(map(str, ch.K.free_symbols)))
        raise BackendError(Diagnostic("B401", f"mechanism {mech.name or mech.variable.name} depends on {names}: "
                                      "estimation and simulation need numbers",
                                      hint=f"give the parameter a value: parameter {names} > 0 = 1"))
    ch.check_floating()
    return ch.Kn


def factor_index(mech: ProductMechanism, variable: Variable) -> int:
    """The factor of a product that privatizes ``variable``."""
    for k, f in enumerate(mech.factors):
        if f.variable.components() == variable.components() and f.variable.labels == variable.labels:
            return k
    raise BackendError(Diagnostic("B402", f"no factor of {mech.name} privatizes {variable.name} alone: joint "
                                  "estimators of a product need each variable of joint() to be one factor",
                                  hint="list the factors' own variables in joint(...)"))


# ---- estimation on data --------------------------------------------------------------------------
class JointProblem:
    """A joint (or marginal) estimand of an RR-based mechanism: which attributes, their
    channels, and how report counts are read."""

    def __init__(self, model: ModelGraph, q: Query):
        self.model, self.q = model, q
        mech = q.mechanism
        self.variables = tuple(q.estimand.variables)
        self.names = tuple(v.name for v in self.variables)
        self.labels = tuple(v.labels for v in self.variables)
        self.shape = tuple(len(lab) for lab in self.labels)
        self.product = isinstance(mech, ProductMechanism)
        if self.product:
            self.index = [factor_index(mech, v) for v in self.variables]
            self.factors = [mech.factors[k] for k in self.index]
        else:
            self.factors = [mech]
            whole = mech.variable
            comps = whole.components()
            if len(self.variables) == 1 and self.variables[0].components() == comps:
                self.parts = [0]
                self.part_sizes = [whole.p]
            else:
                self.part_sizes = [len(model.variables[c].labels) for c in comps]
                self.parts = []
                for v in self.variables:
                    if v.name not in comps:
                        raise BackendError(Diagnostic("B402", f"{v.name} is not one of the parts of "
                                                      f"{whole.name} ({', '.join(comps)})"))
                    self.parts.append(comps.index(v.name))

    @property
    def cells(self) -> int:
        return int(math.prod(self.shape))

    def part_sum_matrix(self) -> np.ndarray:
        """0/1 matrix summing the combined domain's cells into the estimand's cells (C order)."""
        sizes = self.part_sizes
        rows = []
        for cell in itertools.product(*(range(s) for s in self.shape)):
            mask = np.zeros(sizes, dtype=int)
            index = [slice(None)] * len(sizes)
            for p, i in zip(self.parts, cell):
                index[p] = i
            mask[tuple(index)] = 1
            rows.append(mask.reshape(-1))
        return np.array(rows, dtype=int)

    def K(self) -> list[np.ndarray]:
        return [numeric_K(self.model, f) for f in self.factors]

    def counts_from(self, frame, path) -> np.ndarray:
        """The report counts: the w-way table (products) or the vector over the combined domain."""
        mech = self.q.mechanism
        if not self.product:
            return count_observations(mech, frame, path)
        tally = tally_of(mech, frame, path)
        codes = [report_codes(f, tally) for f in self.factors]
        joint = np.ravel_multi_index(tuple(codes), self.shape) if len(codes) > 1 else codes[0]
        return np.bincount(joint, weights=tally.counts.astype(float), minlength=self.cells).reshape(self.shape)

    def fit(self, counts: np.ndarray, projection: str | None = None) -> JointFit:
        """The query's estimator on report counts (``projection`` overrides the option)."""
        method = self.q.method.name
        options = dict(self.q.method.options)
        if projection is not None:
            options["project"] = projection
        se = str(options.get("se", "population"))
        if se not in SE_KINDS:
            raise BackendError(Diagnostic("B406", f"unknown se {se!r}", hint=f"se = {' | '.join(SE_KINDS)}"))
        try:
            if self.product:
                if method in ("mle", "em"):
                    return with_projection(self._mle_product(counts, se), "none")
                return estimate_joint(method, counts, self.K(), self.names, options)
            return with_projection(self._combined(counts, method, se), str(options.get("project", "none")))
        except np.linalg.LinAlgError as e:
            raise BackendError(Diagnostic("B404", f"a randomization matrix is singular ({e})",
                                          hint="GRR is singular only at eps = 0 (Theorem 1)")) from None

    def _mle_product(self, counts: np.ndarray, se: str = "population") -> JointFit:
        if self.cells > MLE_CELL_LIMIT:
            raise BackendError(Diagnostic("B403", f"the MLE of a {self.cells}-cell joint (EM on the Kronecker "
                                          f"channel) is limited to {MLE_CELL_LIMIT} cells",
                                          hint="use castell (with project = euclidean for a distribution)"))
        ch = product_channel([channel_of(f) for f in self.factors]) if len(self.factors) > 1 \
            else channel_of(self.factors[0])
        ch = numeric_channel(self.model, ch, self.factors)
        fit = em(ch, counts.reshape(-1))
        require_answer(ch, counts.reshape(-1), fit, "mle")
        var = cov = None
        try:
            cov = ch.avar_mle(np.clip(fit.w, 1e-12, None)) / fit.n
            if se == "conditional":
                # asymptotically linear in lambda_hat with J K = I on the simplex's tangent space:
                # conditional = population - (diag(Pi) - Pi Pi^T)/n (privspec.backends.rr.fit)
                cov = cov - (np.diag(fit.w) - np.outer(fit.w, fit.w)) / fit.n
            var = np.diag(cov)
        except np.linalg.LinAlgError:
            pass
        return JointFit(fit.w.reshape(self.shape), "mle", fit.n, None if var is None else var.reshape(self.shape),
                        note=fit.note, info={"iterations": fit.iterations, "kkt": fit.kkt,
                                             "converged": bool(fit.converged), "loglik": fit.loglik},
                        se_kind=None if var is None else se, se_target="joint",
                        cov=None if cov is None else (lambda: cov))

    def _combined(self, counts: np.ndarray, method: str, se: str = "population") -> JointFit:
        """RR on the combined domain (RR-Joint): estimate there, then sum to the estimand.

        ``se = conditional``: each estimand cell is a sum ``c^T Pi_hat`` of combined-domain
        cells, an estimator with ``A K = I``, so its conditional variance is the population
        one less ``(c^T Pi - (c^T Pi)^2)/n`` (:mod:`privspec.backends.rr.fit`)."""
        mech = self.q.mechanism
        keep, K = None, None
        if method in ("mle", "em"):
            ch = numeric_channel(self.model, channel_of(mech), [mech])
            f = em(ch, counts)
            require_answer(ch, counts, f, "mle")
            V = ch.avar_mle(np.clip(f.w, 1e-12, None))
            if se == "conditional":
                V = V - (np.diag(f.w) - np.outer(f.w, f.w))
            full = JointFit(f.w, "mle", f.n, None, note=f.note,
                            info={"iterations": f.iterations, "kkt": f.kkt, "converged": bool(f.converged)})
            lam = None
        else:
            keep = grr_keep(self.model, mech)
            if keep is not None:
                full = rr_joint(counts, keep=keep, se=se)
            else:
                K = numeric_K(self.model, mech)
                full = rr_joint(counts, K, se=se)
            full = dataclasses.replace(full, method=method)
            lam = counts / counts.sum()
            V = None
        if self.parts == [0] and len(self.variables) == 1 and self.variables[0].p == full.table.size:
            if V is not None:
                full = dataclasses.replace(full, var=np.diag(V) / full.n, se_kind=se, se_target="joint",
                                           cov=lambda: V / full.n)
            return full
        tensor = full.table.reshape(self.part_sizes)
        others = tuple(j for j in range(len(self.part_sizes)) if j not in self.parts)
        kept = sorted(self.parts)
        table = tensor.sum(axis=others) if others else tensor
        table = np.transpose(table, [kept.index(p) for p in self.parts])
        # the variance of each marginal cell, a sum of full-domain cells c: c^T V c
        var = np.empty(self.shape)
        for cell in itertools.product(*(range(s) for s in self.shape)):
            mask = np.zeros(self.part_sizes, dtype=bool)
            index = [slice(None)] * len(self.part_sizes)
            for p, i in zip(self.parts, cell):
                index[p] = i
            mask[tuple(index)] = True
            c = mask.reshape(-1).astype(float)
            if V is not None:
                var[cell] = c @ V @ c / full.n
                continue
            if keep is not None:
                s = lam @ c
                var[cell] = (s - s * s) / (keep[0] - keep[1]) ** 2 / full.n
            else:
                u = np.linalg.solve(K.T, c)  # the cell is c^T K^-1 lambda_hat = u^T lambda_hat
                var[cell] = (u * u @ lam - (u @ lam) ** 2) / full.n
            if se == "conditional":
                t = full.table @ c
                var[cell] -= (t - t * t) / full.n
        return JointFit(table, full.method, full.n, var, note=full.note + "; summed over the other parts",
                        info=full.info, se_kind=se, se_target="joint",
                        cov=functools.partial(_summed_covariance, self.part_sum_matrix().astype(float), full, V, keep,
                                              K, lam, se))


def _summed_covariance(S: np.ndarray, full: JointFit, V: np.ndarray | None, keep: tuple[float, float] | None,
                       K: np.ndarray | None, lam: np.ndarray | None, se: str) -> np.ndarray:
    """The covariance of the estimand's cells ``S Pi_hat`` (``S`` sums combined-domain cells),
    whose variances :meth:`JointProblem._combined` computes one at a time: ``S V S^T / n``
    for the MLE (``V``: n times its covariance, of the kind ``se``), else the linear
    estimator's with Jacobian ``S K^-1`` (:func:`privspec.backends.rr.fit.linear_covariance`)."""
    check_cells(S.shape[0])
    if V is not None:
        return S @ V @ S.T / full.n
    if keep is not None:  # K^-1 = (I - q J)/(p - q): S K^-1 = (S - q (S 1) 1^T)/(p - q)
        p, q = keep
        U = (S - q * S.sum(axis=1, keepdims=True)) / (p - q)
    else:
        U = np.linalg.solve(np.asarray(K, dtype=float).T, S.T).T
    return linear_covariance(U, lam, full.n, se, S @ full.table.reshape(-1))


def report_codes(factor: Any, tally) -> np.ndarray:
    """Report index per distinct tuple for one factor (the finite back end's reader)."""
    out = factor_codes(channel_of(factor), tally, factor.variable)
    return out[0] if isinstance(out, tuple) else out


def numeric_channel(model: ModelGraph, ch, factors) -> Any:
    """The channel with parameter values substituted (a float K for the estimators)."""
    subs = parameter_values(model)
    if not subs:
        return ch
    if ch.factors:
        return product_channel([matrix_channel(f.variable.labels, numeric_K(model, f).T) for f in factors])
    return matrix_channel(ch.x_labels, numeric_K(model, factors[0]).T)
