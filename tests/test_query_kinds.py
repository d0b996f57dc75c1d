"""The query-kind table (:mod:`privspec.model.query_kinds`) and the back ends' declarations.

One table says what each query kind takes, whether it needs data, and which estimators
fit which mechanism family; the back ends declare (``ANSWERS``) what they answer, and
the registry routes by those declarations, whatever ``PRIORITY`` says.
"""
from __future__ import annotations

import io
from pathlib import Path

import pytest

import privspec
from privspec import backends, cli
from privspec.model import queries
from privspec.model import query_kinds
from privspec.model.query_kinds import (ANALYTIC_KINDS, ESTIMANDS, FAMILIES, QUERY_KINDS, Answers, estimators_for,
                                  family_of)

SPECS = Path(__file__).resolve().parent.parent / "specs"
VERBS = ("analyze", "run", "simulate")


def _spec_queries():
    for path in sorted(SPECS.glob("*.privspec")):
        model = privspec.load(path).model
        for q in model.queries.values():
            yield path.stem, q


ALL = list(_spec_queries())

RR_SPEC = """
variable A: categorical {a1, a2, a3, a4}
variable B: categorical {b1, b2, b3}
variable C: categorical {c1, c2, c3, c4}
mechanism g = grr(A, epsilon = log(3))
mechanism g3 = grr(B, epsilon = log(3))
mechanism m = rr(B, matrix [[1/2, 1/4, 1/4], [1/4, 1/2, 1/4], [1/4, 1/4, 1/2]])
mechanism ind = product(grr(A, epsilon = 1), grr(B, epsilon = 1))
mechanism subs = product(subset(A, uniform), subset(C, uniform))
mechanism mixed = product(subset(A, uniform), grr(B, epsilon = 1))
query e_g = epsilon(g)
query e_subs = epsilon(subs)
query e_mixed = epsilon(mixed)
query v_g = avar(distribution(A) from g by mom)
query v_g_mle = avar(distribution(B) from g3 by mle)
query v_ind = avar(joint(A, B) from ind by castell)
query v_subs = avar(joint(A, C) from subs by mom)
query w_g = estimate distribution(A) from g by mom
query w_proj = estimate distribution(A) from g by mom(project = clip)
query j_ind = estimate joint(A, B) from ind by castell
query j_subs = estimate joint(A, C) from subs by mle
query t = test independence(A, C) from subs by pearson
query b = bounds(ind, n = 100)
query mom_m = moments(m)
"""


@pytest.fixture(scope="module")
def rr_model():
    return privspec.load(RR_SPEC).model


# ---- the tables --------------------------------------------------------------------------------
def test_front_end_lists_come_from_the_table() -> None:
    assert queries.PLAIN_QUERIES == tuple(k for k in QUERY_KINDS if k not in ("estimate", "test"))
    assert queries.ESTIMATORS == {k: e.estimators for k, e in ESTIMANDS.items()}
    assert cli.ANALYTIC_KINDS == ANALYTIC_KINDS
    assert set(ANALYTIC_KINDS) == {k for k, q in QUERY_KINDS.items() if not q.needs_data}
    assert {"estimate", "test", "table"} == {k for k, q in QUERY_KINDS.items() if q.needs_data}


def test_estimators_per_family_are_listed_and_families_are_known() -> None:
    for e in ESTIMANDS.values():
        assert set(e.families) <= set(FAMILIES)
        for fam, names in e.by_family.items():
            assert set(names) <= set(e.estimators), (e.name, fam)
    assert estimators_for("joint", "grr")[0] == "joint"
    assert "newton" not in estimators_for("distribution", "grr")
    assert estimators_for("mean", "censored") == ("npmle", "mle")
    assert estimators_for("nothing", "subset") == ()


def test_back_ends_analytic_lists_are_derived_from_their_declarations() -> None:
    from privspec.backends.finite import backend as finite
    from privspec.backends.interval import backend as interval

    assert set(finite.ANALYTIC) == {"avar", "moments", "fisher", "coverage", "leakage", "epsilon",
                                    "identifiable", "individual"}
    assert set(interval.ANALYTIC) == {"coverage", "leakage", "epsilon", "optimal_anchor", "avar", "composition"}
    assert set(finite.ANALYTIC) <= set(ANALYTIC_KINDS) and set(interval.ANALYTIC) <= set(ANALYTIC_KINDS)


def test_a_declaration_with_an_unknown_word_is_refused() -> None:
    with pytest.raises(ValueError, match="covrage"):
        Answers(("covrage",), ("subset",))
    with pytest.raises(ValueError, match="intervals"):
        Answers(("coverage",), ("intervals",))


def test_every_back_end_declares_what_it_answers() -> None:
    decl = backends.declarations()
    assert {"finite", "rr", "interval", "interval_censored", "releases"} <= set(decl)
    for name, rows in decl.items():
        assert rows, name
    # every query kind is answered by some back end, for some family
    declared = {k for rows in decl.values() for r in rows for k in r.kinds}
    assert declared == set(QUERY_KINDS)


@pytest.mark.parametrize("stem,q", ALL, ids=[f"{s}-{q.name}" for s, q in ALL])
def test_every_spec_query_kind_and_family_is_in_the_table(stem: str, q) -> None:
    kind = QUERY_KINDS[q.kind]
    assert kind.accepts(family_of(q.mechanism)), (q.kind, family_of(q.mechanism))
    if q.estimand is not None and q.kind in ("estimate", "test", "avar"):
        assert q.method.name in estimators_for(q.estimand.kind, family_of(q.mechanism))


