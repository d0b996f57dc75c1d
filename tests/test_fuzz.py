"""Fuzzing the front end: every input gets an answer or a clear error, fast.

Seeded mutants of the bundled specs (token deletions, duplications, swaps, names
swapped, numbers replaced by extreme values) and a targeted arithmetic generator
(random expression trees over ``+ - * / ^ log exp sqrt`` with extreme literals, put in
every numeric slot of the language) go through ``privspec check``; a subset also
through ``privspec analyze``.  Each must exit 0 or 1 -- never 3, the internal error --
and finish within :data:`CASE_SECONDS`.

The generators live here; ``bench/fuzz.py`` runs them at a larger scale.
"""
from __future__ import annotations

import io
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

import privspec
from privspec.cli import main
from tests.conftest import TooSlow, deadline

SPECS = sorted((Path(__file__).resolve().parents[1] / "specs").glob("*.privspec"))
#: the longest any one case may take (check or analyze), in seconds
CASE_SECONDS = 5.0

# ---- extreme values ------------------------------------------------------------------------------
#: literals that have broken arithmetic, printing or a back end before
EXTREMES = (
    "1e2999", "-1e2999", "1e-2999", "-0", "0", "0.0", "1", "-1", "2", "1/3", "inf", "-inf", "pi",
    "(-1)^pi", "(-1)^(1/2)", "pi^(1e2999)", "100^(1e9/3)", "(1e2999*7^(1/3))^10",
    "sqrt((-(1e2999))^(log(1e-9)))", "exp(sqrt((pi-339565)^exp(1e-300)))", "1/0", "0/0", "inf - inf",
    "0 * inf", "1^inf", "10^4000", "exp(9000)", "exp(-9000)", "exp(10000)", "log(0)", "log(-1)", "sqrt(-1)",
    "2^-1074", "1e308", "1e309", "99999999999999999999", "0.999999999999999999999", "1e-300",
    "log(8) - 3*log(2)", "pi - 314159265358979/100000000000000", "nan", "NaN", "1e", "1.5e", ".5", "5.",
    "1e99999", "-(-(-1))", "((((((1))))))", "2^2^2^2^2", "7^(1/3)", "(-8)^(1/3)", "1000000", "1e6", "65",
    "100000", "1e1000", "3/2", "-1/2", "1/2", "sqrt(exp(339565^(1e-300)))", "2^(1e-40) - 1",
)
_FUNCS = ("log", "exp", "sqrt")
_OPS = ("+", "-", "*", "/", "^")
_LEAVES = ("0", "1", "2", "3", "10", "1/2", "1/3", "0.25", "pi", "inf", "1e2999", "1e-2999", "1e300", "-1",
           "7", "339565", "1e9", "1e-9", "0.1", "99")


def expression(rng: random.Random, depth: int = 4) -> str:
    """A random arithmetic expression over the language's numbers.

    Examples
    --------
    >>> expression(random.Random(1))
    '1e2999 / 0'
    """
    r = rng.random()
    if depth <= 0 or r < 0.25:
        return rng.choice(_LEAVES if rng.random() < 0.8 else EXTREMES)
    if r < 0.45:
        return f"{rng.choice(_FUNCS)}({expression(rng, depth - 1)})"
    if r < 0.55:
        return f"-({expression(rng, depth - 1)})"
    op = rng.choice(_OPS)
    left, right = expression(rng, depth - 1), expression(rng, depth - 1)
    return f"({left}) {op} ({right})" if rng.random() < 0.5 else f"{left} {op} {right}"


# ---- mutants of the bundled specs ----------------------------------------------------------------------
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+|[A-Za-z_]\w*|\s+|.',
                    re.DOTALL)
_NUMBER = re.compile(r"\d|\.\d")
_NAME = re.compile(r"[A-Za-z_]")


def mutant(text: str, rng: random.Random) -> str:
    """``text`` with one to three random edits of its tokens."""
    tokens = _TOKEN.findall(text)
    for _ in range(rng.randint(1, 3)):
        solid = [i for i, t in enumerate(tokens) if not t.isspace() and not t.startswith("#")]
        if not solid:
            break
        i = rng.choice(solid)
        kind = rng.random()
        numbers = [j for j in solid if _NUMBER.match(tokens[j])]
        if kind < 0.35 and numbers:
            j = rng.choice(numbers)
            tokens[j] = rng.choice(EXTREMES) if rng.random() < 0.6 else expression(rng)
        elif kind < 0.5:
            del tokens[i]
        elif kind < 0.6:
            tokens.insert(i, tokens[i])
        elif kind < 0.7 and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif kind < 0.85:
            names = [t for t in tokens if _NAME.match(t)]
            tokens[i] = rng.choice(names) if names else tokens[i]
        else:
            tokens.insert(i, rng.choice(["(", ")", "{", "}", "[", "]", ",", "=", "~", ":", "*", "^", "-", "\n",
                                         "\r", '"', "#", "1e2999", "inf", "query", "by", "from"]))
    return "".join(tokens)


