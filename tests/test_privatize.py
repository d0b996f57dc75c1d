"""privatize (issue 14): a row's report is a function of (seed, mechanism, row index, value)
alone, whatever the chunk size, the other rows or the pieces; the output is checked
before any work and never overwritten unasked; signals leave no temporary file."""
from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privspec
from privspec.backends import privatizer_for
from privspec.backends.core.compile import channel_of
from privspec.signals import Interrupted
from privspec.backends.data.writing import write_table_atomic
from privspec.backends.finite.data import privatize_factor, privatize_frame
from privspec.backends.core.rowrandom import RowRandom, philox4x64, row_key, row_uniforms, row_words
from privspec.cli import main
from privspec.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
INTERVAL = SPECS / "interval_privacy.privspec"
INTERVAL_RAW = SPECS / "data" / "interval_raw.csv"

FINITE = """
variable c: categorical {a, b, c, d, e}
variable g: categorical {F, M}
variable i: categorical {Lo, Mid, Hi}
variable gi = g * i
mechanism uni = subset(c, uniform)
mechanism ind = subset(c, independent { {a, b}: 1/4, {a, c}: 1/4, {b, d}: 1/4, {c, e}: 1/4 })
mechanism cond = subset(c, conditional { {a, b}: 1/2, {a, c}: 1/2, {b, d}: 1/2, {c, e}: 1/2, {d, e}: 1/2 })
mechanism pairs = subset(c, sizes {2: 1})
mechanism k = grr(c, epsilon = 1)
mechanism comb = grr(gi, epsilon = 2)
mechanism prod = product(grr(c, epsilon = 1), grr(gi, epsilon = 1))
mechanism floor = subset(c, uniform, min_coverage = 1/5)
"""


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], stdout=out, stderr=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def model():
    return privspec.load(FINITE).model


def raw_frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n), "c": rng.choice(list("abcde"), n, p=[.1, .2, .3, .25, .15]),
                         "g": rng.choice(["F", "M"], n), "i": rng.choice(["Lo", "Mid", "Hi"], n)})


# ---- the generator -------------------------------------------------------------------------------------
def test_philox_is_numpys_word_for_word() -> None:
    """The numpy-array Philox4x64-10 (any counters) equals numpy's C Philox (whose block
    after counter=c is that of c + 1), counters with every word and high bits set."""
    key = row_key(2024)
    counters = np.random.default_rng(1).integers(0, 2 ** 63, size=(64, 4), dtype=np.int64).astype(np.uint64)
    counters = counters * np.uint64(2) + np.uint64(1)
    ours = philox4x64(key, counters)
    for c, mine in zip(counters, ours):
        value = sum(int(w) << (64 * j) for j, w in enumerate(c))
        theirs = np.random.Philox(key=key, counter=(value - 1) % (1 << 256)).random_raw(4)
        assert np.array_equal(mine, theirs)


def test_row_words_are_the_same_by_any_path() -> None:
    key = row_key(5)
    rows = np.arange(2 ** 40, 2 ** 40 + 300)
    shuffled = np.random.default_rng(0).permutation(300)
    for k in (1, 2, 3, 6):   # 1 and 2 words: rows share a Philox block
        whole = row_words(key, rows, k, draw=2, attempt=1, stream=9)       # contiguous: numpy's C Philox
        assert whole.shape == (300, k) and len(np.unique(whole)) == whole.size
        assert np.array_equal(row_words(key, rows[shuffled], k, draw=2, attempt=1, stream=9), whole[shuffled])
        for a, b in ((1, 2), (3, 10), (5, 300), (7, 8)):   # pieces starting inside a shared block
            assert np.array_equal(row_words(key, rows[a:b], k, draw=2, attempt=1, stream=9), whole[a:b])
        assert not np.array_equal(row_words(key, rows, k, draw=3, attempt=1, stream=9), whole)
    u = row_uniforms(5, range(10 ** 5))[:, 0]
    assert 0 < u.min() and u.max() < 1 and stats.kstest(u, "uniform").pvalue > 1e-3


