"""Interval mechanisms: the report convention, sampling per scheme, and what a report
says about Y (interval privacy, Definitions 1-5, Examples 3-4)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy
from scipy import stats

from privspec.errors import DataError
from privspec.model.graph import IntervalMechanism, Law, ProgressiveMechanism, SelectiveMechanism, Variable
from privspec.backends.interval.laws import law_cdf_expr, law_distribution
from privspec.backends.interval.mechanisms import format_ranges, parse_ranges
from privspec.backends.interval.ranges import likelihood_pieces, range_coverage
from privspec.backends.interval.sampling import sample_interval, sample_progressive, sample_selective

Z = sympy.Integer
SCORE = Variable("score", "continuous")
SALARY = Variable("salary", "continuous", lower=Z(0), upper=Z(150))


def uniform(a, b):
    return Law("uniform", (("a", sympy.nsimplify(a)), ("b", sympy.nsimplify(b))))


def logistic(loc, scale):
    return Law("logistic", (("location", sympy.nsimplify(loc)), ("scale", sympy.nsimplify(scale))))


# ---- the convention ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, left, right", [
    ("(-inf, 2.5]", -np.inf, 2.5),
    ("(1, inf]", 1.0, np.inf),
    ("(1, inf)", 1.0, np.inf),                 # ")" is accepted after inf
    ("( -3 , 4e1 ]", -3.0, 40.0),
    ("7.25", 7.25, 7.25),                      # a disclosed point: l == r
    ("(-inf, -1] | (4, inf]", 4.0, -1.0),      # a ring range: l > r, the complement of (r, l]
])
def test_parse_and_write_round_trip(text, left, right):
    lo, hi = parse_ranges([text])
    assert (lo[0], hi[0]) == (left, right)
    again = parse_ranges(format_ranges(lo, hi))
    assert (again[0][0], again[1][0]) == (left, right)


def test_written_numbers_are_pythons_shortest_repr_at_every_magnitude():
    """format_ranges writes with Arrow's cast where it agrees with Python's repr and with
    repr where Arrow would choose another notation (exponents by digit count, 0.00001):
    every end is spelled as ``repr`` (whole numbers below 2^53 without .0, -0 as 0) and
    reads back to the same double."""
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(20_000) * 10.0 ** rng.integers(-25, 25, 20_000),
                        rng.standard_normal(5_000), np.round(rng.standard_normal(2_000) * 1e4),
                        [0.0, -0.0, 1e-4, 9.99e-5, 1e14, 41163053637.413284, 1e15, 1e16, 2.0 ** 53,
                         5e-324, -1.7976931348623157e308, 123456789012345.6]])
    hi = x + np.abs(x) + 1.0
    text = format_ranges(x, hi)

    def spell(v: float) -> str:
        r = repr(float(v) + 0.0)
        return r.removesuffix(".0") if abs(v) < 2.0 ** 53 else r

    assert text.tolist() == [f"({spell(a)}, {spell(b)}]" for a, b in zip(x, hi)]
    lo2, hi2 = parse_ranges(text)
    assert np.array_equal(lo2, x + 0.0) and np.array_equal(hi2, hi)
    assert format_ranges(np.array([1.0, 3.0, np.nan]), np.array([1.0, -2.0, 1.0])).tolist() == \
        ["1", "(-inf, -2] | (3, inf]", "null"]


@pytest.mark.parametrize("bad", ["(2, 1]", "[1, 2]", "(1, 2)", "(inf, inf]", "inf", "abc", "(-inf, 1] | (0, inf]",
                                 "(1, 2] | (3, 4]"])
def test_bad_reports_are_named_by_row(bad):
    with pytest.raises(DataError) as e:
        parse_ranges(["(0, 1]", bad, "(0, 1]"], column="salary")
    d = e.value.diagnostics[0]
    assert d.code == "D101" and d.rows == (2,) and d.columns == ("salary",)


def test_nulls_only_where_allowed():
    with pytest.raises(DataError) as e:
        parse_ranges(["(0, 1]", "", "null"])
    assert e.value.diagnostics[0].rows == (2, 3)
    left, right = parse_ranges(["(0, 1]", "", "null"], allow_null=True)
    assert np.isnan(left[1:]).all() and format_ranges(left, right).tolist()[1:] == ["null", "null"]


def test_laws_match_their_exact_cdfs():
    u = sympy.Symbol("u")
    laws = [uniform(-2, 3), Law("normal", (("mean", Z(1)), ("sd", Z(2)))), logistic(0, 5),
            Law("exponential", (("rate", Z(2)),), shift=Z(10), scale=Z(3))]
    for law in laws:
        d = law_distribution(law)
        for x in (-1.0, 0.5, 2.0, 11.0):
            assert float(law_cdf_expr(law, u).subs(u, x)) == pytest.approx(float(d.cdf(x)), abs=1e-12)


# ---- sampling ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme, m", [("case1", 2), ("case2", 3), ("canonical", 5), ("ring", 2), ("ring", 4)])
def test_every_report_contains_the_truth(scheme, m):
    rng = np.random.default_rng(1)
    y = rng.normal(size=2000)
    mech = IntervalMechanism("m", SCORE, scheme, logistic(0, 2), m)
    left, right = sample_interval(mech, y, rng)
    ring = left > right
    inside = np.where(ring, (y <= right) | (y > left), (left < y) & (y <= right))
    assert inside.all()
    assert ring.any() == (scheme == "ring")
    if scheme == "case1":  # (-inf, U] when Y <= U, (U, inf] otherwise
        assert np.all(np.isinf(left) != np.isinf(right))


def test_ring_reports_the_ends_together():
    rng = np.random.default_rng(2)
    mech = IntervalMechanism("m", SCORE, "ring", uniform(-1, 1), 3)
    y = np.array([-5.0, 5.0, 0.0])
    left, right = sample_interval(mech, y, rng)
    assert left[0] > right[0] and left[1] > right[1]   # both tails fall in the ring range


def test_disclosed_values_are_reported_exactly():
    rng = np.random.default_rng(3)
    mech = IntervalMechanism("m", SALARY, "case1", uniform(0, 150), 2, (Z(0), Z(20)))
    y = np.array([5.0, 20.0, 20.5, 100.0])
    left, right = sample_interval(mech, y, rng)
    assert (left == right).tolist() == [True, True, False, False]
    assert left[0] == 5.0


def test_sampling_is_seeded():
    mech = IntervalMechanism("m", SCORE, "case2", logistic(0, 5), 3)
    y = np.linspace(-2, 2, 50)
    a = sample_interval(mech, y, np.random.default_rng(7))
    b = sample_interval(mech, y, np.random.default_rng(7))
    c = sample_interval(mech, y, np.random.default_rng(8))
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], c[0])


def test_selective_collects_with_probability_rho_times_p():
    # Case I, Y ~ U(0, 1) and U ~ U(0, 1): L(S_Z) = F(U) or 1 - F(U), so P(L >= tau) = 1 - tau^2
    rng = np.random.default_rng(4)
    base = IntervalMechanism("c1", SALARY, "case1", uniform(0, 150), 2)
    sel = SelectiveMechanism("s", base, sympy.Rational(3, 10), sympy.Rational(1, 2))
    y = rng.uniform(0, 150, 40_000)
    left, right = sample_selective(sel, y, rng, stats.uniform(0, 150).cdf)
    collected = ~np.isnan(left)
    assert collected.mean() == pytest.approx(0.5 * (1 - 0.3 ** 2), abs=0.01)
    cov = range_coverage(left[collected], right[collected], stats.uniform(0, 150).cdf)
    assert cov.min() >= 0.3


def test_progressive_narrows_round_by_round():
    rng = np.random.default_rng(5)
    mech = ProgressiveMechanism("p", SALARY, 3)
    y = rng.uniform(0, 150, 20_000)
    left, right = sample_progressive(mech, y, rng)
    lo, hi = np.where(np.isinf(left), 0, left), np.where(np.isinf(right), 150, right)
    assert np.all((lo < y) | (y == 0)) and np.all(y <= hi)
    # each round keeps 2/3 of the width on average for a uniform population: (2/3)^3
    assert np.mean(hi - lo) / 150 == pytest.approx((2 / 3) ** 3, abs=0.005)
    # with a sensitivity, answers stop once the range would be too small
    left_t, _ = sample_progressive(mech, y, rng, tau=0.5, cdf=stats.uniform(0, 150).cdf)
    assert np.isnan(left_t).mean() > 0.2


# ---- what reports say ---------------------------------------------------------------------------
def test_coverage_of_reports():
    F = stats.uniform(0, 150).cdf
    left = np.array([-np.inf, 30.0, 10.0, 120.0, 50.0])
    right = np.array([30.0, np.inf, 10.0, 30.0, 100.0])
    assert range_coverage(left, right, F) == pytest.approx([0.2, 0.8, 0.0, 0.4, 1 / 3])
    # an acceptable range A = [0, 20] is taken out of every range
    assert range_coverage(left, right, F, (0, 20)) == pytest.approx([10 / 150, 0.8, 0.0, 0.4 - 20 / 150, 1 / 3])


def test_likelihood_pieces_cut_to_support_and_take_out_the_acceptable_range():
    left = np.array([-np.inf, 50.0, 10.0, 120.0])
    right = np.array([100.0, np.inf, 10.0, 60.0])
    pl, pr, owner = likelihood_pieces(left, right, (0.0, 150.0), (30, 40))
    pieces = sorted(zip(owner.tolist(), pl.tolist(), pr.tolist()))
    assert pieces == [(0, 0.0, 30.0), (0, 40.0, 100.0), (1, 50.0, 150.0), (2, 10.0, 10.0),
                      (3, 0.0, 30.0), (3, 40.0, 60.0), (3, 120.0, 150.0)]


def test_interval_privacy_holds_for_case1_reports():
    """Definition 1 / Theorem 3: given the report, Y follows its prior restricted to S_z."""
    rng = np.random.default_rng(6)
    y = rng.normal(size=400_000)
    u = rng.uniform(-3, 3, y.size)
    # reports (-inf, U] with U in a narrow window around 0.5: Y | report ~ N(0, 1) truncated at 0.5
    sel = (np.abs(u - 0.5) < 0.01) & (y <= u)
    trunc = stats.truncnorm(-np.inf, 0.5)
    assert stats.kstest(y[sel], trunc.cdf).pvalue > 0.01
    # post-processing (Theorem 6): a report's rounded anchor W adds nothing
    w = np.round(u[sel], 1)
    assert stats.kstest(y[sel][w == 0.5], trunc.cdf).pvalue > 0.01


# ---- numbers are read correctly rounded (issue 14) -----------------------------------------------------
def seventeen_digits(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Random 17-significant-digit decimals over 1e-20..1e20, and float() of each (correctly rounded)."""
    rng = np.random.default_rng(seed)
    m, e = rng.integers(10**16, 10**17, n), rng.integers(-20, 21, n)
    text = [f"{a // 10**16}.{a % 10**16:016d}e{k}" for a, k in zip(m.tolist(), e.tolist())]
    return text, np.array([float(t) for t in text])


