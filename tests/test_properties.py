"""Property tests: the front end never crashes, whatever the text.

On arbitrary text (biased to the language's characters and keywords) and on random
mutations of the example specs, ``load(text).check()`` returns diagnostics (or none)
and raises nothing; every diagnostic points inside the text and renders; ``spec.model``
either returns a model graph or raises a :class:`privspec.errors.PrivspecError`.
Also: spec text is never evaluated as Python, and the declaration splitter keeps
newlines inside brackets and splits at line ends otherwise.
"""
from __future__ import annotations

import builtins
import json
import os
import re
from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privspec
from privspec.errors import Diagnostic, PrivspecError
from privspec.model.graph import ModelGraph
from privspec.language.parser import get_parser, split_declarations
from privspec.model.serialize import model_to_dict
from privspec.spec import Spec

SPECS = sorted((Path(__file__).resolve().parent.parent / "specs").glob("*.privspec"))
TEXTS = [p.read_text(encoding="utf-8") for p in SPECS]

FUZZ = settings(derandomize=True, deadline=None, max_examples=200, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

KEYWORDS = ["spec", "variable", "categorical", "continuous", "parameter", "population",
            "mechanism", "release", "with", "protect", "exact", "totals", "query", "estimate",
            "test", "from", "by", "calibrate", "compare", "for", "at"]
WORDS = ["subset", "uniform", "conditional", "independent", "sizes", "min_coverage", "product",
         "grr", "rr", "matrix", "epsilon", "interval", "case1", "case2", "canonical", "ring",
         "disclose", "selective", "tau", "rho", "progressive", "rounds", "counts", "geometric",
         "distribution", "joint", "mean", "cdf", "moment", "regression", "independence", "avar",
         "moments", "fisher", "coverage", "leakage", "identifiable", "optimal_anchor", "budget",
         "per", "mom", "mle", "npmle", "castell", "lrt_mom", "permutation", "iterative", "linear",
         "normal", "logistic", "exponential", "size", "mutual_information", "prediction", "n",
         "color", "black", "red", "green", "blue", "race", "gender", "income", "gi", "salary",
         "score", "eps", "urn", "c1", "x", "y", "Female.Low", "log", "exp", "sqrt", "pi", "inf"]
PUNCT = list("{}[]()=:~,.^*/+-<>#\"'") + [">=", "<=", "==", "**", "\\", ";", "@", "!", "$", "`"]
NUMBERS = ["0", "1", "2", "3", "1/2", "0.25", "2e-3", "1e400", ".5", "3.", "999", "-1", "1/0",
           "10^10^10", "(1+2)*3", "sqrt(-1)", "log(0)", "inf - inf", "1" * 40]
STRINGS = ['"Amer-Indian-Eskimo"', '"a b"', '"from"', '"x', '"a\\"b"', '""', '"#"']
SPACES = [" ", " ", " ", "  ", "\n", "\n", "\t", "\r\n", "# comment\n", "\n\n"]
ODD = ["\x00", "\u00e9", "\u2028", "\ufeff", "\x0b", "\x0c", "\U0001F600", "\\n"]
PIECES = KEYWORDS + WORDS + PUNCT + NUMBERS + STRINGS + SPACES + ODD
ALPHABET = "abcxyz_019.{}[]()=:~,^*/+-<>#\" \n\t'é"

_CODE = re.compile(r"[EW]\d{3}")


def check_text(text: str) -> Spec:
    """Everything that must hold for any text; returns the spec for further checks."""
    # Spec.from_text is what privspec.load does with text; load itself is tested below
    spec = Spec.from_text(text, "<fuzz>")
    diags = spec.check()
    assert isinstance(diags, list)
    for d in diags:
        assert isinstance(d, Diagnostic)
        assert _CODE.fullmatch(d.code), d.code
        assert d.severity in ("error", "warning")
        assert d.span is not None, d
        assert 0 <= d.span.start <= d.span.end <= len(text), (d, len(text))
        rendered = d.render(spec.source)
        assert isinstance(rendered, str) and d.code in rendered
        json.dumps(d.to_dict(spec.source))
    spec.render_diagnostics()
    try:
        model = spec.model
    except PrivspecError as e:
        assert not spec.ok
        assert e.diagnostics and str(e)
    else:
        assert spec.ok
        assert isinstance(model, ModelGraph)
        json.dumps(model_to_dict(model))
    return spec


# ---- (a) random text -------------------------------------------------------------------
random_text = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(alphabet=ALPHABET, max_size=4)),
    max_size=60,
).map(" ".join) | st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


@FUZZ
@given(random_text)
def test_random_text_never_crashes(text: str) -> None:
    check_text(text)


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=200))
def test_arbitrary_unicode_never_crashes(text: str) -> None:
    check_text(text)


# ---- (b) mutations of the example specs ---------------------------------------------------
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[A-Za-z_]\w*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\s+|.', re.S)
_INSERTS = st.sampled_from(PIECES + [" ", ",", "\n", "}", "{", ")", "(", "]", "[", "0", "-"])


