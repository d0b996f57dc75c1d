"""Results that are right in every view (issue 33): an estimate's ``cov_params()`` is the
estimator's full covariance, ``conf_int(alpha)`` keeps one method at every level, inside
the parameter space; checked against the analysis path and seeded Monte Carlo."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.core.compile import channel_in_w
from privspec.backends.core.estimators import estimate
from privspec.backends.finite.truth import estimate_on_counts
from privspec.backends.rr.castell import castell
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.results.values import Vector

N = 5000
W0 = (0.15, 0.25, 0.25, 0.35)
PI0 = np.array([[30, 10, 20], [10, 25, 5]]) / 100

SPEC = f"""
variable x: categorical {{a, b, c, d}}
variable A: categorical {{a1, a2}}
variable B: categorical {{b1, b2, b3}}
population x ~ categorical({", ".join(map(str, W0))})
population (A, B) ~ counts [[30, 10, 20], [10, 25, 5]]
mechanism sub = subset(x, uniform)
mechanism g = grr(x, epsilon = 1)
mechanism o = oue(x, epsilon = 1)
mechanism ab = product(grr(A, epsilon = log(3)), grr(B, epsilon = log(3)))
query w_mom = estimate distribution(x) from sub by mom
query w_mle = estimate distribution(x) from sub by mle
query w_grr = estimate distribution(x) from g by mom
query w_oue = estimate distribution(x) from o by mom
query w_ab  = estimate joint(A, B) from ab by castell
"""
#: query -> (mechanism, estimand, estimator) of the matching avar query
AVAR = {"w_mom": ("sub", "distribution(x)", "mom"), "w_mle": ("sub", "distribution(x)", "mle"),
        "w_grr": ("g", "distribution(x)", "mom"), "w_oue": ("o", "distribution(x)", "mom"),
        "w_ab": ("ab", "joint(A, B)", "castell")}


@pytest.fixture(scope="module")
def spec():
    return privspec.load(SPEC)


@pytest.fixture(scope="module")
def results(spec):
    """One survey of N respondents from the declared populations, privatized by each
    mechanism (seed 3) and estimated: the public path (privatize, then run)."""
    rng = np.random.default_rng(7)
    raw = pd.DataFrame({"x": rng.choice(list("abcd"), N, p=W0)})
    cells = rng.choice(6, N, p=PI0.ravel())
    raw["A"] = np.array(["a1", "a2"])[cells // 3]
    raw["B"] = np.array(["b1", "b2", "b3"])[cells % 3]
    data = {m: spec.privatize(raw, m, seed=3, progress=False) for m in ("sub", "g", "o", "ab")}
    res = spec.run(data, progress=False)
    assert res.ok
    return res


def _population_at(r: Result) -> str:
    """A population declaration at the estimate (its floats as fractions within 1e-13, short
    enough for exact arithmetic to be quick; an estimate that does not sum to 1, OUE's,
    brought onto the simplex as its back end does)."""
    w = [Fraction(float(x)).limit_denominator(10 ** 13) for x in r.params]
    assert all(x > 0 for x in w)
    if r.params.index.nlevels == 1:   # the last share makes the sum exactly 1
        w = [x / sum(w) for x in w]
        w[-1] = 1 - sum(w[:-1])
        return "population x ~ categorical(" + ", ".join(f"{x.numerator}/{x.denominator}" for x in w) + ")"
    # castell with eps = log 3 on 2 x 3 categories: the estimate is (integer matrix @ counts) / (4 n)
    counts = [int(round(float(x) * 4 * N)) for x in w]
    assert sum(counts) == 4 * N and np.allclose(np.array(counts) / (4 * N), r.params.to_numpy(), rtol=0, atol=1e-15)
    return f"population (A, B) ~ counts [{counts[:3]}, {counts[3:]}]"


def _avar_at_estimate(r: Result, name: str) -> np.ndarray:
    """``avar`` of the query's estimator, answered by the analysis path (exact where it can)
    with the population declared at the estimate."""
    mech, estimand, method = AVAR[name]
    lines = [ln for ln in SPEC.splitlines() if ln and not ln.startswith(("query", "population"))]
    text = "\n".join(lines + [_population_at(r), f"query v = avar({estimand} from {mech} by {method})"])
    v = privspec.load(text).analyze()["v"]
    return v.cov_params().to_numpy()


@pytest.mark.parametrize("name", list(AVAR))
def test_cov_params_is_the_estimators_covariance(results, name) -> None:
    r = results[name]
    cov = r.cov_params()
    C = cov.to_numpy()
    assert list(cov.index) == list(cov.columns) == list(r.params.index)            # labelled like params
    assert np.allclose(C, C.T, rtol=0, atol=1e-15)                                 # symmetric
    assert np.linalg.eigvalsh(C).min() >= -1e-12 * np.abs(C).max()                # positive semi-definite
    assert np.diag(C) == pytest.approx(r.bse.to_numpy() ** 2, rel=1e-10)           # diag = bse^2
    assert np.abs(C[~np.eye(len(C), dtype=bool)]).max() > 1e-3 * np.diag(C).min()  # not a diagonal
    if abs(r.params.sum() - 1) < 1e-12:                                            # shares: rows sum to 0
        assert C.sum(axis=1) == pytest.approx(0, abs=1e-15)
    assert C == pytest.approx(_avar_at_estimate(r, name) / N, rel=1e-8, abs=1e-15)  # = avar(at w_hat) / n


# ---- the covariance against the estimators' sampling distribution ----------------------------------
#: Monte Carlo replications: the variance of a contrast is then known to about sqrt(2 / R) = 2.7%
REPS = 2700


def _draws_subset(spec, method: str, rng) -> np.ndarray:
    ch = channel_in_w(spec.model.mechanisms["sub"])
    lam = ch.probabilities(np.array(W0))
    return np.array([estimate(ch, c.astype(float), method).w for c in rng.multinomial(N, lam, size=REPS)])


def _draws_oue(rng) -> np.ndarray:
    """OUE's bits are independent given the category: support counts in closed form."""
    e = np.e
    p, q = 0.5, 1 / (e + 1)
    nx = rng.multinomial(N, W0, size=REPS)
    C = rng.binomial(nx, p) + rng.binomial(N - nx, q)
    return (C / N - q) / (p - q)


