"""The parser: exact arithmetic folded into sympy values, and the lexical rules of
LANGUAGE.md (comments, quoted labels, declarations spanning lines inside brackets)."""
from __future__ import annotations

import pytest
import sympy

import privspec
from privspec.language import ast
from privspec.language.parser import parse_declarations, split_declarations
from privspec.language.source import Source, Span


def parse(text: str):
    """Declarations and syntax-error codes of ``text``."""
    decls, diags, _ = parse_declarations(Source(text))
    return decls, [d.code for d in diags]


def value_of(expr: str):
    """The AST node of ``expr`` written where a number is expected."""
    decls, codes = parse(f"parameter p = {expr}")
    assert codes == [], codes
    (decl,) = decls
    assert isinstance(decl, ast.ParameterDecl)
    return decl.value


# ---- exact arithmetic ------------------------------------------------------------------
EXACT = [
    ("1/3", sympy.Rational(1, 3)),
    ("0.25", sympy.Rational(1, 4)),
    ("0.1", sympy.Rational(1, 10)),
    (".5", sympy.Rational(1, 2)),
    ("3.", sympy.Integer(3)),
    ("2e-3", sympy.Rational(1, 500)),
    ("2E-3", sympy.Rational(1, 500)),
    ("1e3", sympy.Integer(1000)),
    ("1.5e+2", sympy.Integer(150)),
    ("007", sympy.Integer(7)),
    ("log(3)", sympy.log(3)),
    ("exp(1)", sympy.E),
    ("sqrt(2)", sympy.sqrt(2)),
    ("pi", sympy.pi),
    ("inf", sympy.oo),
    ("-inf", -sympy.oo),
    ("2^3", sympy.Integer(8)),
    ("2^3^2", sympy.Integer(512)),          # ^ groups to the right
    ("-2^2", sympy.Integer(-4)),            # -(2^2)
    ("2^-1", sympy.Rational(1, 2)),
    ("-1/2", sympy.Rational(-1, 2)),
    ("(1+2)*3", sympy.Integer(9)),
    ("1+2*3", sympy.Integer(7)),
    ("8/4/2", sympy.Integer(1)),            # / groups to the left
    ("10-4-3", sympy.Integer(3)),
    ("+3", sympy.Integer(3)),
    ("--3", sympy.Integer(3)),
    ("1/3 + 1/6", sympy.Rational(1, 2)),
    ("0.1 + 0.2", sympy.Rational(3, 10)),   # not 0.30000000000000004
    ("log(3) - log(3)", sympy.Integer(0)),
    ("exp(log(2))", sympy.Integer(2)),
    ("sqrt(8)", 2 * sympy.sqrt(2)),
    ("sqrt(1/4)", sympy.Rational(1, 2)),
    ("2*pi", 2 * sympy.pi),
    ("exp(1)/(exp(1) + 4)", sympy.E / (sympy.E + 4)),
    ("log(3)/log(2)", sympy.log(3) / sympy.log(2)),
    ("3 * inf", sympy.oo),
    ("1/inf", sympy.Integer(0)),
]


@pytest.mark.parametrize("text, expected", EXACT, ids=[t for t, _ in EXACT])
def test_exact_arithmetic_is_folded(text: str, expected: sympy.Expr) -> None:
    node = value_of(text)
    assert isinstance(node, ast.Num)
    assert isinstance(node.value, sympy.Basic)
    assert node.value == expected  # structurally: folded to sympy's canonical exact form
    assert not node.value.atoms(sympy.Float), "a float crept in: the value is not exact"


def test_decimal_is_the_rational_it_spells() -> None:
    v = value_of("0.333").value
    assert v == sympy.Rational(333, 1000) and v != sympy.Rational(1, 3)
    assert isinstance(value_of("1/3").value, sympy.Rational)


def test_number_span_covers_its_text() -> None:
    text = "parameter p = 2e-3"
    (decl,), _ = parse(text)
    assert text[decl.value.span.start:decl.value.span.end] == "2e-3"
    text = "parameter p = -1/2  # half"
    (decl,), _ = parse(text)
    assert text[decl.value.span.start:decl.value.span.end] == "-1/2"


