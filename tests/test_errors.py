"""Every diagnostic the checker emits, one table row each, with its span written inline.

Patsy style: the part of the spec a diagnostic must point at is marked ``«...»`` in the
spec text (guillemets cannot clash with the language, whose ``<`` and ``>`` appear in
``parameter eps > 0``).  The markers are stripped, the text is loaded, and the row
passes when a diagnostic with that code covers exactly the marked range, has the right
severity, says the facts the user needs (the sum, the category, a did-you-mean, what
was expected) and renders as ``<string>:LINE:COL: error[CODE]: message`` with carets
under the marked text.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import privspec
from privspec.cli import main
from privspec.errors import SpecError, SpecSyntaxError
from privspec.language.source import LINE_SHOWN, Span

OPEN, CLOSE = "«", "»"

COLOR = "variable color: categorical {black, red, green, blue}\n"
RACE = 'variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}\n'
GI = "variable gender: categorical {Female, Male}\nvariable income: categorical {Low, High}\n"
URN = COLOR + "mechanism urn = subset(color, uniform)\n"
RELVARS = "variable degree: categorical {BA, BSc, BEng}\nvariable band: categorical {b1, b2, b3, b4}\n"


def marked(text: str) -> tuple[str, Span]:
    """Strip one ``«...»`` pair from ``text``; return the clean text and the marked span.

    Examples
    --------
    >>> marked("mechanism m = «foo»(color, uniform)")
    ('mechanism m = foo(color, uniform)', Span(start=14, end=17))
    """
    assert text.count(OPEN) == 1 and text.count(CLOSE) == 1, "mark exactly one span"
    start = text.index(OPEN)
    end = text.index(CLOSE) - len(OPEN)
    assert start <= end, "« must come before »"
    return text.replace(OPEN, "").replace(CLOSE, ""), Span(start, end)


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column, computed here so as not to trust :class:`Source`."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def case(id: str, code: str, text: str, msg: tuple[str, ...] = (), hint: tuple[str, ...] = (),
         also: tuple[str, ...] = (), marks=()):
    """One row: ``msg``/``hint`` must appear in the message/hint; ``also`` lists the other
    codes the spec may legitimately report besides ``code`` (anything else is a cascade)."""
    return pytest.param(code, text, msg, hint, also, id=id, marks=marks)


CASES = [
    # ---- syntax (E1xx): what was found and what was expected -------------------------
    case("E101-comma-missing", "E101", "variable x: categorical {a «b»}",
         msg=("'b'",), hint=("expected", "comma")),
    case("E101-number-label", "E101", "variable x: categorical {«1», 2}",
         msg=("'1'",), hint=('"1"',)),
    case("E101-bad-keyword", "E101", "variable x: «discrete» {a, b}",
         msg=("discrete",), hint=("expected", "'categorical'", "'continuous'")),
    case("E101-start-of-declaration", "E101", "«let» x = 1",
         msg=("start of a declaration",), hint=("variable", "mechanism", "not Python")),
    case("E101-extra-close", "E101", COLOR + "mechanism m = subset(color, uniform)«)»",
         msg=("')'",), hint=("expected", "end of the declaration")),
    case("E101-python-power", "E101", "parameter eps = 2*«*»3", hint=("powers are written with ^",)),
    case("E102-single-quote", "E102", "variable x: categorical {«'»a', b}",
         msg=("'",), hint=("double quotes",)),
    case("E102-single-quote-title", "E102", "spec «'»urn'", hint=("double quotes",)),
    case("E102-dollar", "E102", "parameter eps > «$»0", msg=("'$'",), hint=("expected", "a number")),
    case("E102-not-equal", "E102", "parameter eps «!»= 0", hint=("> 0",)),
    case("E103-unclosed-brace", "E103", "variable color: categorical «{»black, red, green",
         msg=("'{'", "never closed"), hint=("'}'",)),
    case("E103-unclosed-paren", "E103", COLOR + "mechanism m = subset«(»color, uniform",
         msg=("'('", "never closed"), hint=("')'",)),
    case("E103-unclosed-over-lines", "E103",
         COLOR + "mechanism m = subset(color, conditional «{» {black, red}: 1/2,\n  {green, blue}: 1/2\n"
                 "query c = coverage(m)",
         msg=("never closed",)),
    case("E103-end-of-declaration", "E103", "mechanism m «=»",
         msg=("unexpected end of declaration",), hint=("expected", "a name", "a number")),
    case("E104-division-by-zero", "E104",
         COLOR + "population color ~ categorical(black = «1/0», red = 0.1, green = 0.2, blue = 0.69)",
         msg=("division by zero",)),
    case("E104-division-by-parenthesized-zero", "E104", RACE + "mechanism rr = grr(race, epsilon = «1/(1-1)»)",
         msg=("division by zero",)),
    case("E104-symbolic-division-by-zero", "E104", RACE + "parameter a > 0\nmechanism rr = grr(race, epsilon = «a/0»)",
         msg=("division by zero",)),
    case("E104-number-out-of-range", "E104",
         COLOR + "population color ~ categorical(black = «1e5000», red = 0.1, green = 0.2, blue = 0.69)",
         msg=("1e5000", "out of range")),
    case("E104-power-too-large", "E104", RACE + "mechanism rr = grr(race, epsilon = «10^100000»)",
         msg=("too large",)),
    case("E104-not-real", "E104", RACE + "mechanism rr = grr(race, epsilon = «sqrt(-1)»)",
         msg=("not a real number",)),
    # issue 14: arithmetic that is complex, huge or undecidable is refused where it is written
    case("E104-negative-to-irrational-power", "E104", RACE + "mechanism rr = grr(race, epsilon = «(-1)^pi»)",
         msg=("not a real number",), hint=("write the sign outside",)),
    case("E104-parameter-not-real", "E104", "parameter a = «(-1)^pi»", msg=("not a real number",)),
    case("E104-probability-not-real", "E104", COLOR + "mechanism m = subset(color, sizes {2: «(-1)^pi»})",
         msg=("not a real number",)),
    case("E104-huge-power", "E104", "parameter a = «pi^(1e2999)»", msg=("too large to compute exactly",)),
    case("E104-power-with-rational-exponent", "E104", "parameter a = «100^(1e9/3)»",
         msg=("too large to compute exactly",), hint=("limited to about 10^",)),
    case("E104-huge-probability", "E104",
         "variable x: categorical {a, b, c}\npopulation x ~ categorical(«(1e2999*7^(1/3))^10», 1/2, 1/2)",
         msg=("too large to compute exactly",)),
    case("E104-complex-inside-sqrt", "E104", RACE + "mechanism rr = grr(race, epsilon = sqrt(«(-(1e2999))^(log(1e-9))»))",
         msg=("not a real number",)),
    case("E104-zero-but-not-recognizably", "E104", RACE + "mechanism rr = grr(race, epsilon = «log(8) - 3*log(2)»)",
         msg=("zero to 30 digits",), hint=("write 0",)),
    case("E104-power-indistinguishable-from-one", "E104", "parameter a = sqrt(exp(«339565^(1e-300)»))",
         msg=("1 to 30 digits but not exactly 1",), hint=("write 1",)),
    case("E104-log-of-zero", "E104", "parameter a = «log(0)»", msg=("log(0) is -inf",)),
    case("E104-parameter-power-at-its-value", "E104", "parameter a = 2\nparameter b > 0\n"
         "variable x: categorical {u, v}\nmechanism m = grr(x, epsilon = «a^1000000»)",
         msg=("too large",)),
    case("E105-declaration-too-long", "E105",
         "variable x: categorical {a, b}\n«mechanism» m = grr(x, epsilon = " + "1 + " * 600_000 + "1)",
         msg=("characters long", "limited to 2,000,000"), hint=("split it",)),
    case("E106-unknown-escape-in-a-label", "E106", 'variable x: categorical {"a«\\i»nput", b}',
         msg=("unknown escape '\\i'",), hint=('\\"', "\\\\")),
    case("E106-unknown-escape-in-the-title", "E106", 'spec "C:«\\n»ew"', msg=("unknown escape '\\n'",)),
    case("E106-unknown-escape-in-a-population", "E106",
         COLOR + 'population color ~ categorical("bl«\\a»ck" = 1/4, red = 1/4, green = 1/4, blue = 1/4)',
         msg=("unknown escape",)),

    # ---- names (E2xx) --------------------------------------------------------------------
    case("E201-variable", "E201", COLOR + "mechanism m = subset(«colr», uniform)",
         msg=("'colr'",), hint=("did you mean 'color'?",)),
    case("E201-mechanism", "E201", URN + "query c = coverage(«urm»)",
         msg=("'urm'",), hint=("did you mean 'urn'?",)),
    case("E201-parameter", "E201", RACE + "parameter eps > 0\nmechanism rr = grr(race, epsilon = «epz»)",
         msg=("'epz'",), hint=("did you mean 'eps'?",)),
    case("E201-protected", "E201",
         GI + "release D = counts(gender, income) with geometric(epsilon = 1) protect {«incme»}",
         msg=("'incme'",), hint=("did you mean 'income'?",)),
    case("E201-no-candidate", "E201", "mechanism m = subset(«zzz», uniform)",
         msg=("'zzz'",), hint=("declare it first",)),
    case("E202-duplicate-variable", "E202", COLOR + "variable «color»: continuous",
         msg=("'color'", "already declared")),
    case("E202-duplicate-across-kinds", "E202", COLOR + "mechanism «color» = subset(color, uniform)",
         msg=("'color'", "variable")),
    case("E202-reserved", "E202", "variable «pi»: continuous", msg=("reserved",)),
    case("E202-second-population", "E202",
         COLOR + "population color ~ categorical(0.25, 0.25, 0.25, 0.25)\n"
                 "population «color» ~ categorical(0.25, 0.25, 0.25, 0.25)",
         msg=("color", "already has a population")),
    case("E202-duplicate-candidate", "E202",
         RACE + "compare d for distribution(race) {\n  a = grr(race, epsilon = 1)\n  «a» = grr(race, epsilon = 2)\n}",
         msg=("'a'", "twice")),
    case("E203-variable", "E203", "mechanism m = subset(«color», uniform)\n" + COLOR,
         msg=("'color'", "before its declaration"), hint=("move",)),
    case("E203-mechanism", "E203", COLOR + "query c = coverage(«urn»)\nmechanism urn = subset(color, uniform)",
         msg=("'urn'", "before its declaration")),
    case("E204-variable-as-mechanism", "E204", COLOR + "query e = epsilon(«color»)",
         msg=("'color' is a variable", "mechanism")),
    case("E204-from-variable", "E204", URN + "query w = estimate distribution(color) from «color» by mom",
         msg=("'color' is a variable",), hint=("urn",)),
    case("E205-unknown-option", "E205", RACE + "mechanism rr = grr(race, epsilon = 1, «delta» = 2)",
         msg=("no option 'delta'",), hint=("epsilon",)),
    case("E205-option-typo", "E205", COLOR + "mechanism m = subset(color, uniform, «min_coverge» = 1/5)",
         msg=("min_coverge",), hint=("did you mean 'min_coverage'?",)),
    case("E205-too-many-positional", "E205", COLOR + "mechanism m = subset(color, uniform, «3»)",
         msg=("2 positional arguments", "found 3")),
    case("E205-missing-argument", "E205", RACE + "mechanism rr = «grr(race)»",
         msg=("needs its epsilon",), hint=("grr(VARIABLE, epsilon = e)",)),
    case("E205-missing-comma", "E205", COLOR + "mechanism m = subset(«color uniform»)",
         msg=("color uniform",), hint=("comma",)),
    case("E205-given-twice", "E205", RACE + "mechanism rr = grr(race, epsilon = 1, «epsilon» = 2)",
         msg=("twice",)),
    case("E205-not-a-number", "E205", RACE + "mechanism rr = grr(race, epsilon = «{a}»)",
         msg=("expected epsilon",)),
    case("E205-whole-number", "E205", "variable s: continuous [0, 1]\nmechanism p = progressive(s, rounds = «3/2»)",
         msg=("whole number", "3/2")),
    case("E206-mechanism", "E206", COLOR + "mechanism m = «subst»(color, uniform)",
         msg=("unknown mechanism 'subst'",), hint=("did you mean 'subset'?",)),
    case("E206-design", "E206", COLOR + "mechanism m = subset(color, «unifrom»)",
         msg=("'unifrom'",), hint=("did you mean 'uniform'?",)),
    case("E206-tagged-design", "E206", COLOR + "mechanism m = subset(color, «conditonal { {black, red}: 1 }»)",
         msg=("'conditonal'",), hint=("did you mean 'conditional'?",)),
    case("E206-population-law", "E206", "variable score: continuous\npopulation score ~ «gauss(0, 1)»",
         msg=("'gauss'",), hint=("normal",)),
    case("E206-anchor-law", "E206", "variable s: continuous\nmechanism c = interval(s, case1(«unifrm(0, 1)»))",
         msg=("'unifrm'",), hint=("did you mean 'uniform'?",)),
    case("E206-interval-scheme", "E206", "variable s: continuous\nmechanism c = interval(s, «cas1(uniform(0, 1))»)",
         msg=("'cas1'",), hint=("did you mean 'case1'?",)),
    case("E206-censored-ends", "E206", "variable t: continuous\nmechanism o = censored(t, ends = «cloesd»)",
         msg=("'cloesd'",), hint=("did you mean 'closed'?",)),
    case("E205-censored-lower-alone", "E205", "variable t: continuous\nmechanism o = «censored(t, lower = L)»",
         msg=("lower = and upper = go together",), hint=("give both columns",)),
    case("E205-censored-same-column", "E205",
         "variable t: continuous\nmechanism o = censored(t, lower = L, upper = «L»)", msg=("same column 'L'",)),
    case("E205-censored-column-number", "E205",
         "variable t: continuous\nmechanism o = censored(t, lower = «1», upper = R)", msg=("names a data column",)),
    case("E205-censored-option", "E205", "variable t: continuous\nmechanism o = censored(t, «anchor» = 1)",
         msg=("no option 'anchor'",)),
    case("E206-query", "E206", URN + "query c = «coverge»(urn)",
         msg=("unknown query 'coverge'",), hint=("did you mean 'coverage'?",)),
    case("E206-estimand", "E206", URN + "query w = estimate «distrbution(color)» from urn by mom",
         msg=("'distrbution'",), hint=("did you mean 'distribution'?",)),
    case("E206-noise", "E206", GI + "release A = counts(gender, income) with «laplace(epsilon = 1)»",
         msg=("'laplace'",), hint=("geometric",)),
    case("E207-title-twice", "E207", 'spec "one"\n«spec "two"»', msg=("title", "twice")),

    # ---- values (E3xx) ------------------------------------------------------------------
    case("E301-population", "E301",
         COLOR + "population color ~ categorical(black = «3/2», red = 0.1, green = 0.2, blue = 0.69)",
         msg=("3/2", "outside [0, 1]")),
    case("E301-design-weight", "E301", COLOR + "mechanism m = subset(color, sizes {2: «-1/2», 3: 1})",
         msg=("-1/2", "outside [0, 1]")),
    case("E301-matrix-entry", "E301", GI + "mechanism w = rr(gender, matrix [[«3/2», -1/2], [1/4, 3/4]])",
         msg=("3/2",), also=("E301",)),
    case("E302-population", "E302",
         COLOR + "population color ~ «categorical(black = 0.1, red = 0.1, green = 0.2, blue = 0.5)»",
         msg=("do not sum to 1", "sum = 0.9")),
    case("E302-positional-population", "E302", RACE + "population race ~ «categorical(0.1, 0.1, 0.1, 0.1, 0.1)»",
         msg=("sum = 1/2",)),
    case("E302-sizes", "E302", COLOR + "mechanism m = subset(color, «sizes {2: 1/2, 3: 1/4}»)",
         msg=("sum = 3/4",)),
    case("E303-negative-count", "E303", GI + "population (gender, income) ~ counts [[9592, «-1179»], [15128, 6662]]",
         msg=("-1179", "negative")),
    case("E303-all-zero", "E303", GI + "population (gender, income) ~ «counts [[0, 0], [0, 0]]»",
         msg=("zero",)),
    case("E304-zero", "E304", RACE + "mechanism rr = grr(race, epsilon = «0»)", msg=("> 0", "found 0")),
    case("E304-negative", "E304", RACE + "mechanism rr = grr(race, epsilon = «-1»)", msg=("found -1",)),
    case("E304-negated-parentheses", "E304", RACE + "mechanism rr = grr(race, epsilon = «-(1)»)",
         msg=("found -1",)),
    case("E304-symbolic-unbounded", "E304", RACE + "parameter eps\nmechanism rr = grr(race, epsilon = «eps»)",
         msg=("eps",), hint=("parameter eps > 0",)),
    case("E304-symbolic-nonnegative", "E304", RACE + "parameter eps >= 0\nmechanism rr = grr(race, epsilon = «eps»)",
         msg=("eps",), hint=("parameter eps > 0",)),
    case("E304-symbolic-expression", "E304", RACE + "parameter eps > 0\nmechanism rr = grr(race, epsilon = «eps - 1»)",
         msg=("may not be",)),
    case("E304-release", "E304", GI + "release A = counts(gender, income) with geometric(epsilon = «0»)",
         msg=("found 0",)),
    case("E304-product-factor", "E304",
         RACE + GI + "mechanism m = product(grr(race, epsilon = «0»), grr(gender, epsilon = 1))"),
    case("E305-ragged", "E305", GI + "mechanism w = rr(gender, «matrix [[3/4, 1/4], [1/4]]»)",
         msg=("not square",)),
    case("E305-wrong-size", "E305",
         GI + "mechanism w = rr(gender, «matrix [[1/2, 1/4, 1/4], [1/4, 1/2, 1/4], [1/4, 1/4, 1/2]]»)",
         msg=("3x3", "2 categories")),
    case("E306-row-sum", "E306", GI + "mechanism w = rr(gender, matrix [[3/4, 1/4], «[1/2, 1/4]»])",
         msg=("row 2", "Male", "3/4"), hint=("row-stochastic",)),
    case("E307-design-label", "E307",
         COLOR + "mechanism m = subset(color, conditional { {black, «rd»}: 1/2, {green, blue}: 1/2, "
                 "{black, green}: 1/2, {red, blue}: 1/2 })",
         msg=("'rd'", "color"), hint=("did you mean 'red'?",)),
    case("E307-population-label", "E307",
         COLOR + "population color ~ categorical(black = 0.01, «rd» = 0.1, green = 0.2, blue = 0.69)",
         msg=("'rd'",), hint=("did you mean 'red'?",)),
    case("E307-no-close-label", "E307", COLOR + "mechanism m = subset(color, independent { {black, «zzz»}: 1 })",
         msg=("'zzz'",), hint=("black, red, green, blue",)),
    case("E309-min-coverage", "E309", COLOR + "mechanism m = subset(color, uniform, min_coverage = «1/2»)",
         msg=("min_coverage", "1/2")),
    case("E309-one-category", "E309", "«variable x: categorical {a}»", msg=("at least 2 categories",)),
    case("E309-empty-support", "E309", "variable s: continuous [«1, 0»]", msg=("empty",)),
    case("E309-uniform-order", "E309", "variable s: continuous\nmechanism c = interval(s, case1(«uniform(1, 0)»))",
         msg=("a < b",)),
    case("E309-population-support", "E309", "variable salary: continuous [0, 150]\npopulation salary ~ «normal(0, 1)»",
         msg=("outside the support", "[0, 150]")),
    case("E310-probability-count", "E310", COLOR + "population color ~ «categorical(0.5, 0.5)»",
         msg=("2 probabilities", "4 categories"), hint=("black, red, green, blue",)),
    case("E310-counts-shape", "E310", GI + "population (gender, income) ~ counts [[1, 2], «[3]»]",
         msg=("expected 2 entries",)),
    case("E311-label-twice", "E311", "variable x: categorical {a, b, «a»}", msg=("'a'", "twice")),
    case("E311-subset-twice", "E311",
         COLOR + "mechanism m = subset(color, independent { {black, red}: 1/2, «{red, black}»: 1/2 })",
         msg=("twice",)),
    case("E312-value-breaks-bound", "E312", "parameter eps > 0 = «-1»", msg=("-1", "> 0")),
    case("E312-empty-bounds", "E312", "«parameter t > 2 < 1»", msg=("no value",)),

    # ---- mechanisms (E4xx) -----------------------------------------------------------------
    case("E401-subset-on-continuous", "E401", "variable salary: continuous [0, 150]\nmechanism m = subset(«salary», uniform)",
         msg=("salary is continuous",), hint=("interval(salary",)),
    case("E401-grr-on-continuous", "E401", "variable s: continuous\nmechanism m = grr(«s», epsilon = 1)",
         msg=("s is continuous",)),
    case("E401-interval-on-categorical", "E401", COLOR + "mechanism m = interval(«color», case1(uniform(0, 1)))",
         msg=("color is categorical",), hint=("subset(color, uniform)",)),
    case("E401-censored-on-categorical", "E401", COLOR + "mechanism m = censored(«color»)",
         msg=("color is categorical",), hint=("continuous",)),
    case("E401-combine-continuous", "E401", GI + "variable s: continuous\n«variable gs = gender * s»",
         msg=("s is continuous",)),
    case("E401-selective-on-subset", "E401", URN + "mechanism s = selective(«urn», tau = 3/10, rho = 1/2)",
         msg=("interval mechanism",)),
    case("E401-estimand-type", "E401",
         "variable s: continuous\nmechanism c = interval(s, case1(uniform(0, 1)))\n"
         "query w = estimate distribution(«s») from c by mom",
         msg=("s is continuous",)),
    case("E402-brief-example", "E402",
         COLOR + "mechanism m = subset(color, «conditional { {black, red}: 1/2, {green, blue}: 1/2, "
                 "{black, green}: 1/3, {red, blue}: 1/2 }»)",
         msg=("'black'", "sum = 5/6"), hint=("Definition 2",)),
    case("E402-red", "E402",
         COLOR + "mechanism m = subset(color, «conditional { {black, red}: 1/2, {green, blue}: 1/2, "
                 "{black, green}: 1/2, {red, blue}: 1/3 }»)",
         msg=("'red'", "sum = 5/6")),
    case("E402-category-missing", "E402",
         COLOR + "mechanism m = subset(color, «conditional { {black, red}: 1, {black, green}: 0 }»)",
         msg=("'green'", "sum = 0")),
    case("E403-size-1", "E403", COLOR + "mechanism m = subset(color, independent { «{black}»: 1/2, {black, red}: 1/2 })",
         msg=("size 1 or p - 1 = 3",), hint=("Definition 3",)),
    case("E403-size-p-minus-1", "E403",
         COLOR + "mechanism m = subset(color, independent { «{black, red, green}»: 1/2, {black, red}: 1/2 })",
         msg=("p - 1 = 3",)),
    case("E404-sum", "E404", COLOR + "mechanism m = subset(color, «independent { {black, red}: 2/5, {black, green}: 3/10 }»)",
         msg=("do not sum to 1", "sum = 0.7"), hint=("Definition 3",)),
    case("E405-two-categories", "E405", GI + "mechanism m = subset(«gender», uniform)",
         msg=("at least 3 categories", "gender has 2"), hint=("II-D", "gender * income", "min_coverage")),
    case("E405-three-categories-independent", "E405", "variable x: categorical {a, b, c}\nmechanism m = subset(x, «uniform»)",
         msg=("at least 4 categories",), hint=("sizes {2: 1}", "min_coverage")),
    case("E406-bounded-support", "E406",
         "variable salary: continuous [0, 150]\nmechanism c1 = interval(salary, case1(«uniform(0, 100)»))",
         msg=("salary", "[0, 150]", "above 100"), hint=("uniform(0, 150)",)),
    case("E406-below", "E406",
         "variable salary: continuous [0, 150]\nmechanism c1 = interval(salary, case1(«uniform(50, 150)»))",
         msg=("below 50",)),
    case("E406-half-bounded", "E406",
         "variable life: continuous [0, inf]\nmechanism c1 = interval(life, case2(«uniform(1, 100)»))",
         msg=("[0, inf]", "below 1")),
    case("E406-progressive-unbounded", "E406", "variable s: continuous\nmechanism p = progressive(«s», rounds = 3)",
         msg=("unbounded",), hint=("continuous [a, b]",)),
    case("E409-min-coverage-conditional", "E409",
         "variable c: categorical {a, b, c, d}\nmechanism m = subset(c, sizes {2: 1}, min_coverage = «1/5»)",
         msg=("uniform or independent",), hint=("Appendix II",)),
    case("E407-singleton", "E407", COLOR + "mechanism m = subset(color, conditional { «{black}»: 1 })",
         msg=("one category",), hint=("Definition 2",)),
    case("E408-size-1", "E408", COLOR + "mechanism m = subset(color, sizes {«1»: 1})", msg=("size 1", "p = 4")),
    case("E408-size-above-p", "E408", COLOR + "mechanism m = subset(color, sizes {«5»: 1})", msg=("size 5",)),

    # ---- queries (E5xx) ------------------------------------------------------------------
    case("E501-castell-single-variable", "E501",
         GI + RACE + "mechanism rr = grr(race, epsilon = 1)\nquery j = estimate joint(gender, race) from rr by «castell»",
         msg=("'castell'", "product mechanism", "rr"), hint=("product(grr",), also=("E503",)),
    case("E501-castell-combined-domain", "E501",
         GI + RACE + "mechanism whole = grr(gender * race * income, epsilon = 3)\n"
                     "query j = estimate joint(gender, race, income) from whole by «castell»",
         msg=("'castell'", "as one variable"), hint=("'joint'",)),
    case("E501-joint-from-product", "E501",
         GI + RACE + "mechanism multi = product(grr(gender, epsilon = 1), grr(race, epsilon = 1))\n"
                     "query j = estimate joint(gender, race) from multi by «joint»",
         msg=("product",), hint=("castell",)),
    case("E501-unbiased-from-case2", "E501",
         "variable score: continuous\nmechanism c2 = interval(score, case2(logistic(0, 5)))\n"
         "query mu = estimate mean(score) from c2 by «unbiased»",
         msg=("Case-I", "uniform anchors"), hint=("npmle",)),
    case("E501-newton-from-rr", "E501",
         RACE + "mechanism rr = grr(race, epsilon = 1)\nquery w = estimate distribution(race) from rr by «newton»",
         msg=("subset-privacy estimator",), hint=("mom or mle",)),
    case("E501-independence-not-product", "E501",
         GI + "variable gi = gender * income\nmechanism m = subset(gi, uniform)\n"
              "query t = test independence(gender, income) from «m» by pearson",
         msg=("product mechanism",)),
    case("E501-size-coverage-of-rr", "E501", RACE + "mechanism rr = grr(race, epsilon = 1)\nquery c = «coverage(rr)»",
         msg=("set-valued",), hint=("mutual_information",)),
    case("E501-budget-without-release", "E501", "query b = «budget(per variable)»", msg=("releases",)),
    case("E501-fisher-of-interval", "E501", "variable s: continuous\nmechanism c = interval(s, case1(uniform(0, 1)))\n"
                                            "query f = fisher(«c»)",
         msg=("finite mechanisms",)),
    case("E502-estimator", "E502", URN + "query w = estimate distribution(color) from urn by «mome»",
         msg=("'mome'",), hint=("did you mean 'mom'?",)),
    case("E502-test", "E502",
         RACE + GI + "mechanism prod = product(subset(race, uniform), grr(gender, epsilon = 1))\n"
                     "query t = test independence(race, gender) from prod by «lrt_mon»",
         msg=("'lrt_mon'",), hint=("did you mean 'lrt_mom'?",)),
    case("E502-metric", "E502", URN + "query l = leakage(urn, «size_coverage»)", msg=("size_coverage",)),
    case("E502-criterion", "E502",
         RACE + "compare d for distribution(race) {\n  a = grr(race, epsilon = 1)\n} by «avar_trac»",
         hint=("did you mean 'avar_trace'?",)),
    case("E503-not-observed", "E503", COLOR + GI + "mechanism urn = subset(color, uniform)\n"
                                                   "query w = estimate distribution(gender) from «urn» by mom",
         msg=("urn observes color", "not gender")),
    case("E503-candidate", "E503",
         RACE + COLOR + "compare d for distribution(race) {\n  a = «subset(color, uniform)»\n}",
         msg=("does not observe race",)),
    case("E503-optimal-anchor", "E503",
         "variable s: continuous [0, 1]\nvariable t: continuous [0, 1]\n"
         "mechanism c = interval(s, case1(uniform(0, 1)))\nquery g = optimal_anchor(mean(t), «c»)",
         msg=("not t",)),
    case("E504-missing-from", "E504", URN + "query w = estimate «distribution(color)» by mom",
         msg=("from MECHANISM",), hint=("from urn",)),
    case("E504-missing-by", "E504", URN + "query w = estimate «distribution(color)» from urn",
         msg=("by METHOD",), hint=("mom", "mle")),
    case("E505-lrt-mom-asymptotic", "E505",
         RACE + GI + "variable gi = gender * income\n"
                     "mechanism prod = product(subset(race, uniform), subset(gi, uniform))\n"
                     "query t = test independence(race, gi) from prod by lrt_mom calibrate «asymptotic»",
         msg=("lrt_mom", "no chi-square limit"), hint=("permutation", "by lrt")),
    case("E502-calibration", "E502",
         RACE + GI + "variable gi = gender * income\n"
                     "mechanism prod = product(subset(race, uniform), subset(gi, uniform))\n"
                     "query t = test independence(race, gi) from prod by lrt calibrate «bootstrap(99)»",
         msg=("'bootstrap'",), hint=("permutation | asymptotic",)),
    case("E205-asymptotic-argument", "E205",
         RACE + GI + "variable gi = gender * income\n"
                     "mechanism prod = product(subset(race, uniform), subset(gi, uniform))\n"
                     "query t = test independence(race, gi) from prod by lrt calibrate «asymptotic(3)»",
         msg=("no arguments",)),

    # ---- releases (E6xx) ------------------------------------------------------------------
    case("E601-protect-not-in-table", "E601",
         GI + RELVARS + "release D = counts(gender, income) with geometric(epsilon = 1) protect {«degree»}",
         msg=("degree", "not in this table", "gender, income")),
    case("E601-totals-not-in-table", "E601",
         GI + RELVARS + "release D = counts(gender, income) with geometric(epsilon = 1) protect {income} "
                        "exact totals(«degree»)",
         msg=("degree", "not in this table")),
    case("E602-exact-totals-protected", "E602",
         RELVARS + "release D = counts(degree, band) with geometric(epsilon = 1) protect {band} exact totals(«band»)",
         msg=("band", "protected"), hint=("Algorithm 1", "protect {degree}")),
    case("E602-everything-protected", "E602",
         RELVARS + "release D = counts(degree, band) with geometric(epsilon = 1) exact totals(«degree»)",
         msg=("degree", "protected")),
    case("E603-unknown-calibration", "E603",
         RELVARS + "release D = counts(degree, band) with geometric(epsilon = 1, calibration = «papr») "
                   "protect {band} exact totals(degree)",
         msg=("'papr'", "tight or paper"), hint=("did you mean 'paper'?", "spends exactly epsilon")),
    case("E603-calibration-not-a-word", "E603",
         RELVARS + "release D = counts(degree, band) with geometric(epsilon = 1, calibration = «1/2»)",
         msg=("tight or paper", "found"), hint=("epsilon/2-private",)),

    # ---- warnings: valid but not identifiable ----------------------------------------------
    case("W101-cond-design", "W101",
         COLOR + "mechanism cond = subset(color, «conditional { {black, red}: 1/2, {green, blue}: 1/2,\n"
                 "    {black, green}: 1/2, {red, blue}: 1/2 }»)   # mu_a (Def. 2)",
         msg=("not identifiable", "rank 3"), hint=("Assumption 1",)),
    case("W101-all-categories", "W101", COLOR + "mechanism m = subset(color, «sizes {4: 1}»)",
         msg=("all 4 categories", "not identifiable")),
    case("W101-singular-matrix", "W101", GI + "mechanism w = rr(gender, «matrix [[1/2, 1/2], [1/2, 1/2]]»)",
         msg=("singular", "not identifiable")),
    # ---- sizes a machine cannot hold (E7xx, issue 14: privspec.model.costs) --------------------------
    case("E701-combined-variable-too-large", "E701",
         "".join(f"variable v{i}: categorical {{a, b}}\n" for i in range(40))
         + "«variable big = " + "*".join(f"v{i}" for i in range(40)) + "»",
         msg=("1,099,511,627,776 categories", "the limit is 1,000,000"), hint=("product mechanism",)),
    case("E701-too-many-labels", "E701",
         "variable «x»: categorical {" + ", ".join(f"c{i}" for i in range(1_000_001)) + "}",
         msg=("more than 1,000,000 categories",), hint=("group categories",)),
    case("E701-grr-channel", "E701",
         "variable x: categorical {" + ", ".join(f"c{i}" for i in range(10_000)) + "}\n"
         "mechanism m = «grr(x, epsilon = 1)»", msg=("100,000,000 cells", "the limit is 100,000"),
         hint=("at most 316 for grr",)),
    case("E701-subset-sizes-channel", "E701",
         "variable x: categorical {" + ", ".join(f"c{i}" for i in range(10_000)) + "}\n"
         "mechanism m = «subset(x, sizes {2: 1})»", msg=("49,995,000 reports",), hint=("smaller subset sizes",)),
    case("E701-canonical-ranges", "E701",
         "variable y: continuous [0, 1]\nmechanism m = «interval(y, canonical(100000, uniform(0, 1)))»",
         msg=("100,000 ranges", "the limit is 1,000")),
    case("E701-ring-ranges", "E701",
         "variable y: continuous [0, 1]\nmechanism m = «interval(y, ring(100000, uniform(0, 1)))»",
         msg=("100,000 ranges",)),
    case("E701-canonical-astronomical", "E701",
         "variable y: continuous [0, 1]\nmechanism m = «interval(y, canonical(1e1000, uniform(0, 1)))»",
         msg=("~1.0e+1000 ranges",)),
    case("E701-progressive-rounds", "E701",
         "variable y: continuous [0, 1]\nmechanism m = «progressive(y, rounds = 100000)»",
         msg=("100,000 rounds", "the limit is 100")),
    case("E702-castell-40-attributes", "E702",
         "".join(f"variable v{i}: categorical {{a, b}}\n" for i in range(40))
         + "mechanism m = product(" + ", ".join(f"grr(v{i}, epsilon = 1)" for i in range(40)) + ")\n"
         + "«query j = estimate joint(" + ", ".join(f"v{i}" for i in range(40)) + ") from m by castell»",
         msg=("1,099,511,627,776",), hint=("fewer attributes",)),
    case("E702-uniform-leakage", "E702",
         "variable x: categorical {" + ", ".join(f"c{i}" for i in range(10_000)) + "}\n"
         "mechanism m = subset(x, uniform)\n«query l = leakage(m)»",
         msg=("mutual_information and prediction", "closed forms"), hint=("leakage(m, size)",)),
    case("E702-uniform-avar", "E702",
         "variable x: categorical {" + ", ".join(f"c{i}" for i in range(10_000)) + "}\n"
         "mechanism m = subset(x, uniform)\n«query v = avar(distribution(x) from m by mom)»",
         msg=("100,000,000 numbers", "the limit is 1,000,000"), hint=("at most 1,000 categories",)),
    case("E702-exact-arithmetic", "E702",
         "variable x: categorical {" + ", ".join(f"c{i}" for i in range(30)) + "}\n"
         "mechanism m = grr(x, epsilon = 1)\n«query i = identifiable(m)»",
         msg=("computed exactly", "limited to 6 categories"), hint=("epsilon = log(3)",)),
]


@pytest.mark.parametrize("code, text, msg, hint, also", CASES)
def test_diagnostic(code: str, text: str, msg: tuple[str, ...], hint: tuple[str, ...], also: tuple[str, ...]):
    clean, span = marked(text)
    spec = privspec.load(clean)
    diags = spec.check()
    shown = "\n".join(f"{d.code} {clean[d.span.start:d.span.end]!r} {d.message}" if d.span else d.code
                      for d in diags)
    hits = [d for d in diags if d.code == code and d.span == span]
    assert hits, f"no {code} at {clean[span.start:span.end]!r}; got:\n{shown}"
    d = hits[0]

    # severity: warnings for W codes, and a spec with only warnings is valid
    if code.startswith("W"):
        assert d.severity == "warning" and not d.is_error
        assert spec.ok and not spec.errors, shown
    else:
        assert d.severity == "error" and d.is_error
        assert not spec.ok

    # the facts the user needs
    for needle in msg:
        assert needle in d.message, f"{needle!r} not in message {d.message!r}"
    for needle in hint:
        assert needle in d.hint, f"{needle!r} not in hint {d.hint!r}"

    # one problem, one diagnostic: nothing else cascades out of it
    unexpected = [x for x in diags if x is not d and x.code not in also]
    assert not unexpected, f"unexpected diagnostics besides {code}:\n{shown}"

    # rendered like a compiler, at the right line and column, carets under the span
    line, col = line_col(clean, span.start)
    rendered = d.render(spec.source).splitlines()
    assert rendered[0] == f"<string>:{line}:{col}: {d.severity}[{code}]: {d.message}"
    source_line = clean.splitlines()[line - 1]
    if len(source_line) > LINE_SHOWN:  # a 2 MB line is quoted to its first LINE_SHOWN characters
        source_line = source_line[:LINE_SHOWN] + f" ... ({len(source_line) - LINE_SHOWN:,} more characters)"
    assert rendered[1].split(" | ", 1)[1] == source_line
    end_line, end_col = line_col(clean, span.end)
    width = (end_col - col) if end_line == line else len(clean.splitlines()[line - 1]) - col + 1
    assert rendered[2].split(" | ", 1)[1] == " " * (col - 1) + "^" * max(1, width)
    if d.hint:
        assert rendered[-1] == f"hint: {d.hint}"
    assert "\n".join(rendered) in spec.render_diagnostics()


def test_every_emitted_code_has_a_case():
    """One row per code the checker can emit: a new code needs a new row here."""
    import re

    dsl = Path(privspec.__file__).resolve().parent
    emitted = set()
    for path in dsl.glob("*.py"):
        emitted |= set(re.findall(r'"([EW]\d{3})"', path.read_text(encoding="utf-8")))
    covered = {p.values[0] for p in CASES}
    # E100 (not UTF-8) is the CLI's, tested below; E703 (a simulation's size) is priced when the
    # simulation is asked for, not by the checker: tests/test_cli.py
    missing = sorted(emitted - covered - {"E100", "E703"})
    assert not missing, f"codes without a test case: {missing}"


# ---- accepted: the valid neighbours of the rows above ---------------------------------------
ACCEPTED = [
    pytest.param(GI + "variable gi = gender * income\nmechanism gi_m = subset(gi, uniform)", id="combined-II-D"),
    pytest.param(GI + "mechanism m = subset(gender, uniform, min_coverage = 1/5)", id="dummy-categories"),
    pytest.param(GI + "mechanism m = subset(gender * income, uniform)", id="implicit-combination"),
    pytest.param("variable x: categorical {a, b, c}\nmechanism m = subset(x, sizes {2: 1})", id="three-categories-conditional"),
    pytest.param("variable score: continuous\nmechanism s1 = interval(score, case1(uniform(-9, 9)))",
                 id="anchors-on-unbounded-support"),
    pytest.param("variable salary: continuous [0, 150]\nmechanism c1 = interval(salary, case1(uniform(0, 150)))",
                 id="anchors-cover-support"),
    pytest.param("variable salary: continuous [0, 150]\nmechanism c1 = interval(salary, case1(uniform(-10, 200)))",
                 id="anchors-beyond-support"),
    pytest.param(RACE + "parameter eps > 0\nmechanism rr_s = grr(race, epsilon = eps)", id="symbolic-positive-eps"),
    pytest.param(RACE + "parameter eps > 1\nmechanism rr_s = grr(race, epsilon = eps)", id="symbolic-eps-above-1"),
    pytest.param("parameter t >= 0 <= 0", id="parameter-bounds-meet"),
    pytest.param(COLOR + "mechanism indep = subset(color, independent { {black, red}: 2/5, {black, green}: 3/10,\n"
                         "    {black, blue}: 3/10 })", id="independent-design"),
    pytest.param(COLOR + "mechanism m = subset(color, independent { {black}: 1/2, {black, red}: 1/2 }, "
                         "min_coverage = 1/5)", id="independent-singleton-with-dummies"),
    pytest.param(GI + RACE + "mechanism multi = product(grr(gender, epsilon = 1), grr(race, epsilon = 1), "
                             "grr(income, epsilon = 1))\n"
                             "query j = estimate joint(gender, race, income) from multi by castell", id="castell-product"),
    pytest.param(GI + RACE + "mechanism whole = grr(gender * race * income, epsilon = 3)\n"
                             "query j = estimate joint(gender, race, income) from whole by joint", id="rr-joint"),
    pytest.param("variable salary: continuous [0, 150]\nmechanism c1 = interval(salary, case1(uniform(0, 150)))\n"
                 "query mu = estimate mean(salary) from c1 by unbiased", id="unbiased-case1-uniform"),
    pytest.param(RELVARS + "release D = counts(degree, band) with geometric(epsilon = 1) protect {band} "
                           "exact totals(degree)", id="algorithm-1-release"),
    pytest.param(RELVARS + "release D = counts(degree, band) with geometric(epsilon = 1, calibration = paper) "
                           "protect {band} exact totals(degree)", id="algorithm-1-paper-calibration"),
    pytest.param(RELVARS + "release D = counts(degree, band) with geometric(calibration = tight, epsilon = 1/2)",
                 id="geometric-tight-calibration"),
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted(text: str):
    spec = privspec.load(text)
    assert spec.check() == [], spec.render_diagnostics()
    assert spec.model is not None


# ---- one pass: collect everything, cascade nothing --------------------------------------------
def test_two_syntax_errors_on_different_lines_are_both_reported():
    text = COLOR + "mechanism m = subset(color, uniform))\nvariable y: categorical {a b}\n"
    spec = privspec.load(text)
    diags = spec.check()
    assert [d.code for d in diags] == ["E101", "E101"]
    lines = [spec.source.line_col(d.span.start)[0] for d in diags]
    assert lines == [2, 3]
    rendered = spec.render_diagnostics()
    assert "<string>:2:37: error[E101]" in rendered
    assert "<string>:3:28: error[E101]" in rendered
    with pytest.raises(SpecSyntaxError):
        spec.model


def test_many_errors_are_reported_in_one_pass():
    text = (COLOR
            + "mechanism a = subset(colr, uniform)\n"                 # E201
            + "mechanism b = grr(color, epsilon = 0)\n"               # E304
            + "population color ~ categorical(black = 0.5, red = 0.1, green = 0.2, blue = 0.69)\n"  # E302
            + "variable z: categorical {x, 'y'}\n"                    # E102
            + "mechanism c = subset(color, conditional { {black, red}: 1/2, {green, blue}: 1/2, "
              "{black, green}: 1/2, {red, blue}: 1/3 })\n"            # E402
            + "query q = coverge(urn)\n"                              # E206
            + "mechanism urn = subset(color, uniform)\n")
    spec = privspec.load(text)
    codes = [d.code for d in spec.check()]
    assert codes == ["E201", "E304", "E302", "E102", "E402", "E206"]
    lines = [spec.source.line_col(d.span.start)[0] for d in spec.check()]
    assert lines == [2, 3, 4, 5, 6, 7]
    with pytest.raises(SpecError) as info:
        spec.model
    assert len(info.value.diagnostics) == 6


@pytest.mark.parametrize("text, codes", [
    pytest.param("variable color: categorical {black, red, green\n"
                 "mechanism urn = subset(color, uniform)\nquery c = coverage(urn)\n",
                 ["E103"], id="unclosed-variable"),
    pytest.param(COLOR + "mechanism urn = subset(color, uniform\n"
                         "query c = coverage(urn)\nquery w = estimate distribution(color) from urn by mom\n",
                 ["E103"], id="unclosed-mechanism"),
    pytest.param("variable color categorical {black, red, green, blue}\n"
                 "mechanism urn = subset(color, uniform)\n",
                 ["E101"], id="missing-colon"),
    pytest.param("variable x: continuous [0, 1/0]\nmechanism c = interval(x, case1(uniform(0, 1)))\n",
                 ["E104"], id="folding-error"),
    pytest.param(COLOR + "mechanism urn = subset(color, unifrom)\nquery c = coverage(urn)\n",
                 ["E206"], id="semantic-error-in-mechanism"),
    pytest.param(GI + "variable gi = gender * incme\nmechanism m = subset(gi, uniform)\n",
                 ["E201"], id="combined-with-unknown-part"),
    pytest.param(GI + "release A = counts(gender, incme) with geometric(epsilon = 1)\nquery b = budget(per release)\n",
                 ["E201"], id="broken-release"),
    pytest.param(URN + "query w = estimate distribution(color) from urn by mome\nquery x = avar(w)\n",
                 ["E502", "E205"], id="broken-query-then-misuse"),
])
def test_an_error_in_a_declaration_does_not_cascade(text: str, codes: list[str]):
    """Later uses of a name whose declaration failed are not 'unknown name' errors."""
    spec = privspec.load(text)
    got = [d.code for d in spec.check()]
    assert got == codes, spec.render_diagnostics()


def test_rendering_shows_line_caret_and_hint():
    text = COLOR + "mechanism m = subset(color, conditional { {black, red}: 1/2, {green, blue}: 1/2, " \
                   "{black, green}: 1/2, {red, blue}: 1/3 })"
    out = privspec.load(text).render_diagnostics().splitlines()
    assert out[0] == "<string>:2:29: error[E402]: conditional design does not sum to 1 for category 'red' (sum = 5/6)"
    assert out[1] == "  2 | " + text.splitlines()[1]
    assert out[2] == "    | " + " " * 28 + "^" * len(text.splitlines()[1][28:-1])
    assert out[3].startswith("hint: ")


def test_never_raises_on_broken_text():
    """A prefix of a valid spec, cut anywhere, is diagnosed, never a crash."""
    text = (RACE + GI + "parameter eps > 0\n"
            "population race ~ categorical(0.009551, 0.031909, 0.095943, 0.008323, 0.854274)\n"
            "mechanism rr = grr(race, epsilon = eps)\n"
            "mechanism w = rr(gender, matrix [[3/4, 1/4], [1/4, 3/4]])\n"
            "query v = avar(distribution(race) from rr by mom)\n")
    for cut in range(0, len(text), 7):
        spec = privspec.load(text[:cut] + "\n")
        for d in spec.check():
            assert d.span is not None and 0 <= d.span.start <= d.span.end <= cut + 1


# ---- the command line ------------------------------------------------------------------------
def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def spec_file(tmp_path: Path):
    def write(text: str) -> Path:
        path = tmp_path / "s.privspec"
        path.write_text(text, encoding="utf-8")
        return path
    return write


def test_cli_invalid_spec_exits_1_with_file_line_col(spec_file):
    path = spec_file(COLOR + "mechanism m = subset(colr, uniform)\n")
    code, out, err = _run(["check", str(path)])
    assert code == 1
    assert f"{path}:2:22: error[E201]: unknown variable 'colr'" in err
    assert "hint: did you mean 'color'?" in err
    assert "^^^^" in err


def test_cli_valid_spec_exits_0(spec_file):
    path = spec_file(URN + "query w = estimate distribution(color) from urn by mom\n")
    code, out, err = _run(["check", str(path)])
    assert code == 0, err
    assert err == ""
    assert "ok" in out


def test_cli_warning_exits_0(spec_file):
    path = spec_file(COLOR + "mechanism m = subset(color, sizes {4: 1})\n")
    code, out, err = _run(["check", str(path)])
    assert code == 0
    assert f"{path}:2:29: warning[W101]" in err


@pytest.mark.parametrize("argv", [
    pytest.param(["frobnicate", "{path}"], id="unknown-subcommand"),
    pytest.param(["check", "{path}", "--frobnicate"], id="unknown-option"),
    pytest.param(["check", "{path}", "--format", "yaml"], id="unknown-format"),
    pytest.param(["check"], id="missing-spec"),
    pytest.param([], id="no-command"),
])
def test_cli_usage_errors_exit_2(spec_file, argv):
    path = spec_file(URN)
    code, out, err = _run([a.format(path=path) for a in argv])
    assert code == 2
    assert err.strip()


def test_cli_json_lists_diagnostics(spec_file):
    path = spec_file(COLOR + "mechanism m = subset(colr, uniform)\nmechanism g = subset(color, sizes {4: 1})\n")
    code, out, err = _run(["check", str(path), "--format", "json"])
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["errors"] == 1 and report["warnings"] == 1
    first, second = report["diagnostics"]
    assert first["code"] == "E201" and first["severity"] == "error"
    assert (first["line"], first["column"], first["end_line"], first["end_column"]) == (2, 22, 2, 26)
    assert "did you mean 'color'?" in first["hint"]
    assert second["code"] == "W101" and second["severity"] == "warning" and second["line"] == 3


def test_cli_json_valid(spec_file):
    path = spec_file(URN)
    code, out, err = _run(["check", str(path), "--format", "json"])
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True and report["diagnostics"] == []


def test_cli_not_utf8_exits_1(tmp_path: Path):
    path = tmp_path / "bad.privspec"
    path.write_bytes(b"variable x: categorical {\xff, b}\n")
    code, out, err = _run(["check", str(path)])
    assert code == 1
    assert "E100" in err


def test_example_specs_stay_valid():
    """LANGUAGE.md's examples (specs/*.privspec) must keep checking clean."""
    specs = sorted((Path(__file__).resolve().parent.parent / "specs").glob("*.privspec"))
    assert specs
    for path in specs:
        code, out, err = _run(["check", str(path)])
        assert code == 0, err


