"""A finite estimate from a compiled plan (issue 38, start-up of ``privspec run``): the plan
pickles, gives the result of the normal path to the last bit, and a fresh interpreter that
loads it and computes imports none of sympy, pandas, lark, the model graph or scipy's
stats, special, optimize and linalg."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import privspec
from privspec.backends.core.compile import channel_in_w, channel_of
from privspec.backends.core.batched import em_fits
from privspec.backends.core.estimators import estimate
from privspec.backends.finite.estimate_plan import estimate_plan, estimate_result, plannable
from privspec.backends.finite.truth import estimate_on_counts
from privspec.errors import BackendError

SPEC = """
variable c: categorical {a, b, c, d, e}
variable g: categorical {lo, mid, hi}
variable s: categorical {u, v, x, y}
mechanism uni = subset(c, uniform)
mechanism cond = subset(c, conditional { {a, b}: 1/2, {a, c}: 1/2, {b, d}: 1/2, {c, e}: 1/2, {d, e}: 1/2 })
mechanism floor = subset(c, uniform, min_coverage = 1/5)
mechanism r = grr(c, epsilon = 2)
mechanism custom = rr(g, matrix [[1/2, 1/4, 1/4], [1/6, 2/3, 1/6], [1/5, 1/5, 3/5]])
mechanism mixed = product(subset(s, uniform), grr(g, epsilon = 1))
mechanism subs = product(subset(s, uniform), subset(c, uniform))
"""
METHODS = ("mom", "mle", "em", "newton", "one_step")
#: Newton and the one-step estimator are subset privacy's (section III), for distributions
RR_METHODS = ("mom", "mle", "em")
#: mechanism -> (estimand, the methods asked of it)
ESTIMANDS = {
    "uni": ("distribution(c)", METHODS), "cond": ("distribution(c)", METHODS),
    "floor": ("distribution(c)", METHODS), "r": ("distribution(c)", RR_METHODS),
    "custom": ("distribution(g)", RR_METHODS), "mixed": ("distribution(g)", RR_METHODS),
    "subs": ("joint(c, s)", RR_METHODS),
}
CASES = [(m, meth) for m, (_, methods) in ESTIMANDS.items() for meth in methods]
#: the population the counts are drawn from, per variable
POPULATION = {"c": [0.05, 0.3, 0.25, 0.4, 0.0], "g": [0.2, 0.5, 0.3], "s": [0.1, 0.2, 0.3, 0.4]}
#: queries the test files of this module ask, each with its conditional-se twin
QUERIES = "".join(f"query {m}_{meth} = estimate {e} from {m} by {meth}\n"
                  f"query {m}_{meth}_cond = estimate {e} from {m} by {meth}(se = conditional)\n"
                  for m, (e, methods) in ESTIMANDS.items() for meth in methods)
#: what a plan may never import (top-level scipy and numpy are cheap)
HEAVY = ("sympy", "pandas", "lark", "scipy.stats", "scipy.special", "scipy.optimize", "scipy.linalg",
         "privspec.model.graph")


@pytest.fixture(scope="module")
def model():
    return privspec.load(SPEC + QUERIES).model


def counts_of(model, q, n: int = 3000, seed: int = 7) -> np.ndarray:
    """Seeded multinomial counts per observation of the query's mechanism's channel."""
    mech = q.mechanism
    factors = getattr(mech, "factors", None) or (mech,)
    w = np.array([1.0])
    for f in factors:
        w = np.kron(w, POPULATION[f.variable.name])
    ch = channel_of(mech)
    if ch.offset is None and ch.p != len(w):   # dummy categories: the enlarged domain's population
        w = np.r_[0.6 * w, 0.2, 0.2]
    return np.random.default_rng(seed).multinomial(n, ch.Kn @ w).astype(float)


def planned_or_refusal(q, ch, counts):
    """The planned result after a pickle round trip, or the refusal's class and code."""
    try:
        plan = pickle.loads(pickle.dumps(estimate_plan(q, ch)))
        return estimate_result(plan, counts)
    except BackendError as e:
        return type(e), [d.code for d in e.diagnostics]


