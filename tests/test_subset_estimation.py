"""Subset privacy, estimation side: the estimators against their asymptotic theory
(Table IV), the n^-1/2 rate, the MLE's optimality, and the data path."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import sympy

import privspec
from privspec.backends.core.channel import subset_channel
from privspec.backends.data.bindings import DataBindings
from privspec.backends.core.estimators import em, estimate, kkt, mom, newton, one_step
from privspec.backends.finite.backend import FiniteBackend
from privspec.errors import DataError


def random_independent_design(p: int, rng: np.random.Generator):
    """Table IV's setting: a uniformly generated independent design nu (Def. 3)."""
    labels = tuple(f"c{i}" for i in range(p))
    allowed = [frozenset(a) for k in range(2, p - 1) for a in itertools.combinations(labels, k)]
    raw = rng.integers(1, 100, size=len(allowed))
    nu = {a: sympy.Rational(int(x), int(raw.sum())) for a, x in zip(allowed, raw)}
    mu: dict = {}
    for a, v in nu.items():
        for b in (a, frozenset(labels) - a):
            mu[b] = mu.get(b, 0) + v
    return subset_channel(labels, mu)


@pytest.mark.parametrize("p, reps", [(4, 400), (8, 150)])
def test_table_iv_scaled_losses_match_their_limits(p: int, reps: int) -> None:
    """n ||w_hat - w||^2 has mean trace(avar) in the limit: MoM trace(Q^-1 C Q^-1),
    EM / Newton / one-step trace(B I^-1 B^T) (Theorems 3-5).  n = 1000, fixed seeds;
    tolerance: 4 Monte Carlo standard errors plus 8% for finite-n bias."""
    rng = np.random.default_rng(20 + p)
    ch = random_independent_design(p, rng)
    w = rng.dirichlet(np.full(p, 5.0))
    n = 1000
    draws = rng.multinomial(n, ch.Kn @ w, size=reps).astype(float)
    limits = {"mom": np.trace(ch.avar_mom(w)), "mle": np.trace(ch.avar_mle(w))}
    for method, limit_key in (("mom", "mom"), ("em", "mle"), ("newton", "mle"), ("one_step", "mle")):
        loss = np.array([n * np.sum((estimate(ch, c, method).w - w) ** 2) for c in draws])
        se = loss.std(ddof=1) / np.sqrt(reps)
        assert abs(loss.mean() - limits[limit_key]) < 4 * se + 0.08 * limits[limit_key], \
            (method, loss.mean(), limits[limit_key], se)
    assert limits["mle"] <= limits["mom"] + 1e-12  # the MLE is asymptotically efficient


def test_mom_converges_at_rate_n_to_the_minus_half() -> None:
    rng = np.random.default_rng(7)
    ch = random_independent_design(5, rng)
    w = rng.dirichlet(np.full(5, 4.0))
    scaled = []
    for n in (200, 2000, 20000):
        draws = rng.multinomial(n, ch.Kn @ w, size=300).astype(float)
        loss = np.array([np.sum((mom(ch, c).w - w) ** 2) for c in draws])
        scaled.append(n * loss.mean())
    limit = np.trace(ch.avar_mom(w))
    # n E||w_hat - w||^2 stays at its limit: the error shrinks like n^-1/2 (MoM is exactly
    # linear in the counts, so this holds at every n)
    assert all(abs(s / limit - 1) < 0.2 for s in scaled), (scaled, limit)


def test_em_and_newton_reach_the_same_maximum_with_kkt() -> None:
    rng = np.random.default_rng(3)
    ch = random_independent_design(6, rng)
    w = rng.dirichlet(np.full(6, 0.7))     # some categories near 0: the boundary matters
    counts = rng.multinomial(3000, ch.Kn @ w).astype(float)
    a, b = em(ch, counts, tol=1e-12), newton(ch, counts, tol=1e-12)
    assert a.converged and b.converged
    assert kkt(ch, counts, a.w) < 1e-9 and kkt(ch, counts, b.w) < 1e-9
    assert abs(a.loglik - b.loglik) < 1e-7
    assert np.allclose(a.w, b.w, atol=1e-5)
    assert a.loglik >= ch.loglik(np.clip(mom(ch, counts).w, 1e-9, None) / np.clip(mom(ch, counts).w, 1e-9, None).sum(), counts) - 1e-9
    # SQUAREM: far fewer EM evaluations than plain EM, same answer
    plain = em(ch, counts, tol=1e-10, accelerate=False)
    assert plain.iterations > a.iterations and abs(plain.loglik - a.loglik) < 1e-6


def test_one_step_starts_from_mom_and_moves_towards_the_mle() -> None:
    rng = np.random.default_rng(11)
    ch = random_independent_design(5, rng)
    w = rng.dirichlet(np.full(5, 5.0))
    counts = rng.multinomial(50_000, ch.Kn @ w).astype(float)
    m, o, e = mom(ch, counts).w, one_step(ch, counts).w, em(ch, counts).w
    assert np.linalg.norm(o - e) < 0.2 * np.linalg.norm(m - e)
    assert abs(o.sum() - 1) < 1e-12


