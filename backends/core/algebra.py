"""A tiny algebra: the same formulas, exact (sympy) or floating (numpy and math).

A formula written against an algebra ``A`` (:class:`Exact` or :class:`Float`) runs in
both arithmetics: the channel's moments and covariances (:mod:`privspec.backends.core.channel`),
the uniform design's closed forms, a frequency oracle's report law.  :func:`algebra`
picks the one that matches a value.

Examples
--------
>>> import math, sympy
>>> def keep(A, eps, d):
...     e = A.exp(eps)
...     return e / (e + d - 1)
>>> keep(Exact, sympy.log(3), 3), round(keep(Float, math.log(3), 3), 12)
(3/5, 0.6)
"""
from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # start-up: sympy (0.2-0.3 s) loads only where an exact value is computed
    import sympy

__all__ = ["Exact", "Float", "algebra"]


class Exact:
    """sympy matrices and expressions: exact and symbolic (sympy is imported on first use:
    a floating-point computation never needs it)."""

    @staticmethod
    def asmatrix(x: Any) -> sympy.Matrix:
        import sympy  # start-up: only exact values need it (a floating-point run never loads it)
        return x if isinstance(x, sympy.MatrixBase) else sympy.Matrix(x)

    @staticmethod
    def diag(v: Any) -> sympy.Matrix:
        import sympy  # start-up: only exact values need it (a floating-point run never loads it)
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
        import sympy  # start-up: only exact values need it (a floating-point run never loads it)
        return sympy.log(x, 2)

    @staticmethod
    def simplify(x: Any) -> Any:
        import sympy  # start-up: only exact values need it (a floating-point run never loads it)
        return x.applyfunc(sympy.cancel) if isinstance(x, sympy.MatrixBase) else sympy.cancel(x)

    @staticmethod
    def exp(x: Any) -> Any:
        import sympy  # start-up: only exact values need it (a floating-point run never loads it)
        return sympy.exp(x)

    @staticmethod
    def ratio(a: int, b: int) -> Any:
        """The number ``a / b``: a sympy Rational."""
        import sympy  # start-up: only exact values need it (a floating-point run never loads it)
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
    sympy = sys.modules.get("sympy")
    if sympy is None:  # sympy never loaded: w cannot be a sympy object (and a float run stays light)
        return Float
    if isinstance(w, sympy.MatrixBase) or (isinstance(w, (list, tuple)) and w and isinstance(w[0], sympy.Basic)):
        return Exact
    return Float