@st.composite
def mutated_spec(draw) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from([
            "delete_char", "insert_char", "replace_char", "duplicate_char",
            "delete_token", "insert_token", "replace_token", "duplicate_token", "swap_tokens",
            "swap_lines", "delete_line", "duplicate_line",
        ]))
        unit = op.rsplit("_", 1)[1]
        if unit == "char":
            parts = list(text)
        elif unit == "token":
            parts = _TOKEN.findall(text)
        else:
            parts = text.splitlines(keepends=True)
        if not parts:
            parts = [draw(_INSERTS)]
        i = draw(st.integers(0, len(parts) - 1))
        if op.startswith("delete"):
            del parts[i]
        elif op.startswith("insert"):
            new = draw(st.sampled_from(ALPHABET)) if unit == "char" else draw(_INSERTS)
            parts.insert(i, new)
        elif op.startswith("replace"):
            parts[i] = draw(st.sampled_from(ALPHABET)) if unit == "char" else draw(_INSERTS)
        elif op.startswith("duplicate"):
            parts.insert(i, parts[i])
        else:  # swap
            j = draw(st.integers(0, len(parts) - 1))
            parts[i], parts[j] = parts[j], parts[i]
        text = "".join(parts)
    return text


@FUZZ
@given(mutated_spec())
def test_mutated_specs_never_crash(text: str) -> None:
    check_text(text)


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_example_specs_are_clean(path: Path) -> None:
    spec = check_text(path.read_text(encoding="utf-8"))
    assert spec.ok, spec.render_diagnostics()


def test_each_declaration_alone_never_crashes() -> None:
    """Every line of every example, out of context (names undeclared), checks cleanly."""
    for text in TEXTS:
        for s, e in split_declarations(text):
            check_text(text[s:e])


# ---- privspec.load --------------------------------------------------------------------------
def test_load_reads_text_and_paths(tmp_path: Path) -> None:
    path = tmp_path / "x.privspec"
    path.write_text("variable x: continuous\n", encoding="utf-8")
    assert privspec.load(str(path)).source.name == str(path)
    assert privspec.load(path).ok
    assert privspec.load("variable x: continuous").ok          # one line of text, not a file
    assert privspec.load("no_such_file.privspec").errors        # text that does not parse


def test_load_long_single_line_text() -> None:
    spec = privspec.load("x" * 300)
    assert [d.code for d in spec.check()] == ["E101"]


# ---- spec text is never evaluated as Python --------------------------------------------------
SMUGGLE = "__import__('os').system('touch PWNED')"
SMUGGLE_DQ = '__import__("os").system("touch PWNED")'
HOSTS = [
    # (where, template): {} is replaced by the payload
    ("probability", "population color ~ categorical(black = {}, red = 0, green = 0, blue = 1)"),
    ("probability (positional)", "population color ~ categorical({}, 0, 0, 1)"),
    ("epsilon", "mechanism r = grr(color, epsilon = {})"),
    ("bound", "variable s: continuous [0, {}]"),
    ("parameter value", "parameter p = {}"),
    ("parameter constraint", "parameter p > {}"),
    ("design weight", "mechanism m = subset(color, conditional { {black, red}: {} })"),
    ("matrix entry", "mechanism w = rr(color, matrix [[{}, 0], [0, 1]])"),
    ("count", "population color ~ counts [{}, 1, 1, 1]"),
    ("compare setting", "compare c for distribution(color) at n = {} { a = grr(color, epsilon = 1) } by epsilon"),
]
PAYLOADS = [SMUGGLE, SMUGGLE_DQ, f"1 if {SMUGGLE} else 0", f"(lambda: {SMUGGLE})()",
            f"[{SMUGGLE} for _ in '1']", f"eval(\"{SMUGGLE}\")", f"1; {SMUGGLE}", f"1.__class__"]
PRELUDE = "variable color: categorical {black, red, green, blue}\n"


