"""Exact arithmetic with a bounded cost: the folding rules shared by the parser (numbers
only) and the resolver (arithmetic on parameters).

Numbers in a spec are exact sympy objects, folded by the grammar, never by ``eval`` or
``sympify``.  Exact arithmetic can cost without bound (``100^(1e9/3)`` asks sympy for
an integer of 660 million digits), so every operation is priced *before* sympy runs
it, from two cheap quantities of its operands:

* :func:`size_bits`, the bits sympy must hold to write a number exactly (the rational
  numbers inside it); a power multiplies it by the exponent, a product adds;
* :func:`log2_magnitude`, ``log2 |x|`` from a 15-digit evaluation; a power multiplies
  it by the exponent.

Either past :data:`MAX_BITS` is refused.  Every result is then checked: not ``nan``,
not a division by zero, real (a complex number is refused where sympy cannot tell, by
evaluating it), and decidable in a bounded number of digits (sympy's
``PrecisionExhausted`` becomes a refusal).

The refusals are :class:`Refused` exceptions carrying a message and a hint; the
parser and the resolver turn them into E104 diagnostics at the right span.

:func:`fmt` writes a number back as a person would write it in a spec (messages, captions).
"""
from __future__ import annotations

import math
from typing import Callable

import mpmath
import sympy
from sympy.core.evalf import PrecisionExhausted

#: Largest number (and smallest reciprocal) accepted, in bits: about 10^3900.  Exact
#: arithmetic beyond it is slow, and Python refuses to print integers of more than 4300
#: digits (about 14,300 bits), so every number a spec holds stays printable.
MAX_BITS = 13_000
#: Longest numeric literal (digits), and the largest power of ten it may carry.
MAX_DIGITS = 3_000
#: Largest argument of exp(): exp(9000) is about 2^12984, within MAX_BITS.
MAX_EXP = 9_000
#: Longest integer (numerator or denominator, in bits: about 600 digits) that a root may
#: be taken of: sympy looks for perfect powers and small factors, a square root of a
#: 600-digit rational takes 0.07 s, of a 1000-digit one 0.4 s, of a 3000-digit one 9 s.
ROOT_BITS = 2_000
#: Digits used to evaluate a number whose sign or realness sympy cannot tell at once;
#: beyond them a value is "indistinguishable from zero" (and a complex part is noise).
EVAL_DIGITS = 30
#: names that the arithmetic reads as constants
CONSTANTS = {"pi": sympy.pi, "inf": sympy.oo, "oo": sympy.oo}

_LN2 = math.log(2)

#: the functions a spec may apply to numbers
FUNCTIONS: dict[str, Callable[[sympy.Expr], sympy.Expr]] = {"log": sympy.log, "exp": sympy.exp,
                                                           "sqrt": sympy.sqrt}


class Refused(Exception):
    """Arithmetic that is not a real number, or that would cost too much to compute.

    Parameters
    ----------
    message : str
        What is wrong ("this power is too large to compute exactly").
    hint : str
        What to do instead.
    """

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


# ---- the two prices --------------------------------------------------------------------------
def size_bits(x: sympy.Basic) -> int:
    """The bits needed to write ``x`` exactly: the rational numbers in it, one bit per other
    constant (``pi``), none for a symbol.

    Examples
    --------
    >>> size_bits(sympy.Rational(3, 4)), size_bits(sympy.pi), size_bits(7 * sympy.sqrt(2))
    (5, 1, 10)
    """
    if isinstance(x, sympy.Rational):
        return max(abs(x.p), 1).bit_length() + max(x.q, 1).bit_length()
    if isinstance(x, sympy.Symbol):
        return 0  # a parameter without a value: sympy keeps its powers symbolic
    if not x.args:
        return 1
    # each operand was priced when it was folded, so the tree is small: at most MAX_BITS atoms
    return sum(size_bits(a) for a in x.args)