def test_row_random_draws_and_retries_depend_on_the_row_only() -> None:
    a, b = RowRandom(3, rows=range(100)), RowRandom(3, rows=range(50, 100))
    a1, b1 = a.random(100), b.random(50)
    assert np.array_equal(a1[50:], b1)
    assert np.array_equal(a.random((100, 3))[50:], b.random((50, 3)))          # the second draw
    ra, rb = a.retry(np.array([60, 70])), b.retry(np.array([10, 20]))          # rows 60 and 70 in both
    assert np.array_equal(ra.random(2), rb.random(2))
    with pytest.raises(ValueError):
        a.random(99)


# ---- finite mechanisms: independent of chunks, pieces and other rows ------------------------------------
@pytest.mark.parametrize("mech", ["uni", "ind", "cond", "pairs", "k", "comb", "prod"])
def test_chunk_size_and_pieces_do_not_change_the_output(model, mech: str) -> None:
    m = model.mechanisms[mech]
    raw = raw_frame(5000)
    whole = privatize_frame(model, m, raw, 11, chunk=1_000_000)
    assert whole.equals(privatize_frame(model, m, raw, 11, chunk=1000))
    assert whole.equals(privatize_frame(model, m, raw, 11, chunk=777))
    first = privatize_frame(model, m, raw.iloc[:1800].reset_index(drop=True), 11, offset=0)
    second = privatize_frame(model, m, raw.iloc[1800:].reset_index(drop=True), 11, offset=1800)
    assert pd.concat([first, second], ignore_index=True).equals(whole)
    # other rows changed: every unchanged row keeps its report
    other = raw.copy()
    other.loc[::2, "c"] = np.where(other.loc[::2, "c"] == "a", "b", "a")
    other.loc[::3, "i"] = "Hi"
    changed = privatize_frame(model, m, other, 11)
    same = ((other["c"] == raw["c"]) & (other["i"] == raw["i"])).to_numpy()
    assert same.sum() > 1000
    assert whole[same].equals(changed[same])
    assert not whole.equals(privatize_frame(model, m, raw, 12))


def test_seed_none_draws_fresh_randomness(model) -> None:
    raw = raw_frame(400)
    a = privatize_frame(model, model.mechanisms["k"], raw, None)
    b = privatize_frame(model, model.mechanisms["k"], raw, None)
    assert not a.equals(b)


def test_two_mechanisms_with_one_seed_are_independent(model) -> None:
    """The stream is the mechanism's: grr on c privatized by two mechanisms with the same
    seed does not repeat the same randomness."""
    twin = privspec.load(FINITE + "mechanism k2 = grr(c, epsilon = 1)\n").model
    raw = raw_frame(3000)
    a = privatize_frame(twin, twin.mechanisms["k"], raw, 4)["c"]
    b = privatize_frame(twin, twin.mechanisms["k2"], raw, 4)["c"]
    kept_a, kept_b = (a == raw["c"]).to_numpy(), (b == raw["c"]).to_numpy()
    # with eps = 1 and d = 5 a report is the truth with probability e/(e + 4) = 0.405
    assert abs(kept_a.mean() - 0.405) < 0.03 and abs((kept_a & kept_b).mean() - 0.405 ** 2) < 0.03


@pytest.mark.parametrize("mech", ["uni", "ind", "cond", "k"])
def test_reports_follow_the_channel(model, mech: str) -> None:
    """The row-wise samplers draw from K[:, x]: a chi-square test per true category."""
    m = model.mechanisms[mech]
    ch = channel_of(m)
    x = np.repeat(np.arange(5), 4000)
    reports = privatize_factor(m, x, RowRandom(8, rows=np.arange(len(x))))
    index = {lab: j for j, lab in enumerate(ch.obs_labels)}
    obs = np.array([index[r] for r in reports])
    for j in range(5):
        expected = ch.Kn[:, j] * 4000
        counts = np.bincount(obs[x == j], minlength=ch.n_obs)
        assert (counts[expected == 0] == 0).all()            # never a report of probability 0
        keep = expected > 0
        if keep.sum() > 1:
            assert stats.chisquare(counts[keep], expected[keep]).pvalue > 1e-4, (mech, j)


