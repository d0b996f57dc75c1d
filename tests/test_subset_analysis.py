"""Subset privacy, analysis side: the paper's worked examples and the channel core's
formulas (exact), symbolic against numeric."""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import privspec
from privspec.backends.core.channel import subset_channel
from privspec.backends.core.compile import channel_of
from privspec.backends.core.uniform import uniform_r
from privspec.backends.finite.backend import FiniteBackend

RACE = ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")
RACE_W = (0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
ADULT = f"""
variable race: categorical {{{", ".join(f'"{r}"' for r in RACE)}}}
population race ~ categorical({", ".join(map(str, RACE_W))})
mechanism uni = subset(race, uniform)
query l = leakage(uni, size, mutual_information, prediction)
query h = coverage(uni, mutual_information)
query case12 = individual(uni, {{Black, "Asian-Pac-Islander", White}}, White)
query case13 = individual(uni, {{Black, "Asian-Pac-Islander", White}}, Black)
query case14 = individual(uni, {{"Asian-Pac-Islander", White}}, "Asian-Pac-Islander")
query case15 = individual(uni, {{Black, "Amer-Indian-Eskimo", Other}}, "Amer-Indian-Eskimo")
"""


def answer(spec_text: str, name: str):
    model = privspec.load(spec_text).model
    return FiniteBackend().answer(model, model.queries[name], "analyze")


def test_example_2_urn_coverage_is_0684_exactly() -> None:
    model = privspec.load(Path(__file__).resolve().parent.parent / "specs" / "urn.privspec").model
    r = FiniteBackend().answer(model, model.queries["cov"], "analyze")
    # tau = sum_a mu_a (1_a^T w)^2 = ((p - 2) sum w^2 + 1) / 3 for the p = 4 pair design
    assert r.value == sympy.Rational(5131, 7500)
    assert round(float(r.value), 3) == 0.684


def test_adult_race_leakage_matches_section_v() -> None:
    leak = answer(ADULT, "l").value
    w = np.array(RACE_W)
    no_privacy_size = 1 - float(w @ w)
    assert abs(no_privacy_size - 0.26) < 0.005                     # "from about 0.26"
    assert abs(float(leak["size"]) - 0.16) < 0.01                  # "to about 0.16" (0.1559)
    assert abs(float(leak["prediction"]) - 0.92) < 0.005           # "1 to about 0.92"
    H = float(-(w * np.log2(w)).sum())
    assert abs(float(leak["mutual_information"]) / H - 0.5) < 0.05  # "about half of H(X)"
    h = answer(ADULT, "h").value
    assert abs(float(h) + float(leak["mutual_information"]) - H) < 1e-12


@pytest.mark.parametrize("case, size, pred", [
    ("case12", (0.146, 0.018), (1, 1)), ("case13", (0.904, 0.018), (1, 0)),
    ("case14", (0.968, 0.113), (1, 0)), ("case15", (0.990, 0.886), (1, 0))])
def test_fig_4_individual_leakage(case: str, size, pred) -> None:
    v = answer(ADULT, case).value
    assert abs(float(v["size"]["before"]) - size[0]) < 1.5e-3
    assert abs(float(v["size"]["after"]) - size[1]) < 1.5e-3
    assert (int(v["prediction"]["before"]), int(v["prediction"]["after"])) == pred


@pytest.mark.parametrize("p", [4, 5, 6, 7, 8])
def test_uniform_design_q_is_eq_6(p: int) -> None:
    labels = tuple(f"c{i}" for i in range(p))
    text = f"variable x: categorical {{{', '.join(labels)}}}\nmechanism u = subset(x, uniform)"
    ch = channel_of(privspec.load(text).model.mechanisms["u"])
    Q = ch.T * ch.K
    r = uniform_r(p)
    assert Q == sympy.Matrix(p, p, lambda i, j: 1 if i == j else 1 / r)
    # the conditional design property: every category lies in subsets whose mu sum to 1
    assert all(sum(ch.K[:, j]) == 1 for j in range(p))


def test_epsilon_of_subset_mechanisms_is_infinite_with_a_reason() -> None:
    r = answer(ADULT + "query e = epsilon(uni)", "e")
    assert r.value is sympy.oo and "Pr(A = a | X = x) = 0" in r.extras["reason"]
    assert r.to_dict()["value"] == "inf"


def test_identifiable_answers_with_the_reason() -> None:
    base = "variable c: categorical {a, b, c, d}\n"
    good = answer(base + "mechanism m = subset(c, uniform)\nquery q = identifiable(m)", "q")
    assert good.value is True and "rank 4" in good.extras["reason"]
    bad = answer(base + "mechanism m = subset(c, conditional { {a, b}: 1/2, {c, d}: 1/2, {a, c}: 1/2, "
                        "{b, d}: 1/2 })\nquery q = identifiable(m)", "q")
    assert bad.value is False and "rank 3" in bad.extras["reason"]


def test_symbolic_without_population() -> None:
    text = "variable c: categorical {a, b, c, d}\nmechanism m = subset(c, uniform)\nquery t = coverage(m)"
    r = answer(text, "t")
    d = r.to_dict()
    assert d["value"] is None and "w_a" in d["expr"]
    wa, wb, wc, wd = sympy.symbols("w_a w_b w_c w_d", positive=True)
    # tau = (1/3) sum over pairs (w_i + w_j)^2
    expected = sympy.Rational(1, 3) * sum((x + y) ** 2 for x, y in itertools.combinations((wa, wb, wc, wd), 2))
    assert sympy.expand(r.value - expected) == 0


def test_uniform_q_inverse_in_closed_form() -> None:
    """Q = (1 - 1/r) I + J / r for the uniform design, so by Sherman-Morrison
    Q^-1 = r/(r - 1) (I - J/(r - 1 + p)): the MoM needs no enumeration of subsets.
    (Eq. 6's (r gamma - 1)/(r - 1) is Q^-1 gamma with sum w = 1 imposed; the two agree
    in expectation, not sample by sample, since sum(Q^-1 gamma_hat) = sum(gamma_hat) r/(r - 1 + p).)"""
    for p in (4, 5, 6):
        labels = ", ".join(f"c{i}" for i in range(p))
        ch = channel_of(privspec.load(f"variable x: categorical {{{labels}}}\nmechanism u = subset(x, uniform)")
                        .model.mechanisms["u"])
        r = uniform_r(p)
        Qi = r / (r - 1) * (sympy.eye(p) - sympy.ones(p, p) / (r - 1 + p))
        assert (ch.T * ch.K).inv() == Qi


def test_dummy_categories_guarantee_the_coverage_floor() -> None:
    text = ("variable g: categorical {F, M}\npopulation g ~ categorical(0.3, 0.7)\n"
            "mechanism m = subset(g, uniform, min_coverage = 1/5)\n")
    ch = channel_of(privspec.load(text).model.mechanisms["m"])
    assert ch.p == 4 and all(sum(ch.K[:, j]) == 1 for j in range(4))
    # Appendix III, p = 2: a true F reports {F, d1} or {F, d2}; a dummy d1 reports {F, d1} or {M, d1}
    col = dict(zip(ch.obs_labels, ch.K[:, 0]))
    assert col == {"F|_dummy1": sympy.Rational(1, 2), "M|_dummy1": 0, "F|_dummy2": sympy.Rational(1, 2),
                   "M|_dummy2": 0}
    d1 = dict(zip(ch.obs_labels, ch.K[:, 2]))
    assert d1["F|_dummy1"] == d1["M|_dummy1"] == sympy.Rational(1, 2)
    # every report contains a dummy of mass alpha: L(a) >= alpha for every report
    w = [sympy.Rational(3, 10) * sympy.Rational(3, 5), sympy.Rational(7, 10) * sympy.Rational(3, 5),
         sympy.Rational(1, 5), sympy.Rational(1, 5)]
    sizes = [sum(w[j] for j in range(4) if m >> j & 1) for m in ch.masks]
    assert min(sizes) >= sympy.Rational(1, 5)


# ---- symbolic equals numeric, over random designs (property test) -----------------------------------
@st.composite
def designs(draw):
    p = draw(st.integers(4, 6))
    labels = tuple(f"c{i}" for i in range(p))
    allowed = [frozenset(a) for k in range(2, p - 1) for a in itertools.combinations(labels, k)]
    chosen = draw(st.lists(st.sampled_from(allowed), min_size=p, max_size=len(allowed), unique=True))
    raw = draw(st.lists(st.integers(1, 9), min_size=len(chosen), max_size=len(chosen)))
    total = sum(raw)
    nu = {a: sympy.Rational(x, total) for a, x in zip(chosen, raw)}
    mu: dict = {}
    full = frozenset(labels)
    for a, v in nu.items():
        for b in (a, full - a):
            mu[b] = mu.get(b, 0) + v
    wraw = draw(st.lists(st.integers(1, 20), min_size=p, max_size=p))
    w = sympy.Matrix([sympy.Rational(x, sum(wraw)) for x in wraw])
    return subset_channel(labels, mu), w


@settings(derandomize=True, deadline=None, max_examples=25)
@given(designs())
def test_exact_equals_floating(design) -> None:
    ch, w = design
    wf = np.array([float(x) for x in w])
    exact = {"tau": ch.size_coverage(w), "mi": ch.mutual_information(w), "pred": ch.prediction_leakage(w)}
    floats = {"tau": ch.size_coverage(wf), "mi": ch.mutual_information(wf), "pred": ch.prediction_leakage(wf)}
    for k in ("tau", "mi", "pred"):
        assert math.isclose(float(exact[k]), floats[k], rel_tol=1e-12, abs_tol=1e-14)
    if ch.rank() == ch.p:
        exact["mom"], floats["mom"] = ch.avar_mom(w), ch.avar_mom(wf)
        assert np.allclose(np.array(exact["mom"].evalf(20).tolist(), float), floats["mom"], atol=1e-12)
        assert np.all(np.linalg.eigvalsh((floats["mom"] + floats["mom"].T) / 2) > -1e-12)
        Iw = ch.fisher_theta(w)
        assert np.allclose(np.array(Iw.evalf(20).tolist(), float), ch.fisher_theta(wf), rtol=1e-10)
        # the Fisher information is positive definite and the covariances are PSD
        assert np.all(np.linalg.eigvalsh(ch.fisher_theta(wf)) > 0)
        assert np.all(np.linalg.eigvalsh(ch.avar_mle(wf)) > -1e-12)


def test_results_symbolic_in_a_design_parameter(tmp_path) -> None:
    text = ("parameter t > 0\nvariable c: categorical {a, b, c, d}\npopulation c ~ categorical(0.1, 0.2, 0.3, 0.4)\n"
            "mechanism m = subset(c, independent { {a, b}: t, {a, c}: 1/2 - t, {a, d}: 1/2 })\n"
            "query cov = coverage(m)\nquery w = estimate distribution(c) from m by mom\n")
    r = answer(text, "cov")
    t = sympy.Symbol("t", positive=True, real=True)
    # tau = sum_a mu_a (1_a^T w)^2 with mu = nu_a + nu_(a^c): {a,b},{c,d}: t; {a,c},{b,d}: 1/2 - t; {a,d},{b,c}: 1/2
    expected = t * (0.3 ** 2 + 0.7 ** 2) + (sympy.Rational(1, 2) - t) * (0.4 ** 2 + 0.6 ** 2) + sympy.Rational(1, 2) * (0.5 ** 2 + 0.5 ** 2)
    assert abs(float((r.value - expected).subs(t, sympy.Rational(1, 7)))) < 1e-12
    assert "symbolic in t" in r.extras["evaluation"] and r.to_dict()["value"] is None
    from privspec.backends.data.bindings import DataBindings
    from privspec.errors import BackendError

    (tmp_path / "d.csv").write_text("c\na|b\nc|d\n")
    model = privspec.load(text).model
    with pytest.raises(BackendError, match="parameter t, which has no value"):
        FiniteBackend().answer(model, model.queries["w"], "run",
                               data=DataBindings.parse([str(tmp_path / "d.csv")], list(model.mechanisms)))


def test_size_coverage_of_a_product_of_subset_designs() -> None:
    """A product of subset designs reports sets (the product of the factors' subsets): its
    size coverage is defined, and with independent populations it is the product of the
    factors' coverages (9/32 = 1/2 x 9/16)."""
    spec = privspec.load("variable c: categorical {a, b, c, d}\nvariable g: categorical {x, y, z, t}\n"
                         "population c ~ categorical(1/4, 1/4, 1/4, 1/4)\n"
                         "population g ~ categorical(1/2, 1/4, 1/8, 1/8)\n"
                         "mechanism pa = subset(c, uniform)\nmechanism pb = subset(g, uniform)\n"
                         "mechanism p = product(subset(c, uniform), subset(g, uniform))\n"
                         "query ca = coverage(pa)\nquery cb = coverage(pb)\nquery cp = coverage(p)\n"
                         "query lp = leakage(p, size)\n")
    assert spec.ok, spec.render_diagnostics()
    model = spec.model
    out = {name: FiniteBackend().answer(model, q, "analyze").value for name, q in model.queries.items()}
    assert out["ca"] == sympy.Rational(1, 2) and out["cb"] == sympy.Rational(9, 16)
    assert out["cp"] == out["ca"] * out["cb"] == sympy.Rational(9, 32)
    assert out["lp"]["size"] == 1 - sympy.Rational(9, 32)
    rr = privspec.load("variable c: categorical {a, b, c, d}\nvariable g: categorical {x, y}\n"
                       "mechanism p = product(subset(c, uniform), grr(g, epsilon = 1))\nquery cp = coverage(p)\n")
    assert [d.code for d in rr.diagnostics] == ["E501"]  # a factor reports a label, not a set
