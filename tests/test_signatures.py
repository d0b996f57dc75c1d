"""The signature table (:mod:`privspec.model.signatures`): it drives binding, names the words
that did-you-mean suggests from, and generates the call reference in docs/language.md."""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

import privspec
from privspec.language import ast
from privspec.model import mechanisms
from privspec.language import parser
from privspec.model import estimands as queries
from privspec.model import resolve
from privspec.model import signatures
from privspec.model.graph import CONTINUOUS_FAMILIES
from privspec.language.parser import parse_declarations, parse_statement
from privspec.model.signatures import ROLES, SIGNATURES, Param, markdown, names, signature
from privspec.language.source import Source

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "language.md"


def _codes(text: str) -> list[tuple[str, str, str]]:
    return [(d.code, d.message, d.hint or "") for d in privspec.load(text).check()]


# ---- the generated reference --------------------------------------------------------------------
def test_docs_reference_is_the_generated_text() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert signatures.BEGIN in text and signatures.END in text
    inside = text.split(signatures.BEGIN, 1)[1].split(signatures.END, 1)[0]
    assert inside == "\n" + markdown(), "regenerate: python -m privspec.model.signatures --write docs/language.md"
    assert signatures.replace_generated(text) == text


def test_reference_lists_every_call() -> None:
    ref = markdown()
    for sigs in ROLES.values():
        for s in sigs:
            assert f"`{s.usage}`" in ref


def test_main_prints_and_writes(tmp_path: Path, capsys) -> None:
    assert signatures.main(["--markdown"]) == 0
    assert capsys.readouterr().out == markdown()
    page = tmp_path / "p.md"
    page.write_text("# title\n")
    assert signatures.main(["--write", str(page)]) == 0
    assert page.read_text().startswith("# title\n\n" + signatures.BEGIN)
    once = page.read_text()
    signatures.main(["--write", str(page)])
    assert page.read_text() == once
    assert signatures.main(["--nope"]) == 2


# ---- the table agrees with the code that uses it ------------------------------------------------
def test_table_names_match_the_builders() -> None:
    assert names("mechanism") == tuple(mechanisms.BUILDERS)
    assert names("subset design") == mechanisms.SUBSET_DESIGNS
    assert names("interval scheme") == mechanisms.INTERVAL_SCHEMES
    assert names("law") == tuple(CONTINUOUS_FAMILIES)
    assert names("release noise") == resolve.NOISES
    assert signature("geometric", "release noise").param("calibration").words == resolve.CALIBRATIONS
    assert signatures.CENSORED_ENDS == tuple(mechanisms.CENSORED_ENDS)
    assert names("calibration") == queries.CALIBRATIONS
    assert set(names("test")) == set(queries.ESTIMATORS["independence"])
    estimators = {m for ms in queries.ESTIMATORS.values() for m in ms}
    assert estimators <= set(names("estimator"))


def test_law_signatures_follow_the_families() -> None:
    assert signature("logistic", "law").usage == "logistic(location, scale, shift = 0)"
    assert signature("exponential", "law").usage == "exponential(rate, shift = 0, scale = 1)"
    assert [p.name for p in signature("normal", "law").params if p.positional] == ["mean", "sd"]


def test_estimator_options_and_named_arguments_come_from_the_table() -> None:
    assert queries.METHOD_OPTIONS is signatures.METHOD_OPTIONS
    assert list(signatures.METHOD_OPTIONS) == ["project", "switch", "v", "se"]
    assert signatures.METHOD_OPTIONS["v"] == (("clusters",), None)
    assert set(signatures.METHOD_OPTIONS["project"][0]) == {"mom", "joint", "independent", "castell", "hybrid",
                                                           "truncated", "clusters"}
    assert signatures.NAMED_ARGS["iterative"][1] == ("noise law", "noise laws", ("normal", "logistic"))


def test_a_parameter_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="colour"):
        Param("x", "colour")


def _calls(node, out: set[str]) -> set[str]:
    if isinstance(node, ast.Call):
        out.add(node.name)
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            _calls(getattr(node, f.name), out)
    elif isinstance(node, (tuple, list)):
        for x in node:
            _calls(x, out)
    return out


def test_every_call_in_the_example_specs_is_in_the_table() -> None:
    known = set(SIGNATURES) | {"categorical", "counts"}  # populations' laws (resolver)
    for path in sorted((ROOT / "specs").glob("*.privspec")):
        decls, _, _ = parse_declarations(Source(path.read_text(encoding="utf-8")))
        for d in decls:
            if isinstance(d, (ast.MechanismDecl, ast.QueryDecl, ast.ReleaseDecl)):
                unknown = _calls(d, set()) - known - {v.name for v in privspec.load(path).model.variables.values()}
                assert not unknown, (path.name, unknown)


# ---- binding through the table (messages unchanged) -------------------------------------------------
HEAD = "variable c: categorical {a, b, d, e}\nvariable y: continuous [0, 10]\n"


