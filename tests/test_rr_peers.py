"""The same GRR reports give the same frequency estimates as multi-freq-ldpy (matrix
inversion with negatives clipped and the rest rescaled: our ``mom(project = clip)``)
and pure-ldp (direct encoding, unnormalized: our ``mom`` times n).  Test-only
dependencies (the ``test`` extra, with scikit-learn, which pure-ldp imports):
when one is absent the comparison is skipped with a reason naming the missing package
and the install command (shown by ``pytest -rs``); with ``PRIVSPEC_REQUIRE_PEERS=1``
a missing peer fails instead of skipping (for a CI environment that installs them all)."""
from __future__ import annotations

import importlib
import os

import numpy as np
import pandas as pd
import pytest

import privspec

#: how to install what a peer's import needs (pyproject.toml's extras)
INSTALL = {
    "pure_ldp": 'pip install ".[test]" (pure-ldp is in the test extra)',
    "multi_freq_ldpy": 'pip install ".[test]" (multi-freq-ldpy is in the test extra)',
    "numba": 'pip install ".[test]" (numba comes with multi-freq-ldpy)',
    "statsmodels": 'pip install ".[test]" (statsmodels is in the test extra)',
    # pure_ldp.frequency_oracles imports its RAPPOR server, which imports scikit-learn
    # (not a declared dependency of pure-ldp; privspec's test extra has it)
    "sklearn": 'pip install ".[test]" (scikit-learn is in the test extra; pure-ldp\'s '
               'frequency_oracles package imports it)',
}


def peer(module: str, package: str):
    """Import a peer's module, or skip naming what is missing and how to install it
    (``PRIVSPEC_REQUIRE_PEERS=1``: fail instead)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:     # a peer that is installed but broken fails, loudly
        missing = (e.name or module).split(".")[0]
        how = INSTALL.get(missing, f"pip install {missing}")
        reason = (f"{package} comparison not run: importing {module} needs the module '{missing}', "
                  f"which is not installed ({e}); install it with: {how}")
        if os.environ.get("PRIVSPEC_REQUIRE_PEERS"):
            pytest.fail(reason)
        pytest.skip(reason)


SPEC = """variable x: categorical {c0, c1, c2, c3, c4, c5, c6, c7}
mechanism g = grr(x, epsilon = 1/2)
query plain = estimate distribution(x) from g by mom
query clip  = estimate distribution(x) from g by mom(project = clip)
"""


def _reports(n: int = 20000):
    """Reports drawn from GRR by the peers' own client where available, else by ours."""
    rng = np.random.default_rng(9)
    truth = rng.dirichlet(np.full(8, 0.6))
    x = rng.choice(8, size=n, p=truth)
    model = privspec.load(SPEC).model
    from privspec.backends.finite.data import privatize_frame

    raw = pd.DataFrame({"x": [f"c{i}" for i in x]})
    y = privatize_frame(model, model.mechanisms["g"], raw, seed=4)["x"].str[1:].astype(int).to_numpy()
    return model, y


def _ours(model, y: np.ndarray, query: str) -> np.ndarray:
    from privspec.backends.rr.backend import estimate_result

    frame = pd.DataFrame({"x": [f"c{i}" for i in y]})
    q = model.queries[query]
    if q.method.options:
        r = estimate_result(model, q, frame, "reports")
    else:
        from privspec.backends.finite.data import count_observations
        from privspec.backends.finite.backend import estimate_on_counts

        r = estimate_on_counts(q, count_observations(q.mechanism, frame))
    return np.array(r.value.values, dtype=float)


@pytest.mark.slow
def test_multi_freq_ldpy_grr_matches_mom_with_clipping() -> None:
    grr = peer("multi_freq_ldpy.pure_frequency_oracles.GRR", "multi-freq-ldpy")
    model, y = _reports()
    theirs = grr.GRR_Aggregator_MI(y, 8, 0.5)
    assert np.allclose(_ours(model, y, "clip"), theirs, atol=1e-12)


def test_pure_ldp_direct_encoding_matches_mom() -> None:
    de = peer("pure_ldp.frequency_oracles.direct_encoding", "pure-ldp")
    model, y = _reports()
    server = de.DEServer(epsilon=0.5, d=8, index_mapper=lambda v: v)
    for v in y:
        server.aggregate(int(v))
    theirs = np.array([server.estimate(i, suppress_warnings=True) for i in range(8)]) / len(y)
    assert np.allclose(_ours(model, y, "plain"), theirs, atol=1e-10)
    assert np.any(theirs < 0)          # the unprojected estimates leave the simplex here ...
    assert np.all(_ours(model, y, "clip") >= 0)   # ... the projected ones do not


@pytest.mark.slow
def test_conditional_se_of_a_grr_marginal_is_multi_freq_ldpys_var_pure() -> None:
    """``mom(se = conditional)`` on a GRR marginal is Wang et al.'s variance given the
    respondents, multi-freq-ldpy's ``VAR_Pure(p, q, n, f)``: exactly at the expected
    reports, and against a Monte Carlo over the randomization of fixed respondents (2000
    redraws from their counts, within 10%)."""
    vp = peer("multi_freq_ldpy.pure_frequency_oracles.Variance_PURE", "multi-freq-ldpy")
    from privspec.backends.rr.backend import JointProblem
    from privspec.backends.rr.simulate import privatize_counts

    model = privspec.load(SPEC + "query cond = estimate distribution(x) from g by mom(se = conditional)\n").model
    problem = JointProblem(model, model.queries["cond"])
    rng = np.random.default_rng(2)
    n = 4000
    x = rng.choice(8, size=n, p=rng.dirichlet(np.full(8, 0.6)))
    f = np.bincount(x, minlength=8) / n
    e = np.exp(0.5)
    p, q = e / (e + 7), 1 / (e + 7)
    expected = (p - q) * f * n + q * n
    fit = problem.fit(expected)
    assert fit.se_kind == "conditional"
    assert np.allclose(fit.var, vp.VAR_Pure(p, q, n, f), rtol=1e-10)
    K = problem.K()
    counts = np.bincount(x, minlength=8)
    draws = np.array([problem.fit(privatize_counts(counts, K, rng)).table for _ in range(2000)])
    assert np.allclose(draws.var(axis=0, ddof=1) / vp.VAR_Pure(p, q, n, f), 1, atol=0.1)