def test_load_non_utf8_file_is_a_spec_error(tmp_path) -> None:
    f = tmp_path / "latin1.privspec"
    f.write_bytes("variable x: categorical {caf\xe9, b}\n".encode("latin-1"))
    with pytest.raises(privspec.errors.SpecError) as info:
        privspec.load(f)
    assert info.value.code == "E100"


@pytest.mark.parametrize("law", ["logistic(0, 5)", "logistic(0, 5, shift = 1)"])
def test_logistic_scale_is_its_parameter_not_the_scale_option(law: str) -> None:
    spec = privspec.load(f"variable y: continuous\nmechanism m = interval(y, case2({law}))")
    anchor = spec.model.mechanisms["m"].anchor
    assert anchor.param("scale") == 5 and anchor.scale == 1


def test_exponential_anchor_can_be_shifted_and_scaled() -> None:
    spec = privspec.load("variable y: continuous [10, inf]\n"
                         "mechanism m = interval(y, case1(exponential(1, shift = 10, scale = 2)))")
    anchor = spec.model.mechanisms["m"].anchor
    assert anchor.support() == (10, privspec.model.graph.oo)


@pytest.mark.parametrize("text, where, hint", [
    ("mechansim m = subset(c, uniform)", "mechansim", "did you mean 'mechanism'?"),
    ("variable x: continuous [0, 2**3]", "*3", "powers are written with ^"),
    ("query q = epsilon(m, a == 1)", "= 1", "'==' is not part of the language"),
])
def test_syntax_hints(text: str, where: str, hint: str) -> None:
    (d,) = privspec.load(text).check()
    assert d.code == "E101" and d.span.start == text.index(where) and hint in d.hint


