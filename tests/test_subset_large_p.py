"""The uniform design on many categories: closed forms (exchangeability), no enumeration
of the 2^p subsets, from analysis to estimation."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy

import privspec
from privspec.backends.core import uniform
from privspec.backends.core.compile import channel_of
from privspec.backends.data.bindings import DataBindings
from privspec.backends.finite.backend import FiniteBackend
from privspec.errors import BackendError

P = 24
LABELS = [f"k{i}" for i in range(P)]
PROBS = [sympy.Rational(i + 1, P * (P + 1) // 2) for i in range(P)]
SPEC = (f"variable x: categorical {{{', '.join(LABELS)}}}\n"
        f"population x ~ categorical({', '.join(map(str, PROBS))})\n"
        "mechanism u = subset(x, uniform)\n"
        "query m = moments(u)\nquery v = avar(distribution(x) from u by mom)\nquery c = coverage(u)\n"
        "query ok = identifiable(u)\nquery e = epsilon(u)\nquery vm = avar(distribution(x) from u by mle)\n"
        "query w = estimate distribution(x) from u by mom\nquery w_mle = estimate distribution(x) from u by mle\n")


@pytest.mark.parametrize("p", [4, 5, pytest.param(7, marks=pytest.mark.slow)])
def test_closed_forms_equal_the_enumerated_channel(p: int) -> None:
    labels = ", ".join(f"c{i}" for i in range(p))
    ch = channel_of(privspec.load(f"variable x: categorical {{{labels}}}\nmechanism u = subset(x, uniform)")
                    .model.mechanisms["u"])
    w = sympy.Matrix(sympy.symbols(f"w0:{p}", positive=True))
    for key in ("Q", "gamma", "H", "C"):
        assert (ch.moments(w)[key] - uniform.moments(p, w)[key]).applyfunc(sympy.expand) == sympy.zeros(*ch.moments(w)[key].shape)
    assert sympy.expand(ch.size_coverage(w) - uniform.size_coverage(p, w)) == 0


def test_analysis_at_p_24_without_enumeration() -> None:
    model = privspec.load(SPEC).model
    b = FiniteBackend()
    c = b.answer(model, model.queries["c"], "analyze")
    w = sympy.Matrix(PROBS)
    assert c.value == uniform.size_coverage(P, w) and "closed form" in c.extras["evaluation"]
    v = b.answer(model, model.queries["v"], "analyze")
    assert v.value.data.shape == (P, P)
    assert b.answer(model, model.queries["ok"], "analyze").value is True
    assert b.answer(model, model.queries["e"], "analyze").value is sympy.oo
    with pytest.raises(BackendError, match="needs all its subsets"):
        b.answer(model, model.queries["vm"], "analyze")


@pytest.mark.slow
def test_privatize_and_estimate_at_p_24(tmp_path) -> None:
    model = privspec.load(SPEC).model
    rng = np.random.default_rng(1)
    wf = np.array([float(x) for x in PROBS])
    raw = pd.DataFrame({"x": rng.choice(LABELS, size=30_000, p=wf)})
    out = FiniteBackend().privatize(model, model.mechanisms["u"], raw, seed=2)
    sizes = out["x"].str.count(r"\|") + 1
    assert sizes.min() >= 2 and sizes.max() <= P - 2
    assert all(x in s.split("|") for x, s in zip(raw["x"][:500], out["x"][:500]))
    path = tmp_path / "reports.csv"
    out.to_csv(path, index=False)
    data = DataBindings.parse([str(path)], list(model.mechanisms))
    for name in ("w", "w_mle"):
        r = FiniteBackend().answer(model, model.queries[name], "run", data=data)
        est = np.array(r.value.values, dtype=float)
        se = np.array(r.extras["se"].values, dtype=float)
        z = (est - wf) / se
        assert np.mean(np.abs(z) < 1.96) > 0.8, (name, z)    # about 95% of the 24 within 2 se
        assert np.all(np.abs(z) < 4.5)
