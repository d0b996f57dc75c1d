"""The values of query results and their JSON form (the JSON contract of LANGUAGE.md).

Every back end returns a :class:`privspec.results.result.Result`: the query's kind, a
value, and extras such as the estimator (``method``), ``n``, standard errors (``se``), a
test's fields or an NPMLE's ``loglik``/``iterations``/``kkt``.  Values are one of

* a scalar: a sympy expression (exact or symbolic), a float, an int or a bool;
* :class:`Vector` over a variable's categories;
* :class:`Matrix` with row and column labels;
* :class:`Table`, a joint table over several variables;
* :class:`TestResult`;
* :class:`StepFunction`, a distribution function on innermost intervals;
* a mapping of names to any of these (several metrics, a budget);
* a :class:`privspec.results.comparison.ComparisonDocument` (a ``compare`` block's answer).

Exact sympy values stay exact until rendered; ``Result.to_dict`` adds ``"expr"`` and
``"latex"`` for them, and sets ``"value"`` to null when they are symbolic.

The module does not import sympy (about 0.2 s): a result of plain numbers is built,
serialized and printed without it (a compiled run prints its results so).  Where sympy
is not loaded, no value can be a sympy object, so the checks for exact forms ask
:func:`is_exact` (and :func:`loaded_sympy`), never ``isinstance(x, sympy.Basic)``.
"""
from __future__ import annotations

import keyword
import math
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

from privspec.results.comparison import ComparisonDocument
from privspec.results.layout import inline_or_block, interval


#: the most entries a value's repr lists (the rest are counted)
REPR_ITEMS = 12


def loaded_sympy() -> ModuleType | None:
    """The sympy module if it has been imported, else None.

    Before sympy is imported no object can be a sympy one, so a value's exact form is
    looked for only when this is not None: printing a result of plain numbers never
    imports sympy.
    """
    return sys.modules.get("sympy")


def is_exact(x: Any, kind: str = "Basic") -> bool:
    """Whether ``x`` is a sympy object (``kind``: the sympy class, ``"Basic"`` or
    ``"MatrixBase"``), without importing sympy.

    Examples
    --------
    >>> is_exact(0.25)
    False
    >>> import sympy
    >>> is_exact(sympy.Rational(1, 4)), is_exact(sympy.Matrix([1]), "MatrixBase")
    (True, True)
    """
    sympy = loaded_sympy()
    cls = getattr(sympy, kind, None) if sympy is not None else None
    return cls is not None and isinstance(x, cls)


def _short(x: Any) -> str:
    """A number as a repr shows it: six significant digits, exact forms as written."""
    if isinstance(x, bool) or x is None:
        return str(x)
    if is_exact(x):
        sympy = loaded_sympy()
        return exact_text(x) if len(exact_text(x)) <= 40 else f"{float(sympy.N(x)):.6g}" if x.is_number else "..."
    if hasattr(x, "item"):  # numpy scalar
        x = x.item()
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _named(labels: Sequence[Any], values: Sequence[Any]) -> str:
    """``black=0.0102, red=0.0998`` (labels that are not Python names quoted, as a dict's keys
    are); after :data:`REPR_ITEMS` entries, how many more."""
    plain = all(isinstance(lab, str) and lab.isidentifier() and not keyword.iskeyword(lab) for lab in labels)
    items = [f"{lab}={_short(v)}" if plain else f"{str(lab)!r}: {_short(v)}"
             for lab, v in zip(labels[:REPR_ITEMS], values[:REPR_ITEMS])]
    if len(labels) > REPR_ITEMS:
        items.append(f"... {len(labels) - REPR_ITEMS} more")
    return ", ".join(items) if plain else "{" + ", ".join(items) + "}"


def _grid_repr(head: str, value: Any) -> str:
    """``head`` above the value as the text report lays it out (a grid under its labels)."""
    return head + inline_or_block(to_json(value), "  ")


@dataclass(frozen=True)
class Vector:
    """Numbers over labels (a distribution, its standard errors).

    Examples
    --------
    >>> import sympy
    >>> Vector(("black", "red"), (0.0102, sympy.Rational(1, 3)))
    Vector(black=0.0102, red=1/3)
    """

    labels: tuple[str, ...]
    values: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"Vector({_named(self.labels, self.values)})"