# ---- every numeric slot of the language ------------------------------------------------------------
_X = "variable x: categorical {a, b, c, d}\n"
_G = "variable g: categorical {F, M}\nvariable i: categorical {L, H}\n"
_S = "variable s: continuous [0, 10]\npopulation s ~ uniform(0, 10)\n"
_Y = "variable y: continuous\npopulation y ~ normal(0, 1)\n"
_POPX = "population x ~ categorical(1/10, 2/10, 3/10, 4/10)\n"
#: small specs with one slot ``{X}`` each, and queries that make ``analyze`` use the value
SLOTS = (
    _X + _POPX + "mechanism m = grr(x, epsilon = {X})\nquery l = leakage(m)\nquery e = epsilon(m)\n"
                 "query v = avar(distribution(x) from m by mom)\n",
    _X + "population x ~ categorical({X}, 1/4, 1/4, 1/4)\nmechanism m = subset(x, uniform)\nquery c = coverage(m)\n"
         "query v = avar(distribution(x) from m by mle)\n",
    _X + "population x ~ categorical(a = {X}, b = 1/2 - ({X}), c = 1/4, d = 1/4)\nmechanism m = grr(x, epsilon = 1)\n"
         "query l = leakage(m, prediction)\n",
    "parameter a > 0 = {X}\n" + _X + _POPX + "mechanism m = grr(x, epsilon = a)\nquery e = epsilon(m)\n"
                                         "query l = leakage(m)\n",
    "parameter a > {X}\n" + _X + "mechanism m = grr(x, epsilon = a)\nquery e = epsilon(m)\n",
    "parameter a > 0 < {X} = 1/2\n" + _X + _POPX + "mechanism m = grr(x, epsilon = a^2 + {X})\nquery e = epsilon(m)\n",
    "variable s: continuous [{X}, 10]\nmechanism c = interval(s, case1(uniform({X}, 10)))\nquery t = coverage(c)\n",
    _S + "mechanism c = interval(s, case1(uniform({X}, 10)))\nquery t = coverage(c)\n"
         "query g = optimal_anchor(mean(s), c)\n",
    _Y + "mechanism c = interval(y, case2(normal({X}, {X})))\nquery t = coverage(c)\n",
    _Y + "mechanism c = interval(y, case2(logistic(0, {X})))\nquery t = coverage(c)\n",
    _Y + "mechanism c = interval(y, case1(exponential({X}, shift = -5)))\nquery t = coverage(c)\n",
    _S + "mechanism c = interval(s, canonical({X}, uniform(0, 10)))\nquery t = coverage(c)\n",
    _Y + "mechanism c = interval(y, ring({X}, normal(0, 1)))\nquery t = coverage(c)\n",
    _S + "mechanism p = progressive(s, rounds = {X})\nquery t = coverage(p)\n",
    _S + "mechanism c = interval(s, case1(uniform(0, 10)), disclose [{X}, 5])\nquery t = coverage(c)\n",
    _S + "mechanism c = interval(s, case1(uniform(0, 10)))\nmechanism sel = selective(c, tau = {X}, rho = 1/2)\n"
         "query t = coverage(sel)\n",
    _G + "population (g, i) ~ counts [[{X}, 1], [2, 3]]\nvariable gi = g * i\n"
         "mechanism m = grr(gi, epsilon = 1)\nquery l = leakage(m)\n",
    _X + _POPX + "mechanism m = subset(x, sizes {2: {X}, 3: 1 - ({X})})\nquery c = coverage(m)\n",
    _X + _POPX + "mechanism m = subset(x, uniform, min_coverage = {X})\nquery c = coverage(m)\n",
    _X + _POPX + "mechanism m = subset(x, conditional { {a, b}: {X}, {c, d}: 1/2, {a, c}: 1/2, {b, d}: 1/2 })\n"
                 "query c = moments(m)\n",
    _G + "population g ~ categorical(1/3, 2/3)\nmechanism r = rr(g, matrix [[{X}, 1 - ({X})], [1/4, 3/4]])\n"
         "query l = leakage(r)\nquery f = fisher(r)\n",
    _G + "release A = counts(g, i) with geometric(epsilon = {X})\nquery v = variance(A)\n",
    _G + "mechanism m = product(grr(g, epsilon = 1), grr(i, epsilon = {X}))\nquery b = bounds(m, n = {X})\n"
         "query e = epsilon(m)\n",
    _X + "compare d for distribution(x) at n = {X} {\n  a = grr(x, epsilon = 1)\n  b = grr(x, epsilon = {X})\n}"
         " by avar_trace, prediction\n",
    "variable score: continuous\nmechanism c2 = interval(score, case2(logistic(0, 5)))\n"
    "query m2 = estimate moment(score, {X}) from c2 by npmle\n",
    "variable r: categorical {r1, r2, r3, r4, r5}\n" + _G + "variable gi = g * i\n"
    "mechanism prod = product(subset(r, uniform), subset(gi, uniform))\n"
    "query t = test independence(r, gi) from prod by lrt calibrate permutation({X})\n",
    _G + "mechanism m = product(grr(g, epsilon = 1), grr(i, epsilon = 1))\n"
         "query j = estimate joint(g, i) from m by clusters(v = {X})\n",
)


@dataclass(frozen=True)
class Case:
    """One fuzz case: a spec text and whether to analyze it too."""

    text: str
    analyze: bool


#: bundled specs whose analysis takes well under a second (the others take over one)
QUICK = ("castell_example", "gender_income", "interval_privacy", "interval_table2", "releases", "university", "urn")


def cases(seed: int, mutants: int, slots: int, analyzed: int, analyzed_mutants: int = 0) -> Iterator[Case]:
    """``mutants`` mutants of the bundled specs (the first ``analyzed_mutants`` of the
    :data:`QUICK` ones also analyzed), then ``slots`` slot fillings (the first ``analyzed``
    also analyzed)."""
    rng = random.Random(seed)
    texts = [(p.stem, p.read_text(encoding="utf-8")) for p in SPECS]
    quick = 0
    for _ in range(mutants):
        name, text = rng.choice(texts)
        analyze = name in QUICK and quick < analyzed_mutants
        quick += analyze
        yield Case(mutant(text, rng), analyze)
    for k in range(slots):
        template = SLOTS[k % len(SLOTS)]
        value = rng.choice(EXTREMES) if rng.random() < 0.4 else expression(rng)
        yield Case(template.replace("{X}", value), k < analyzed)


