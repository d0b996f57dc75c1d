"""Independence tests on subset-valued contingency tables (subset privacy, section IV-B)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privspec
from privspec.backends.compile import channel_of
from privspec.backends.finite import FiniteBackend, independence_on_counts
from privspec.backends.finite_simulate import simulate_query
from privspec.backends.populations import population_vector

SPEC = Path(__file__).resolve().parent.parent / "specs" / "gender_income.privspec"
NULL = SPEC.read_text().replace("population (gender, income) ~ counts [[9592, 1179], [15128, 6662]]",
                                "population gender ~ categorical(0.33, 0.67)\n"
                                "population income ~ categorical(0.76, 0.24)")


def draw_counts(text: str, n: int, seed: int) -> tuple:
    model = privspec.load(text).model
    mech = model.mechanisms["both"]
    ch = channel_of(mech)
    w = np.array([float(x) for x in population_vector(model, [f.variable for f in mech.factors])])
    return model, np.random.default_rng(seed).multinomial(n, ch.Kn @ w).astype(float)


@pytest.mark.parametrize("test", ["pearson", "lrt", "lrt_mom", "bonferroni"])
def test_table_iii_drives_every_test_to_reject(test: str) -> None:
    """Gender and income are dependent in the Adult data (Table III): with n = 20,000
    subset reports every test rejects at the 1% level."""
    model, counts = draw_counts(SPEC.read_text(), 20_000, seed=1)
    r = independence_on_counts(model.queries[test], counts)
    assert r.value.p_value < 0.01, r.to_dict()
    assert r.value.method == test


def test_degrees_of_freedom() -> None:
    model, counts = draw_counts(SPEC.read_text(), 5_000, seed=2)
    assert independence_on_counts(model.queries["lrt"], counts).value.df == 9           # (p - 1)(q - 1), p = q = 4
    # Pearson goodness of fit of the independence model: 6 x 6 report cells - 1 - 3 - 3
    assert independence_on_counts(model.queries["pearson"], counts).value.df == 29
    assert independence_on_counts(model.queries["bonferroni"], counts).value.df == 1


def test_lrt_mom_holds_its_size_under_independence() -> None:
    """Under independence the LRT with MoM rejects about 5% of the time (200 replications
    of n = 3,000; 99% binomial band around 0.05 widened for the asymptotics)."""
    model = privspec.load(NULL).model
    r = simulate_query(model, model.queries["lrt_mom"], n=3000, reps=200, seed=7)
    rate = r.value["rejection_rate_0.05"]
    assert 0.0 <= rate <= 0.11, rate
    assert r.value["p_value_ks_uniform"] > 0.001


def test_permutation_calibration() -> None:
    model, counts = draw_counts(NULL, 3_000, seed=3)
    q = model.queries["lrt_perm"]
    r = independence_on_counts(q, counts, seed=11)
    again = independence_on_counts(q, counts, seed=11)
    assert r.value.p_value == again.value.p_value                     # seeded
    assert r.value.p_value > 0.01                                      # independent data
    assert "199 permutations" in r.extras["note"]
    # p-values of a permutation test are multiples of 1/(B + 1)
    assert abs(r.value.p_value * 200 - round(r.value.p_value * 200)) < 1e-9
    model, counts = draw_counts(SPEC.read_text(), 20_000, seed=4)
    assert independence_on_counts(model.queries["lrt_perm"], counts, seed=1).value.p_value == 1 / 200


def test_run_end_to_end(tmp_path) -> None:
    """privatize raw records drawn from Table III, then test from the file."""
    import pandas as pd

    from privspec.backends.data import DataBindings

    model = privspec.load(SPEC).model
    rng = np.random.default_rng(5)
    n = 20_000
    cell = rng.choice(4, size=n, p=np.array([9592, 1179, 15128, 6662]) / 32561)
    gender = np.where(cell < 2, "Female", "Male")
    income = np.where(cell % 2 == 0, "Low", "High")
    raw = pd.DataFrame({"gc": np.char.add(np.char.add(gender, "."), rng.choice(["heads", "tails"], n)),
                        "ic": np.char.add(np.char.add(income, "."), rng.choice(["heads", "tails"], n))})
    out = FiniteBackend().privatize(model, model.mechanisms["both"], raw, seed=9)
    path = tmp_path / "reports.csv"
    out.to_csv(path, index=False)
    data = DataBindings.parse([str(path)], list(model.mechanisms))
    r = FiniteBackend().answer(model, model.queries["lrt_mom"], "run", data=data)
    assert r.value.p_value < 0.01 and r.extras["n"] == n