@dataclass(frozen=True)
class Matrix:
    """A matrix with row and column labels (Q, a covariance, a channel).

    Examples
    --------
    >>> Matrix(("a", "b"), ("a", "b"), [[0.5, -0.5], [-0.5, 0.5]])
    Matrix(2 x 2)
                    a           b
      a           0.5        -0.5
      b          -0.5         0.5
    """

    rows: tuple[str, ...]
    cols: tuple[str, ...]
    data: Any  # sympy.Matrix, numpy array or nested sequences

    def __repr__(self) -> str:
        head = f"Matrix({len(self.rows)} x {len(self.cols)})"
        if len(self.rows) > REPR_ITEMS or len(self.cols) > REPR_ITEMS:
            return f"{head}: rows {_named(self.rows, self.rows)}; cols {_named(self.cols, self.cols)}"
        return _grid_repr(head, self)


@dataclass(frozen=True)
class Table:
    """A joint table over ``variables`` (numpy array of ``shape``).

    Examples
    --------
    >>> import numpy as np
    >>> Table(("A", "B"), (("a1", "a2"), ("b1", "b2")), np.array([[0.45, -0.15], [0.25, 0.45]]))
    Table(A x B: 2 x 2)
      A \\ B            b1          b2
      a1             0.45       -0.15
      a2             0.25        0.45
    """

    variables: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    data: Any

    def __repr__(self) -> str:
        if len(self.variables) == 1:
            return f"Table({self.variables[0]}: {_named(self.labels[0], list(_nested(self.data)))})"
        shape = " x ".join(str(len(lab)) for lab in self.labels)
        head = f"Table({' x '.join(self.variables)}: {shape})"
        if math.prod(len(lab) for lab in self.labels) > REPR_ITEMS ** 2:
            return head
        return _grid_repr(head, self)


@dataclass(frozen=True)
class TestResult:
    """A hypothesis test.

    Examples
    --------
    >>> TestResult("pearson", 3.2, 1.0, 0.0736)
    TestResult(pearson: statistic=3.2, df=1, p_value=0.0736)
    """

    __test__ = False  # not a pytest test class

    method: str
    statistic: float
    df: float | None
    p_value: float

    def __repr__(self) -> str:
        return (f"TestResult({self.method}: statistic={_short(self.statistic)}, df={_short(self.df)}, "
                f"p_value={_short(self.p_value)})")


@dataclass(frozen=True)
class StepFunction:
    """Masses on innermost intervals (l, r], in increasing order (an NPMLE of F).

    Examples
    --------
    >>> StepFunction(((0.0, 1.0), (2.0, float("inf"))), (0.25, 0.75))
    StepFunction({'(0, 1]': 0.25, '(2, inf]': 0.75})
    """

    intervals: tuple[tuple[float, float], ...]
    mass: tuple[float, ...]

    def __repr__(self) -> str:
        return f"StepFunction({_named([interval(a, b) for a, b in self.intervals], self.mass)})"


@dataclass(frozen=True)
class Inference:
    """How an estimate's covariance and its intervals at any level are computed: what the
    Python API's ``cov_params()`` and ``conf_int(alpha)`` need beyond the JSON (which
    keeps ``se`` and the 95% ``ci95``). Never serialized.

    Entries are in the order of the estimate's ``params`` (a joint table's cells in C
    order, the last variable fastest).

    Attributes
    ----------
    method : str or None
        How the intervals are made, at every level (the result's ``ci_method``; None:
        there are none).
    interval : callable
        ``level -> (lower, upper)``: the back end's own interval at that level (the
        stored ``ci95`` is ``interval(0.95)``).
    covariance : callable or None
        ``() -> Var(estimate)``, a square array of the kind ``se_kind`` says, evaluated at
        the estimate (the matching ``avar`` divided by n); its diagonal is ``se ** 2``.
        Computed when asked for (a joint table's is ``cells x cells``).
    no_covariance : str
        Why there is none, where ``covariance`` is None (the message of ``cov_params()``).
    """

    method: str | None
    interval: Callable[[float], tuple[Any, Any]] | None = None
    covariance: Callable[[], Any] | None = None
    no_covariance: str = ""


def number(x: Any) -> Any:
    """A JSON number for a scalar: ``"inf"``/``"-inf"`` for infinities, None when symbolic.

    Examples
    --------
    >>> import numpy as np
    >>> number(0.5), number(float("-inf")), number(float("nan")), number(np.float64(2.0)), number(True)
    (0.5, '-inf', None, 2.0, True)
    """
    if type(x) is float:  # the common case first, without the sympy check (a large table's cells)
        return x if math.isfinite(x) else None if math.isnan(x) else "inf" if x > 0 else "-inf"
    if isinstance(x, bool) or type(x) is int:
        return x
    if is_exact(x):
        sympy = loaded_sympy()
        if x is sympy.oo:
            return "inf"
        if x is -sympy.oo:
            return "-inf"
        if x.free_symbols or not x.is_number:
            return None
        if x.is_Integer and x.p.bit_length() <= _JSON_INT_BITS:
            return int(x)
        try:
            if x.is_Rational:  # int / int is correctly rounded in Python (sympy.N then float() rounds twice)
                return x.p / x.q
            return float(sympy.N(x, 30))  # 30 digits, then one rounding to double: off only at 1e-13 odds
        except (TypeError, ValueError):  # no real value (an integral of an unknown F): symbolic
            return None
        except OverflowError:
            return "inf" if x.is_positive else "-inf"
    if hasattr(x, "item"):  # numpy scalar
        x = x.item()
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