#: reports of anes96 `educ` (7 categories, n = 944) privatized by the uniform design with seed 32,
#: counted per observation of the channel (112 subsets, sizes 2..5 in the channel's order): the
#: projected Newton method used to stop here after 2 iterations with KKT 6e-4, below EM's maximum
ANES96_EDUC_SEED32 = [1, 7, 5, 2, 4, 2, 4, 5, 2, 3, 3, 4, 6, 10, 7, 10, 9, 7, 3, 2, 8, 2, 4, 1, 4, 2, 4, 6, 11, 7,
                      6, 4, 9, 4, 1, 12, 6, 5, 6, 8, 7, 6, 6, 10, 6, 7, 12, 10, 15, 12, 10, 8, 6, 7, 10, 9, 7, 10,
                      11, 11, 7, 10, 6, 4, 2, 2, 7, 12, 12, 9, 9, 13, 7, 10, 7, 8, 13, 12, 9, 12, 7, 10, 17, 10, 6,
                      10, 10, 15, 15, 11, 7, 11, 12, 10, 14, 13, 14, 10, 11, 7, 11, 15, 8, 20, 13, 9, 10, 8, 16, 20,
                      17, 20]


def test_newton_reaches_the_maximum_where_a_zero_coordinate_blocked_it() -> None:
    model = privspec.load("variable educ: categorical {e1, e2, e3, e4, e5, e6, e7}\n"
                          "mechanism m = subset(educ, uniform)").model
    from privspec.backends.core.compile import channel_of

    ch = channel_of(model.mechanisms["m"])
    counts = np.array(ANES96_EDUC_SEED32, dtype=float)
    a, b = em(ch, counts, tol=1e-12), newton(ch, counts, tol=1e-10)
    assert b.converged and b.kkt < 1e-8, (b.iterations, b.kkt, b.note)
    assert b.loglik >= a.loglik - 1e-8
    assert np.allclose(a.w, b.w, atol=1e-5)


def test_one_step_scaled_loss_has_no_heavy_tail() -> None:
    """Table IV's setting at p = 4, n = 100 (a random independent design and a uniformly drawn
    w per replication): the unguarded step averaged 3.3x the MLE's limit (max > 100x); the
    safeguarded step stays within 15% of the limit, like EM."""
    rng = np.random.default_rng(1)
    n, loss, limit = 100, [], []
    for _ in range(300):
        ch = random_independent_design(4, rng)
        w = rng.dirichlet(np.ones(4))
        c = rng.multinomial(n, ch.Kn @ w).astype(float)
        limit.append(np.trace(ch.avar_mle(w)))
        fit = one_step(ch, c)
        assert np.all(fit.w >= 0) and abs(fit.w.sum() - 1) < 1e-12
        loss.append(n * np.sum((fit.w - w) ** 2))
    assert np.mean(loss) < 1.15 * np.mean(limit), (np.mean(loss), np.mean(limit))
    assert np.max(loss) < 20 * np.mean(limit), np.max(loss)


# ---- the data path -----------------------------------------------------------------------------------
URN = """
variable color: categorical {black, red, green, blue}
population color ~ categorical(black = 0.1, red = 0.2, green = 0.3, blue = 0.4)
mechanism urn = subset(color, uniform)
mechanism pairs = subset(color, conditional { {black, red}: 1/2, {green, blue}: 1/2, {black, green}: 1/2,
                                              {red, blue}: 1/2 })
query w = estimate distribution(color) from urn by mom
query w_mle = estimate distribution(color) from urn by mle
query w_pairs = estimate distribution(color) from pairs by mle
"""


def run_query(tmp_path, frame: pd.DataFrame, name: str, text: str = URN):
    model = privspec.load(text).model
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return FiniteBackend().answer(model, model.queries[name], "run",
                                  data=DataBindings.parse([str(path)], list(model.mechanisms)))


def test_privatize_then_estimate_round_trip(tmp_path) -> None:
    model = privspec.load(URN).model
    rng = np.random.default_rng(0)
    raw = pd.DataFrame({"id": np.arange(40_000),
                        "color": rng.choice(["black", "red", "green", "blue"], 40_000, p=[0.1, 0.2, 0.3, 0.4])})
    out = FiniteBackend().privatize(model, model.mechanisms["urn"], raw, seed=5)
    again = FiniteBackend().privatize(model, model.mechanisms["urn"], raw, seed=5)
    assert out.equals(again) and out.index.equals(raw.index) and out.columns.tolist() == ["color"]  # reports only
    # every report holds the truth and is a pair (the uniform design for p = 4)
    parts = out["color"].str.split("|")
    assert all(len(s) == 2 and x in s for s, x in zip(parts[:2000], raw["color"][:2000]))
    r = run_query(tmp_path, out, "w")
    est = np.array([r.value.values[i] for i in range(4)])
    se = np.array(r.extras["se"].values)
    assert np.all(np.abs(est - [0.1, 0.2, 0.3, 0.4]) < 4 * se)
    assert r.extras["n"] == 40_000 and r.extras["method"] == "mom"
    mle = run_query(tmp_path, out, "w_mle")
    assert mle.extras["kkt"] < 1e-9 and mle.extras["converged"]


