"""The fits of many replications at once (privspec.backends.core.batched) and the batched
profile likelihood intervals (privspec.backends.finite.profile) give what the scalar fits
give one replication at a time, and simulate's seeded table is the one it was (issue 38)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import privspec
from privspec.backends.core.batched import ManyBlocks, em_fits, em_many, newton_many
from privspec.backends.core.channel import matrix_channel
from privspec.backends.core.estimators import Blocks, em, newton
from privspec.backends.finite.estimates import fit_estimate, fit_estimates
from privspec.backends.finite.simulate import draw_reports
from privspec.backends.finite.truth import Truth

URN = "specs/urn.privspec"


@pytest.fixture(scope="module")
def urn():
    model = privspec.load(URN).model
    q = model.queries["w_mle"]
    t = Truth(model, q.mechanism)
    w = np.maximum(t.numeric_w(t.w_full), 0.0)
    _, C = draw_reports(np.random.default_rng(5), t.full_channel.Kn, w / w.sum(), 300, 60)
    return q, t.full_channel, C


def test_em_many_is_em_row_by_row(urn) -> None:
    _, ch, C = urn
    fits = em_fits(ch, C)
    for counts, fit in zip(C, fits):
        one = em(ch, counts)
        assert fit.converged and one.converged
        assert np.abs(fit.w - one.w).max() < 1e-6 and abs(fit.loglik - one.loglik) < 1e-8


def test_newton_many_holds_each_rows_masses(urn) -> None:
    _, ch, C = urn
    W = em_many(ch.Kn, C).w
    group = np.array([False, True, False, False])
    mass = np.clip(W[:, 1] + np.linspace(-0.05, 0.05, len(C)), 0.0, 1.0)
    blocks = ManyBlocks(np.tile(np.where(group, 0, 1), (len(C), 1)), np.column_stack([mass, 1 - mass]))
    many = newton_many(ch.Kn, C, W, blocks, tol=1e-9)
    for i, counts in enumerate(C):
        one = newton(ch, counts, W[i], tol=1e-9, blocks=Blocks(4, np.where(group, 0, 1), np.array([mass[i], 1 - mass[i]])))
        assert abs(many.w[i, 1] - mass[i]) < 1e-12
        assert abs(many.loglik[i] - one.loglik) < 1e-8 and np.abs(many.w[i] - one.w).max() < 1e-6


def test_fit_estimates_is_fit_estimate_row_by_row(urn) -> None:
    q, ch, C = urn
    many = fit_estimates(q, ch, C[:12])
    for counts, est in zip(C[:12], many):
        one = fit_estimate(q, ch, counts)
        assert est.ci_method == one.ci_method == "profile likelihood"
        assert np.abs(est.w - one.w).max() < 1e-6 and np.abs(est.ci - one.ci).max() < 1e-6


def test_a_refused_row_refuses_only_itself() -> None:
    ch = matrix_channel(("a", "b"), sympy.Matrix([[3, 1], [1, 3]]) / 4)
    fits = em_fits(ch, np.array([[260.0, 740.0], [0.0, 0.0]]))
    assert fits[0].converged and isinstance(fits[1], ValueError)


@pytest.mark.slow
def test_simulate_keeps_its_seeded_table() -> None:
    """The numbers privspec printed for this command before the fits were batched (six significant digits)."""
    r = privspec.load(URN).simulate(1000, 200, seed=1, queries=["w_mle"], progress=False)["w_mle"].value
    assert np.allclose(r["mean"].values, [0.0136453, 0.0989399, 0.198169, 0.689246], rtol=5e-6, atol=0)
    assert list(r["ci95_coverage"].values) == [0.935, 0.955, 0.94, 0.935]
    assert np.allclose(r["ci95_mean_width"].values, [0.0462242, 0.070143, 0.0731706, 0.0738955], rtol=5e-6, atol=0)
    assert abs(r["scaled_loss_mean"] - 1.28526) < 6e-6