#: integers longer than this (in bits, about 3,900 digits) go to JSON as floats: Python
#: refuses to print integers of more than 4,300 digits
_JSON_INT_BITS = 13_000


def exact_text(form: Any, printer: Any = str) -> str:
    """``str(form)`` (or ``printer(form)``), or a 30-digit approximation when the exact form
    holds an integer too long for Python to print (more than 4,300 digits).

    Examples
    --------
    >>> import sympy
    >>> exact_text(sympy.Rational(1, 3))
    '1/3'
    >>> exact_text(sympy.Integer(10) ** 5000)
    '1.00000000000000000000000000000e+5000 (exact form: an integer of 5001 digits)'
    """
    try:
        return printer(form)
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        digits = max((abs(int(a)).bit_length() for a in _integers(form)), default=0) * 30103 // 100000 + 1
        try:
            import sympy  # start-up: loaded already (a form too long to print is a sympy one)

            approx = str(sympy.N(form, 30))
        except (TypeError, ValueError, OverflowError):
            approx = "a number"
        return f"{approx} (exact form: an integer of {digits} digits)"


def _integers(form: Any) -> list:
    if is_exact(form, "MatrixBase"):
        return [a for x in form for a in _integers(x)]
    if is_exact(form, "Rational"):
        return [form.p, form.q]
    if is_exact(form):
        return [a for arg in form.args for a in _integers(arg)]
    return []


def _rows(data: Any) -> list[list[Any]]:
    if is_exact(data, "MatrixBase"):
        return [[data[i, j] for j in range(data.cols)] for i in range(data.rows)]
    return [list(r) for r in data]


def _nested(data: Any) -> Any:
    if hasattr(data, "tolist"):
        data = data.tolist()
    if isinstance(data, (list, tuple)):
        return [_nested(x) for x in data]
    return number(data)


def to_json(value: Any) -> Any:
    """The JSON form of a result value (LANGUAGE.md, "JSON results")."""
    if isinstance(value, Vector):
        return {lab: to_json(v) for lab, v in zip(value.labels, value.values)}
    if isinstance(value, Matrix):
        return {"rows": list(value.rows), "cols": list(value.cols),
                "data": [[number(x) for x in r] for r in _rows(value.data)]}
    if isinstance(value, Table):
        data = value.data
        shape = list(getattr(data, "shape", ()))
        return {"variables": list(value.variables), "labels": [list(x) for x in value.labels],
                "shape": shape, "data": _nested(data)}
    if isinstance(value, TestResult):
        return {"method": value.method, "statistic": number(value.statistic),
                "df": None if value.df is None else number(value.df), "p_value": number(value.p_value)}
    if isinstance(value, StepFunction):
        return {"intervals": [[number(a), number(b)] for a, b in value.intervals],
                "mass": [number(m) for m in value.mass]}
    if isinstance(value, ComparisonDocument):
        return to_json(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return number(value)


def sympy_form(value: Any) -> Any:
    """The exact sympy object behind a value, or None when it is not exact."""
    if is_exact(value):
        return value
    if isinstance(value, Vector) and all(is_exact(v) for v in value.values):
        # an empty vector has an exact form too (the empty matrix), as it always had;
        # start-up: only it imports sympy here, a vector of sympy values finds it loaded
        import sympy

        return sympy.Matrix(value.values).T
    if isinstance(value, Matrix) and is_exact(value.data, "MatrixBase"):
        return value.data
    return None


def has_symbols(value: Any) -> bool:
    """Whether an exact form in ``value`` (or in one of a mapping's values) has free symbols."""
    form = sympy_form(value)
    if form is not None:
        return bool(form.free_symbols)
    if isinstance(value, Mapping):
        return any(has_symbols(v) for v in value.values())
    return False


def flatten(value: Any, prefix: str = "") -> Any:
    """``(key, leaf)`` pairs of a JSON value, nested keys spelled ``outer.inner`` and list
    entries ``outer[i]``.

    Examples
    --------
    >>> list(flatten({"a": {"b": 1}, "c": [2, 3]}))
    [('a.b', 1), ('c[0]', 2), ('c[1]', 3)]
    """
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from flatten(v, f"{prefix}[{i}]")
    else:
        yield (prefix, value)