@pytest.mark.parametrize("decl,code,message,hint", [
    ("mechanism m = grr(c, epsilon = 1, epsilom = 2)", "E205", "grr() has no option 'epsilom'", "did you mean"),
    ("mechanism m = grr(c)", "E205", "grr() needs its epsilon", "grr(VARIABLE, epsilon = e)"),
    ("mechanism m = grr(c, 1, 2)", "E205", "grr() takes 2 positional arguments, found 3", "grr(VARIABLE"),
    ("mechanism m = subset(c, uniform, min_coverag = 1/5)", "E205", "subset() has no option 'min_coverag'",
     "did you mean 'min_coverage'?"),
    ("mechanism m = interval(y, case1(uniform(0, 10), 3))", "E205", "case1() takes 1 positional argument, found 2",
     "case1(uniform(a, b))"),
    ("mechanism m = interval(y, case1(uniform(0, 10, shif = 1)))", "E205", "uniform() has no option 'shif'",
     "did you mean 'shift'?"),
    ("mechanism m = interval(y, case1(logistic(0, 1, scale = 2)))", "E205", "'scale' is given twice",
     "logistic(location, scale, shift = 0)"),
    ("mechanism m = censored(y, end = closed)", "E205", "censored() has no option 'end'", "did you mean 'ends'?"),
    ("mechanism m = progressive(y)", "E205", "progressive() needs its rounds", "progressive(VARIABLE, rounds = h)"),
])
def test_binding_errors(decl: str, code: str, message: str, hint: str) -> None:
    diags = _codes(HEAD + decl + "\n")
    assert any(c == code and message in m and hint in h for c, m, h in diags), diags


# ---- the parser ------------------------------------------------------------------------------------
def test_declaration_keywords_come_from_the_grammar() -> None:
    assert parser.DECLARATION_KEYWORDS == ("spec", "variable", "parameter", "population", "mechanism", "release",
                                           "query", "compare")
    for kw in parser.DECLARATION_KEYWORDS:
        assert parser._DECL_START.match(f"{kw} x = 1" if kw not in ("spec", "population") else
                                        ('spec "t"' if kw == "spec" else "population x ~ normal(0, 1)"))


def test_parse_state_is_per_parse_not_on_the_shared_builder() -> None:
    builder = parser.get_parser().options.transformer
    before = dict(vars(builder))
    d = parse_statement("variable x: continuous", 100)
    assert d.name.span == (109, 110) and d.span == (100, 122)
    assert dict(vars(builder)) == before  # nothing was set on the shared instance
    # a parse outside parse_statement sees offset 0, whatever ran before
    assert parser.get_parser().parse("variable x: continuous", start="statement").name.span == (9, 10)


def test_parses_in_threads_keep_their_own_offsets() -> None:
    results: dict[int, tuple] = {}

    def work(k: int) -> None:
        spans = []
        for i in range(30):
            d = parse_statement("mechanism m = grr(c, epsilon = 1 + 2 * e)", 1000 * k + i)
            spans.append(d.name.span[0] - (1000 * k + i))
        results[k] = tuple(spans)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == (10,) * 30 for r in results.values()) and len(results) == 4


QHEAD = ("variable c: categorical {a, b, d, e}\nvariable g: categorical {f, m}\n"
         "mechanism urn = subset(c, uniform)\n"
         "mechanism ind = product(grr(c, epsilon = 1), grr(g, epsilon = 1))\n")


@pytest.mark.parametrize("decl,message,hint", [
    ("query f = fisher(urn, urn)", "fisher() takes one mechanism", ""),
    ("query f = epsilon(urn, size = 1)", "epsilon() takes no options", ""),
    ("query c = coverage(urn, size, size)", "coverage() takes one metric; leakage() takes several", ""),
    ("query b = bounds(ind, nn = 10)", "unknown option 'nn' for bounds()", "did you mean 'n'?"),
    ("query b = bounds(ind, ind)", "bounds() takes one mechanism and the option n", ""),
    ("query i = individual(urn)", "individual() takes a mechanism, an observed subset", ""),
    ("query o = optimal_anchor(urn)", "optimal_anchor() takes an estimand and a mechanism", ""),
])
def test_query_arity_comes_from_the_table(decl: str, message: str, hint: str) -> None:
    diags = _codes(QHEAD + decl + "\n")
    assert any(c == "E205" and message in m and hint in h for c, m, h in diags), diags


def test_query_signatures_cover_every_query_kind() -> None:
    from privspec.model.query_kinds import QUERY_KINDS

    assert names("query") == tuple(QUERY_KINDS)
    assert signatures.arity(signature("individual", "query")) == (2, 3)
    assert signatures.arity(signature("table", "query")) == (1, None)
    assert signature("bounds", "query").keywords == ["n"]


@pytest.mark.parametrize("decl,code,message", [
    ("mechanism m = grr(c, epsilon = -1)", "E304", "epsilon"),
    ("mechanism m = progressive(y, rounds = 0)", "E309", "rounds must be at least 1"),
    ("mechanism m = progressive(y, rounds = 3/2)", "E205", "rounds must be a whole number"),
    ("mechanism m = interval(y, canonical(1, uniform(0, 10)))", "E309", "the number of intervals m must be at least 2"),
    ("mechanism b = interval(y, case1(uniform(0, 10)))\nmechanism m = selective(b, tau = 2, rho = 1/2)", "E301",
     "tau"),
])
def test_values_are_checked_by_the_kind_the_table_gives(decl: str, code: str, message: str) -> None:
    diags = _codes(HEAD + decl + "\n")
    assert any(c == code and message in m for c, m, _ in diags), diags
    assert signature("progressive", "mechanism").param("rounds").kind == "integer"