def test_dummy_rows_are_drawn_apart_from_the_real_ones(model) -> None:
    raw = raw_frame(2000)
    m = model.mechanisms["floor"]
    a = privatize_frame(model, m, raw, 3)
    assert a.equals(privatize_frame(model, m, raw, 3)) and len(a) == round(2000 / 0.6)
    other = raw.copy()
    other.loc[17, "c"] = "e" if raw.loc[17, "c"] != "e" else "a"
    b = privatize_frame(model, m, other, 3)
    assert (a["c"] != b["c"]).sum() <= 1                   # the dummies and the other rows unchanged


# ---- interval mechanisms ------------------------------------------------------------------------------
@pytest.mark.parametrize("mech", ["c1", "c2", "ring", "sel", "prog"])
def test_interval_reports_depend_on_the_row_only(mech: str) -> None:
    model = privspec.load(INTERVAL).model
    m = model.mechanisms[mech]
    backend = privatizer_for(m)
    raw = pd.read_csv(INTERVAL_RAW, dtype=str, keep_default_na=False)
    whole = backend.privatize(model, m, raw, seed=5)
    first = backend.privatize(model, m, raw.iloc[:200].reset_index(drop=True), seed=5)
    second = backend.privatize(model, m, raw.iloc[200:].reset_index(drop=True), seed=5, offset=200)
    assert pd.concat([first, second], ignore_index=True).equals(whole)
    column = m.variable.name
    other = raw.copy()
    other.loc[::2, column] = "50"
    changed = backend.privatize(model, m, other, seed=5)
    same = (other[column] == raw[column]).to_numpy()
    assert whole[same].equals(changed[same])


# ---- the command --------------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path: Path) -> dict:
    spec = tmp_path / "f.privspec"
    spec.write_text(FINITE)
    raw = tmp_path / "raw.csv"
    raw_frame(3000).to_csv(raw, index=False)
    return {"spec": spec, "raw": raw, "dir": tmp_path}


def test_cli_pieces_with_offset_make_the_whole_file(files: dict) -> None:
    d, spec = files["dir"], files["spec"]
    raw = pd.read_csv(files["raw"], dtype=str)
    raw.iloc[:1234].to_csv(d / "p1.csv", index=False)
    raw.iloc[1234:].to_csv(d / "p2.csv", index=False)
    for src, dst, offset in ((files["raw"], "whole.csv", "0"), (d / "p1.csv", "o1.csv", "0"),
                             (d / "p2.csv", "o2.csv", "1234")):
        code, _, err = cli("privatize", spec, "--mechanism", "uni", "--input", src, "--output", d / dst,
                           "--seed", "77", "--offset", offset)
        assert code == 0, err
    whole = (d / "whole.csv").read_text().splitlines()
    pieces = (d / "o1.csv").read_text().splitlines() + (d / "o2.csv").read_text().splitlines()[1:]
    assert whole == pieces


def test_existing_output_needs_force(files: dict) -> None:
    out = files["dir"] / "out.csv"
    out.write_text("precious\n")
    argv = ["privatize", files["spec"], "--mechanism", "k", "--input", files["raw"], "--output", out, "--seed", "1"]
    code, _, err = cli(*argv)
    assert code == 1 and "D007" in err and "--force" in err and out.read_text() == "precious\n"
    code, _, err = cli(*argv, "--force")
    assert code == 0, err
    assert len(pd.read_csv(out)) == 3000