def test_arithmetic_on_parameters_stays_symbolic() -> None:
    decls, codes = parse("parameter eps > 0\nmechanism m = grr(x, epsilon = 2*eps^2)")
    assert codes == []
    eps = decls[1].value.keywords[0].value
    assert isinstance(eps, ast.BinOp) and eps.op == "*"
    assert isinstance(eps.left, ast.Num) and eps.left.value == 2
    assert isinstance(eps.right, ast.BinOp) and eps.right.op == "^"
    assert isinstance(eps.right.left, ast.Ref) and eps.right.left.name == "eps"


def test_negated_parameter_is_a_neg_node() -> None:
    text = "parameter q > 0\nparameter p = -q"
    decls, codes = parse(text)
    assert codes == []
    assert isinstance(decls[1].value, ast.Neg)
    assert decls[1].value.operand == ast.Ref("q", Span(len(text) - 1, len(text)))
    assert decls[1].value.span == Span(len(text) - 2, len(text))


@pytest.mark.parametrize("text", [
    "1/0", "0^-1", "inf - inf", "0 * inf", "sqrt(-1)", "log(-1)", "log(0)", "(-1)^(1/2)",
    "2^100000", "10^10^10", "exp(10^6)", "exp(exp(exp(exp(10))))", "2^exp(exp(exp(10)))",
    "1e99999", "1" * 5000, "0." + "1" * 5000, "9" * 2000 + "." + "9" * 2000,
])
def test_arithmetic_that_is_not_a_real_number_is_a_syntax_error(text: str) -> None:
    _, codes = parse(f"parameter p = {text}")
    assert codes == ["E104"]


def test_numbers_just_below_the_limits_are_exact() -> None:
    assert value_of("1" * 2000).value == int("1" * 2000)
    assert value_of("2^1000").value == 2 ** 1000
    assert value_of("1e-2000").value == sympy.Rational(1, 10 ** 2000)


@pytest.mark.parametrize("text", [
    "x" + "*x" * 150,           # a product of 151 names
    "-" * 150 + "x",            # 150 minus signs before a name
    "x" + "^x" * 150,
    "(" * 150 + "1" + ")" * 150,
])
def test_deep_nesting_is_refused_not_a_crash(text: str) -> None:
    spec = privspec.load(f"parameter x > 0\nparameter p = {text}\n")
    assert [d.code for d in spec.check()] == ["E104"]


def test_deep_brackets_are_refused_not_a_crash() -> None:
    spec = privspec.load("variable s: continuous\nmechanism m = " + "selective(" * 500 + "s" + ")" * 500 + "\n")
    (diag,) = spec.check()
    assert diag.code == "E104" and "nested" in diag.message


# ---- lexical rules --------------------------------------------------------------------
def test_comments_run_to_the_end_of_the_line() -> None:
    text = ("# a comment line with a bracket ( and a quote \"\n"
            "variable x: categorical {a, b}   # trailing comment {\n"
            "   # indented comment\n"
            "variable y: continuous#no space before the comment\n")
    decls, codes = parse(text)
    assert codes == []
    assert [type(d).__name__ for d in decls] == ["CategoricalDecl", "ContinuousDecl"]
    # a declaration's span stops before its trailing comment
    assert [text[d.span.start:d.span.end] for d in decls] == [
        "variable x: categorical {a, b}", "variable y: continuous"]


def test_comment_inside_brackets_across_lines() -> None:
    text = "variable x: categorical {a,   # the first\n  b    # the second\n}\n"
    (decl,), codes = parse(text)
    assert codes == []
    assert [lab.name for lab in decl.labels] == ["a", "b"]


def test_hash_inside_a_quoted_label_is_not_a_comment() -> None:
    text = 'spec "urn #1"  # title\nvariable x: categorical {"a#b", c}'
    decls, codes = parse(text)
    assert codes == []
    assert decls[0].title == "urn #1"
    assert [getattr(lab, "text", None) for lab in decls[1].labels] == ["a#b", None]


