"""Implicit Kronecker algebra: mode-wise products equal the dense np.kron (property
tests), castell inversion equals the naive and reduced inverses, and the covariance
diagonal equals the dense covariance."""
from __future__ import annotations

import functools

import numpy as np
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from privspec.backends.core.channel import matrix_channel, product_channel
from privspec.backends.core.kron import (kron_apply, kron_cov, kron_cov_diag, kron_dense, kron_quadratic, kron_solve,
                                    mode_product)

shapes = st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=4)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(shapes=shapes, seed=st.integers(0, 2 ** 31 - 1))
def test_implicit_kronecker_equals_dense_np_kron(shapes, seed) -> None:
    rng = np.random.default_rng(seed)
    mats = [rng.normal(size=s) for s in shapes]
    x = rng.normal(size=int(np.prod([s[1] for s in shapes])))
    dense = functools.reduce(np.kron, mats)
    out = kron_apply(mats, x)
    assert out.shape == tuple(s[0] for s in shapes)
    assert np.allclose(out.ravel(), dense @ x, atol=1e-10)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(dims=st.lists(st.integers(2, 4), min_size=1, max_size=4), seed=st.integers(0, 2 ** 31 - 1))
def test_castell_inverse_equals_naive_and_reduced(dims, seed) -> None:
    rng = np.random.default_rng(seed)
    mats = [rng.dirichlet(np.ones(d), size=d).T + np.eye(d) for d in dims]  # nonsingular
    y = rng.random(int(np.prod(dims)))
    naive = np.linalg.solve(kron_dense(mats), y)                                  # (P1 x ... x Pw)^-1
    reduced = kron_dense([np.linalg.inv(m) for m in mats]) @ y                    # P1^-1 x ... x Pw^-1
    castell = kron_solve(mats, y).ravel()
    assert np.allclose(castell, naive) and np.allclose(castell, reduced)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(dims=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2 ** 31 - 1))
def test_covariance_diagonal_and_quadratic_match_dense(dims, seed) -> None:
    rng = np.random.default_rng(seed)
    A = [rng.normal(size=(d, d)) for d in dims]
    lam = rng.dirichlet(np.ones(int(np.prod(dims))))
    full = kron_cov(A, lam)
    assert np.allclose(kron_cov_diag(A, lam).ravel(), np.diag(full))
    c = rng.normal(size=lam.size)
    assert np.isclose(kron_quadratic(A, lam, c), c @ full @ c)


def test_mode_product_and_product_channel_matvec() -> None:
    rng = np.random.default_rng(3)
    t = rng.random((2, 3, 4))
    M = rng.random((5, 3))
    assert np.allclose(mode_product(t, M, 1), np.einsum("ij,ajb->aib", M, t))
    third = sympy.Rational(1, 3)
    f1 = matrix_channel(("a", "b"), [[third, 2 * third], [2 * third, third]])
    f2 = matrix_channel(("x", "y", "z"), [[third] * 3, [sympy.Rational(1, 2), sympy.Rational(1, 4), sympy.Rational(1, 4)],
                                          [0, 0, 1]])
    ch = product_channel([f1, f2])
    w = rng.dirichlet(np.ones(6))
    assert np.allclose(ch.matvec(w), ch.Kn @ w) and np.allclose(ch.rmatvec(w), ch.Kn.T @ w)