# ---- routing -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,verb,expected", [
    ("e_g", "analyze", "rr"), ("e_subs", "analyze", "finite"), ("e_mixed", "analyze", "finite"),
    ("v_g", "analyze", "rr"), ("v_g_mle", "analyze", "finite"), ("v_ind", "analyze", "rr"),
    ("v_subs", "analyze", None),
    ("w_g", "run", "finite"), ("w_g", "analyze", None), ("w_proj", "run", "rr"), ("w_proj", "simulate", "rr"),
    ("j_ind", "run", "rr"), ("j_subs", "simulate", "finite"), ("t", "run", "finite"), ("t", "analyze", None),
    ("b", "analyze", "rr"), ("mom_m", "analyze", "finite"),
])
def test_routing_by_declaration(rr_model, name: str, verb: str, expected: str | None) -> None:
    backend = backends.backend_for(rr_model.queries[name], verb)
    assert (backend.REGISTER_NAME if backend else None) == expected


def test_closed_form_grr_avar_only_for_the_mechanisms_own_variable() -> None:
    model = privspec.load("variable A: categorical {a, b}\nvariable B: categorical {c, d}\n"
                          "mechanism g = grr(A * B, epsilon = 1)\n"
                          "query v = avar(distribution(A) from g by mom)\n").model
    # the rr back end's row matches, its supports() refuses; the finite back end answers
    assert backends.backend_for(model.queries["v"], "analyze").REGISTER_NAME == "finite"


def _routes():
    out = {}
    for stem, q in ALL:
        for verb in VERBS:
            b = backends.backend_for(q, verb)
            out[(stem, q.name, verb)] = b.REGISTER_NAME if b else None
    return out


def test_routing_does_not_depend_on_priority_or_registration_order(monkeypatch) -> None:
    before = _routes()
    assert before[("castell_example", "e_ind", "analyze")] == "rr"
    backends.load_all()
    reordered = dict(reversed(list(backends.REGISTRY.items())))
    monkeypatch.setattr(backends, "REGISTRY", reordered)
    for i, cls in enumerate(reordered.values()):
        monkeypatch.setattr(cls, "PRIORITY", 100 - i * 7 if i % 2 else -i, raising=False)
    assert _routes() == before


def test_no_two_back_ends_answer_a_spec_query_equally_specifically() -> None:
    for stem, q in ALL:
        for verb in VERBS:
            found = backends.candidates(q, verb)
            assert len(found) < 2 or found[0][0] != found[1][0], (stem, q.name, verb)


def test_unanswered_query_says_who_answers_that_kind(rr_model) -> None:
    why = backends.explain_unanswered(rr_model.queries["v_subs"], "analyze")
    assert why.startswith("avar queries on products of mechanisms (subset or mixed factors) have no back end")
    assert "; rr: avar of distribution by mom on grr (analyze, run, simulate) or avar of joint by " \
           "castell/mom/joint/independent on grr, rr, rr_product" in why
    assert "finite: avar of distribution on subset, grr, rr, product, rr_product (analyze, run, simulate)" in why
    assert "interval: avar on interval" in why and "coverage" not in why


def test_not_supported_yet_carries_the_explanation(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(RR_SPEC)
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["analyze", str(spec), "--query", "v_subs"], out, err)
    assert code == 1
    assert "query 'v_subs' is not supported yet (avar queries" in err.getvalue()
    assert "avar queries on products of mechanisms (subset or mixed factors) have no back end; back ends " \
           "answering avar: finite: " in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    cli.main(["analyze", str(spec), "--query", "v_subs", "--format", "json"], out, err)
    import json

    error = json.loads(out.getvalue())["queries"]["v_subs"]["error"]
    assert error["code"] == "B000" and "back ends answering avar" in error["hint"]


def test_no_back_end_at_all(monkeypatch) -> None:
    monkeypatch.setattr(backends, "REGISTRY", {})
    monkeypatch.setattr(backends, "HOMES", {})
    monkeypatch.setattr(backends, "_loaded", True)
    assert query_kinds.explain("fisher", backends.declarations()) == \
        "no back end answers fisher queries in this version"


def test_family_of() -> None:
    model = privspec.load(RR_SPEC).model
    fams = {n: family_of(m) for n, m in model.mechanisms.items()}
    assert fams == {"g": "grr", "g3": "grr", "m": "rr", "ind": "rr_product", "subs": "product", "mixed": "product"}


def _overlap(a: Answers, b: Answers) -> bool:
    def meet(x, y):
        return x is None or y is None or bool(set(x) & set(y))
    return bool(set(a.kinds) & set(b.kinds) and set(a.families) & set(b.families) and set(a.verbs) & set(b.verbs)) \
        and meet(a.estimands, b.estimands) and meet(a.methods, b.methods)


def test_overlapping_declarations_of_two_back_ends_differ_in_specificity() -> None:
    """No query can match two back ends equally specifically (so backend_for never has to
    break a tie, for any query, not only the specs')."""
    rows = [(name, r) for name, rs in backends.declarations().items() for r in rs]
    for i, (na, a) in enumerate(rows):
        for nb, b in rows[i + 1:]:
            if na != nb and _overlap(a, b):
                assert a.specificity != b.specificity, (na, a.describe(), nb, b.describe())