def _draws_castell(rng) -> np.ndarray:
    P = [np.full((d, d), 1 / (d + 2)) + np.eye(d) * (3 / (d + 2) - 1 / (d + 2)) for d in (2, 3)]
    lam = np.kron(P[0].T, P[1].T) @ PI0.ravel()
    return np.array([castell(c.reshape(2, 3), [P[0].T, P[1].T], variance=False).table.ravel()
                     for c in rng.multinomial(N, lam, size=REPS)])


@pytest.mark.parametrize("name", ["w_mom", pytest.param("w_mle", marks=pytest.mark.slow), "w_oue", "w_ab"])
def test_contrast_variance_matches_monte_carlo(spec, results, name) -> None:
    """Var(w_1 - w_2) and Var(w_1 + w_2) from cov_params (one survey, at its estimate) against
    their spread over seeded surveys of the same size from the truth: within 12% (2.7% Monte
    Carlo error, the rest the estimate's distance from the truth); the diagonal alone
    (the old cov_params) misses the sum of two shares by more than 30%."""
    rng = np.random.default_rng(11)
    draws = {"w_mom": lambda: _draws_subset(spec, "mom", rng), "w_mle": lambda: _draws_subset(spec, "mle", rng),
             "w_oue": lambda: _draws_oue(rng), "w_ab": lambda: _draws_castell(rng)}[name]()
    C = results[name].cov_params().to_numpy()
    for sign in (-1.0, 1.0):
        c = np.zeros(len(C))
        c[0], c[1] = 1.0, sign
        mc = float(np.var(draws @ c, ddof=1))
        assert c @ C @ c == pytest.approx(mc, rel=0.12), sign
    if name != "w_oue":  # OUE's shares are nearly uncorrelated (-w_i w_j / n)
        assert float(np.diag(C)[:2].sum()) / mc - 1 > 0.3


def test_no_covariance_is_a_clear_error() -> None:
    spec = privspec.load("specs/castell_example.privspec")
    res = spec.run("specs/data/castell_example_reports.csv", queries=["truncated", "projected"])
    with pytest.raises(ValueError, match="truncation .* is not smooth"):
        res["truncated"].cov_params()
    with pytest.raises(ValueError, match="projection moved the estimate"):
        res["projected"].cov_params()
    by_hand = Estimate(Vector(("a", "b"), (0.25, 0.75)), se=Vector(("a", "b"), (0.02, 0.02)))
    with pytest.raises(ValueError, match="only standard errors were given"):
        by_hand.cov_params()                       # never the misleading diagonal


