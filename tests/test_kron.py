"""Implicit Kronecker algebra: mode-wise products equal the dense np.kron (property
tests), castell inversion equals the naive and reduced inverses, and the covariance
diagonal equals the dense covariance."""
from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from privspec.backends.core import kron as kron_module
from privspec.backends.core.channel import matrix_channel, product_channel
from privspec.backends.rr import castell as castell_module
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


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=6), st.integers(0, 2 ** 31))
def test_square_factors_in_place_equal_dense(dims, seed) -> None:
    """Square factors go through the in-place path (the leading slices, then the leading
    modes a block of columns at a time): equal to the dense product, with and without
    ``overwrite``; ``x`` is kept unless overwrite is asked, and then holds the result."""
    rng = np.random.default_rng(seed)
    mats = [rng.normal(size=(d, d)) for d in dims]
    x = rng.normal(size=int(np.prod(dims)))
    want = kron_dense(mats) @ x
    kept = x.copy()
    assert np.allclose(kron_apply(mats, x).ravel(), want, rtol=1e-10, atol=1e-12)
    assert np.array_equal(x, kept)
    got = kron_apply(mats, x, overwrite=True)
    assert np.shares_memory(got, x) and np.allclose(x, want, rtol=1e-10, atol=1e-12)


def test_in_place_blocks_cover_every_column(monkeypatch) -> None:
    """With a block smaller than a mode's columns, the leading modes loop over blocks: the
    last, partial block is multiplied too."""
    monkeypatch.setattr(kron_module, "CHUNK", 7)
    rng = np.random.default_rng(3)
    mats = [rng.normal(size=(d, d)) for d in (2, 3, 2, 5)]
    x = rng.normal(size=60)
    assert np.allclose(kron_apply(mats, x).ravel(), kron_dense(mats) @ x, rtol=1e-10)


#: run in a fresh interpreter: tracemalloc counts every thread's allocations, and threads
#: other tests leave behind (servers, pools) would be counted too
_PEAKS = """
import json, tracemalloc
import numpy as np
from privspec.backends.rr import castell as c
from privspec.backends.core.blas import one_blas_thread
c.SCORE_CELL_LIMIT = 1000                    # the Wald path at this size
with one_blas_thread():                      # its first use imports threadpoolctl: not the tables' memory
    pass
P = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
counts = np.random.default_rng(0).integers(0, 9, size=(3,) * 11).astype(float)
out = {}
for name, kw in (("estimate", {"variance": False}), ("variance", {}), ("conditional", {"se": "conditional"})):
    tracemalloc.start()
    fit = c.castell(counts, [P.T] * 11, **kw)
    out[name] = tracemalloc.get_traced_memory()[1] / counts.nbytes
    tracemalloc.stop()
print(json.dumps(out))
"""


def test_castell_memory_is_the_tables_it_returns() -> None:
    """Peak memory (allocations traced, the input counts not counted): the estimate alone
    about 1.1x the table (its own table and a scratch block), with per-cell variances
    about 2.1x (estimate and variance, the second moment computed in their place); the
    two-buffer scheme took 3x and 5x."""
    done = subprocess.run([sys.executable, "-c", _PEAKS], capture_output=True, text=True, check=True)
    peaks = json.loads(done.stdout)
    assert peaks["estimate"] <= 1.2, peaks
    assert peaks["variance"] <= 2.2 and peaks["conditional"] <= 2.2, peaks


def test_castell_wald_path_equals_the_formulas(monkeypatch) -> None:
    """The in-place variance (past the score intervals' cell limit) is the formula's."""
    monkeypatch.setattr(castell_module, "SCORE_CELL_LIMIT", 10)
    P = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    counts = np.random.default_rng(0).integers(0, 9, size=(3,) * 5).astype(float)
    fit = castell_module.castell(counts, [P.T] * 5, variance=False)
    fit_var = castell_module.castell(counts, [P.T] * 5)
    lam = counts / counts.sum()
    inv = [np.linalg.inv(P.T)] * 5
    table = kron_apply(inv, lam)
    second = kron_apply([A * A for A in inv], lam)
    assert np.allclose(fit.table, table, rtol=1e-12, atol=0) and np.allclose(fit_var.table, table, rtol=1e-12, atol=0)
    assert np.allclose(fit_var.var, (second - table * table) / counts.sum(), rtol=1e-10, atol=1e-18)
    cond = castell_module.castell(counts, [P.T] * 5, se="conditional")
    assert np.allclose(cond.var, (second - table) / counts.sum(), rtol=1e-10, atol=1e-18)