def log2_magnitude(x: sympy.Expr) -> float:
    """``log2 |x|`` (``-inf`` for 0, ``inf`` for an infinity) without computing ``x`` in full.

    Raises
    ------
    Refused
        When ``x`` cannot be evaluated (a value sympy cannot pin down).

    Examples
    --------
    >>> round(log2_magnitude(sympy.Integer(10) ** 300), 1), log2_magnitude(sympy.Integer(0))
    (996.6, -inf)
    """
    if isinstance(x, sympy.Rational):
        # exact to within one bit, and never a float overflow
        return _log2_int(abs(x.p)) - _log2_int(x.q) if x.p else -math.inf
    if x == 0:
        return -math.inf
    if infinite(x):
        return math.inf
    v = _evaluate(x)
    re, im = v.as_real_imag()
    mag = abs(mpmath.mpc(_mpf(re), _mpf(im)))
    if mag == 0:
        return -math.inf
    return float(mpmath.log(mag, 2))


def _log2_int(n: int) -> float:
    b = n.bit_length()
    if b <= 1000:
        return math.log2(n)
    return math.log2(n >> (b - 60)) + (b - 60)


def _zero_float(x: sympy.Expr) -> bool:
    """An evaluated zero: exactly 0, or a Float with no significant digit (sympy's 0.e-165)."""
    return x == 0 or (isinstance(x, sympy.Float) and x._prec < 2)


def _mpf(x: sympy.Expr) -> mpmath.mpf:
    return mpmath.mpf(x._mpf_) if isinstance(x, sympy.Float) else mpmath.mpf(0)


def _evaluate(x: sympy.Expr) -> sympy.Expr:
    """``x`` to :data:`EVAL_DIGITS` digits (a Float or a complex Float)."""
    try:
        return x.evalf(EVAL_DIGITS)
    except (PrecisionExhausted, OverflowError, ValueError, TypeError, ZeroDivisionError, RecursionError,
            ArithmeticError):
        raise Refused("this number cannot be evaluated to a meaningful precision",
                      "simplify the arithmetic (it cancels to nearly nothing or nothing at all)") from None


# ---- folding ---------------------------------------------------------------------------------
def binary(op: str, x: sympy.Expr, y: sympy.Expr) -> sympy.Expr:
    """``x op y`` for ``op`` in ``+ - * / ^``, priced first and checked after.

    Operands may hold symbols (parameters without a value): then only the exact size is
    priced, the magnitude is unknown.

    Examples
    --------
    >>> binary("^", sympy.Integer(2), sympy.Integer(10))
    1024
    >>> binary("^", sympy.Integer(100), sympy.Rational(10 ** 9, 3))
    Traceback (most recent call last):
    ...
    privspec.language.arith.Refused: this power is too large to compute exactly
    """
    numbers = x.is_number and y.is_number
    if op == "/" and _is_zero(y):
        raise Refused("division by zero")
    if op == "^":
        _price_power(x, y, numbers)
    else:
        if size_bits(x) + size_bits(y) > MAX_BITS:  # sums too: their denominators multiply
            raise Refused("this number is too large to compute exactly", _LIMIT_HINT)
        if numbers and op in "*/" and not (_is_zero(x) or _is_zero(y)):
            mx, my = log2_magnitude(x), log2_magnitude(y)
            mag = mx + my if op == "*" else mx - my
            if math.isfinite(mag) and abs(mag) > MAX_BITS:
                raise Refused("this number is too large to compute exactly" if mag > 0 else
                              "this number is too small to compute exactly", _LIMIT_HINT)
    try:
        if op == "+":
            value = x + y
        elif op == "-":
            value = x - y
        elif op == "*":
            value = x * y
        elif op == "/":
            value = x / y
        else:
            value = sympy.Pow(x, y)
    except _SYMPY_FAILURES as e:  # sympy's own bugs (a factorization that goes wrong) are refusals too
        raise Refused("this number cannot be computed exactly", f"simplify the arithmetic ({type(e).__name__})") \
            from None
    return checked(value) if numbers else _checked_symbolic(value)