# ---- intervals: one method at every level ----------------------------------------------------------
@pytest.mark.parametrize("name", list(AVAR))
def test_conf_int_is_one_method_at_every_level(results, name) -> None:
    r = results[name]
    ci = {a: r.conf_int(a) for a in (0.01, 0.05, 0.1)}
    assert {c.attrs["method"] for c in ci.values()} == {r.ci_method} and r.ci_method
    stored = r.extras["ci95"]
    lower95 = ci[0.05]["lower"].to_numpy()
    if name == "w_ab":
        assert lower95.tolist() == pytest.approx(np.ravel(r.to_dict()["ci95"]["lower"]["data"]))
    else:
        assert lower95.tolist() == pytest.approx([stored[k][0] for k in r.params.index])
    again = np.asarray(r.inference.interval(0.95)[0], dtype=float)        # asked again at 95%: the same
    assert again == pytest.approx(lower95, rel=1e-9, abs=1e-12)
    for frame in ci.values():                                            # inside [0, 1]
        assert (frame["lower"] >= 0).all() and (frame["upper"] <= 1).all()
        assert (frame["lower"] <= r.params + 1e-12).all() or name == "w_ab"
    assert (ci[0.01]["lower"] <= ci[0.05]["lower"]).all() and (ci[0.05]["lower"] <= ci[0.1]["lower"]).all()
    assert (ci[0.01]["upper"] >= ci[0.05]["upper"]).all() and (ci[0.05]["upper"] >= ci[0.1]["upper"]).all()
    assert ((ci[0.1]["upper"] - ci[0.1]["lower"]) < (ci[0.05]["upper"] - ci[0.05]["lower"])).all()


def test_a_wald_interval_near_zero_stays_in_the_parameter_space() -> None:
    """The urn's `black` (0.01): at alpha = 0.1 the interval was Wald's, below 0 and wider
    than the 95% one; now the score interval at 90%, inside the 95% one."""
    spec = privspec.load("specs/urn.privspec")
    raw = pd.read_csv("specs/data/urn_raw.csv")
    r = spec.run(spec.privatize(raw, "urn", seed=1), queries=["w"])["w"]
    ci90, ci95 = r.conf_int(0.1).loc["black"], r.conf_int(0.05).loc["black"]
    assert 0 <= ci95["lower"] <= ci90["lower"] < ci90["upper"] < ci95["upper"]
    assert r.conf_int(0.1).attrs["method"].startswith("score")


def test_coverage_at_alpha_0_1(spec) -> None:
    """Seeded surveys from the truth: the 90% intervals (score for MoM, as at 95%) cover each
    share about 90% of the time (300 surveys: within 0.9 +- 0.06, four standard errors)."""
    q = spec.model.queries["w_mom"]
    ch = channel_in_w(q.mechanism)
    rng = np.random.default_rng(5)
    hits = np.zeros(4)
    reps = 300
    for counts in rng.multinomial(1000, ch.probabilities(np.array(W0)), size=reps):
        ci = estimate_on_counts(q, counts.astype(float)).conf_int(0.1)
        hits += (ci["lower"].to_numpy() <= W0) & (np.array(W0) <= ci["upper"].to_numpy())
    assert hits / reps == pytest.approx(np.full(4, 0.9), abs=0.06)


def test_interval_estimates_keep_their_method(tmp_path) -> None:
    """The jackknife t interval of an NPMLE mean and the profile likelihood interval of a
    parametric one, at any level: nested, the same method."""
    spec = privspec.load("specs/bcdeter.privspec")
    res = spec.run("tests/data/bcdeter.csv", queries=["mean_npmle", "mean_normal"])
    for name, method in (("mean_npmle", "estimate +- t(df = "), ("mean_normal", "profile likelihood")):
        r = res[name]
        ci = [r.conf_int(a).iloc[0] for a in (0.01, 0.05, 0.2)]
        assert all(c.lower < c.upper for c in ci)
        assert ci[0].lower < ci[1].lower < ci[2].lower < r.value < ci[2].upper < ci[1].upper < ci[0].upper
        assert r.ci_method.startswith(method) and r.conf_int(0.2).attrs["method"] == r.ci_method
        assert r.cov_params().iloc[0, 0] == pytest.approx(r.extras["se"] ** 2)