def test_quoted_labels_may_be_keywords() -> None:
    keywords = ["spec", "variable", "categorical", "continuous", "parameter", "population",
                "mechanism", "release", "with", "protect", "exact", "totals", "query", "estimate",
                "test", "from", "by", "calibrate", "compare", "for", "at", "inf", "pi"]
    labels = ", ".join(f'"{k}"' for k in keywords)
    text = (f"variable k: categorical {{{labels}}}\n"
            f'population k ~ categorical("from" = 1, ' + ", ".join(f'"{k}" = 0' for k in keywords if k != "from")
            + ")\n")
    spec = privspec.load(text)
    assert [d.code for d in spec.check()] == []
    var = spec.model.variables["k"]
    assert var.labels == tuple(keywords)
    law = spec.model.population_of("k").law
    assert law.probs[keywords.index("from")] == 1 and sum(law.probs) == 1


def test_quoted_labels_with_spaces_dashes_digits_and_escapes() -> None:
    decls, codes = parse(r'variable r: categorical {"Amer-Indian-Eskimo", "a b", "1st", "say \"hi\"", plain}')
    assert codes == []
    got = [lab.text if isinstance(lab, ast.Str) else lab.name for lab in decls[0].labels]
    assert got == ["Amer-Indian-Eskimo", "a b", "1st", 'say "hi"', "plain"]
    assert isinstance(decls[0].labels[-1], ast.Ref)


def test_a_backslash_is_written_doubled() -> None:
    decls, codes = parse(r'variable r: categorical {"C:\\data", "a\"b"}')
    assert codes == [] and [lab.text for lab in decls[0].labels] == ["C:\\data", 'a"b']


@pytest.mark.parametrize("text, at", [
    (r'variable x: categorical {"\input", b}', r"\i"),                 # was read as 'input'
    (r'variable x: categorical {a, "tab\there"}', r"\t"),
    (r'spec "the \urn"', r"\u"),
    ('variable x: categorical {a, b}\n' + r'mechanism m = rr(x, matrix [[1/2, 1/2], [1/2, 1/2]], "\x" = 1)',
     r"\x"),
    ('variable x: categorical {a, "ends\\', None),                       # a backslash at the end: not E106
])
def test_an_unknown_escape_is_an_error_at_the_backslash(text: str, at: str | None, monkeypatch) -> None:
    """Issue 33: a quoted string's backslash escapes \\" and \\\\ only; any other escape is
    E106 pointing at it (it silently dropped the backslash), by the grammar and by the fast
    path that reads label sets alike."""
    from privspec.language import parser

    def outcome():
        spec = privspec.load(text)
        return [(d.code, d.span, d.message, d.hint) for d in spec.diagnostics]

    got = outcome()
    monkeypatch.setattr(parser, "_label_set_declaration", lambda chunk, offset: None)
    assert got == outcome()
    if at is None:
        assert got and got[0][0] != "E106"
        return
    (code, span, message, hint), = [g for g in got if g[0] == "E106"]
    assert text[span.start:span.end] == at and f"unknown escape '{at}'" in message
    assert '\\"' in hint and "\\\\" in hint


def test_unquoted_label_that_is_not_a_name_is_an_error() -> None:
    _, codes = parse("variable r: categorical {Amer-Indian, b}")
    assert codes and codes[0].startswith("E1")
    _, codes = parse("variable r: categorical {1st, b}")
    assert codes and codes[0].startswith("E1")


def test_single_quotes_are_refused_with_a_hint() -> None:
    spec = privspec.load("variable r: categorical {'a', b}")
    (d,) = spec.check()
    assert d.code == "E102" and "double quotes" in d.hint


@pytest.mark.parametrize("name, ok", [
    ("x", True), ("_x", True), ("x_1", True), ("X9_", True), ("_", True),
    ("1x", False), ("x-y", False), ("é", False), ("x.y", False),
])
def test_names(name: str, ok: bool) -> None:
    _, codes = parse(f"variable {name}: continuous")
    assert (codes == []) is ok, codes


