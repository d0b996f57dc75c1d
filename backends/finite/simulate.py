"""``privspec simulate`` for finite mechanisms: replications drawn as multinomial counts
per observation (never individual respondents), each estimator compared with its
asymptotic theory."""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Simulation
from privspec.results.result import Result
from privspec.results.values import Matrix, Vector
from privspec.progress import progress
from privspec.backends.finite.truth import Truth, real_labels, avar_matrix, independence_on_counts
from privspec.backends.core.channel import Channel
from privspec.backends.finite.estimates import FiniteEstimate, fit_estimates, estimand_map, se_kind_of


def draw_reports(rng: np.random.Generator, K: np.ndarray, w: np.ndarray, n: int, reps: int) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` samples of ``n`` respondents as counts: the true categories ``x ~ Multinomial(n, w)``,
    then the reports of the ``x_j`` respondents in category j ``~ Multinomial(x_j, K[:, j])``.

    Two stages (the same law of the reports as ``Multinomial(n, K w)``) so that each replication
    also knows its true table, the target of ``se = conditional``.  Returns (true counts, report
    counts), each ``reps x ...``; nothing is drawn per respondent.
    """
    x = rng.multinomial(n, w, size=reps)
    cols = np.maximum(K, 0.0)
    cols = cols / cols.sum(axis=0, keepdims=True)
    reports = np.zeros((reps, K.shape[0]))
    for j in np.nonzero(w > 0)[0]:  # one vectorized draw per category, over all replications
        reports += rng.multinomial(x[:, j], cols[:, j])
    return x.astype(float), reports


#: replications fitted at once (their fits and profile intervals batched): the bar moves a chunk at a time
CHUNK = 250
#: at most this many numbers in the bordered Newton systems of a chunk's profile fits
#: (2 ends x p categories x (p + 2)^2 per replication): 160 MB
CHUNK_CELLS = 2e7


def estimates_of(q: Query, ch: Channel, draws: np.ndarray) -> Iterator[FiniteEstimate | Exception]:
    """Each replication's estimate (or the error that refused it), fitted :data:`CHUNK`
    replications at a time, fewer on many categories (:data:`CHUNK_CELLS`)
    (:func:`privspec.backends.finite.estimates.fit_estimates`)."""
    size = max(1, min(CHUNK, int(CHUNK_CELLS // (2 * ch.p * (ch.p + 2) ** 2))))
    for start in range(0, len(draws), size):
        yield from fit_estimates(q, ch, draws[start:start + size])


def simulate_query(model: ModelGraph, q: Query, *, n: int, reps: int, seed: int | None) -> Result:
    """Empirical against analytic for one query, from ``reps`` replications of size ``n``."""
    t = Truth(model, q.mechanism)
    if not t.declared:
        raise BackendError(Diagnostic("B001", f"simulate needs a population for "
                                      f"{', '.join(v.name for v in q.mechanism.variables)}"))
    ch = t.full_channel  # reports are drawn from the whole channel (dummy respondents included)
    ch.check_floating()
    w_true = np.maximum(t.numeric_w(t.w_full), 0.0)
    rng = np.random.default_rng(seed)
    if q.kind == "test":  # tests need the reports alone
        lam = np.maximum(ch.Kn @ w_true, 0.0)
        return _simulate_test(q, rng.multinomial(n, lam / lam.sum(), size=reps).astype(float), n, reps, seed)
    truth, draws = draw_reports(rng, ch.Kn, w_true / w_true.sum(), n, reps)
    kind = se_kind_of(q)
    # the analytic reference in floating point: exact algebra only to be rounded would take
    # seconds on 4 categories at epsilon = 1, minutes at epsilon = 1e-300 (sympy's evalf)
    V_true, labels = avar_matrix(t, q, numeric=True)
    target = np.array([float(x) for x in t.w])
    M, _ = estimand_map(real_labels(t.mech), q.mechanism, q)   # a marginal, or a joint of some variables
    if M is not None:
        target = M @ target
    estimates, targets, covered, widths, methods = [], [], [], [], set()
    skipped = 0
    p_real = len(t.w)
    for x, est in progress(zip(truth, estimates_of(q, ch, draws)), total=reps, desc=f"simulate {q.name}", unit="rep"):
        if isinstance(est, Exception):
            skipped += 1
            continue
        # the conditional question's target is this sample's own table of true values
        aim = target if kind == "population" else (x[:p_real] / x[:p_real].sum())
        if kind != "population" and M is not None:
            aim = M @ aim
        estimates.append(est.w)
        targets.append(aim)
        if est.ci is not None:
            methods.add(est.ci_method)
            covered.append((est.ci[:, 0] <= aim) & (aim <= est.ci[:, 1]))
            widths.append(est.ci[:, 1] - est.ci[:, 0])
    if not estimates:
        raise BackendError(Diagnostic("B005", "every replication failed to produce an estimate"))
    E, A = np.array(estimates), np.array(targets)
    emp_cov = np.cov(E - A, rowvar=False) * n
    loss = n * np.sum((E - A) ** 2, axis=1)
    value = {
        "mean": Vector(tuple(labels), tuple(E.mean(axis=0))),
        "truth": Vector(tuple(labels), tuple(target)),
        "bias": Vector(tuple(labels), tuple(E.mean(axis=0) - A.mean(axis=0))),
        "n_cov_empirical": Matrix(tuple(labels), tuple(labels), emp_cov),
        "n_cov_analytic": Matrix(tuple(labels), tuple(labels), V_true),
        "scaled_loss_mean": float(loss.mean()),
        "scaled_loss_se": float(loss.std(ddof=1) / np.sqrt(len(loss))) if len(loss) > 1 else float("nan"),
        "scaled_loss_limit": float(np.trace(V_true)),
    }
    if covered:
        value["ci95_coverage"] = Vector(tuple(labels), tuple(np.mean(covered, axis=0)))
        value["ci95_mean_width"] = Vector(tuple(labels), tuple(np.mean(widths, axis=0)))
    extras = {"method": q.method.name, "se_kind": kind, "n": n, "reps": len(E), "seed": seed,
              "note": "true counts ~ Multinomial(n, w), reports ~ Multinomial(x_j, K[:, j]) per category"
                      + ("; errors against each replication's own true table (se = conditional)"
                         if kind == "conditional" else "")}
    if methods:
        extras["ci_method"] = "; ".join(sorted(methods))
    if skipped:
        extras["skipped"] = skipped
    return Simulation(value, **extras)


def _simulate_test(q: Query, draws: np.ndarray, n: int, reps: int, seed: int | None) -> Result:
    """The rejection rate at 5% of the test as the query states it (the default
    calibration is permutation), with the time each test took.

    A test rejects when ``p <= 0.05``: a permutation p-value with B draws is a multiple of
    ``1/(B + 1)`` and then rejects with probability exactly ``floor(0.05 (B + 1))/(B + 1)``
    under H0.  Each replication draws its permutations from its own child of ``seed``
    (one loop over replications; every test works on the replication's table of counts).
    """
    children = np.random.SeedSequence(seed).spawn(reps)
    start = time.perf_counter()
    results = [independence_on_counts(q, c, seed=child) for c, child in zip(draws, children)]
    seconds = time.perf_counter() - start
    pvals = np.array([r.value.p_value for r in results])
    rate = float(np.mean(pvals <= 0.05))
    value = {"rejection_rate_0.05": rate, "rejection_rate_se": float(np.sqrt(rate * (1 - rate) / reps)),
             "mean_p_value": float(np.mean(pvals)),
             "p_value_ks_uniform": float(scipy.stats.kstest(pvals, "uniform").pvalue),
             "seconds_per_test": seconds / reps}
    first = results[0]
    extras = {"method": q.method.name, "calibration": first.calibration, "n": n, "reps": reps, "seed": seed,
              "seconds": seconds,
              "note": "power under the declared population (size if it is independent); "
                      "p_value_ks_uniform is approximate for permutation p-values (multiples of 1/(B + 1))"}
    if first.draws is not None:
        extras["draws"] = first.draws
    return Simulation(value, **extras)