# ---- running a case ---------------------------------------------------------------------------------
def run_case(case: Case, path: Path, seconds: float = CASE_SECONDS) -> list[str]:
    """Problems with one case: an exit status other than 0 or 1, or more than ``seconds``."""
    problems = []
    path.write_text(case.text, encoding="utf-8")
    verbs = ["check"] + (["analyze"] if case.analyze else [])
    for verb in verbs:
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        try:
            with deadline(seconds):
                code = main([verb, str(path)], stdout=out, stderr=err)
        except TooSlow:
            problems.append(f"{verb}: over {seconds} s")
            continue
        took = time.perf_counter() - start
        if code not in (0, 1):
            lines = err.getvalue().strip().splitlines()
            where = [x.strip() for x in lines if x.strip().startswith('File "')][-2:]  # with PRIVSPEC_DEBUG=1
            problems.append(f"{verb}: exit {code}: {' / '.join(lines[-2:-1] + where)}")
        elif took > seconds:
            problems.append(f"{verb}: {took:.1f} s")
        if code != 0:
            break  # analyze of an invalid spec says only what check said
    return problems


# ---- the tests ----------------------------------------------------------------------------------------
SEED = 14
MUTANTS = 2500
SLOT_CASES = 1500
ANALYZED = 150
ANALYZED_MUTANTS = 40


# the full fuzz is slow; a small sample of the same generators runs by default
@pytest.mark.parametrize("mutants, slot_cases, analyzed, analyzed_mutants", [
    pytest.param(MUTANTS, SLOT_CASES, ANALYZED, ANALYZED_MUTANTS, id="full", marks=pytest.mark.slow),
    pytest.param(100, 60, 6, 2, id="sample")])
def test_fuzz_never_an_internal_error_never_slow(mutants: int, slot_cases: int, analyzed: int, analyzed_mutants: int,
                                                 tmp_path: Path) -> None:
    """A few thousand seeded cases (160 in the sample): exit 0 or 1, each within CASE_SECONDS."""
    path = tmp_path / "fuzz.privspec"
    failures = []
    for n, case in enumerate(cases(SEED, mutants, slot_cases, analyzed, analyzed_mutants)):
        for problem in run_case(case, path):
            failures.append(f"case {n}: {problem}\n{case.text[:400]}")
    assert not failures, f"{len(failures)} failing cases; the first:\n" + "\n\n".join(failures[:3])


def test_every_slot_accepts_a_plain_value() -> None:
    """The slot specs are valid with a plain value in the slot (so the fuzz reaches the back ends)."""
    bad = []
    for template in SLOTS:
        for value in ("2", "1/2", "1/4", "0", "3", "99"):
            spec = privspec.load(template.replace("{X}", value))
            if spec.ok:
                break
        else:
            bad.append(template + spec.render_diagnostics())
    assert not bad, "\n\n".join(bad)


@pytest.mark.parametrize("value", ["(-1)^pi", "pi^(1e2999)", "100^(1e9/3)", "(1e2999*7^(1/3))^10",
                                   "sqrt((-(1e2999))^(log(1e-9)))", "exp(sqrt((pi-339565)^exp(1e-300)))"])
def test_issue_arithmetic_in_every_slot(value: str, tmp_path: Path) -> None:
    """The arithmetic of issue 14 in every numeric slot: a clear error, at once."""
    for template in SLOTS:
        assert run_case(Case(template.replace("{X}", value), False), tmp_path / "s.privspec", 2.0) == []


LABEL_SETS = ['variable x: categorical {a, b,}', 'variable x: categorical {}', 'variable x: categorical {variable, query}',
              'variable x: categorical {"a\\"b", "c\\\\d"}', 'variable x: categorical {pi, inf}',
              'variable x: categorical {a,\n b}', 'variable x: categorical {,}', 'variable x: categorical {a b}',
              'variable x: categorical {a,,b}', 'variable x: categorical {"", b}', 'variable x: categorical {a, b} extra',
              'variable spec: categorical {a, b}', 'variable x: categorical {"a", a}',
              'variable x: categorical {a, b # comment\n, c}', 'variable x: categorical {a.b, c}']


@pytest.mark.parametrize("text", LABEL_SETS)
def test_label_set_fast_path_agrees_with_the_grammar(text: str, monkeypatch) -> None:
    """Label sets skip Lark (125,000 labels in under a second); what they mean and every
    diagnostic's code and span are the grammar's."""
    from privspec.language import parser

    def outcome():
        spec = privspec.load(text)
        labels = spec.model.variables["x"].labels if spec.ok and "x" in spec.model.variables else ()
        return [(d.code, d.span) for d in spec.diagnostics], list(labels)

    fast = outcome()
    monkeypatch.setattr(parser, "_label_set_declaration", lambda chunk, offset: None)
    assert fast == outcome()


def test_a_lone_carriage_return_ends_a_line_from_a_file_or_a_string(tmp_path: Path) -> None:
    """One reading of line ends: \\r, \\r\\n and \\n, whether the spec is a file or a string."""
    text = "variable x: categorical {a, b}\rmechanism m = grr(x, epsilon = 1)\r\nquery c = coverage(m)\r"
    path = tmp_path / "cr.privspec"
    path.write_bytes(text.encode())
    from_string = [(d.code, d.span, d.render(privspec.load(text).source)) for d in privspec.load(text).diagnostics]
    loaded = privspec.load(path)
    from_file = [(d.code, d.span, d.render(loaded.source).replace(str(path), "<string>")) for d in loaded.diagnostics]
    assert from_string == from_file and [c for c, _, _ in from_string] == ["E501"]
    assert from_string[0][2].splitlines()[0].endswith(":3:11: error[E501]: size coverage needs set-valued "
                                                      "reports (subset or interval mechanisms)")


def test_check_counts_in_words(tmp_path: Path) -> None:
    path = tmp_path / "one.privspec"
    path.write_text("variable x: categorical {a, b}\nmechanism m = grr(x, epsilon = 1)\nquery c = leakage(m)\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", str(path)], stdout=out, stderr=err) == 0
    assert "(1 variable, 1 mechanism, 1 query)" in out.getvalue() + err.getvalue()