@pytest.mark.parametrize("text", [
    # {} across lines
    "mechanism cond = subset(color, conditional { {black, red}: 1/2, {green, blue}: 1/2,\n"
    "                                             {black, green}: 1/2, {red, blue}: 1/2 })",
    # [] across lines
    "mechanism w = rr(gender, matrix [[3/4, 1/4],\n"
    "                                 [1/4, 3/4]])",
    # () across lines, with blank and comment lines inside
    "mechanism m = product(grr(gender, epsilon = 1),\n"
    "\n"
    "     # the second factor\n"
    "                      grr(race, epsilon = 1))",
])
def test_declarations_span_lines_inside_brackets(text: str) -> None:
    decls, codes = parse(text + "\nvariable after: continuous\n")
    assert codes == []
    assert len(decls) == 2
    assert isinstance(decls[0], ast.MechanismDecl)
    assert decls[0].span == Span(0, len(text))
    assert decls[1].name.name == "after"


def test_a_newline_outside_brackets_ends_the_declaration() -> None:
    decls, codes = parse("variable x:\n  continuous")
    assert decls == []
    assert len(codes) == 2 and all(c.startswith("E1") for c in codes)
    decls, codes = parse("parameter p = 1 +\n 2")
    assert decls == [] and len(codes) == 2


def test_crlf_line_ends() -> None:
    decls, codes = parse("variable x: categorical {a,\r\n b}\r\nvariable y: continuous\r\n")
    assert codes == []
    assert len(decls) == 2


def test_split_declarations() -> None:
    text = "  variable x: continuous  \n\n# c\nmechanism m = f(a,\n  b)  # end\n"
    assert [text[s:e] for s, e in split_declarations(text)] == [
        "variable x: continuous", "mechanism m = f(a,\n  b)"]


def test_unclosed_bracket_is_reported_where_it_was_opened() -> None:
    text = "variable x: categorical {a, b\nvariable y: continuous\n"
    decls, diags, _ = parse_declarations(Source(text))
    assert [d.code for d in diags] == ["E103"]
    assert diags[0].span == Span(text.index("{"), text.index("{") + 1)
    assert [d.name.name for d in decls] == ["y"]  # the next declaration still parses


def test_one_error_per_declaration_and_the_rest_still_parse() -> None:
    text = "variable x: oops\nvariable y: continuous\nquery q = = 1\nvariable z: continuous"
    decls, codes = parse(text)
    assert codes == ["E101", "E101"]
    assert [d.name.name for d in decls] == ["y", "z"]


def test_title_with_escaped_quote() -> None:
    (decl,), codes = parse(r'spec "the \"urn\" example"')
    assert codes == [] and decl.title == 'the "urn" example'


# ---- the builder's speed measures (issue 38) keep what it builds ---------------------------
def test_ast_nodes_are_slotted_and_still_copy_and_pickle() -> None:
    import copy
    import pickle

    (decl,), diags, _ = parse_declarations(Source("mechanism m = grr(c, epsilon = log(3) + x)"))
    assert not diags
    call = decl.value
    assert not hasattr(call, "__dict__") and not hasattr(call.func, "__dict__")
    assert copy.copy(call) == call and copy.deepcopy(call) == call and pickle.loads(pickle.dumps(decl)) == decl
    with pytest.raises(AttributeError):
        call.func.name = "rr"


def test_a_remembered_fold_is_refused_again_where_each_is_written() -> None:
    text = "parameter a = 1/0\nparameter b = 1/0\nparameter c = 1/10\nparameter d = 1/10\n"
    spec = privspec.load(text)
    refused = [d for d in spec.diagnostics if d.code == "E104"]
    assert [d.message for d in refused] == ["division by zero"] * 2
    assert [text[d.span.start:d.span.end] for d in refused] == ["1/0", "1/0"]
    assert refused[0].span != refused[1].span


def test_loading_a_spec_leaves_the_cycle_collector_as_it_found_it() -> None:
    import gc

    assert gc.isenabled()
    privspec.load("variable x: continuous")
    assert gc.isenabled()
    gc.disable()
    try:
        privspec.load("variable x: continuous")
        assert not gc.isenabled()
    finally:
        gc.enable()