def _is_zero(x: sympy.Expr) -> bool:
    # a rational's numerator read directly: sympy's == sympifies its other side first
    return x.p == 0 if isinstance(x, sympy.Rational) else x == 0


#: what sympy raises when it cannot compute a number (never a privspec bug to report)
_SYMPY_FAILURES = (ValueError, TypeError, ArithmeticError, RecursionError, PrecisionExhausted)


_LIMIT_HINT = f"numbers are exact and limited to about 10^{int(MAX_BITS * math.log10(2))} in size"


def _price_power(x: sympy.Expr, y: sympy.Expr, numbers: bool) -> None:
    """Refuse ``x^y`` before sympy computes it when its exact form or size would be huge."""
    if not y.is_number:
        return  # a symbolic exponent stays a symbolic power: nothing is computed
    if numbers and sign_of(x) < 0 and not infinite(y) and not _is_integer(y):
        raise Refused("a negative number to a non-integer power is not a real number",
                      "write the sign outside: -(8^(1/3)), not (-8)^(1/3)")
    if infinite(y) or (x.is_number and (infinite(x) or x == 0 or x in (1, -1))):
        return  # sympy decides these at once (nan and zoo are checked after)
    if not _is_integer(y):
        _price_root(x)
        if numbers:
            _refuse_near_one(log2_magnitude(x), y, "this power")
    # Work in log2 of |y|, which may be far beyond a float (1e2999).
    ly = log2_magnitude(y)
    if ly <= 0:
        return  # |y| <= 1: the result is no larger than x, in size and in magnitude
    # sympy expands x^y into exact rational factors, x^(n + f) = x^n * x^f, so the
    # exact size grows with |y| even when y is not an integer (100^(1e9/3))
    size = size_bits(x)
    if size and math.log2(size) + ly > _LOG2_MAX_BITS:
        raise Refused("this power is too large to compute exactly", _LIMIT_HINT)
    if numbers:
        lx = log2_magnitude(x)
        if lx != 0 and math.log2(abs(lx)) + ly > _LOG2_MAX_BITS:
            raise Refused("this power is too large to compute exactly" if (lx > 0) == (sign_of(y) > 0) else
                          "this power is too small to compute exactly", _LIMIT_HINT)


_LOG2_MAX_BITS = math.log2(MAX_BITS)


def _refuse_near_one(log2_base: float, exponent: sympy.Expr, what: str) -> None:
    """Refuse ``b^y`` (``log2 |b|`` given) when it equals 1 to :data:`EVAL_DIGITS` digits without
    being 1: ``339565^(1e-300)``.  Such a number cannot be told from 1 by evaluation, so
    sympy decides comparisons with it by a minimal polynomial of degree 10^300, and runs
    out of memory."""
    if log2_base == 0 or not math.isfinite(log2_base):
        return
    ly = log2_magnitude(exponent)
    if math.log2(abs(log2_base)) + ly < -EVAL_DIGITS * math.log2(10):
        raise Refused(f"{what} is 1 to {EVAL_DIGITS} digits but not exactly 1",
                      "write 1 if one is meant; exponents this close to 0 cannot be computed with")


def sign_of(x: sympy.Expr) -> int:
    """-1, 0 or 1 for a real number (0 also for a value indistinguishable from zero).

    Examples
    --------
    >>> sign_of(sympy.pi - 3), sign_of(sympy.log(8) - 3 * sympy.log(2)), sign_of(-sympy.oo)
    (1, 0, -1)
    """
    if isinstance(x, sympy.Rational):
        return (x.p > 0) - (x.p < 0)
    if x is sympy.oo:
        return 1
    if x is -sympy.oo:
        return -1
    re, _ = _evaluate(x).as_real_imag()
    if _zero_float(re):
        return 0
    return 1 if re > 0 else -1