def normal_or_refusal(q, ch, counts):
    try:
        return estimate_on_counts(q, counts, ch)
    except BackendError as e:
        return type(e), [d.code for d in e.diagnostics]


@pytest.mark.parametrize("se", ["", "_cond"])
@pytest.mark.parametrize(("mech", "method"), CASES)
def test_the_plan_gives_the_normal_result_to_the_bit(model, mech: str, method: str, se: str) -> None:
    q = model.queries[f"{mech}_{method}{se}"]
    ch = channel_of(q.mechanism)
    counts = counts_of(model, q)
    planned, normal = planned_or_refusal(q, ch, counts), normal_or_refusal(q, ch, counts)
    if isinstance(normal, tuple):   # refused (newton and one_step with dummy categories: B008) alike
        assert planned == normal and mech == "floor" and method in ("newton", "one_step")
        return
    assert planned.to_dict() == normal.to_dict()
    assert planned.to_dict()["ci95"] and planned.to_dict()["se"]
    # intervals at another level by the same method, and the covariance (a joint's 95% ones are
    # its ci95, compared above: the results layer does not yet read them back as a frame)
    for alpha in (0.2,) if mech == "subs" else (0.05, 0.2):
        assert planned.conf_int(alpha).to_numpy().tolist() == normal.conf_int(alpha).to_numpy().tolist()
    assert np.array_equal(planned.cov_params().to_numpy(), normal.cov_params().to_numpy())


@pytest.mark.parametrize(("mech", "method"), [c for c in CASES if c[0] in ("uni", "cond", "r", "custom")])
def test_the_planned_estimate_is_the_core_estimator_on_the_exact_channel(model, mech: str, method: str) -> None:
    """Independent of the plan: the estimator on the mechanism's own channel (its exact matrices
    evaluated in floating point; EM batched, as the fits of counts always were) gives the same bits."""
    q = model.queries[f"{mech}_{method}"]
    counts = counts_of(model, q)
    w = np.array(estimate_result(estimate_plan(q, channel_of(q.mechanism)), counts).value.values, dtype=float)
    ch = channel_in_w(q.mechanism)
    fit = em_fits(ch, counts[None, :])[0] if method in ("mle", "em") else estimate(ch, counts, method)
    assert np.array_equal(w, fit.w)


def test_plannable_says_which_queries_have_a_plan(model) -> None:
    more = privspec.load(SPEC + """
mechanism big = subset(s, uniform)
mechanism rrj = product(grr(c, epsilon = 1), grr(g, epsilon = 1))
query j = estimate joint(c, g) from rrj by mom
query proj = estimate distribution(c) from r by mom(project = euclidean)
query t = test independence(c, g) from rrj by pearson
query ok = estimate distribution(g) from rrj by em
""").model
    q = model.queries
    assert all(plannable(q[f"{m}_{meth}"], channel_of(q[f"{m}_mom"].mechanism)) for m, meth in CASES)
    assert plannable(more.queries["ok"], channel_of(more.mechanisms["rrj"]))
    # randomized response's joints and projected estimates are the rr back end's; a test is no estimate
    assert not any(plannable(more.queries[n], channel_of(more.queries[n].mechanism)) for n in ("j", "proj", "t"))
    from privspec.backends.core.compile import observed_subset_channel
    partial = observed_subset_channel(more.mechanisms["big"], [0b0011, 0b0110])
    assert not plannable(model.queries["uni_mom"], partial)
    # without a channel: the mechanism's, unless it is the uniform design on too many categories to enumerate
    large = privspec.load("variable v: categorical {" + ", ".join(f"k{i}" for i in range(30)) + "}\n"
                          "mechanism u = subset(v, uniform)\nquery w = estimate distribution(v) from u by mom\n")
    assert plannable(model.queries["uni_mle"]) and not plannable(large.model.queries["w"])