@pytest.fixture
def no_python_evaluation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Fail loudly if anything evaluates text as Python (or runs a shell) during the test."""
    get_parser()
    Spec.from_text(TEXTS[0])  # lazy imports and caches happen before the traps are set
    monkeypatch.chdir(tmp_path)

    def trap(name):
        def refuse(*args, **kwargs):
            raise AssertionError(f"{name} was called during load: {args!r}")
        return refuse

    real_sympify = sympy.sympify

    def sympify(a, *args, **kwargs):
        if isinstance(a, (str, bytes)):
            raise AssertionError(f"sympify called on text during load: {a!r}")
        return real_sympify(a, *args, **kwargs)

    monkeypatch.setattr(builtins, "eval", trap("eval"))
    monkeypatch.setattr(builtins, "exec", trap("exec"))
    monkeypatch.setattr(builtins, "__import__", _guarded_import(builtins.__import__))
    monkeypatch.setattr(sympy, "sympify", sympify)
    monkeypatch.setattr(sympy, "parse_expr", trap("parse_expr"))
    monkeypatch.setattr("sympy.parsing.sympy_parser.parse_expr", trap("parse_expr"))
    monkeypatch.setattr(os, "system", trap("os.system"))
    return tmp_path


def _guarded_import(real):
    def guarded(name, *args, **kwargs):
        if name in ("os", "posix", "subprocess") and not args:
            # an import statement passes globals; a bare __import__('os') call does not
            raise AssertionError(f"__import__({name!r}) without a calling module")
        return real(name, *args, **kwargs)
    return guarded


def test_the_traps_work(no_python_evaluation: Path) -> None:
    """The fixture really catches evaluation (so the test below means something)."""
    for call in (lambda: eval("1"), lambda: exec("x = 1"), lambda: sympy.sympify("1/3"),
                 lambda: __import__("os"), lambda: os.system("true")):
        with pytest.raises(AssertionError):
            call()
    assert sympy.sympify(1) == 1  # numbers may still be sympified


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("where, template", HOSTS, ids=[w for w, _ in HOSTS])
def test_python_in_a_number_is_refused_and_runs_nothing(
        no_python_evaluation: Path, where: str, template: str, payload: str) -> None:
    line = template.replace("{}", payload, 1) if "{ {" not in template else \
        template.replace(": {}", f": {payload}")
    text = PRELUDE + line + "\n"
    spec = Spec.from_text(text)
    codes = [d.code for d in spec.check()]
    # Python syntax is a syntax error; the one shape that is also privspec syntax, a call
    # with a quoted argument (eval("...")), is refused where a number is expected (E205)
    expected = ("E205",) if payload.startswith("eval(") else ("E1",)
    assert codes and codes[0].startswith(expected), (line, spec.render_diagnostics())
    bad = spec.check()[0]
    assert bad.span.start >= len(PRELUDE)  # on the smuggling line
    with pytest.raises(PrivspecError):
        spec.model
    assert not (no_python_evaluation / "PWNED").exists()
    assert not Path("PWNED").exists()


# ---- splitting into declarations -------------------------------------------------------------
def test_split_keeps_newlines_inside_brackets_and_splits_at_line_ends() -> None:
    text = ("variable x: categorical {a,\n"
            "   b}   # two lines\n"
            "mechanism m = f(g(1,\n"
            "\n"
            "    # a comment with a ) inside\n"
            '    "label with ( in it"), [2,\n'
            "    3])\n"
            "variable y: continuous\n"
            "variable z: continuous [0,\n"
            "1]")
    pieces = [text[s:e] for s, e in split_declarations(text)]
    assert pieces == [
        "variable x: categorical {a,\n   b}",
        "mechanism m = f(g(1,\n\n    # a comment with a ) inside\n    \"label with ( in it\"), [2,\n    3])",
        "variable y: continuous",
        "variable z: continuous [0,\n1]",
    ]


def test_split_stops_an_unclosed_bracket_at_the_next_declaration() -> None:
    text = "mechanism m = f(a,\nvariable y: continuous\n"
    assert [text[s:e] for s, e in split_declarations(text)] == ["mechanism m = f(a,", "variable y: continuous"]


_ITEMS = ["a", "1/2", '"l b"', '"x(y"', '"}"', "{a, b}: 1/3", "f(x)", "b  # c ( [ {\n"]
_ITEM_SEPS = [", ", ",\n  ", ",\n\n", ", # note ) ]\n", ",\r\n"]
_DECL_SEPS = ["\n", "\n\n", "  # comment (\n", "\n   # c [\n\n", "\r\n", "\n\t\n"]


@st.composite
def bracketed(draw, depth: int = 0) -> str:
    opener = draw(st.sampled_from("([{"))
    closer = {"(": ")", "[": "]", "{": "}"}[opener]
    items = draw(st.lists(st.sampled_from(_ITEMS), max_size=4))
    if depth < 2 and draw(st.booleans()):
        items.append(draw(bracketed(depth + 1)))
    body = "".join(item + draw(st.sampled_from(_ITEM_SEPS)) for item in items)
    return opener + body + closer


@st.composite
def declaration_list(draw) -> tuple[str, list[str]]:
    heads = ["variable x: categorical", "mechanism m = f", "population (a, b) ~ counts", "query q = g",
             "parameter p = 1 + 2", "spec \"title (with a bracket\""]
    decls = []
    for _ in range(draw(st.integers(1, 5))):
        decl = draw(st.sampled_from(heads))
        for _ in range(draw(st.integers(0, 2))):
            decl += " " + draw(bracketed())
        decls.append(decl)
    text = draw(st.sampled_from(["", "\n", "# leading comment\n"]))
    for d in decls:
        text += draw(st.sampled_from(["", "  "])) + d + draw(st.sampled_from(_DECL_SEPS))
    return text, decls


@FUZZ
@given(declaration_list())
def test_split_recovers_the_declarations(case: tuple[str, list[str]]) -> None:
    text, decls = case
    pieces = [text[s:e] for s, e in split_declarations(text)]
    assert pieces == decls