def _price_root(x: sympy.Expr) -> None:
    """Refuse a root (a non-integer power) of a number holding a very long integer."""
    for r in sympy.preorder_traversal(x):
        if isinstance(r, sympy.Rational) and max(abs(r.p).bit_length(), r.q.bit_length()) > ROOT_BITS:
            raise Refused("a root of a number this long is too slow to compute exactly",
                          f"roots are taken of numbers of up to about {int(ROOT_BITS * math.log10(2))} digits; "
                          "round the number first")


def _is_integer(y: sympy.Expr) -> bool:
    # structural only: sympy's assumption queries (y.is_integer, x.is_zero) may compute
    # minimal polynomials for minutes; a number that is an integer only after
    # simplification (log(8)/log(2)) counts as not one
    return isinstance(y, sympy.Integer)


def infinite(x: sympy.Expr) -> bool:
    """``inf``, ``-inf`` (or ``zoo``): structurally, as folding leaves every infinity."""
    # by identity: the three are sympy singletons, and ``x in (...)`` sympifies x for
    # each ``==`` (a third of check's time on a long spec went here)
    return x is sympy.S.Infinity or x is sympy.S.NegativeInfinity or x is sympy.S.ComplexInfinity




def call(name: str, x: sympy.Expr) -> sympy.Expr:
    """``log(x)``, ``exp(x)`` or ``sqrt(x)``, priced first and checked after.

    Examples
    --------
    >>> call("sqrt", sympy.Integer(4)), call("log", sympy.Integer(1))
    (2, 0)
    >>> call("log", sympy.Integer(0))
    Traceback (most recent call last):
    ...
    privspec.language.arith.Refused: log(0) is -inf, not a number
    """
    fn = FUNCTIONS[name]
    if x.is_number:
        if name == "exp" and not infinite(x) and log2_magnitude(x) > math.log2(MAX_EXP):
            # exp of a huge number cannot be compared or printed (mpmath overflows)
            if sign_of(x) > 0:
                raise Refused("this number is too large to compute exactly", f"exp() takes arguments up to {MAX_EXP}")
            raise Refused("this number is too small to compute exactly", f"exp() takes arguments down to -{MAX_EXP}")
        if name == "exp" and not infinite(x) and x != 0:
            _refuse_near_one(math.log2(math.e), x, "exp() of a number this small")
        s = sign_of(x)
        if name == "log":
            if s == 0:
                raise Refused("log(0) is -inf, not a number", "logarithms need a positive argument")
            if s < 0:
                raise Refused("this is not a real number", "logarithms need a positive argument")
        if name == "sqrt":
            _price_root(x)
        if name == "sqrt" and s < 0:
            raise Refused("this is not a real number", "square roots need a non-negative argument")
        try:
            value = fn(x)
        except _SYMPY_FAILURES as e:
            raise Refused("this number cannot be computed exactly", f"simplify the arithmetic ({type(e).__name__})") \
                from None
        return checked(value)
    if size_bits(x) > MAX_BITS:
        raise Refused("this number is too large to compute exactly", _LIMIT_HINT)
    if name == "sqrt":
        _price_root(x)
    return _checked_symbolic(fn(x))