# ---- back-end diagnostics --------------------------------------------------------------------
@pytest.mark.parametrize("method, words", [
    ("mle(normal, se = conditional)", "not centred on their mean"),
    ("npmle(se = conditional)", "not coarsened at random"),
])
def test_b140_conditional_standard_error_refused(tmp_path: Path, method: str, words: str) -> None:
    """B140: se = conditional where no honest conditional standard error exists (a parametric
    fit; a selective mechanism), with the alternative in the hint."""
    spec = tmp_path / "s.privspec"
    mech = "sel" if method.startswith("npmle") else "c1"
    spec.write_text("variable y: continuous [0, 10]\nmechanism c1 = interval(y, case1(uniform(0, 10)))\n"
                    "mechanism sel = selective(c1, tau = 3/10, rho = 1/2)\n"
                    f"query q = estimate mean(y) from {mech} by {method}\n")
    data = tmp_path / "d.csv"
    data.write_text("y\n" + "".join(f'"{r}"\n' for r in ("(-inf, 4]", "(2, inf]", "(-inf, 7]", "(5, inf]",
                                                             "(6, inf]", "(-inf, 9]")))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(spec), "--data", f"{mech}={data}"], stdout=out, stderr=err)
    assert code == 1 and "error[B140]" in err.getvalue() and words in err.getvalue()
    assert "se = population" in err.getvalue()


def test_data_codes_and_the_row_convention_are_documented() -> None:
    """Every code emitted anywhere (checker, data layer, back ends, runner) is in
    docs/errors.md, which states the one row numbering (issue 14)."""
    import re

    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "errors.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\b([EWDB]\d{3})\b", doc))
    for lo, hi in re.findall(r"\b([EWDB]\d{3})-[EWDB]?(\d{3})\b", doc):
        listed |= {f"{lo[0]}{k:03d}" for k in range(int(lo[1:]), int(hi) + 1)}
    emitted = set()
    for path in [*(root / "dsl").glob("*.py"), *(root / "backends").glob("*.py")]:
        emitted |= set(re.findall(r'"([EWDB]\d{3})"', path.read_text(encoding="utf-8")))
    assert emitted and not emitted - listed, sorted(emitted - listed)
    assert "row N is the N-th data row" in doc and "header is not a row" in doc
