"""Anchor and population laws of the interval mechanisms, as numbers and as formulas.

Anchors and populations are :class:`privspec.model.graph.Law` objects: :func:`law_distribution`
turns one into a frozen :mod:`scipy.stats` distribution (``shift + scale * X``),
:func:`law_support` gives its support alone (no scipy.stats),
:func:`law_cdf_expr` and :func:`law_pdf_expr` into exact sympy formulas, and :func:`draw`
samples it.  :func:`nearest_double` is how every exact value of a spec (a bound, a
parameter, tau) becomes a float here: correctly rounded, so that a number in the spec
and the same number read from data are the same double.
"""
from __future__ import annotations

import math

import numpy as np
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import Law, ModelGraph, Variable


def nearest_double(x: sympy.Expr | float) -> float:
    """The double nearest an exact value (correctly rounded).

    A rational goes through Python's integer true division, which rounds once and
    correctly; ``float(sympy.N(x, 17))`` rounds twice (to 17 digits, then to a double)
    and missed the nearest double for 0.4% of 17-digit decimals, so a spec bound
    ``0.44675406503255774`` and the same number read from data differed by an ulp.
    Other constants (``log(3)``, ``pi``) are evaluated to 40 digits and rounded once more,
    which errs only within 1e-40 of a tie.

    Examples
    --------
    >>> import sympy
    >>> nearest_double(sympy.Rational(44675406503255774, 10**17)) == float("0.44675406503255774")
    True
    >>> nearest_double(sympy.oo), nearest_double(sympy.log(3)) == float(sympy.N(sympy.log(3), 40))
    (inf, True)
    """
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    if isinstance(x, sympy.Rational):
        try:
            return int(x.p) / int(x.q)
        except OverflowError:  # beyond the largest double
            return math.copysign(math.inf, int(x.p))
    return float(sympy.N(x, 40))


#: each family's standard law X (its scipy.stats name) and X's support, as scipy.stats has them
_FAMILIES = {"uniform": ("uniform", 0.0, 1.0), "normal": ("norm", -math.inf, math.inf),
             "logistic": ("logistic", -math.inf, math.inf), "exponential": ("expon", 0.0, math.inf)}


def _loc_scale(law: Law) -> tuple[str, float, float]:
    """A continuous law as ``loc + scale * X``: its family, ``loc`` and ``scale``."""
    p = {k: nearest_double(v) for k, v in law.params}
    shift, scale = nearest_double(law.shift), nearest_double(law.scale)
    if law.family == "uniform":
        base_loc, base_scale = p["a"], p["b"] - p["a"]
    elif law.family == "normal":
        base_loc, base_scale = p["mean"], p["sd"]
    elif law.family == "logistic":
        base_loc, base_scale = p["location"], p["scale"]
    elif law.family == "exponential":
        base_loc, base_scale = 0.0, 1.0 / p["rate"]
    else:
        raise BackendError(Diagnostic("B101", f"no continuous law '{law.family}'"))
    # the front end keeps scale > 0 (E309), so shift + scale * X is again loc-scale
    return law.family, shift + scale * base_loc, scale * base_scale


def law_distribution(law: Law):
    """A frozen scipy distribution for a continuous law, ``shift + scale * X``.

    Examples
    --------
    >>> import sympy
    >>> d = law_distribution(Law("logistic", (("location", sympy.Integer(0)), ("scale", sympy.Integer(5)))))
    >>> round(float(d.cdf(5.0)), 6)
    0.731059
    >>> tuple(map(float, law_distribution(Law("exponential", (("rate", sympy.Integer(2)),),
    ...                                        shift=sympy.Integer(10))).support()))
    (10.0, inf)
    """
    family, loc, scale = _loc_scale(law)
    return getattr(scipy.stats, _FAMILIES[family][0])(loc=loc, scale=scale)


def law_support(law: Law) -> tuple[float, float]:
    """The support of a continuous law, the same doubles as its :func:`law_distribution`'s
    ``support()`` (``a * scale + loc``), without loading scipy.stats (0.4-1 s of a command
    that only reads reports).

    Examples
    --------
    >>> import sympy
    >>> law_support(Law("uniform", (("a", sympy.Integer(0)), ("b", sympy.Integer(150))), shift=sympy.Integer(2)))
    (2.0, 152.0)
    >>> law_support(Law("normal", (("mean", sympy.Integer(0)), ("sd", sympy.Integer(1)))))
    (-inf, inf)
    """
    family, loc, scale = _loc_scale(law)
    _, a, b = _FAMILIES[family]
    return a * scale + loc, b * scale + loc


def law_cdf_expr(law: Law, x: sympy.Expr) -> sympy.Expr:
    """The exact CDF of a law at ``x`` (a sympy expression).

    Examples
    --------
    >>> import sympy
    >>> u = sympy.Symbol("u")
    >>> law_cdf_expr(Law("uniform", (("a", sympy.Integer(0)), ("b", sympy.Integer(150)))), u)
    Piecewise((0, u < 0), (u/150, u <= 150), (1, True))
    """
    z = (x - law.shift) / law.scale
    p = dict(law.params)
    if law.family == "uniform":
        a, b = p["a"], p["b"]
        return sympy.Piecewise((0, z < a), ((z - a) / (b - a), z <= b), (1, True))
    if law.family == "normal":
        return (1 + sympy.erf((z - p["mean"]) / (p["sd"] * sympy.sqrt(2)))) / 2
    if law.family == "logistic":
        return 1 / (1 + sympy.exp(-(z - p["location"]) / p["scale"]))
    if law.family == "exponential":
        return sympy.Piecewise((0, z < 0), (1 - sympy.exp(-p["rate"] * z), True))
    raise BackendError(Diagnostic("B101", f"no continuous law '{law.family}'"))


def law_pdf_expr(law: Law, x: sympy.Expr) -> sympy.Expr:
    """The exact density of a law at ``x`` (a sympy expression)."""
    return sympy.diff(law_cdf_expr(law, x), x) if law.family in ("normal", "logistic") else _pdf_piecewise(law, x)


def _pdf_piecewise(law: Law, x: sympy.Expr) -> sympy.Expr:
    z = (x - law.shift) / law.scale
    p = dict(law.params)
    if law.family == "uniform":
        a, b = p["a"], p["b"]
        return sympy.Piecewise((1 / ((b - a) * law.scale), (z >= a) & (z <= b)), (0, True))
    rate = p["rate"]
    return sympy.Piecewise((rate * sympy.exp(-rate * z) / law.scale, z >= 0), (0, True))


def population_law(model: ModelGraph, variable: Variable) -> Law | None:
    """The continuous population declared for ``variable`` alone, or None."""
    pop = model.population_of(variable.name)
    if pop is None or len(pop.variables) != 1 or pop.law.family == "categorical":
        return None
    return pop.law



def support_of(variable: Variable) -> tuple[float, float]:
    """The variable's support ``[lower, upper]`` as floats (infinite ends allowed)."""
    return nearest_double(variable.lower), nearest_double(variable.upper)



def draw(law: Law, size, rng: np.random.Generator) -> np.ndarray:
    """Draws from a law (anchors or a population), by inversion of uniforms from ``rng``."""
    return law_distribution(law).ppf(rng.random(size))

