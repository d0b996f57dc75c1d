"""Checks of a declaration's arguments, shared by the builders of mechanisms
(:mod:`privspec.model.mechanisms`, :mod:`privspec.model.randomized_response`), laws and
populations (:mod:`privspec.model.resolve`): probabilities, weights summing to one,
positive and floating-point numbers, a call's parameter read as the signature table types
it, the variable a mechanism privatizes, a variable collected twice.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Iterable, Sequence

import sympy

from privspec.language import arith
from privspec.language import ast
from privspec.language.arith import fmt
from privspec.language.source import Span
from privspec.model.graph import Variable
from privspec.model.scope import Context, compare, sign
from privspec.model.signatures import Signature, bind, signature


def check_probability(ctx: Context, value: sympy.Expr, span: Span, what: str = "probability") -> bool:
    """Error E301 unless 0 <= value <= 1 (symbolic values pass)."""
    lo, hi = compare(value, sympy.Integer(0)), compare(value, sympy.Integer(1))
    if (lo is not None and lo < 0) or (hi is not None and hi > 0):
        ctx.error("E301", f"{what} {fmt(value)} is outside [0, 1]", span,
                  "probabilities and design weights lie between 0 and 1")
        return False
    return True


def sums_to_one(values: list[sympy.Expr]) -> tuple[bool | None, sympy.Expr]:
    """Whether exact values sum to 1 (None when symbolic and undecidable), and the sum."""
    if all(isinstance(v, sympy.Rational) for v in values):
        # the common case, summed as fractions: sympy's Add of many rationals was the
        # slowest step of resolving a long spec
        exact = sum((Fraction(int(v.p), int(v.q)) for v in values), Fraction(0))
        return exact == 1, sympy.Rational(exact.numerator, exact.denominator)
    total = sympy.Add(*values)
    if isinstance(total, sympy.Rational):
        return total == 1, total
    if total.has(sympy.nan, sympy.oo, -sympy.oo, sympy.zoo):
        return False, total
    if total.is_number:
        s = sign(total - 1)  # never a raw comparison: sympy cannot always decide it
        return (None if s is None else s == 0), total
    diff = sympy.simplify(total - 1)
    return (True if diff == 0 else None), total


#: Largest epsilon: e^epsilon (the odds of a truthful grr report, the geometric noise's
#: ratio) must stay a floating-point number, below about e^709.  epsilon = 700 already
#: means no privacy at all (odds of 10^304 to 1).
MAX_EPSILON = 700
#: Largest magnitude of a number the interval back end computes with in floating point
#: (law parameters, support bounds): float64 ends near 1.8e308.  A scale (sd, rate) must
#: be above its reciprocal, 1e-300, not to round to 0.
FLOAT_LIMIT = 1e300
_LOG2_FLOAT_LIMIT = math.log2(FLOAT_LIMIT)


def check_positive(ctx: Context, value: sympy.Expr, node: ast.Node, what: str) -> bool:
    """Positive, or a parameter declared positive (E304 for epsilon, E309 otherwise); a
    number must also be finite, and epsilon at most :data:`MAX_EPSILON`."""
    s = sign(value)
    code = "E304" if what == "epsilon" else "E309"
    if s is None:
        ctx.error(code, f"{what} must be > 0, but {value} may not be", node.span,
                  f"declare the parameter with a bound: parameter {value} > 0")
        return False
    if s <= 0:
        ctx.error(code, f"{what} must be > 0, found {fmt(value)}", node.span,
                  "local-DP epsilon is positive; smaller means more privacy" if what == "epsilon" else "")
        return False
    if arith.infinite(value):
        ctx.error(code, f"{what} must be finite, found inf", node.span,
                  "epsilon = inf would report the truth: no privacy" if what == "epsilon" else "")
        return False
    at = ctx.evaluated(value)  # at the parameters' values, as the back ends will compute it
    if what == "epsilon" and at.is_number and (compare(at, sympy.Integer(MAX_EPSILON)) or 0) > 0:
        ctx.error(code, f"epsilon must be at most {MAX_EPSILON}, found {fmt(at)}"
                        + ("" if at is value else f" ({value} at the parameters' values)"), node.span,
                  f"e^epsilon must stay a floating-point number; epsilon = {MAX_EPSILON} already means no "
                  "privacy (the truth is reported with odds of 10^304 to 1)")
        return False
    return True


def check_float(ctx: Context, value: sympy.Expr, node: ast.Node, what: str, scale: bool = False) -> bool:
    """E309 unless a number is finite and within floating point (:data:`FLOAT_LIMIT`); a
    scale must not round to 0 (:data:`FLOAT_TINY`).  Symbolic values pass."""
    if not value.is_number:
        return True
    # by magnitudes (log2 |x|): a comparison would call anything below 1e-40 zero (scope.sign)
    mag = arith.log2_magnitude(value)
    if arith.infinite(value) or mag > _LOG2_FLOAT_LIMIT:
        ctx.error("E309", f"{what} must be a finite number of at most 1e300 in size, found {fmt(value)}",
                  node.span, "the interval back end computes in floating point (64-bit)")
        return False
    if scale and mag < -_LOG2_FLOAT_LIMIT:
        ctx.error("E309", f"{what} is too small for floating point (below 1e-300), found {fmt(value)}",
                  node.span, "the interval back end computes in floating point (64-bit)")
        return False
    return True


def value(ctx: Context, args: dict[str, ast.Node], sig: Signature, name: str):
    """The value of parameter ``name`` of a bound call, checked for the kind of value the
    signature table gives it (``positive``: E304/E309; ``probability``: E301; ``integer``:
    whole and at least its minimum; ``number``); None after reporting what is wrong."""
    param, node = sig.param(name), args[name]
    what = param.described
    if param.kind == "integer":
        return ctx.integer(node, what, param.minimum)
    v = ctx.number(node, what)
    if v is None:
        return None
    if param.kind == "positive" and not check_positive(ctx, v, node, what):
        return None
    if param.kind == "probability" and not check_probability(ctx, v, node.span, what):
        return None
    return v


def categorical_variable(ctx: Context, node: ast.Node, mech: str) -> Variable | None:
    """The categorical variable that mechanism ``mech`` privatizes (E401 for a continuous one)."""
    var = ctx.variable(node, "a categorical variable")
    if var is not None and not var.is_categorical:
        ctx.error("E401", f"{mech}() privatizes categorical variables, but {var.name} is continuous",
                  node.span, f"for continuous variables use interval({var.name}, case1(...))")
        return None
    return var


def continuous_variable(ctx: Context, node: ast.Node, mech: str) -> Variable | None:
    """The continuous variable that mechanism ``mech`` privatizes (E401 for a categorical one)."""
    var = ctx.variable(node, "a continuous variable")
    if var is not None and var.is_categorical:
        ctx.error("E401", f"{mech}() privatizes continuous variables, but {var.name} is categorical",
                  node.span, f"for categorical variables use subset({var.name}, uniform) or grr({var.name}, epsilon = 1)")
        return None
    return var


def bind_variable(ctx: Context, call: ast.Call, read: Callable[[Context, ast.Node, str], Variable | None],
                  names: Sequence[str]) -> tuple[dict[str, ast.Node], Variable, dict[str, sympy.Expr]] | None:
    """A mechanism's call bound to its signature (E205), the variable it privatizes (read
    by ``read``: :func:`categorical_variable` or :func:`continuous_variable`) and the
    values of those of the parameters ``names`` that it gives (:func:`value`); None after
    reporting all that is wrong."""
    sig = signature(call.name, "mechanism")
    args = bind(ctx, call, sig)
    if args is None:
        return None
    var = read(ctx, args["variable"], call.name)
    values = {k: value(ctx, args, sig, k) for k in names if k in args}
    if var is None or any(v is None for v in values.values()):
        return None
    return args, var, values


def repeated_component(pairs: Iterable[tuple[ast.Node, Variable]]) -> tuple[str, ast.Node] | None:
    """The first variable component that two of ``(node, variable)`` share, with the node of
    the second (a product's factors, a protocol's attributes observe different variables)."""
    seen: set[str] = set()
    for node, v in pairs:
        for c in v.components():
            if c in seen:
                return c, node
            seen.add(c)
    return None