@pytest.fixture
def misrounding_to_numeric(monkeypatch):
    """pandas 2's ``pd.to_numeric`` (its fast xstrtod) put 36-39% of random 17-digit decimals on
    a neighbouring double (pandas 3.1, in this venv, rounds correctly): this stand-in misrounds
    every value, so a parser relying on it fails here whatever pandas is installed."""
    import pandas as pd

    real = pd.to_numeric
    monkeypatch.setattr(pd, "to_numeric", lambda *a, **k: np.nextafter(real(*a, **k), np.inf))


def test_parse_ranges_rounds_numbers_correctly(misrounding_to_numeric):
    from privspec.backends.interval.mechanisms import parse_bounds, parse_censored

    text, truth = seventeen_digits(3000, 14)
    left, right = parse_ranges(text)                                   # disclosed points
    assert np.array_equal(left, truth) and np.array_equal(right, truth)
    left, _ = parse_ranges([f"({t}, inf]" for t in text])              # interval ends
    assert np.array_equal(left, truth)
    _, right = parse_ranges([f"(-inf, {t}] | (1e30, inf]" for t in text])    # ring ranges
    assert np.array_equal(right, truth)
    assert np.array_equal(parse_censored([f"[{t}, inf)" for t in text]).left, truth)
    assert np.array_equal(parse_bounds(text, ["NA"] * len(text)).left, truth)