def test_data_errors_name_rows_and_columns(tmp_path) -> None:
    frame = pd.DataFrame({"color": ["black|red", "red|purple", "green|blue", "", "black|red|green|blue"]})
    with pytest.raises(DataError) as e:
        run_query(tmp_path, frame, "w")
    d = e.value.diagnostics[0]
    assert d.rows == (4,) and d.columns == ("color",)          # the missing value first
    frame.loc[3, "color"] = "red|blue"
    with pytest.raises(DataError) as e:
        run_query(tmp_path, frame, "w")
    d = e.value.diagnostics[0]
    # every distinct bad report with its rows, not only the first (issue 14)
    assert d.rows == (2, 5) and "'red|purple' (row 2): 'purple' is not a category" in d.message
    assert "'black|red|green|blue' (row 5): this subset has probability 0" in d.message
    frame.loc[1, "color"] = "red|green"
    with pytest.raises(DataError) as e:
        run_query(tmp_path, frame, "w")                            # the full set has mu_a = 0
    assert e.value.diagnostics[0].rows == (5,) and "mu_a = 0" in e.value.diagnostics[0].message


def test_assumption_2_failure_is_reported(tmp_path) -> None:
    frame = pd.DataFrame({"color": ["black|red"] * 5 + ["green|blue"] * 5})
    with pytest.raises(DataError) as e:
        run_query(tmp_path, frame, "w_pairs")
    assert "Assumption 2" in e.value.diagnostics[0].message


def test_reports_in_any_order_are_the_same_subset(tmp_path) -> None:
    a = run_query(tmp_path, pd.DataFrame({"color": ["black|red", "red|green", "blue|green", "black|blue", "black|green"] * 50}), "w")
    b = run_query(tmp_path, pd.DataFrame({"color": ["red|black", "green|red", "green|blue", "blue|black", "green|black"] * 50}), "w")
    assert a.value == b.value


DUMMY = """
variable color: categorical {black, red, green, blue}
population color ~ categorical(black = 0.1, red = 0.2, green = 0.3, blue = 0.4)
mechanism floor = subset(color, uniform, min_coverage = 1/5)
variable g: categorical {F, M}
population g ~ categorical(0.3, 0.7)
mechanism gm = subset(g, uniform, min_coverage = 1/10)
query w = estimate distribution(color) from floor by mle
query wm = estimate distribution(color) from floor by mom
query wg = estimate distribution(g) from gm by mom
query ok = identifiable(floor)
"""


def test_dummy_categories_end_to_end(tmp_path) -> None:
    """Appendix II (p = 4) and III (p = 2): privatize adds dummy respondents (a fraction
    2 alpha of the output), every report holds a dummy, and the estimates recover w."""
    model = privspec.load(DUMMY).model
    b = FiniteBackend()
    assert b.answer(model, model.queries["ok"], "analyze").value is True
    rng = np.random.default_rng(4)
    raw = pd.DataFrame({"color": rng.choice(["black", "red", "green", "blue"], 30_000, p=[.1, .2, .3, .4])})
    out = b.privatize(model, model.mechanisms["floor"], raw, seed=1)
    assert len(out) == round(30_000 / 0.6)                       # alpha = 1/5: dummies are 40% of the reports
    assert out["color"].str.contains("_dummy").all()
    path = tmp_path / "floor.csv"
    out.to_csv(path, index=False)
    data = DataBindings.parse([f"floor={path}"], list(model.mechanisms))
    for name in ("w", "wm"):
        r = b.answer(model, model.queries[name], "run", data=data)
        est, se = np.array(r.value.values, float), np.array(r.extras["se"].values, float)
        assert np.all(np.abs(est - [0.1, 0.2, 0.3, 0.4]) < 4 * se), (name, est, se)
    graw = pd.DataFrame({"g": rng.choice(["F", "M"], 20_000, p=[0.3, 0.7])})
    gout = b.privatize(model, model.mechanisms["gm"], graw, seed=2)
    assert set(gout["g"]) <= {"F|_dummy1", "F|_dummy2", "M|_dummy1", "M|_dummy2"}   # Appendix III, p = 2
    gpath = tmp_path / "g.csv"
    gout.to_csv(gpath, index=False)
    r = b.answer(model, model.queries["wg"], "run", data=DataBindings.parse([f"gm={gpath}"], list(model.mechanisms)))
    assert abs(r.value.values[0] - 0.3) < 4 * r.extras["se"].values[0]


def test_dummy_categories_avar_matches_simulation() -> None:
    from privspec.backends.finite.simulate import simulate_query

    model = privspec.load(DUMMY).model
    r = simulate_query(model, model.queries["w"], n=5000, reps=300, seed=1)
    v = r.value
    assert abs(v["scaled_loss_mean"] - v["scaled_loss_limit"]) < 4 * v["scaled_loss_se"] + 0.05 * v["scaled_loss_limit"]
    assert all(abs(c - 0.95) < 0.04 for c in v["ci95_coverage"].values)
