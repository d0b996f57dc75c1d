"""Implicit Kronecker products: mode-wise products on a d_1 x ... x d_w tensor.

A product mechanism's channel is ``K = K_1 (x) ... (x) K_w``.  Its matrix has
``(d_1 ... d_w)^2`` entries; everything privspec needs from it (``K w``, ``K^-1 lambda``,
the diagonal of ``K^-1 diag(lambda) K^-T``) only needs the factors and a vector of
``d_1 ... d_w`` entries, laid out row-major as a tensor.

The core is :func:`kron_apply`: ``(A_1 (x) ... (x) A_w) x`` as ``w`` mode products.
Each step views the current tensor as a ``d_k x rest`` matrix, multiplies by ``A_k``
and leaves the result laid out as ``rest x d_k`` -- the cyclic "transposition" ``T_k``
of Definition 2 in the castell paper (Kikuchi, Domingo-Ferrer and Soria-Comas) -- so
the next mode comes first.  After ``w`` steps the axes are back in their order.  One
BLAS product per mode, no explicit transposition copy: O(w d prod d_i) time and
O(prod d_i) memory (Theorem 2), never the ``(prod d_i)^2`` matrix.  With square factors
(every channel) the cyclic steps run slice by slice of the leading axes and the leading
modes in place, so the result takes the input's place (``overwrite``) or one copy of it,
with scratch of at most a quarter of the table (about 1.1x the table in all for three
categories; two whole tensors took 2x).  Applied to the inverses ``K_k^-1`` it is the
castell inversion (Algorithm 3).
"""
from __future__ import annotations

import contextlib
import functools
from typing import Sequence

import numpy as np

from privspec.backends.core.blas import one_blas_thread

__all__ = ["kron_apply", "kron_dense", "kron_inverses", "kron_solve", "mode_product", "kron_cov_diag",
           "kron_cov", "kron_quadratic", "kron_cov_frobenius2"]


def _check(mats: Sequence[np.ndarray]) -> list[np.ndarray]:
    out = [np.asarray(A, dtype=float) for A in mats]
    if not out or any(A.ndim != 2 for A in out):
        raise ValueError("expected one or more matrices")
    return out