def test_the_plan_holds_no_sympy_object(model) -> None:
    """What is pickled holds numbers, strings and numeric channels only: unpickling it with
    sympy's modules unreachable (a class of sympy in the pickle would fail to load) works."""
    plans = [estimate_plan(model.queries[f"{m}_{meth}"], channel_of(model.queries[f"{m}_mom"].mechanism))
             for m in ("uni", "r", "subs", "floor") for meth in ("mom", "mle")]
    blob = pickle.dumps(plans)
    assert b"sympy" not in blob and b"privspec.model" not in blob


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


#: stand-ins of the results layer (kept light by its own modules; here only the plan's path is measured)
STUB_RESULTS = """
import sys, types
kinds, values = types.ModuleType("privspec.results.kinds"), types.ModuleType("privspec.results.values")
class Estimate:
    def __init__(self, value, **extras): self.value, self.extras = value, extras
class Inference:
    def __init__(self, *args): self.args = args
class Vector:
    def __init__(self, labels, values): self.labels, self.values = labels, values
class Table(Vector):
    def __init__(self, names, labels, values): self.names, self.labels, self.values = names, labels, values
kinds.Estimate = Estimate
values.Inference, values.Vector, values.Table = Inference, Vector, Table
import privspec.results
sys.modules["privspec.results.kinds"], sys.modules["privspec.results.values"] = kinds, values
"""


def _plans_on_disk(model, tmp_path: Path) -> list[tuple[str, str]]:
    """(plan file, counts file) of every planned estimate of the bench's kinds."""
    files = []
    for m in ("uni", "cond", "r", "custom", "subs", "floor"):
        for meth in ESTIMANDS[m][1] if m != "floor" else RR_METHODS:
            q = model.queries[f"{m}_{meth}"]
            ch = channel_of(q.mechanism)
            plan, counts = tmp_path / f"{m}_{meth}.plan", tmp_path / f"{m}_{meth}.npy"
            plan.write_bytes(pickle.dumps(estimate_plan(q, ch)))
            np.save(counts, counts_of(model, q))
            files.append((str(plan), str(counts)))
    return files


def _load_and_compute(files, stub: bool) -> str:
    return (STUB_RESULTS if stub else "") + textwrap.dedent(f"""
        import json, pickle, sys
        import numpy as np
        done = []
        for plan, counts in {files!r}:
            plan = pickle.loads(open(plan, "rb").read())
            from privspec.backends.finite.estimate_plan import estimate_result
            r = estimate_result(plan, np.load(counts))
            done.append(bool(r.extras["ci95"]))
        print(json.dumps({{"done": done, "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """)


def test_a_fresh_interpreter_computes_from_a_plan_without_heavy_imports(model, tmp_path: Path) -> None:
    """With the results layer stood in for, loading plans of every kind (subset designs
    uniform, conditional and with dummy categories, grr, a randomization matrix, a joint of a
    product; every method) and computing each imports nothing heavy."""
    files = _plans_on_disk(model, tmp_path)
    got = _fresh(_load_and_compute(files, stub=True))
    assert got == {"done": [True] * len(files), "heavy": []}


def test_the_plan_imports_nothing_heavy_beyond_the_results_layer(model, tmp_path: Path) -> None:
    """The real run: whatever heavy module it imports, the results layer's value types
    (:mod:`privspec.results.kinds`, :mod:`privspec.results.values`) import alone too."""
    files = _plans_on_disk(model, tmp_path)[:3]
    results_alone = _fresh("import json, sys, privspec.results.kinds, privspec.results.values\n"
                           f"print(json.dumps({{'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))")
    got = _fresh(_load_and_compute(files, stub=False))
    assert all(got["done"]) and set(got["heavy"]) <= set(results_alone["heavy"])
