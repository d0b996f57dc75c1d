"""A tiny algebra: the same formulas, exact (sympy) or floating (numpy and math).

A formula written against an algebra ``A`` (:class:`Exact` or :class:`Float`) runs in
both arithmetics: the channel's moments and covariances (:mod:`privspec.backends.core.channel`),
the uniform design's closed forms, a frequency oracle's report law.  :func:`algebra`
picks the one that matches a value.

Examples
--------
>>> def keep(A, eps, d):
...     e = A.exp(eps)
...     return e / (e + d - 1)
>>> keep(Exact, sympy.log(3), 3), round(keep(Float, math.log(3), 3), 12)
(3/5, 0.6)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

__all__ = ["Exact", "Float", "algebra"]


class Exact:
    """sympy matrices and expressions: exact and symbolic."""

    @staticmethod
    def asmatrix(x: Any) -> sympy.Matrix:
        return x if isinstance(x, sympy.MatrixBase) else sympy.Matrix(x)

    @staticmethod
    def diag(v: Any) -> sympy.Matrix:
        return sympy.diag(*list(v))

    @staticmethod
    def inv(m: Any) -> sympy.Matrix:
        return m.inv()

    @staticmethod
    def outer(u: Any, v: Any) -> sympy.Matrix:
        return u * v.T

    @staticmethod
    def recip(v: Any) -> list:
        return [1 / x for x in v]

    @staticmethod
    def log2(x: Any) -> Any:
        return sympy.log(x, 2)

    @staticmethod
    def simplify(x: Any) -> Any:
        return x.applyfunc(sympy.cancel) if isinstance(x, sympy.MatrixBase) else sympy.cancel(x)

    @staticmethod
    def exp(x: Any) -> Any:
        return sympy.exp(x)

    @staticmethod
    def ratio(a: int, b: int) -> Any:
        """The number ``a / b``: a sympy Rational."""
        return sympy.Rational(a, b)


class Float:
    """numpy float64 arrays and Python floats."""

    @staticmethod
    def asmatrix(x: Any) -> np.ndarray:
        a = np.asarray(x, dtype=float)
        return a.reshape(-1, 1) if a.ndim == 1 else a

    @staticmethod
    def diag(v: Any) -> np.ndarray:
        return np.diag(np.asarray(v, dtype=float).ravel())

    @staticmethod
    def inv(m: Any) -> np.ndarray:
        return np.linalg.inv(m)

    @staticmethod
    def outer(u: Any, v: Any) -> np.ndarray:
        return np.outer(u, v)

    @staticmethod
    def recip(v: Any) -> np.ndarray:
        return 1.0 / np.asarray(v, dtype=float).ravel()

    @staticmethod
    def log2(x: Any) -> Any:
        return np.log2(x)

    @staticmethod
    def simplify(x: Any) -> Any:
        return x

    @staticmethod
    def exp(x: Any) -> float:
        return math.exp(x)

    @staticmethod
    def ratio(a: int, b: int) -> float:
        """The number ``a / b``: a float."""
        return a / b


def algebra(w: Any) -> type[Exact] | type[Float]:
    """The algebra matching ``w``: exact for sympy objects, floating otherwise."""
    if isinstance(w, sympy.MatrixBase) or (isinstance(w, (list, tuple)) and w and isinstance(w[0], sympy.Basic)):
        return Exact
    return Float