def kron_apply(mats: Sequence[np.ndarray], x: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """``(A_1 (x) ... (x) A_w) x`` without forming the Kronecker product.

    Parameters
    ----------
    mats : sequence of 2-d arrays
        ``A_k`` of shape ``(m_k, d_k)``.
    x : array
        ``prod d_k`` numbers: a flat vector (row-major over ``d_1, ..., d_w``) or a
        tensor of shape ``(d_1, ..., d_w)``.
    overwrite : bool
        Whether ``x`` (a C-contiguous float64 array the caller no longer needs) may hold
        the result: square factors then need no tensor besides ``x``.

    Returns
    -------
    numpy.ndarray
        The result as a tensor of shape ``(m_1, ..., m_w)`` (``.ravel()`` for the vector).

    Examples
    --------
    >>> A, B = np.array([[1., 2.], [3., 4.]]), np.array([[0., 1.], [1., 0.], [1., 1.]])
    >>> x = np.arange(4.0)
    >>> kron_apply([A, B], x).ravel().tolist() == (np.kron(A, B) @ x).tolist()
    True
    >>> y = np.arange(4.0)
    >>> r = kron_apply([A, A], y, overwrite=True)   # the result is written over y
    >>> np.shares_memory(r, y), r.ravel().tolist() == (np.kron(A, A) @ np.arange(4.0)).tolist()
    (True, True)
    """
    mats = _check(mats)
    size = int(np.prod([A.shape[1] for A in mats]))
    t = np.asarray(x, dtype=float).reshape(-1)
    if t.size != size:
        raise ValueError(f"expected {size} entries, got {t.size}")
    if all(A.shape[0] == A.shape[1] for A in mats):
        # t is x itself (a view of it) or already a converted copy of it
        out = t if overwrite or not np.may_share_memory(t, x) else t.copy()
        with _blas_threads(size):
            _apply_in_place(mats, out)
        return out.reshape([A.shape[0] for A in mats])
    # sizes after each step (non-square factors change them); two buffers, used in turn,
    # serve all steps: peak memory two tensors besides the input
    sizes, cur = [], size
    for A in mats:
        cur = cur // A.shape[1] * A.shape[0]
        sizes.append(cur)
    buffers = [np.empty(max(sizes)), np.empty(max(sizes)) if len(mats) > 1 else None]
    with _blas_threads(max(sizes)):
        for k, (A, out_size) in enumerate(zip(mats, sizes)):
            t = _step(A, t, buffers[k % 2], out_size)
    return t.reshape([A.shape[0] for A in mats])


def _step(A: np.ndarray, t: np.ndarray, buffer: np.ndarray, out_size: int) -> np.ndarray:
    rest = t.size // A.shape[1]
    # t is laid out as (d_k, rest); (rest x d_k) @ A^T, written C-contiguous, is the
    # layout (rest, m_k): the next mode comes first (Definition 2's T_k).  One BLAS call.
    out = buffer[:out_size].reshape(rest, A.shape[0])
    np.matmul(t.reshape(A.shape[1], rest).T, A.T, out=out)
    return out.reshape(-1)


#: entries of the scratch block the leading modes are multiplied through (2 MB)
CHUNK = 1 << 18
#: the leading modes span at least this many slices, so that the trailing modes' scratch
#: tensor (one slice) is at most a quarter of the table
LEADING_SLICES = 4


def _apply_in_place(mats: list[np.ndarray], t: np.ndarray) -> None:
    """Square factors applied to the flat tensor ``t`` in place, with scratch of at most a
    quarter of it: the trailing modes slice by slice of the leading axes (each slice by
    the cyclic steps of :func:`_step`, between the slice and one scratch slice), then each
    leading mode in place, a block of columns at a time."""
    dims = [A.shape[0] for A in mats]
    lead_axes, lead = 0, 1
    while lead_axes < len(dims) and lead < LEADING_SLICES:
        lead *= dims[lead_axes]
        lead_axes += 1
    trailing, sub = mats[lead_axes:], t.size // lead
    # one scratch array serves both phases: a slice for the trailing modes, a block of
    # columns (an eighth of the table at most, room for one column of every mode) after
    width_block = max(max(dims), min(CHUNK, t.size // 8))
    scratch = np.empty(max(sub if trailing else 0, width_block))
    for i in range(lead if trailing else 0):
        piece = cur = t[i * sub:(i + 1) * sub]
        for k, A in enumerate(trailing):
            cur = _step(A, cur, (scratch, piece)[k % 2], sub)
        if len(trailing) % 2:   # an odd number of steps ends in the scratch slice
            piece[...] = cur
    block, pre = scratch[:width_block], 1
    for A, d in zip(mats[:lead_axes], dims[:lead_axes]):
        post = t.size // (pre * d)
        t3, width = t.reshape(pre, d, post), max(1, block.size // d)
        for i in range(pre):
            for j in range(0, post, width):
                cols = t3[i, :, j:j + width]
                out = block[:cols.size].reshape(cols.shape)
                np.matmul(A, cols, out=out)
                cols[...] = out
        pre *= d


def _blas_threads(size: int) -> contextlib.AbstractContextManager:
    """A product with a tiny inner dimension (d_k) is memory-bound: extra BLAS threads only
    contend (measured up to 30x slower on a busy 2-core machine), so large tensors are
    multiplied on one BLAS thread; small ones are left as they are (BLAS does not split them)."""
    return one_blas_thread() if size >= 1 << 16 else contextlib.nullcontext()


def mode_product(tensor: np.ndarray, A: np.ndarray, axis: int) -> np.ndarray:
    """The mode-``axis`` product: ``out[..., i, ...] = sum_j A[i, j] tensor[..., j, ...]``.

    Examples
    --------
    >>> t = np.arange(6.0).reshape(2, 3)
    >>> mode_product(t, np.eye(3)[::-1], 1).tolist()
    [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
    """
    return np.moveaxis(np.tensordot(np.asarray(A, dtype=float), tensor, axes=([1], [axis])), 0, axis)


def kron_dense(mats: Sequence[np.ndarray]) -> np.ndarray:
    """The dense Kronecker product (for tests and the naive baselines only)."""
    return functools.reduce(np.kron, _check(mats))


def kron_inverses(mats: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``[A_1^-1, ..., A_w^-1]``: ``(A_1 (x) ... (x) A_w)^-1 = A_1^-1 (x) ... (x) A_w^-1``
    (Eq. 4, the "reduced" method, kept implicit)."""
    return [np.linalg.inv(A) for A in _check(mats)]


def kron_solve(mats: Sequence[np.ndarray], y: np.ndarray) -> np.ndarray:
    """``(A_1 (x) ... (x) A_w)^-1 y`` mode-wise (the castell inversion, Algorithm 3).

    Examples
    --------
    >>> P = np.array([[3., 1.], [1., 3.]]) / 4
    >>> kron_solve([P, P], np.array([[0.3, 0.1], [0.3, 0.3]])).round(2).tolist()
    [[0.45, -0.15], [0.25, 0.45]]
    """
    return kron_apply(kron_inverses(mats), y)


def kron_cov_diag(A_mats: Sequence[np.ndarray], lam: np.ndarray) -> np.ndarray:
    """Diagonal of ``A diag(lambda) A^T - (A lambda)(A lambda)^T`` with ``A = (x) A_k``.

    With ``A = K^-1`` this is the diagonal of the multinomial (Warner) covariance
    ``K^-1 (diag(lambda) - lambda lambda^T) K^-T`` of the castell estimate (times n).
    Since ``(A (x) B) o (A (x) B) = (A o A) (x) (B o B)`` (``o``: entrywise product),
    ``diag(A diag(lambda) A^T) = ((x) A_k o A_k) lambda``: O(prod d_i) memory.

    Examples
    --------
    >>> A = [np.array([[1.5, -0.5], [-0.5, 1.5]])] * 2
    >>> lam = np.array([0.3, 0.1, 0.3, 0.3])
    >>> D = kron_dense(A)
    >>> full = (D * lam) @ D.T - np.outer(D @ lam, D @ lam)
    >>> np.allclose(kron_cov_diag(A, lam).ravel(), np.diag(full))
    True
    """
    A_mats = _check(A_mats)
    mean = kron_apply(A_mats, lam)
    second = kron_apply([A * A for A in A_mats], lam)
    return second - mean * mean


def kron_cov(A_mats: Sequence[np.ndarray], lam: np.ndarray) -> np.ndarray:
    """The full ``A diag(lambda) A^T - (A lambda)(A lambda)^T`` (dense: small tables only)."""
    D = kron_dense(A_mats)
    lam = np.asarray(lam, dtype=float).reshape(-1)
    mean = D @ lam
    return (D * lam) @ D.T - np.outer(mean, mean)


def kron_quadratic(A_mats: Sequence[np.ndarray], lam: np.ndarray, c: np.ndarray) -> float:
    """``c^T (A diag(lambda) A^T - A lambda lambda^T A^T) c`` for one contrast ``c``
    (e.g. the variance of a sum of cells), through ``A^T c = (x) A_k^T c``."""
    A_mats = _check(A_mats)
    u = kron_apply([A.T for A in A_mats], c).reshape(-1)
    lam = np.asarray(lam, dtype=float).reshape(-1)
    return float(u * u @ lam - (u @ lam) ** 2)


def kron_cov_frobenius2(A_mats: Sequence[np.ndarray], lam: np.ndarray) -> float:
    """``||A diag(lambda) A^T - (A lambda)(A lambda)^T||_F^2`` with ``A = (x) A_k``, without
    forming a matrix: the squared Frobenius norm of the castell covariance (times n).

    With ``M = A diag(lambda) A^T`` and ``v = A lambda``, ``||M - v v^T||^2 = ||M||^2 - 2
    v^T M v + |v|^4``; ``||M||^2 = sum_{y,y'} lambda_y lambda_y' ((A^T A)[y, y'])^2`` and
    ``A^T A = (x) A_k^T A_k``, so ``||M||^2 = lambda . ((x) (A_k^T A_k) o (A_k^T A_k))
    lambda``; ``v^T M v = sum_y lambda_y ((A^T v)_y)^2``.  O(w d prod d_i) time.

    Examples
    --------
    >>> A = [np.array([[1.5, -0.5], [-0.5, 1.5]]), np.array([[2., -1.], [-1., 2.]])]
    >>> lam = np.array([0.3, 0.1, 0.2, 0.4])
    >>> bool(np.isclose(kron_cov_frobenius2(A, lam), np.sum(kron_cov(A, lam) ** 2)))
    True
    """
    A_mats = _check(A_mats)
    lam = np.asarray(lam, dtype=float).reshape(-1)
    gram2 = [(A.T @ A) ** 2 for A in A_mats]
    m2 = float(lam @ kron_apply(gram2, lam).reshape(-1))
    v = kron_apply(A_mats, lam).reshape(-1)
    u = kron_apply([A.T for A in A_mats], v).reshape(-1)
    return m2 - 2 * float(lam @ (u * u)) + float(v @ v) ** 2