def test_spec_numbers_become_the_nearest_double():
    """A spec's exact numbers: one correctly rounded division (sympy.N(x, 17) then float
    rounded twice, off for 0.4% of 17-digit decimals such as 0.44675406503255774)."""
    from privspec.backends.interval.laws import nearest_double as _f

    rng = np.random.default_rng(15)
    p, q = rng.integers(1, 10**15, 2000).tolist(), rng.integers(1, 10**15, 2000).tolist()
    assert all(_f(sympy.Rational(a, b)) == a / b for a, b in zip(p, q))
    assert _f(sympy.Rational(44675406503255774, 10**17)) == float("0.44675406503255774")
    assert _f(sympy.pi) == np.pi and _f(-sympy.oo) == -np.inf


@pytest.mark.parametrize("lower, value", [("0.7", "0.69999999999999996"),
                                          ("0.44675406503255774", "0.44675406503255774")])
def test_a_value_at_the_disclosed_bound_is_accepted(tmp_path, misrounding_to_numeric, lower, value):
    """0.69999999999999996 is the double 0.7: inside disclose [0.7, 10.4] (issue 14); a
    17-digit bound of the spec and the same number in the data are the same double."""
    import io

    from privspec.cli import main

    spec = tmp_path / "s.privspec"
    spec.write_text(f"variable y: continuous [0, 20]\n"
                    f"mechanism m = interval(y, case1(uniform(0, 20)), disclose [{lower}, 10.4])\n"
                    "query F = estimate cdf(y) from m by npmle\n")
    data = tmp_path / "d.csv"
    data.write_text(f'y\n{value}\n"(-inf, 12]"\n"(15, inf]"\n10.4\n5\n')
    err = io.StringIO()
    assert main(["run", str(spec), "--data", str(data)], stdout=io.StringIO(), stderr=err) == 0, err.getvalue()
