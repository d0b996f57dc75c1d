"""The comparison document (privspec.results.comparison): its JSON form keeps the keys, their
order and the optional keys' absence exactly as the comparison back end writes them, and
reads back to the same document."""
from __future__ import annotations

import json

import privspec
from privspec.results.comparison import ComparisonDocument, CriterionValue
from privspec.results.values import to_json

NA = "depends on eps, which has no value: see the inverse design"
INFO = {"side": "utility", "better": "lower", "meaning": "largest standard error of the estimate at n"}
#: a document of the back end's shape (from specs/planning.privspec, simulated, cut short)
DOC = {
    "kind": "comparison", "name": "plan", "title": "Planning", "estimand": "distribution(race)", "n": 5000,
    "alpha": 0.05, "criteria": ["max_se", "epsilon"],
    "criterion_info": {"max_se": INFO, "epsilon": {"side": "privacy", "better": "lower",
                                                   "meaning": "local-DP epsilon (inf: no finite guarantee)"}},
    "candidates": [
        {"name": "grr_2", "mechanism": "grr(race, epsilon = 2)", "family": "rr", "estimator": "mom",
         "values": {"max_se": {"value": 0.0125, "simulated": 0.0131, "mc_error": 0.0009,
                               "mc_note": "error from the variances alone"},
                    "epsilon": {"value": 2.0, "simulated_na": "analytic: not a sampling quantity"}},
         "se": {"labels": ["a", "b"], "values": [0.0073, 0.0125]},
         "targets": {"max_se <= 0.015": True, "epsilon <= 2": True}, "sample_size": {"max_se <= 0.015": 3468},
         "power": {"n": [50, 5000], "power": [0.06, 0.44], "at_n": 0.442},
         "rank": {"max_se": 1, "epsilon": 1}, "dominated_by": {}, "pareto": True,
         "frontiers_on": ["max_se vs epsilon"]},
        {"name": "grr_e", "mechanism": "grr(race, epsilon = eps)", "family": "rr", "estimator": "mom",
         "values": {"max_se": {"value": None, "na": NA, "simulated_na": NA},
                    "epsilon": {"value": None, "na": NA, "simulated_na": "analytic: not a sampling quantity"}},
         "se": None, "se_na": NA, "targets": {"max_se <= 0.015": None, "epsilon <= 2": None},
         "sample_size": {"max_se <= 0.015": f"n/a: {NA}"}, "power": None, "power_na": NA,
         "rank": {"max_se": None, "epsilon": None}, "dominated_by": {}, "pareto": False, "frontiers_on": []}],
    "frontiers": [{"x": "epsilon", "y": "max_se", "frontier": ["grr_2"], "dominated": {},
                   "not_compared": {"grr_e": "n/a on epsilon"}}],
    "targets": [{"criterion": "max_se", "op": "<=", "value": 0.015},
                {"criterion": "epsilon", "op": "<=", "value": 2.0}],
    "planning": {"test": "one-sample two-sided Wald test of w[b] = 0.08 (level 0.05)", "target_power": None},
    "inverse": [
        {"candidate": "grr_e", "parameter": "eps", "privacy": "epsilon", "utility": "max_se", "range": [8e-06, 8.0],
         "most_private": {"value": 1.6, "meets": "max_se <= 0.015", "criteria": {"epsilon": 1.6, "max_se": 0.015}},
         "best_utility": {"value": 2.0, "at": "epsilon <= 2", "criteria": {"n/a": "no population"}}},
        {"candidate": "sized", "parameter": "k", "privacy": "epsilon", "utility": "max_se", "range": [2, 4],
         "integer": True, "best_utility": {"none": "no value of k in [2, 4] meets epsilon <= 2"}},
        {"candidate": "two", "parameter": "eps, k", "privacy": "epsilon", "utility": "max_se",
         "none": "more than one free parameter: give all but one a value"}],
    "reps": 200, "seed": 1, "spec": "compare plan ...",
    "recommendation": {"candidate": "grr_2", "text": "Use grr_2.", "reasons": ["it meets max_se <= 0.015 at n = 1,000"],
                       "decided_by": "epsilon", "runner_up": "sized", "changes": [], "notes": ["a note"]},
}


def test_the_json_form_reads_back_key_for_key() -> None:
    doc = ComparisonDocument.from_dict(DOC)
    assert doc.candidates[1].values["max_se"] == CriterionValue(None, na=NA, simulated_na=NA)
    assert doc.inverse[0].best_utility.criteria_na == "no population" and doc.inverse[1].most_private is None
    assert json.dumps(doc.to_dict()) == json.dumps(DOC)          # the same keys in the same order


def test_a_comparison_result_serializes_its_document() -> None:
    spec = privspec.load('''
variable x: categorical {a, b, c}
population x ~ categorical(1/2, 3/10, 1/5)
compare d for distribution(x) at n = 500 { rr = grr(x, epsilon = 2) } by max_se, epsilon''')
    r = spec.compare()["d"]
    assert isinstance(r.value, ComparisonDocument)
    assert r.to_dict()["value"] == to_json(r.value.to_dict())
    assert "planning" in r.to_dict()["value"]
    assert r.to_dict()["value"]["recommendation"]["candidate"] == "rr"   # every comparison has a verdict
