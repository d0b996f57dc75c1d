"""A channel's float matrix and the numbers a comparison reads, without sympy's
element-wise work (issue 38): grr at d = 256 spent 6-8 s evaluating its 65,536 entries one
by one, and a comparison's criteria simplified every exact entry of the GRR covariance
(9.8 s of ``analyze specs/planning.privspec``) only to turn it into floats."""
from __future__ import annotations

import numpy as np
import pytest
import sympy
from sympy.core.evalf import EvalfMixin

from privspec.backends.core.channel import matrix_channel
from privspec.backends.core.grr_channel import grr_channel

SHARES = sympy.Matrix([sympy.Rational(x) for x in ("0.009551", "0.031909", "0.095943", "0.008323", "0.854274")])


def test_the_float_matrix_evaluates_each_distinct_entry_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ch = grr_channel(tuple(f"c{i}" for i in range(64)), sympy.Integer(2))
    calls = []
    evalf = EvalfMixin.evalf

    def counted(self, *args, **kwargs):
        calls.append(self)
        return evalf(self, *args, **kwargs)

    monkeypatch.setattr(EvalfMixin, "evalf", counted)
    Kn = ch.Kn
    assert len(calls) < 64   # two distinct entries (keep, other), not 64 * 64
    monkeypatch.undo()
    assert np.array_equal(Kn, np.array(ch.K.evalf(17).tolist(), dtype=float))   # the same doubles


def test_the_float_matrix_of_any_exact_matrix_is_its_evaluation() -> None:
    e = sympy.exp(1)
    ch = matrix_channel(("a", "b", "c"), [[e / (e + 2), 1 / (e + 2), 1 / (e + 2)],
                                          [sympy.Rational(1, 3)] * 3, [0, sympy.Rational(1, 2), sympy.Rational(1, 2)]])
    assert np.array_equal(ch.Kn, np.array(ch.K.evalf(17).tolist(), dtype=float))
    assert ch.Kn.shape == (3, 3) and ch.Tn.shape == (3, 3)


@pytest.mark.parametrize("eps", [sympy.Integer(2), sympy.log(3), sympy.Rational(1, 2)])
def test_the_unsimplified_grr_covariance_has_the_simplified_ones_numbers(eps: sympy.Expr) -> None:
    ch = grr_channel(("a", "b", "c", "d", "e"), eps)
    shown, numbers = ch.covariance_closed_form(SHARES), ch.covariance_closed_form(SHARES, simplified=False)
    assert np.array_equal(np.array(shown.evalf(17).tolist(), dtype=float), np.array(numbers.tolist(), dtype=float))
    assert shown == shown.T and numbers == ch.covariance_closed_form(SHARES, simplified=False)


def test_the_unsimplified_grr_covariance_in_w_is_the_formula_before_simplifying() -> None:
    w = sympy.Matrix(sympy.symbols("w_a w_b w_c", positive=True))
    ch = grr_channel(("a", "b", "c"), sympy.log(3))
    shown, raw = ch.covariance_closed_form(w), ch.covariance_closed_form(w, simplified=False)
    assert shown[0, 1] == sympy.factor(sympy.simplify(raw[0, 1])) and raw == raw.T