def test_a_released_tables_covariance_is_its_noises() -> None:
    """A released table (Algorithm 1, exact totals by degree) and its margin by income:
    cov_params against the noise itself, 4,000 seeded releases of the same counts (an
    entry's Monte Carlo error is about 2% of a variance); a margin over the exact totals
    is exact."""
    from privspec.backends.releases.backend import Layout, add_noise, margin

    spec = privspec.load("specs/university.privspec")
    res = spec.run({"income_by_degree": "specs/data/university_released.csv"},
                   queries=["released", "by_band", "by_degree"])
    model = spec.model
    release = model.releases["income_by_degree"]
    lay = Layout.of(release)
    counts = np.arange(1, 25).reshape(lay.shape) * 3
    noisy = lay.from_groups(add_noise(model, release, np.tile(lay.to_groups(counts), (4000, 1)),
                                      np.random.default_rng(2)).reshape(4000, lay.m, lay.n))
    for name, keep in (("released", ("degree", "income")), ("by_band", ("income",))):
        C = res[name].cov_params().to_numpy()
        assert np.diag(C) == pytest.approx(res[name].bse.to_numpy() ** 2)
        mc = np.cov(margin(lay, noisy, keep).reshape(4000, -1), rowvar=False)
        assert C == pytest.approx(mc, abs=0.08 * C.max())
        assert C.min() < -0.1 * C.max()                      # cells of one total share its noise
    assert res["by_degree"].cov_params().to_numpy() == pytest.approx(0, abs=1e-12)
    assert res["by_band"].conf_int(0.1).attrs["method"] == "wald (table +- z se)"


RR = """
variable a: categorical {a1, a2}
variable b: categorical {b1, b2, b3}
variable c: categorical {c1, c2}
mechanism m = product(grr(a, epsilon = 1), grr(b, epsilon = 1))
mechanism w = grr(a * b * c, epsilon = 2)
query j  = estimate joint(a, b) from m by castell(se = conditional)
query i  = estimate joint(a, b) from m by independent
query ic = estimate joint(a, b) from m by independent(se = conditional)
query cl = estimate joint(a, b) from m by clusters(v = 0)
query h  = estimate joint(a, b) from m by hybrid(se = conditional)
query ml = estimate joint(a, b) from m by mle
query r  = estimate joint(a, b) from w by joint
query rc = estimate joint(a, b) from w by joint(se = conditional)
query rm = estimate joint(a, b) from w by mle
query ra = estimate joint(a, b, c) from w by joint
"""


def test_every_randomized_response_estimator_has_its_covariance() -> None:
    """Every joint estimator with standard errors, of either kind: the covariance's diagonal
    is the per-cell variance the back end prints (bse^2), symmetric and positive
    semi-definite; a distribution's rows sum to 0 for the population kind."""
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"a": rng.choice(["a1", "a2"], n), "b": rng.choice(["b1", "b2", "b3"], n),
                          "c": rng.choice(["c1", "c2"], n)})
    frame["a*b*c"] = frame["a"] + "." + frame["b"] + "." + frame["c"]
    res = privspec.load(RR).run({"m": frame, "w": frame})
    assert res.ok, res.failures
    for name, r in res.items():
        C = r.cov_params().to_numpy()
        assert np.diag(C) == pytest.approx(r.bse.to_numpy() ** 2, rel=1e-9, abs=1e-15), name
        assert np.allclose(C, C.T, rtol=0, atol=1e-15), name
        # the conditional kind of RR-Independent (and hybrid choosing it) estimates its exact
        # covariance without bias, as its se^2 do: PSD up to that estimate's noise
        psd = 1e-2 if r.method in ("independent", "hybrid") and r.se_kind == "conditional" else 1e-10
        assert np.linalg.eigvalsh(C).min() >= -psd * np.abs(C).max(), name
        if r.se_kind == "population" and name not in ("i", "cl"):   # RR-Independent's sums to 1 only in the limit
            assert C.sum(axis=1) == pytest.approx(0, abs=1e-12), name
        assert r.conf_int(0.2).attrs["method"] == r.ci_method, name


@pytest.mark.parametrize("method", ["mom", "mle"])
def test_a_finite_joint_tables_95_percent_intervals_are_its_ci95(method: str) -> None:
    """conf_int(0.05) of a joint of subset designs is the printed ci95 (keyed "a.x", the
    table's index (a, x)): it raised TypeError, finding no interval for a tuple key."""
    spec = privspec.load("variable c: categorical {a, b, e, f}\nvariable d: categorical {x, y, z, w}\n"
                         "mechanism both = product(subset(c, uniform), subset(d, uniform))\n"
                         f"query j = estimate joint(c, d) from both by {method}\n")
    rng = np.random.default_rng(0)
    raw = pd.DataFrame({"c": rng.choice(list("abef"), 2000), "d": rng.choice(list("xyzw"), 2000)})
    res = spec.run(spec.privatize(raw, "both", seed=1))["j"]
    got = res.conf_int(0.05)
    assert [list(got.loc[(c, d)]) for c, d in [("a", "x"), ("f", "w")]] == \
        [res.extras["ci95"]["a.x"], res.extras["ci95"]["f.w"]]
    # the same method at a level next to it: the same intervals to the solver's tolerance
    assert np.allclose(got.to_numpy(), res.conf_int(0.05 + 1e-9).to_numpy(), atol=1e-6)