@pytest.mark.parametrize("labels", [125_000, pytest.param(5_000_000, marks=pytest.mark.slow)])
def test_huge_label_sets_load_or_are_refused_at_once(labels: int, tmp_path: Path) -> None:
    """125,000 labels load (the duplicate check was quadratic: 100 s); 5,000,000 labels on
    one line (74 MB) are refused (E701) without parsing them."""
    text = "variable x: categorical {" + ", ".join(f"label_{i}" for i in range(labels)) + "}\n"
    assert run_case(Case(text, False), tmp_path / "big.privspec", CASE_SECONDS) == []
    spec = privspec.load(text)
    if labels <= 1_000_000:
        assert spec.ok and spec.model.variables["x"].p == labels
    else:
        assert [d.code for d in spec.diagnostics] == ["E701"]


def test_the_back_ends_switch_at_the_limits_the_front_end_prices_with() -> None:
    """One definition of each switch (privspec.limits): the channel is exact up to
    EXACT_CELL_LIMIT cells, refuses results symbolic in w beyond SYMBOLIC_LIMIT
    categories, and a uniform design beyond UNIFORM_ENUM_LIMIT categories is never
    enumerated."""
    from privspec import limits
    from privspec.backends.core.channel import Channel
    from privspec.backends.core.compile import large_uniform

    def channel(cells: int) -> Channel:
        return Channel(("a", "b"), tuple(str(i) for i in range(cells // 2)))

    assert channel(limits.EXACT_CELL_LIMIT).exact_ok() and not channel(limits.EXACT_CELL_LIMIT + 2).exact_ok()
    assert Channel.symbolic_limit == limits.SYMBOLIC_LIMIT
    for p in (limits.UNIFORM_ENUM_LIMIT, limits.UNIFORM_ENUM_LIMIT + 1):
        labels = ", ".join(f"c{i}" for i in range(p))
        model = privspec.load(f"variable x: categorical {{{labels}}}\nmechanism u = subset(x, uniform)").model
        assert large_uniform(model.mechanisms["u"]) == (p > limits.UNIFORM_ENUM_LIMIT)


# ---- malformed data files x engines x verbs (issue 33) ----------------------------------------------------
# Every data file gets an answer or a clear error (exit 0 or 1, never 3), within CASE_SECONDS,
# and every engine the same one: the same exit status and the same error codes for the same
# file, for `run` and `privatize`.  A file is a few valid rows with one kind of damage.
import hypothesis.strategies as st  # noqa: E402
from hypothesis import given, settings  # noqa: E402

from privspec.backends.data import engines as _engines  # noqa: E402

FILE_ENGINES = ["pandas", "duckdb"] + (["spark"] if _engines.available("spark") else [])
FILE_SPEC = """
variable color: categorical {black, red, green, blue}
variable y: continuous [0, 10]
mechanism g = grr(color, epsilon = 1)
mechanism urn = subset(color, uniform)
mechanism iv = interval(y, case1(uniform(0, 10)))
query wg = estimate distribution(color) from g by mom
query w = estimate distribution(color) from urn by mom
query mu = estimate mean(y) from iv by unbiased
"""
#: what each case runs: ``run`` of a query from its mechanism's file, or ``privatize``
FILE_VERBS = [("run", "wg", "g"), ("run", "w", "urn"), ("run", "mu", "iv"), ("privatize", None, "g"),
              ("privatize", None, "iv")]
LABELS = ["black", "red", "green", "blue"]
DAMAGE = ["none", "header_only", "empty", "zero_rows_parquet", "nested_parquet", "duplicate_columns", "bad_utf8",
          "ragged", "unclosed_quote", "nul", "long_line", "wrong_types", "missing", "bom", "crlf", "lone_cr",
          "blank_lines", "stray_quotes", "one_column"]


class _Csv(bytes):
    """A CSV file's bytes, shown short in hypothesis' reports (a long line is 2.5 MB)."""

    def __repr__(self) -> str:
        return repr(bytes(self)) if len(self) <= 200 else repr(bytes(self[:200])) + f"... ({len(self):,} bytes)"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


@st.composite
def data_files(draw: st.DrawFn, damage: str | None = None) -> tuple[str, str, bytes | object]:
    """(damage, suffix, content): the content is CSV bytes, or an Arrow table for Parquet;
    ``damage`` one of :data:`DAMAGE` (by default drawn)."""
    import pyarrow as pa

    damage = draw(st.sampled_from(DAMAGE)) if damage is None else damage
    n = draw(st.integers(1, 6))
    colors = draw(st.lists(st.sampled_from(LABELS), min_size=n, max_size=n))
    ys = [repr(float(v)) for v in draw(st.lists(st.integers(0, 10), min_size=n, max_size=n))]
    at = draw(st.integers(0, n - 1))           # the damaged row
    rows = [f"{c},{y}" for c, y in zip(colors, ys)]

    def csv(lines: list[str], header: str = "color,y", end: str = "\n") -> bytes:
        return _Csv((end.join([header, *lines]) + end).encode("utf-8"))

    if damage == "none":
        return damage, ".csv", csv(rows)
    if damage == "header_only":
        return damage, ".csv", csv([])
    if damage == "empty":
        return damage, ".csv", b""
    if damage == "zero_rows_parquet":
        return damage, ".parquet", pa.table({"color": pa.array([], pa.string()), "y": pa.array([], pa.float64())})
    if damage == "nested_parquet":
        kind = draw(st.sampled_from(["list", "struct", "map"]))
        column = draw(st.sampled_from(["color", "y"]))
        nested = {"list": pa.array([[c] for c in colors]), "struct": pa.array([{"v": c} for c in colors]),
                  "map": pa.array([[(c, 1)] for c in colors], type=pa.map_(pa.string(), pa.int64()))}[kind]
        table = {"color": pa.array(colors), "y": pa.array([float(y) for y in ys])}
        table[column] = nested
        return damage, ".parquet", pa.table(table)
    if damage == "duplicate_columns":
        if draw(st.booleans()):
            return damage, ".csv", csv([f"{r},{c}" for r, c in zip(rows, reversed(colors))], "color,y,color")
        return damage, ".parquet", pa.Table.from_arrays([pa.array(colors), pa.array(ys), pa.array(colors[::-1])],
                                                        names=["color", "y", "color"])
    if damage == "bad_utf8":
        data = csv(rows)
        bad = draw(st.sampled_from([b"\xff", b"caf\xe9", b"\xc3"]))
        cut = data.index(rows[at].encode()) + draw(st.integers(0, len(rows[at])))
        return damage, ".csv", _Csv(data[:cut] + bad + data[cut:])
    if damage == "ragged":
        rows[at] = draw(st.sampled_from([rows[at] + ",extra", colors[at], rows[at] + ",,"]))
        return damage, ".csv", csv(rows)
    if damage == "unclosed_quote":
        rows[at] = '"' + rows[at]
        return damage, ".csv", csv(rows)
    if damage == "nul":
        rows[at] = draw(st.sampled_from(["\x00", f"{colors[at]}\x00,{ys[at]}", f"{colors[at]},\x00{ys[at]}"]))
        return damage, ".csv", csv(rows)
    if damage == "long_line":       # over DuckDB's 2 MB line limit: a padded label, or no label
        long = draw(st.sampled_from([colors[at] + " " * 2_500_000, "x" * 2_500_000]))
        rows[at] = f"{long},{ys[at]}"
        return damage, ".csv", csv(rows)
    if damage == "wrong_types":
        if draw(st.booleans()):
            rows[at] = draw(st.sampled_from([f"7,{ys[at]}", f"{colors[at]},ten", f"{colors[at]},1e999", "true,nan"]))
            return damage, ".csv", csv(rows)
        kind = draw(st.sampled_from(["int_color", "bool_color", "text_y", "float_color"]))
        table = {"color": pa.array(colors), "y": pa.array([float(y) for y in ys])}
        if kind == "int_color":
            table["color"] = pa.array(list(range(n)))
        elif kind == "bool_color":
            table["color"] = pa.array([bool(i % 2) for i in range(n)])
        elif kind == "float_color":
            table["color"] = pa.array([float("nan")] + [1.5] * (n - 1))
        else:
            table["y"] = pa.array(ys[:-1] + ["ten"])
        return damage, ".parquet", pa.table(table)
    if damage == "missing":
        rows[at] = draw(st.sampled_from([f",{ys[at]}", f"{colors[at]},", "NA,NA", ",", f"null,{ys[at]}"]))
        return damage, ".csv", csv(rows)
    if damage == "bom":
        return damage, ".csv", _Csv(b"\xef\xbb\xbf" + csv(rows))
    if damage == "crlf":
        return damage, ".csv", csv(rows, end="\r\n")
    if damage == "lone_cr":
        return damage, ".csv", csv(rows, end="\r")
    if damage == "blank_lines":
        rows.insert(at, draw(st.sampled_from(["", "   ", "\t", " \t "])))
        return damage, ".csv", csv(rows)
    if damage == "one_column":       # a line of spaces: no row for pandas, a row for DuckDB unless told
        lines = [*colors]
        lines.insert(at, draw(st.sampled_from(["", "   ", "\t", '"  "', '""'])))
        return damage, ".csv", csv(lines, "color")
    assert damage == "stray_quotes"
    rows[at] = draw(st.sampled_from([f'"{colors[at]}" x,{ys[at]}', f'{colors[at]}"5,{ys[at]}',
                                     f'"{colors[at]}",{ys[at]}', f'" {colors[at]}",{ys[at]}']))
    return damage, ".csv", csv(rows)


def _write_data(content: bytes | object, path: Path) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        import pyarrow.parquet as pq

        pq.write_table(content, path)


_ERROR_CODE = re.compile(r"(?:error|warning)\[([A-Z]\d{3})\]")


def run_file_case(spec: Path, data: Path, verb: tuple, out: Path, seconds: float = CASE_SECONDS) -> list[str]:
    """Problems with one file and one verb: an exit status other than 0 or 1, more than
    ``seconds`` on an engine, or engines that disagree on the exit status or the error codes."""
    command, query, mech = verb
    problems, seen = [], {}
    for engine in FILE_ENGINES:
        if command == "run":
            argv = ["run", str(spec), "--data", f"{mech}={data}", "--query", query, "--engine", engine]
        else:
            argv = ["privatize", str(spec), "--mechanism", mech, "--input", str(data), "--output", str(out),
                    "--seed", "1", "--force", "--engine", engine]
        stdout, stderr = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        try:
            with deadline(seconds):
                code = main(argv, stdout=stdout, stderr=stderr)
        except TooSlow:
            problems.append(f"{engine}: over {seconds} s")
            continue
        took = time.perf_counter() - start
        err = stderr.getvalue()
        if code not in (0, 1):
            problems.append(f"{engine}: exit {code}: {err.strip().splitlines()[-2:]}")
        elif took > seconds:
            problems.append(f"{engine}: {took:.1f} s")
        seen[engine] = (code, tuple(sorted(set(_ERROR_CODE.findall(err)))))
    if len(set(seen.values())) > 1:
        problems.append(f"engines disagree: {seen}")
    return problems


@pytest.fixture(scope="module")
def file_spec(tmp_path_factory) -> Path:
    """The spec, after one untimed pass of every verb and engine over a valid file (the
    first call of each pays its imports, seconds on a busy machine)."""
    folder = tmp_path_factory.mktemp("files")
    path = folder / "files.privspec"
    path.write_text(FILE_SPEC)
    data = folder / "warm.csv"
    data.write_text("color,y\nred,1.5\nblue,2\n")
    for verb in FILE_VERBS:
        run_file_case(path, data, verb, folder / "o.csv", seconds=600)
    return path


@pytest.mark.parametrize("damage", [d if d != "long_line" else pytest.param(d, marks=pytest.mark.slow) for d in DAMAGE])
def test_every_kind_of_damaged_file_gets_one_answer(damage: str, file_spec: Path, tmp_path: Path) -> None:
    """Each kind of damage once (the first file hypothesis draws of it), for every verb."""
    from hypothesis import find

    _, suffix, content = find(data_files(damage), lambda case: True, settings=settings(database=None))
    data = tmp_path / f"data{suffix}"
    _write_data(content, data)
    failures = [f"{verb}: {p}" for verb in FILE_VERBS for p in run_file_case(file_spec, data, verb, tmp_path / "o.csv")]
    assert not failures, f"{damage}:\n" + "\n".join(failures)


@given(case=data_files(), verb=st.sampled_from(FILE_VERBS))
@settings(max_examples=30, deadline=None, derandomize=True, database=None)
def test_fuzz_damaged_files_never_an_internal_error_and_every_engine_alike(case, verb, file_spec: Path,
                                                                          tmp_path_factory) -> None:
    damage, suffix, content = case
    folder = tmp_path_factory.mktemp("fuzz")
    data = folder / f"data{suffix}"
    _write_data(content, data)
    problems = run_file_case(file_spec, data, verb, folder / "o.csv")
    assert not problems, f"{damage} {verb}:\n" + "\n".join(problems)


# =====================================================================================================
# Parameters x queries (issue 33): every mechanism's numeric parameters at extreme values (0, tiny,
# huge, inf, nan, negative), crossed with every query kind that reads them, through analyze,
# simulate (tiny n and reps) and compare: each exits 0 or 1, within CASE_SECONDS.
# =====================================================================================================
#: the values put in each numeric parameter (the checker refuses most of 0, inf, nan and -1 at once)
PARAMETER_VALUES = ("0", "1e-300", "1e-9", "700", "1e300", "inf", "nan", "-1")
#: simulate's arguments: tiny data sets, two replications
SIMULATE_ARGS = ("--n", "3", "--reps", "2", "--seed", "1")

_X3 = "variable x: categorical {a, b, c}\npopulation x ~ categorical(1/6, 2/6, 3/6)\n"
_X4 = "variable x: categorical {a, b, c, d}\npopulation x ~ categorical(1/10, 2/10, 3/10, 4/10)\n"
_GI2 = ("variable g: categorical {F, M}\nvariable i: categorical {L, H}\n"
        "population (g, i) ~ counts [[4, 1], [2, 3]]\n")
_S10 = "variable s: continuous [0, 10]\npopulation s ~ uniform(0, 10)\n"
_YN = "variable y: continuous\npopulation y ~ normal(0, 1)\n"
_PLAN3 = (("ss", "sample_size(distribution(x) from m, max_se = 0.05)", "analyze"),
          ("pw", "power(distribution(x) from m, n = 1000, test = proportion(a, 0.2))", "analyze"))
#: (name, query, verb) by what the mechanism is
_FINITE_QUERIES = (
    ("e", "epsilon(m)", "analyze"), ("l", "leakage(m, mutual_information, prediction)", "analyze"),
    ("mo", "moments(m)", "analyze"), ("f", "fisher(m)", "analyze"), ("id", "identifiable(m)", "analyze"),
    ("v", "avar(distribution(x) from m by mom)", "analyze"), ("vl", "avar(distribution(x) from m by mle)", "analyze"),
    *_PLAN3,
    ("est", "estimate distribution(x) from m by mom", "simulate"),
    ("mle", "estimate distribution(x) from m by mle", "simulate"),
)
_ORACLE_QUERIES = (
    ("e", "epsilon(m)", "analyze"), ("v", "avar(distribution(x) from m by mom)", "analyze"),
    ("vc", "avar(distribution(x) from m by mom(se = conditional))", "analyze"), *_PLAN3,
    ("est", "estimate distribution(x) from m by mom", "simulate"),
    ("ibu", "estimate distribution(x) from m by mle", "simulate"),
)
_PRODUCT_QUERIES = (
    ("e", "epsilon(m)", "analyze"), ("b", "bounds(m, n = 100)", "analyze"), ("t", "thresholds(m, n = 100)", "analyze"),
    ("l", "leakage(m, prediction)", "analyze"), ("j", "avar(joint(g, i) from m by castell)", "analyze"),
    ("est", "estimate joint(g, i) from m by castell", "simulate"),
    ("ind", "test independence(g, i) from m by pearson", "simulate"),
)


def _interval_queries(v: str) -> tuple[tuple[str, str, str], ...]:
    return (("c", "coverage(m)", "analyze"), ("l", "leakage(m)", "analyze"), ("e", "epsilon(m)", "analyze"),
            ("v", f"avar(mean({v}) from m by npmle)", "analyze"),
            ("ss", f"sample_size(mean({v}) from m, max_se = 0.5)", "analyze"),
            ("est", f"estimate mean({v}) from m by npmle", "simulate"))


@dataclass(frozen=True)
class ParameterSlot:
    """Declarations with one numeric parameter ``{X}``, and the queries that read it (a
    query line ``query NAME = QUERY`` is added per case; ``compare`` cases have none)."""

    name: str
    head: str
    queries: tuple[tuple[str, str, str], ...]


_ORACLES = ("sue", "oue", "blh", "olh", "ss", "hr", "adp")
_LONGITUDINAL = ("l_grr", "l_sue", "l_oue", "l_osue")
PARAMETER_SLOTS = (
    ParameterSlot("grr epsilon", _X3 + "mechanism m = grr(x, epsilon = {X})\n", _FINITE_QUERIES),
    ParameterSlot("rr matrix", _X3 + "mechanism m = rr(x, matrix [[{X}, 1 - ({X}), 0], [1/4, 3/4, 0], [0, 0, 1]])\n",
                  _FINITE_QUERIES),
    ParameterSlot("subset sizes", _X4 + "mechanism m = subset(x, sizes {2: {X}, 3: 1 - ({X})})\n", _FINITE_QUERIES),
    ParameterSlot("subset min_coverage", _X4 + "mechanism m = subset(x, uniform, min_coverage = {X})\n",
                  _FINITE_QUERIES),
    ParameterSlot("population", "variable x: categorical {a, b, c}\npopulation x ~ categorical({X}, 1/4, 1/4)\n"
                  "mechanism m = grr(x, epsilon = log(3))\n", _FINITE_QUERIES),
    ParameterSlot("product epsilon", _GI2 + "mechanism m = product(grr(g, epsilon = 1), grr(i, epsilon = {X}))\n",
                  _PRODUCT_QUERIES),
    ParameterSlot("product n", _GI2 + "mechanism m = product(grr(g, epsilon = 1), grr(i, epsilon = 1))\n",
                  (("b", "bounds(m, n = {X})", "analyze"), ("t", "thresholds(m, n = {X})", "analyze"))),
    ParameterSlot("rr_joint epsilon", _GI2 + "variable gi = g * i\nmechanism m = grr(gi, epsilon = {X})\n",
                  (("j", "avar(joint(g, i) from m by joint)", "analyze"),
                   ("est", "estimate joint(g, i) from m by joint", "simulate"))),
    *(ParameterSlot(f"{k} epsilon", _X3 + f"mechanism m = {k}(x, epsilon = {{X}})\n", _ORACLE_QUERIES)
      for k in _ORACLES),
    ParameterSlot("olh g", _X3 + "mechanism m = olh(x, epsilon = 1, g = {X})\n", _ORACLE_QUERIES),
    ParameterSlot("ss k", _X3 + "mechanism m = ss(x, epsilon = 1, k = {X})\n", _ORACLE_QUERIES),
    *(ParameterSlot(f"{k} epsilon", _X3 + f"mechanism m = {k}(x, epsilon = {{X}}, first = 1/2)\n", _ORACLE_QUERIES)
      for k in _LONGITUDINAL),
    *(ParameterSlot(f"{k} first", _X3 + f"mechanism m = {k}(x, epsilon = 2, first = {{X}})\n", _ORACLE_QUERIES)
      for k in _LONGITUDINAL),
    *(ParameterSlot(f"{k} epsilon", _X3 + _GI2 + f"mechanism m = {k}(oue(x), grr(g), grr(i), epsilon = {{X}})\n",
                    _ORACLE_QUERIES) for k in ("spl", "smp")),
    ParameterSlot("rsfd epsilon", _X3 + _GI2 + "mechanism m = rsfd(x, g, i, epsilon = {X}, fake = grr)\n",
                  _ORACLE_QUERIES),
    ParameterSlot("case1 anchor end", _S10 + "mechanism m = interval(s, case1(uniform(0, {X})))\n",
                  _interval_queries("s")),
    ParameterSlot("normal sd", _YN + "mechanism m = interval(y, case2(normal(0, {X})))\n", _interval_queries("y")),
    ParameterSlot("logistic scale", _YN + "mechanism m = interval(y, case2(logistic(0, {X})))\n",
                  _interval_queries("y")),
    ParameterSlot("exponential rate", _YN + "mechanism m = interval(y, case1(exponential({X}, shift = -5)))\n",
                  _interval_queries("y")),
    ParameterSlot("canonical m", _S10 + "mechanism m = interval(s, canonical({X}, uniform(0, 10)))\n",
                  _interval_queries("s")),
    ParameterSlot("ring m", _YN + "mechanism m = interval(y, ring({X}, normal(0, 1)))\n", _interval_queries("y")),
    ParameterSlot("progressive rounds", _S10 + "mechanism m = progressive(s, rounds = {X})\n",
                  _interval_queries("s")),
    ParameterSlot("disclose", _S10 + "mechanism m = interval(s, case1(uniform(0, 10)), disclose [{X}, 5])\n",
                  _interval_queries("s")),
    ParameterSlot("selective tau", _S10 + "mechanism base = interval(s, case1(uniform(0, 10)))\n"
                  "mechanism m = selective(base, tau = {X}, rho = 1/2)\n", _interval_queries("s")),
    ParameterSlot("selective rho", _S10 + "mechanism base = interval(s, case1(uniform(0, 10)))\n"
                  "mechanism m = selective(base, tau = 1/10, rho = {X})\n", _interval_queries("s")),
    ParameterSlot("population mean", "variable y: continuous\npopulation y ~ normal({X}, 1)\n"
                  "mechanism m = interval(y, case2(normal(0, 1)))\n", _interval_queries("y")),
    ParameterSlot("moment order", _YN + "mechanism m = interval(y, case2(logistic(0, 5)))\n",
                  (("k", "estimate moment(y, {X}) from m by npmle", "simulate"),)),
    ParameterSlot("geometric epsilon", _GI2 + "release A = counts(g, i) with geometric(epsilon = {X})\n",
                  (("v", "variance(A)", "analyze"), ("b", "budget(per variable)", "analyze"),
                   ("t", "table(A)", "simulate"))),
    ParameterSlot("planning targets", _X3 + "mechanism m = oue(x, epsilon = 1)\n",
                  (("se", "sample_size(distribution(x) from m, max_se = {X})", "analyze"),
                   ("ci", "sample_size(distribution(x) from m, ci_width = {X})", "analyze"),
                   ("pt", "sample_size(distribution(x) from m, power = {X}, test = proportion(a, 0.2))", "analyze"),
                   ("n", "power(distribution(x) from m, n = {X}, test = proportion(a, 0.2))", "analyze"),
                   ("p0", "power(distribution(x) from m, n = 100, test = proportion(a, {X}))", "analyze"),
                   ("dl", "sample_size(distribution(x) from m, power = 0.8, test = difference(a, {X}))", "analyze"),
                   ("al", "sample_size(distribution(x) from m, max_se = 0.05, alpha = {X})", "analyze"))),
    ParameterSlot("compare n", _X3 + "compare d for distribution(x) at n = {X}, test = proportion(a, 0.2) "
                  "target max_se <= 0.05 {\n  a = grr(x, epsilon = log(3))\n  b = oue(x, epsilon = 1)\n"
                  "} by max_se, power, avar_trace, epsilon\n", (("compare", "", "compare"),)),
    ParameterSlot("compare target", _X3 + "compare d for distribution(x) at n = 100, test = proportion(a, 0.2) "
                  "target power >= {X}, max_se <= {X} {\n  a = grr(x, epsilon = log(3))\n  b = oue(x, epsilon = 1)\n"
                  "} by max_se, power\n", (("compare", "", "compare"),)),
    ParameterSlot("clusters v", _GI2 + "mechanism m = product(grr(g, epsilon = 1), grr(i, epsilon = 1))\n",
                  (("j", "estimate joint(g, i) from m by clusters(v = {X})", "simulate"),)),
    ParameterSlot("permutations", _X4 + _GI2 + "mechanism m = product(subset(x, uniform), grr(g, epsilon = 1))\n",
                  (("t", "test independence(x, g) from m by lrt calibrate permutation({X})", "simulate"),)),
)


@dataclass(frozen=True)
class ParameterCase:
    """One spec with one query (or a compare block) and the verb that answers it."""

    slot: str
    value: str
    query: str
    text: str
    verb: str


def parameter_cases(every: bool = False) -> Iterator[ParameterCase]:
    """Each slot at each of :data:`PARAMETER_VALUES` with one of its queries, in turn (every
    slot, value and query kind is met; about 370 cases), or with ``every`` one case per
    query (the whole cross product, ``bench/fuzz.py --parameters``)."""
    for i, slot in enumerate(PARAMETER_SLOTS):
        for j, value in enumerate(PARAMETER_VALUES):
            chosen = slot.queries if every else [slot.queries[(i + j) % len(slot.queries)]]
            for name, query, verb in chosen:
                line = f"query {name} = {query}\n" if query else ""
                yield ParameterCase(slot.name, value, name, (slot.head + line).replace("{X}", value), verb)


def run_parameter_case(case: ParameterCase, path: Path, seconds: float = CASE_SECONDS) -> list[str]:
    """Problems with one case: ``check``, then (when the spec is valid) its verb, each
    within ``seconds`` and exiting 0 or 1; ``compare`` also with ``--reps 2``."""
    path.write_text(case.text, encoding="utf-8")
    runs = [["check", str(path)]]
    if case.verb == "compare":
        runs += [["compare", str(path)], ["compare", str(path), "--reps", "2", "--seed", "1"]]
    else:
        runs.append([case.verb, str(path), "--query", case.query,
                     *(SIMULATE_ARGS if case.verb == "simulate" else ())])
    problems = []
    for argv in runs:
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        try:
            with deadline(seconds):
                code = main(argv, stdout=out, stderr=err)
        except TooSlow:
            problems.append(f"{' '.join(argv[:1] + argv[2:])}: over {seconds} s")
            break
        took = time.perf_counter() - start
        if code not in (0, 1):
            lines = [x for x in err.getvalue().strip().splitlines() if "internal error" in x]
            problems.append(f"{' '.join(argv[:1] + argv[2:])}: exit {code}: {' / '.join(lines[:1])}")
        elif took > seconds:
            problems.append(f"{' '.join(argv[:1] + argv[2:])}: {took:.1f} s")
        if argv[0] == "check" and code != 0:
            break   # an invalid spec: the check's clear error is the answer
    return problems


def _warm(path: Path) -> None:
    """Import what the back ends import before any case runs under an alarm (an alarm
    inside a first import leaves a module half initialized for every later case)."""
    path.write_text(_X3 + "mechanism m = grr(x, epsilon = 1)\nquery v = avar(distribution(x) from m by mom)\n"
                    "query est = estimate distribution(x) from m by mom\n", encoding="utf-8")
    for argv in (["analyze", str(path)], ["simulate", str(path), *SIMULATE_ARGS]):
        main(argv, stdout=io.StringIO(), stderr=io.StringIO())
    from privspec import backends

    backends.load_all()


def test_every_parameter_slot_is_valid_with_a_plain_value() -> None:
    """Each slot's spec is valid with an ordinary value (so the fuzz reaches the back ends),
    and each of its queries is known to the checker."""
    bad = []
    for slot in PARAMETER_SLOTS:
        for name, query, _ in slot.queries:
            line = f"query {name} = {query}\n" if query else ""
            for value in ("1/2", "1/4", "2", "3", "100"):
                spec = privspec.load((slot.head + line).replace("{X}", value))
                if spec.ok:
                    break
            else:
                bad.append(f"{slot.name} / {name}:\n{spec.render_diagnostics()}")
    assert not bad, "\n\n".join(bad)


@pytest.mark.slow
def test_parameters_x_queries_never_an_internal_error_never_slow(tmp_path: Path) -> None:
    """Every slot x every extreme value x (in turn) every query: exit 0 or 1, each run within
    CASE_SECONDS (epsilon = 700 hung for minutes in exact arithmetic, 1e-300 ended in a
    LinAlgError, max_se = 1e-300 in a ZeroDivisionError before issue 33)."""
    path = tmp_path / "parameters.privspec"
    _warm(path)
    failures = []
    for case in parameter_cases():
        for problem in run_parameter_case(case, path):
            failures.append(f"{case.slot} = {case.value}, {case.query}: {problem}\n{case.text[:500]}")
    assert not failures, f"{len(failures)} failing cases; the first:\n" + "\n\n".join(failures[:5])