# ---- checks after folding ----------------------------------------------------------------------
def checked(value: sympy.Expr) -> sympy.Expr:
    """``value`` if it is a real number (or an infinity), else :class:`Refused`.

    Examples
    --------
    >>> checked(sympy.Integer(3))
    3
    >>> checked(sympy.Pow(-1, sympy.pi))
    Traceback (most recent call last):
    ...
    privspec.language.arith.Refused: this is not a real number
    """
    if isinstance(value, sympy.Rational):  # the usual result, never nan or zoo: no tree walk
        return value
    if value is sympy.nan or value.has(sympy.nan):
        raise Refused("this arithmetic is undefined", "check for inf - inf, 0 * inf or 1^inf")
    if value is sympy.zoo or value.has(sympy.zoo):
        raise Refused("division by zero")
    if value in (sympy.oo, -sympy.oo):
        return value
    if size_bits(value) > MAX_BITS:
        raise Refused("this number is too large to compute exactly", _LIMIT_HINT)
    v = _evaluate(value)
    re, im = v.as_real_imag()
    # numerically, never by sympy's assumptions (value.is_zero may run for minutes)
    if im != 0 and not _zero_float(im):
        raise Refused("this is not a real number", _REAL_HINT)
    if _zero_float(re):
        # log(8) - 3*log(2): zero to every digit evaluated, yet not recognizably 0; comparing it
        # with anything would be undecidable
        raise Refused("this number is zero to 30 digits but not recognizably 0",
                      "write 0 if zero is meant, or simplify the arithmetic")
    if isinstance(re, sympy.Float) and re != 0:
        mag = abs(float(mpmath.log(abs(_mpf(re)), 2)))
        if mag > MAX_BITS:
            raise Refused("this number is too large to compute exactly", _LIMIT_HINT)
    return value


_REAL_HINT = "square roots and logarithms need a non-negative argument; a negative number to a " \
             "non-integer power is complex"


def _checked_symbolic(value: sympy.Expr) -> sympy.Expr:
    if value is sympy.nan or value is sympy.zoo or value.has(sympy.zoo, sympy.nan):
        raise Refused("this arithmetic is undefined" if value.has(sympy.nan) else "division by zero")
    if size_bits(value) > MAX_BITS:
        raise Refused("this expression is too large to compute exactly", _LIMIT_HINT)
    return value


# ---- writing numbers back ---------------------------------------------------------------
#: exact forms longer than this (in bits, about 60 digits) are printed approximately
_FMT_BITS = 200


def fmt(x: sympy.Expr) -> str:
    """A number as a person would write it: ``5/6``, ``0.99``, ``log(3) ~ 1.0986``.

    Long exact forms (a 3000-digit integer) are shown to 6 digits instead.

    Examples
    --------
    >>> fmt(sympy.Rational(5, 6)), fmt(sympy.Integer(10) ** 100), fmt(sympy.log(3))
    ('5/6', '~ 1.00000E+100', 'log(3) ~ 1.09861')
    >>> fmt(sympy.Rational(1, 25)), fmt(sympy.Rational(1, 20)), fmt(sympy.Rational(99, 100)), fmt(sympy.Rational(4, 5))
    ('0.04', '0.05', '0.99', '4/5')
    """
    if x.is_number and size_bits(x) > _FMT_BITS:
        try:
            return f"~ {sympy.N(x, 6)}"
        except (OverflowError, ValueError, TypeError, PrecisionExhausted):
            return "a number too long to print"
    if isinstance(x, sympy.Integer):
        return str(x)
    if x is sympy.oo or x is -sympy.oo:  # sympy prints oo; the language writes inf
        return "inf" if x is sympy.oo else "-inf"
    if isinstance(x, sympy.Rational):
        q, twos, fives = x.q, 0, 0
        while q % 2 == 0:
            q, twos = q // 2, twos + 1
        while q % 5 == 0:
            q, fives = q // 5, fives + 1
        if q == 1 and 10 <= x.q <= 10**12:
            # a finite decimal: 2^a 5^b in the denominator takes max(a, b) decimals (1/25 = 0.04)
            return f"{float(x):.{max(twos, fives)}f}".rstrip("0").rstrip(".")
        return str(x)
    if x.is_number:
        try:
            return f"{x} ~ {float(sympy.N(x, 20)):.6g}"
        except (OverflowError, ValueError, TypeError, PrecisionExhausted):
            return f"{x} ~ {sympy.N(x, 6)}"
    return str(x)