def test_bad_output_paths_exit_1_before_any_work(files: dict, monkeypatch) -> None:
    base = ["privatize", files["spec"], "--mechanism", "k", "--input", files["raw"], "--output"]
    d = files["dir"]
    for target, words in ((d / "no" / "such" / "out.csv", "does not exist"), (d, "is a folder")):
        code, out, err = cli(*base, target)
        assert code == 1 and "D007" in err and words in err and "internal error" not in err, err
    # Parquet without pyarrow: refused up front (pyarrow is a dependency; a broken install still gets a message)
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("No module named 'pyarrow'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    code, _, err = cli(*base, d / "out.parquet")
    assert code == 1 and "D007" in err and "pyarrow" in err and not (d / "out.parquet").exists()
    assert sorted(p.name for p in d.iterdir()) == ["f.privspec", "raw.csv"]


def test_missing_column_and_combined_parts(files: dict) -> None:
    d, spec = files["dir"], files["spec"]
    (d / "nocol.csv").write_text("id,x\n1,a\n")
    code, _, err = cli("privatize", spec, "--mechanism", "k", "--input", d / "nocol.csv", "--output", d / "o.csv")
    assert code == 1 and "D003" in err and f"{d / 'nocol.csv'} (column c)" in err and not (d / "o.csv").exists()
    # a named combined variable read from its part columns (as run reads them)
    code, _, err = cli("privatize", spec, "--mechanism", "comb", "--input", files["raw"], "--output", d / "gi.csv",
                       "--seed", "3")
    assert code == 0, err
    out = pd.read_csv(d / "gi.csv", dtype=str)
    assert "gi" in out.columns and "g" not in out.columns and out["gi"].str.contains(".", regex=False).all()
    (d / "q.privspec").write_text(FINITE + "query w = estimate distribution(gi) from comb by mom\n")
    code, res, err = cli("run", d / "q.privspec", "--data", f"comb={d / 'gi.csv'}", "--format", "json")
    assert code == 0, err


def test_parquet_round_trip(files: dict) -> None:
    pytest.importorskip("pyarrow")
    d = files["dir"]
    code, _, err = cli("privatize", files["spec"], "--mechanism", "uni", "--input", files["raw"],
                       "--output", d / "o.parquet", "--seed", "2")
    assert code == 0, err
    (d / "q.privspec").write_text(FINITE + "query w = estimate distribution(c) from uni by mom\n")
    code, out, err = cli("run", d / "q.privspec", "--data", f"uni={d / 'o.parquet'}", "--format", "json")
    assert code == 0, err


class _Stray(Exception):
    """The test's own SIGTERM handler fired: privspec did not install one."""


def _stray(signum, frame):
    raise _Stray


def test_sigterm_during_the_write_removes_the_temporary_file(tmp_path: Path, monkeypatch) -> None:
    """A SIGTERM while the table is written: the temporary file is removed, nothing is left
    at the target, and the command exits 143 (the test's own handler guards the test
    process should privspec install none)."""
    frame = pd.DataFrame({"x": range(10)})
    target = tmp_path / "out.csv"

    def killed(self, path, *args, **kwargs):
        Path(path).write_text("partial")
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("the signal should have interrupted the write")

    previous = signal.signal(signal.SIGTERM, _stray)
    try:
        monkeypatch.setattr(pd.DataFrame, "to_csv", killed)
        with pytest.raises(Interrupted) as e:
            write_table_atomic(frame, target)
        assert e.value.signum == signal.SIGTERM and list(tmp_path.iterdir()) == []
        assert signal.getsignal(signal.SIGTERM) is _stray       # the handler before is put back
        spec = tmp_path / "f.privspec"
        spec.write_text(FINITE)
        (tmp_path / "raw.csv").write_text("c\na\nb\n")
        code, _, err = cli("privatize", spec, "--mechanism", "k", "--input", tmp_path / "raw.csv", "--output", target)
        assert code == 143 and "SIGTERM" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["f.privspec", "raw.csv"]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_release_noise_stays_per_table(tmp_path: Path) -> None:
    code, _, err = cli("privatize", SPECS / "university.privspec", "--mechanism", "income_by_degree",
                       "--input", SPECS / "data" / "university.csv", "--output", tmp_path / "r.csv",
                       "--offset", "10")
    assert code == 2 and "--offset" in err and not (tmp_path / "r.csv").exists()


def test_uniform_design_beyond_64_bit_masks(tmp_path: Path) -> None:
    """The uniform design on 70 categories (more than a 64-bit mask holds) privatizes and
    is estimated: reports hold the answer, sizes 2..p-2, row by row as for small p, and
    the MoM estimate of a 50% category lands within 5 standard errors (issue 14: exit 3)."""
    p, n = 70, 20_000
    labels = [f"c{i}" for i in range(p)]
    spec = tmp_path / "u.privspec"
    spec.write_text(f"variable x: categorical {{{', '.join(labels)}}}\nmechanism m = subset(x, uniform)\n"
                    "query w = estimate distribution(x) from m by mom\n")
    rng = np.random.default_rng(4)
    x = np.where(rng.random(n) < 0.5, 0, rng.integers(1, p, n))
    pd.DataFrame({"x": np.asarray(labels, dtype=object)[x]}).to_csv(tmp_path / "raw.csv", index=False)
    code, _, err = cli("privatize", spec, "--mechanism", "m", "--input", tmp_path / "raw.csv",
                       "--output", tmp_path / "out.csv", "--seed", "9")
    assert code == 0, err
    reports = pd.read_csv(tmp_path / "out.csv", dtype=str)["x"].str.split("|")
    sizes = reports.map(len)
    assert ((sizes >= 2) & (sizes <= p - 2)).all()
    assert all(labels[v] in r for v, r in zip(x, reports))
    # each other category is in a report with probability about 1/2 (the design is uniform)
    share = np.mean([labels[1] in r for r in reports])
    assert abs(share - 0.5) < 5 * np.sqrt(0.25 / n)
    # a row's report is its own: privatizing the first 100 rows alone gives the same reports
    pd.read_csv(tmp_path / "raw.csv").head(100).to_csv(tmp_path / "head.csv", index=False)
    code, _, err = cli("privatize", spec, "--mechanism", "m", "--input", tmp_path / "head.csv",
                       "--output", tmp_path / "head_out.csv", "--seed", "9")
    assert code == 0, err
    head = pd.read_csv(tmp_path / "head_out.csv", dtype=str)["x"]
    assert (head.to_numpy() == pd.read_csv(tmp_path / "out.csv", dtype=str)["x"].head(100).to_numpy()).all()
    code, out, err = cli("run", spec, "--data", tmp_path / "out.csv", "--format", "json")
    assert code == 0, err
    import json

    w = json.loads(out)["queries"]["w"]["value"]
    # Q = (1 - c2) I + c2 J with c2 -> 1/2: the MoM sd of a 50% category is about sqrt(1/n)
    assert abs(w["c0"] - 0.5) < 5 * np.sqrt(1 / n)


def test_grr_closed_form_sampler_is_the_channels_inverse_cdf() -> None:
    """GRR's one-pass sampler maps each uniform to the report the generic inverse CDF of
    the channel's column gives (the fast path changes no report)."""
    import sympy

    from privspec.backends.core.grr_channel import grr_channel
    from privspec.backends.finite.data import _sample_from_columns, _sample_grr

    for d, eps in ((2, 1.0), (5, 1.0), (7, 0.1), (16, 4.0), (3, 30.0)):
        ch = grr_channel(tuple(f"c{i}" for i in range(d)), sympy.Float(eps))
        gen = np.random.default_rng(d)
        x, u = gen.integers(0, d, 200_000), gen.random(200_000)
        u[:d] = np.cumsum(np.asarray(ch.Kn[:, 0], dtype=float))[:d] * 0.999999  # near block ends

        class Fixed:
            def random(self, n: int) -> np.ndarray:
                return u

        assert np.array_equal(_sample_grr(ch, x, u), _sample_from_columns(Fixed(), ch.Kn, x))


# ---- a privatized file holds the reports only (issue 33) -------------------------------------------------
TITANIC = ROOT / "tests" / "data" / "titanic.csv"
TITANIC_SPEC = 'variable Class: categorical {"1st", "2nd", "3rd", Crew}\nmechanism cls_subset = subset(Class, uniform)\n'


def titanic_people() -> pd.DataFrame:
    """The Titanic table (R's datasets::Titanic) as one row per person, with an id."""
    cells = pd.read_csv(TITANIC, comment="#", dtype=str)
    people = cells.loc[cells.index.repeat(cells["Freq"].astype(int))].drop(columns="Freq").reset_index(drop=True)
    people.insert(0, "id", [str(i) for i in range(1, len(people) + 1)])
    return people


def test_a_privatized_file_holds_the_reports_only(tmp_path: Path) -> None:
    """Privatizing Class of the Titanic file wrote the raw Sex, Age and Survived beside the
    reports (cls_subset.csv); now only the reports, and raw columns only when named."""
    people = titanic_people()
    assert len(people) == 2201 and people.columns.tolist() == ["id", "Class", "Sex", "Age", "Survived"]
    spec = tmp_path / "titanic.privspec"
    spec.write_text(TITANIC_SPEC)
    raw = tmp_path / "titanic_raw.csv"
    people.to_csv(raw, index=False)
    out = tmp_path / "cls_subset.csv"
    code, _, err = cli("privatize", spec, "--mechanism", "cls_subset", "--input", raw, "--output", out, "--seed", 1)
    assert code == 0, err
    got = pd.read_csv(out, dtype=str)
    assert got.columns.tolist() == ["Class"] and len(got) == 2201
    assert "wrote 2201 rows" in err and "reports only: no raw column kept" in err
    assert all(x in s.split("|") for s, x in zip(got["Class"], people["Class"]))   # a subset holding the truth
    # raw columns only when named, in the input's order, before the reports; the reports the same
    kept = tmp_path / "kept.csv"
    code, _, err = cli("privatize", spec, "--mechanism", "cls_subset", "--input", raw, "--output", kept, "--seed", 1,
                       "--keep", "Survived", "--keep", "id")
    assert code == 0, err
    assert "raw columns kept, as asked: Survived, id" in err
    both = pd.read_csv(kept, dtype=str)
    assert both.columns.tolist() == ["id", "Survived", "Class"]
    assert both["Class"].equals(got["Class"]) and both[["id", "Survived"]].equals(people[["id", "Survived"]])
    # the Python API: the same reports, the frame's index
    api = privspec.load(TITANIC_SPEC).privatize(people.set_index(people.index + 10), "cls_subset", seed=1)
    assert api.columns.tolist() == ["Class"] and api.index[0] == 10
    assert api["Class"].astype(str).tolist() == got["Class"].tolist()


def test_every_family_writes_its_report_columns_only(tmp_path: Path) -> None:
    """Finite (a product too), frequency oracle, interval mechanism: no input column left over."""
    spec = privspec.load(FINITE + "variable y: continuous\nmechanism iv = interval(y, case2(normal(0, 2)))\n"
                                  "mechanism o = oue(c, epsilon = 1)\n")
    raw = raw_frame(300).assign(y=lambda f: np.linspace(-3, 3, len(f)).astype(str), secret="s")
    for mech, columns in (("uni", ["c"]), ("prod", ["c", "gi"]), ("comb", ["gi"]), ("iv", ["y"]), ("o", ["c"]),
                          ("floor", ["c"])):
        out = spec.privatize(raw, mech, seed=1)
        assert out.columns.tolist() == columns, mech
        if mech != "floor":     # dummy respondents add rows
            assert out.index.equals(raw.index), mech


def test_keep_names_input_columns_the_mechanism_does_not_read(files: dict) -> None:
    spec = privspec.load(FINITE)
    raw = raw_frame(50)
    with pytest.raises(DataError) as e:
        spec.privatize(raw, "k", keep=["nope", "id"])
    assert e.value.code == "D040" and "'nope'" in str(e.value) and e.value.diagnostics[0].columns == ("nope",)
    joined = raw.assign(gi=raw["g"] + "." + raw["i"])     # a combined variable's own column
    for mech, column in (("k", "c"), ("comb", "g"), ("comb", "gi"), ("prod", "i")):
        with pytest.raises(DataError) as e:
            spec.privatize(joined, mech, keep=[column])
        assert e.value.code == "D041" and f"'{column}'" in str(e.value), (mech, column)
    assert spec.privatize(raw, "comb", seed=1, keep="c").columns.tolist() == ["c", "gi"]
    with pytest.raises(ValueError, match="dummy respondents"):
        spec.privatize(raw, "floor", keep=["id"])
    # the command: exit 1 (a data error) or 2 (an option that does not fit), nothing written
    d = files["dir"]
    base = ["privatize", files["spec"], "--input", files["raw"], "--output", d / "o.csv"]
    for extra, status, words in ((["--mechanism", "k", "--keep", "id,nope"], 1, "D040"),
                                 (["--mechanism", "k", "--keep", "id", "--keep", "c"], 1, "D041"),
                                 (["--mechanism", "floor", "--keep", "id"], 2, "dummy respondents")):
        code, _, err = cli(*base, *extra)
        assert code == status and words in err and not (d / "o.csv").exists(), (extra, err)
    code, _, err = cli("privatize", SPECS / "university.privspec", "--mechanism", "income_by_degree",
                       "--input", SPECS / "data" / "university.csv", "--output", d / "r.csv", "--keep", "id")
    assert code == 2 and "count table" in err and not (d / "r.csv").exists()


def test_a_kept_column_never_takes_a_report_columns_name() -> None:
    """smp writes a column 'sampled' beside the attributes: a raw one of that name is refused."""
    spec = privspec.load("variable a: categorical {x, y}\nvariable b: categorical {u, v}\n"
                         "mechanism m = smp(grr(a), grr(b), epsilon = 1)\n")
    raw = pd.DataFrame({"a": ["x", "y"] * 5, "b": ["u"] * 10, "sampled": ["raw"] * 10})
    assert spec.privatize(raw, "m", seed=1).columns.tolist() == ["a", "b", "sampled"]
    with pytest.raises(DataError) as e:
        spec.privatize(raw, "m", seed=1, keep=["sampled"])
    assert e.value.code == "D041"


# ---- the spreadsheet guard ------------------------------------------------------------------------------
FORMULAS = """
variable c: categorical {"=HYPERLINK('http://x')", "+cmd' /C calc'!A0", "-2+3", "@SUM(1)", plain}
population c ~ categorical(1/5, 1/5, 1/5, 1/5, 1/5)
mechanism k = grr(c, epsilon = 2)
mechanism s = subset(c, uniform)
query w = estimate distribution(c) from k by mom
query ws = estimate distribution(c) from s by mom
"""


def test_formula_labels_are_guarded_on_request_and_read_back_the_same(tmp_path: Path) -> None:
    """Labels that a spreadsheet runs as formulas go to CSV as they are by default; with
    --csv-guard a single quote goes before each, and run reads the guarded file to the
    same estimates, with every engine."""
    spec_path = tmp_path / "f.privspec"
    spec_path.write_text(FORMULAS)
    spec = privspec.load(spec_path)
    labels = spec.model.variables["c"].labels
    rng = np.random.default_rng(3)
    raw = pd.DataFrame({"id": [f"=1+{i}" if i % 7 == 0 else str(i) for i in range(2000)],
                        "c": np.asarray(labels, dtype=object)[rng.integers(0, 5, 2000)]})
    raw_path = tmp_path / "raw.csv"
    raw.to_csv(raw_path, index=False)
    for mech, query in (("k", "w"), ("s", "ws")):
        plain, guarded = tmp_path / f"{mech}_plain.csv", tmp_path / f"{mech}_guarded.csv"
        argv = ["privatize", spec_path, "--mechanism", mech, "--input", raw_path, "--seed", "5", "--keep", "id"]
        assert cli(*argv, "--output", plain)[0] == 0
        code, _, err = cli(*argv, "--output", guarded, "--csv-guard")
        assert code == 0 and "guarded for spreadsheets" in err, err
        cells = [c for line in guarded.read_text().splitlines()[1:] for c in line.split(",")]
        assert cells and all(not c.startswith(("=", "+", "-", "@")) for c in cells)
        text = guarded.read_text()
        if mech == "k":
            assert "'=HYPERLINK" not in plain.read_text() and "'=HYPERLINK" in text and "'@SUM(1)" in text
            assert "'-2+3" in text and "'=1+7" in text
        base = [json.dumps(spec.run(str(plain), [query], engine=e).to_dict(), sort_keys=True)
                for e in ("pandas", "duckdb")]
        back = [json.dumps(spec.run(str(guarded), [query], engine=e).to_dict(), sort_keys=True)
                for e in ("pandas", "duckdb")]
        assert len(set(base)) == 1 and [b.replace("_guarded", "_plain") for b in back] == base
    # the API: the frame guarded, its CSV read back to the same reports
    frame = spec.privatize(raw, "k", seed=5, keep=["id"], csv_guard=True)
    assert frame["id"].iloc[0] == "'=1+0" and frame["c"].astype(str).str.startswith("'").any()
    frame.to_csv(tmp_path / "api.csv", index=False)
    from privspec.backends.data.files import read_table

    back = read_table(tmp_path / "api.csv")
    assert back["id"].tolist() == raw["id"].tolist()
    assert back["c"].tolist() == spec.privatize(raw, "k", seed=5)["c"].astype(str).tolist()
    # Parquet is no spreadsheet: a usage error
    code, _, err = cli("privatize", spec_path, "--mechanism", "k", "--input", raw_path, "--output",
                       tmp_path / "o.parquet", "--csv-guard")
    assert code == 2 and "--csv-guard" in err and not (tmp_path / "o.parquet").exists()


def test_guard_is_one_to_one_and_undone_by_every_reader(tmp_path: Path) -> None:
    """Every formula start (OWASP: = + - @ tab CR) quoted, a plain number not, a value that
    looks guarded already quoted once more; pandas and DuckDB read each cell back, a
    carriage return inside a cell included (the writer quotes it)."""
    from privspec.backends.data.csv_cells import guard_cells, unguard_text
    from privspec.backends.data.files import read_table
    from privspec.backends.data.writing import write_table_atomic
    from privspec.backends.data.engines import engine_for

    cells = ["=A1", "+1+1", "-2.5", "-1-1", "@x", "\tt", "\rr", "'=q", "''+q", "'", "a'b", "-", "-inf", "", "plain"]
    frame = pd.DataFrame({"=name": cells, "n": range(len(cells))})
    guarded = guard_cells(frame)
    assert guarded.columns.tolist() == ["'=name", "n"]
    assert guarded["'=name"].tolist() == ["'=A1", "'+1+1", "-2.5", "'-1-1", "'@x", "'\tt", "'\rr", "''=q", "'''+q",
                                          "'", "a'b", "'-", "'-inf", "", "plain"]
    assert [unguard_text(g) for g in guarded["'=name"]] == cells
    path = tmp_path / "g.csv"
    write_table_atomic(guarded, path)
    assert len(read_table(path)) == len(cells) and read_table(path)["=name"].tolist() == cells
    for engine in ("pandas", "duckdb"):
        e = engine_for(str(path), engine)
        assert e.columns() == ["=name", "n"]
        assert next(iter(e.chunks(100)))["=name"].tolist() == cells, engine
        assert sorted(e.tally(["=name"]).values["=name"]) == sorted(cells), engine
