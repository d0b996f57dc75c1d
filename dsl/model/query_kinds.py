"""What each query kind is: one table that the front end, the command line and the back
ends consult, instead of lists of strings kept in step by hand.

* :data:`QUERY_KINDS` -- per query kind (``coverage``, ``estimate``, ``budget`` ...): the
  shape of its arguments, whether it needs data (``analyze`` cannot answer it), the type
  of its result, the mechanism families it accepts, a one-line doc;
* :data:`ESTIMANDS` -- per estimand of ``estimate``/``test``/``avar``
  (``distribution``, ``joint``, ``mean`` ...): its arity, whether its variables are
  categorical, and the estimators that apply to each mechanism family;
* :func:`family_of` -- the family of a mechanism (``subset``, ``grr``, ``rr``,
  ``product``, ``rr_product``, ``interval``, ``censored``; ``release`` for queries on a
  release, which have no mechanism);
* :class:`Answers` -- what a back end declares it answers: (query kinds, mechanism
  families, verbs[, estimands, estimators, options]).  The registry
  (:func:`privspec.backends.backend_for`) picks the back end whose declaration matches
  most specifically, and when none does says which back ends answer that kind, for
  which families and verbs (:func:`explain`).

The front end imports no back end; back ends import this module.

Examples
--------
>>> QUERY_KINDS["coverage"].needs_data, QUERY_KINDS["estimate"].needs_data
(False, True)
>>> estimators_for("joint", "rr_product")[:3]
('independent', 'castell', 'hybrid')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

#: the runner's verbs that answer queries
VERBS = ("analyze", "run", "simulate")

#: mechanism families, with the words used to name them in messages
FAMILIES: dict[str, str] = {
    "subset": "subset designs",
    "grr": "generalized randomized response (grr)",
    "rr": "randomized response by matrix (rr) or by cards (kuk)",
    "product": "products of mechanisms (subset or mixed factors)",
    "rr_product": "products of randomized responses",
    "interval": "interval privacy (interval, selective, progressive)",
    "censored": "interval-censored data (censored)",
    "oracle": "local-DP frequency oracles (sue, oue, blh, olh, ss, hr, adp, l_grr, l_sue, l_oue, l_osue)",
    "multi_oracle": "several attributes under one local-DP budget (spl, smp, rsfd)",
    "numeric": "a bounded numeric value under local DP (laplace, duchi, piecewise, hm, square_wave)",
    "two_group": "RRreg's two-group designs (uqm, cdm, sld)",
    "release": "releases of count tables (no mechanism)",
}
FINITE = ("subset", "grr", "rr", "product", "rr_product")
INTERVAL = ("interval", "censored")
ORACLE = ("oracle", "multi_oracle")
NUMERIC = ("numeric",)
TWO_GROUP = ("two_group",)
MECHANISM_FAMILIES = FINITE + INTERVAL + ORACLE + NUMERIC + TWO_GROUP


def family_of(mechanism: Any) -> str:
    """The family of a mechanism (:data:`FAMILIES`); ``"release"`` for None.

    Examples
    --------
    >>> family_of(None)
    'release'
    """
    if mechanism is None:
        return "release"
    family = getattr(mechanism, "family", None)
    if family == "rr":
        return "grr" if getattr(mechanism, "kind", None) == "grr" else "rr"
    if family == "product":
        # the castell estimators invert each factor's square matrix (kuk's is not)
        rr = all(getattr(f, "family", None) == "rr" and f.square for f in mechanism.factors)
        return "rr_product" if rr else "product"
    if family == "interval":
        return "censored" if type(mechanism).__name__ == "CensoredMechanism" else "interval"
    return str(family)


# ---- estimands ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class EstimandKind:
    """An estimand of ``estimate``, ``test`` or ``avar``.

    ``arity``: how many variables (None: two or more); ``categorical``: whether its
    variables are categorical (else continuous); ``verb``: ``estimate`` or ``test``;
    ``estimators``: every estimator (or test), in the order messages list them, the
    default first; ``by_family``: family -> the estimators that apply to data from a
    mechanism of that family.  Conditions finer than a family (the unbiased mean needs
    Case-I uniform anchors; castell needs the factors covering the estimand to be
    randomized responses) are checked by the front end (:func:`privspec.model.estimands.check_fit`).
    """

    name: str
    usage: str
    arity: int | None
    categorical: bool
    verb: str
    estimators: tuple[str, ...]
    by_family: Mapping[str, tuple[str, ...]]
    doc: str

    def __post_init__(self) -> None:
        stray = {m for names in self.by_family.values() for m in names} - set(self.estimators)
        if stray:
            raise ValueError(f"{self.name}: estimators {sorted(stray)} are not listed")

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(self.by_family)


_DISTRIBUTION = ("mom", "mle", "em")
_SUBSET_DISTRIBUTION = ("mom", "mle", "em", "newton", "one_step")
#: estimators that combine per-attribute reports of a product of randomized responses
PRODUCT_JOINT = ("independent", "castell", "hybrid", "truncated", "clusters")
_TESTS = ("pearson", "lrt", "lrt_mom", "bonferroni")

ESTIMANDS: dict[str, EstimandKind] = {e.name: e for e in (
    EstimandKind("distribution", "distribution(X)", 1, True, "estimate", _SUBSET_DISTRIBUTION,
                 {"subset": _SUBSET_DISTRIBUTION, "grr": _DISTRIBUTION, "rr": _DISTRIBUTION,
                  "product": _SUBSET_DISTRIBUTION, "rr_product": _DISTRIBUTION,
                  # frequency oracles: the unbiased (support-count) estimator and the IBU (EM)
                  "oracle": ("mom", "mle"), "multi_oracle": ("mom", "mle"),
                  # RRreg's two-group designs: the likelihood of the yes counts per group
                  "two_group": ("mle",)},
                 "the distribution of a categorical variable"),
    EstimandKind("joint", "joint(X, Y, ...)", None, True, "estimate",
                 ("independent", "joint", "castell", "hybrid", "truncated", "clusters", "mom", "mle", "em"),
                 {"subset": _DISTRIBUTION, "grr": ("joint",) + _DISTRIBUTION, "rr": ("joint",) + _DISTRIBUTION,
                  # castell & co. on a mixed product: the factors covering the estimand must be RR
                  "product": PRODUCT_JOINT + _DISTRIBUTION, "rr_product": PRODUCT_JOINT + _DISTRIBUTION,
                  # an oracle on the combined variable (oue(gender * race, ...)): its distribution
                  "oracle": ("mom", "mle")},
                 "the joint distribution of two or more categorical variables"),
    EstimandKind("mean", "mean(X)", 1, False, "estimate", ("unbiased", "npmle", "mle"),
                 {"interval": ("unbiased", "npmle", "mle"), "censored": ("npmle", "mle"), "numeric": ("unbiased",)},
                 "the mean of a continuous variable"),
    EstimandKind("cdf", "cdf(X)", 1, False, "estimate", ("npmle", "mle", "ems"),
                 {"interval": ("npmle", "mle"), "censored": ("npmle", "mle"), "numeric": ("ems",)},
                 "the distribution function of a continuous variable"),
    EstimandKind("moment", "moment(X, k)", 1, False, "estimate", ("npmle", "mle"),
                 {"interval": ("npmle", "mle"), "censored": ("npmle", "mle")},
                 "the k-th moment E[X^k] of a continuous variable"),
    EstimandKind("regression", "regression(Y ~ X1 + X2[, coefficients = {TERM: VALUE, ...}, of = TERM])", None,
                 False, "estimate", ("iterative", "mle"),
                 {"interval": ("iterative",), "censored": ("iterative",),
                  # a categorical response privatized by a finite mechanism: logistic / multinomial logit
                  "subset": ("mle",), "grr": ("mle",), "rr": ("mle",),
                  # RRreg's RRlog: a yes/no response of a two-group design (uqm, cdm, sld)
                  "two_group": ("mle",)},
                 "the regression of a response on covariates: interval-reported (Algorithm 1), "
                 "or categorical and privatized by a finite mechanism or a two-group design (logistic; its "
                 "declared coefficients plan it: avar, sample_size, power, compare)"),
    # the latent shares of RRreg's designs (populations declare them: categorical(0.3, 0.7, cheaters = 0.1))
    EstimandKind("cheaters", "cheaters(Y)", 1, True, "estimate", ("mle",), {"two_group": ("mle",)},
                 "the cheaters' share of the respondents (cdm's gamma): they say no whatever they draw"),
    EstimandKind("honesty", "honesty(Y)", 1, True, "estimate", ("mle",), {"two_group": ("mle",)},
                 "the share of the carriers who admit the trait (sld's t)"),
    EstimandKind("independence", "independence(X, Y)", 2, True, "test", _TESTS,
                 {"product": _TESTS, "rr_product": _TESTS},
                 "whether two categorical variables are independent"),
)}


#: the latent shares a two-group design estimates beside the trait's (:data:`ESTIMANDS`): the design of each
LATENT_ESTIMANDS = {"cheaters": "cdm", "honesty": "sld"}

#: the estimands that are a functional of one continuous variable's law (mean, cdf, moment):
#: ``mle`` fits a parametric law for them (``mle(normal)``)
LAW_FUNCTIONALS = frozenset(k for k, e in ESTIMANDS.items() if not e.categorical and e.arity == 1)


def estimators_for(estimand: str, family: str) -> tuple[str, ...]:
    """The estimators of ``estimand`` that apply to data from a ``family`` mechanism."""
    kind = ESTIMANDS.get(estimand)
    return kind.by_family.get(family, ()) if kind is not None else ()


# ---- query kinds -----------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryKind:
    """One kind of query.

    ``usage`` is the shape of its arguments; ``needs_data``: ``analyze`` cannot answer it
    (``run`` with data, or ``simulate``, can); ``result``: the type of its value;
    ``families``: the mechanism families it accepts (``("release",)``: it reads a
    release); ``estimands``: for ``estimate``, ``test`` and ``avar``, the estimands it takes
    (their estimators per family are in :data:`ESTIMANDS`).
    """

    name: str
    usage: str
    needs_data: bool
    result: str
    families: tuple[str, ...]
    doc: str
    estimands: tuple[str, ...] = ()
    #: written ``query q = KIND ...`` (estimate, test), not ``query q = KIND(...)``
    verb: bool = False
    #: what it reads, in words, where its families do not say it (a query on several mechanisms)
    reads: str = ""

    def accepts(self, family: str) -> bool:
        return family in self.families


QUERY_KINDS: dict[str, QueryKind] = {k.name: k for k in (
    QueryKind("estimate", "estimate ESTIMAND from MECHANISM by ESTIMATOR", True, "estimate",
              MECHANISM_FAMILIES, "an estimate from privatized data, with its standard error",
              ("distribution", "joint", "mean", "cdf", "moment", "regression", "cheaters", "honesty"), verb=True),
    QueryKind("test", "test independence(X, Y) from MECHANISM by TEST [calibrate CALIBRATION]", True, "test",
              ("product", "rr_product"), "a test of independence on privatized data",
              ("independence",), verb=True),
    QueryKind("avar", "avar(ESTIMAND from MECHANISM by ESTIMATOR)", False, "matrix", MECHANISM_FAMILIES,
              "the asymptotic covariance of an estimator",
              ("distribution", "joint", "mean", "cdf", "moment", "regression", "cheaters", "honesty")),
    QueryKind("moments", "moments(MECHANISM)", False, "moments", FINITE,
              "the moments Q, gamma, H, C of a finite mechanism"),
    QueryKind("fisher", "fisher(MECHANISM)", False, "matrix", FINITE, "the Fisher information per respondent"),
    QueryKind("coverage", "coverage(MECHANISM[, METRIC])", False, "number", MECHANISM_FAMILIES,
              "privacy coverage: how much a report leaves hidden"),
    QueryKind("leakage", "leakage(MECHANISM[, METRIC, ...])", False, "metrics", MECHANISM_FAMILIES + ("release",),
              "privacy leakage by metric (size, mutual_information, prediction); of a release: prediction"),
    QueryKind("epsilon", "epsilon(MECHANISM)", False, "number", MECHANISM_FAMILIES,
              "the local differential privacy level"),
    QueryKind("identifiable", "identifiable(MECHANISM)", False, "boolean", FINITE,
              "whether the population can be recovered from the reports"),
    QueryKind("composition", "composition(MECHANISM, MECHANISM[, ...])", False, "number", ("interval",),
              "the coverage of an ensemble of interval mechanisms and Theorem 4's bound on it"),
    QueryKind("optimal_anchor", "optimal_anchor(mean(X), MECHANISM)", False, "density", ("interval", "censored"),
              "the anchor density that minimizes the variance of the mean (Theorem 2)"),
    QueryKind("budget", "budget(per variable | per release | {a, b})", False, "budget", ("release",),
              "the privacy budget the releases spend"),
    QueryKind("variance", "variance(RELEASE[, VARIABLE, ...])", False, "table", ("release",),
              "the noise variance of a release's cells (or of a margin)"),
    QueryKind("table", "table(RELEASE[, VARIABLE, ...])", True, "table", ("release",),
              "a released table read from data (or a margin of it)"),
    QueryKind("individual", "individual(MECHANISM, {observed, subset}[, true_category])", False, "metrics",
              ("subset",), "what one subset report reveals about one respondent"),
    QueryKind("bounds", "bounds(MECHANISM, n = N)", False, "bounds", ("rr_product",),
              "error bounds of joint estimates from a product of randomized responses"),
    QueryKind("thresholds", "thresholds(MECHANISM, n = N)", False, "thresholds", ("rr_product",),
              "the hybrid estimator's thresholds for a product of grr mechanisms"),
    QueryKind("sample_size", "sample_size(ESTIMAND from MECHANISM [by ESTIMATOR], TARGET = VALUE[, test = TEST])",
              False, "number", MECHANISM_FAMILIES,
              "the fewest respondents meeting a target (max_se, ci_width, max_cv, or the power of a test)",
              ("distribution", "joint", "mean", "moment", "regression", "cheaters", "honesty")),
    QueryKind("power", "power(ESTIMAND from MECHANISM [by ESTIMATOR], n = N, test = TEST)", False, "number",
              MECHANISM_FAMILIES, "the power of a test at n respondents, and its curve over n",
              ("distribution", "joint", "mean", "moment", "regression", "cheaters", "honesty")),
    # a survey's questions are declared mechanisms named in the query: the query has no mechanism
    # of its own, so it is routed as the release queries are (family_of(None))
    QueryKind("allocate", "allocate([QUESTION, ...,] total = EPSILON[, n = N][, criterion = CRITERION]"
              "[, weights = {QUESTION: WEIGHT, ...}])", False, "allocation", ("release",),
              "the epsilon of each question of a survey that minimizes the weighted utility loss under a total "
              "epsilon (per-variable accounting)",
              reads="the declared mechanisms it names, each with a free epsilon (grr, frequency oracles, products)"),
)}
#: queries written ``KIND(...)`` (not ``estimate``/``test``)
PLAIN_QUERIES = tuple(k for k, q in QUERY_KINDS.items() if not q.verb)
#: kinds that ``analyze`` answers (no data needed)
ANALYTIC_KINDS = tuple(k for k, q in QUERY_KINDS.items() if not q.needs_data)


def needs_data(kind: str) -> bool:
    """Whether a query of this kind needs data (unknown kinds: True, so ``analyze`` skips them)."""
    q = QUERY_KINDS.get(kind)
    return True if q is None else q.needs_data


# ---- what a query answers, in plain words -----------------------------------------------------------
#: estimators and tests as a person names them
ESTIMATOR_WORDS: dict[str, str] = {
    "mom": "method-of-moments", "mle": "maximum-likelihood", "em": "maximum-likelihood (EM)",
    "newton": "maximum-likelihood (Newton)", "one_step": "one-step", "unbiased": "unbiased",
    "npmle": "nonparametric maximum-likelihood", "independent": "RR-Independent", "joint": "RR-Joint",
    "castell": "castell", "hybrid": "hybrid", "truncated": "truncated", "clusters": "RR-Clusters",
    "iterative": "iterative (Algorithm 1)", "pearson": "Pearson chi-square", "lrt": "likelihood-ratio",
    "lrt_mom": "likelihood-ratio (moments)", "bonferroni": "Bonferroni",
    "ems": "expectation-maximization with smoothing (EMS)",
}
#: coverage metrics: how well a report hides the answer, by metric
_COVERAGE_WORDS: dict[str, str] = {
    "size": "tau, the share of the population a report covers on average",
    "mutual_information": "H(X | report), the uncertainty left about the answer, in bits",
    "prediction": "1 - R, how often the best guess from a report is wrong",
}
_LEAKAGE_WORDS: dict[str, str] = {"size": "1 - tau", "mutual_information": "information in bits",
                                  "prediction": "best-guess accuracy"}


def _names(variables: Any) -> str:
    """``a``, ``a and b``, ``a, b and c``: the variables' names."""
    return _listed([getattr(v, "name", str(v)) for v in variables])


def _listed(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


#: the estimands of one template in words, by kind (``{x}``: the variables' names)
_ESTIMAND_WORDS = {"distribution": "the {x} shares", "joint": "the joint shares of {x}", "mean": "the mean of {x}",
                   "cdf": "the distribution function of {x}"}


def _estimand_words(estimand: Any) -> str:
    """An estimand in words: ``the color shares``, ``the mean of salary``."""
    kind, variables = estimand.kind, estimand.variables
    if kind == "moment":
        return f"the moment E[{_names(variables)}^{estimand.order}]"
    if kind == "regression":
        return f"the regression of {variables[0].name} on {_names(variables[1:])}"
    return _ESTIMAND_WORDS.get(kind, kind + "({x})").format(x=_names(variables))


def _estimator_words(method: Any) -> str:
    """``method-of-moments``, ``normal maximum-likelihood``: an estimator as a person names it."""
    words = ESTIMATOR_WORDS.get(method.name, method.name)
    family = [a for a in method.args if isinstance(a, str)]
    return f"{family[0]} {words}" if method.name == "mle" and family else words


def _mechanism_name(mechanism: Any) -> str:
    """A mechanism's name; one written inline in the query has none: its kind and variables."""
    name = getattr(mechanism, "name", None)
    if name:
        return name
    kind = getattr(mechanism, "kind", None)
    kind = kind if isinstance(kind, str) else getattr(mechanism, "family", "mechanism")
    return f"{kind}({', '.join(v.name for v in getattr(mechanism, 'variables', ()))})"


def _mechanism(query: Any) -> str:
    return f"the reports of {_mechanism_name(query.mechanism)}"


def _number(x: Any) -> str:
    # the command line reads this table before any spec (--help);
    # start-up: fmt brings sympy (1-2 s), and every number it is given here is a sympy one already
    from privspec.language.arith import fmt

    return fmt(x) if hasattr(x, "is_number") else str(x)


def describe(query: Any) -> str:
    """What a query answers, in one plain line (the text report's caption over its result).

    Built from the query's kind and arguments: what a person asks (``how precise ...``),
    then, after a colon, the quantity's usual name.

    Examples
    --------
    >>> import privspec
    >>> spec = privspec.load("variable color: categorical {black, red, green, blue}\\n"
    ...                      "mechanism urn = subset(color, uniform)\\n"
    ...                      "query v = avar(distribution(color) from urn by mom)\\n"
    ...                      "query tau = coverage(urn)")
    >>> describe(spec.model.queries["v"])
    'how precise the method-of-moments estimate of the color shares from urn is: n times its covariance'
    >>> describe(spec.model.queries["tau"])
    'how well a report of urn hides color: tau, the share of the population a report covers on average'
    """
    for caption in (_estimation_caption, _privacy_caption, _release_caption, _planning_caption):
        text = caption(query)
        if text is not None:
            return text
    return QUERY_KINDS[query.kind].doc if query.kind in QUERY_KINDS else query.kind


def _estimation_caption(query: Any) -> str | None:
    """estimate, test, avar, moments, fisher: what the data tell and how precisely."""
    kind, mech = query.kind, _mechanism_name(query.mechanism) if query.mechanism is not None else ""
    conditional = query.method is not None and query.method.options.get("se") == "conditional"
    if kind == "estimate":
        errors = ", with standard errors for the table collected" if conditional else ""
        return (f"the {_estimator_words(query.method)} estimate of {_estimand_words(query.estimand)} "
                f"from {_mechanism(query)}{errors}")
    if kind == "test":
        how = f"the {_estimator_words(query.method)} test"
        if query.calibrate is not None:
            how += f" calibrated by {query.calibrate.name}"
        return f"whether {_names(query.estimand.variables)} are independent, from {_mechanism(query)}: {how}"
    if kind == "avar":
        given = " given the table collected" if conditional else ""
        return (f"how precise the {_estimator_words(query.method)} estimate of {_estimand_words(query.estimand)} "
                f"from {mech} is{given}: n times its covariance")
    if kind == "moments":
        return f"what the reports of {mech} look like on average: their moment matrices Q, gamma, H and C"
    if kind == "fisher":
        return (f"how much one report of {mech} tells about the {_names(query.mechanism.variables)} shares: "
                f"Fisher information per respondent")
    return None


def _privacy_caption(query: Any) -> str | None:
    """coverage, leakage, epsilon, identifiable, individual, optimal_anchor: what a report gives away."""
    kind = query.kind
    if query.mechanism is None:
        return None
    mech, variables = _mechanism_name(query.mechanism), _names(query.mechanism.variables)
    if kind == "coverage":
        metric = query.metrics[0] if query.metrics else "size"
        return f"how well a report of {mech} hides {variables}: {_COVERAGE_WORDS.get(metric, metric)}"
    if kind == "leakage":
        metrics = [_LEAKAGE_WORDS.get(m, m) for m in query.metrics or ("size",)]
        return f"how much a report of {mech} reveals about {variables}: {_listed(metrics)}"
    if kind == "epsilon":
        return f"how private {mech} is: its local differential privacy level epsilon (smaller: more private)"
    if kind == "identifiable":
        return f"whether the {variables} shares can be recovered from {_mechanism(query)}"
    if kind == "individual":
        truth = f" whose answer is {query.truth}" if query.truth is not None else ""
        return (f"what reporting {{{', '.join(query.observed)}}} to {mech} reveals about a respondent{truth}: "
                f"leakage before and after")
    if kind == "composition":
        return (f"how well {_listed(list(query.scope))} together hide {variables}: the coverage of their ensemble "
                "(Definition 3) and Theorem 4's bound")
    if kind == "optimal_anchor":
        return (f"the anchor density for {mech} that estimates {_estimand_words(query.estimand)} most precisely "
                f"(Theorem 2)")
    return None


def _release_caption(query: Any) -> str | None:
    """budget, variance, table, leakage: what releases spend, how noisy they are, what they reveal."""
    kind, scope = query.kind, query.scope
    if kind not in ("budget", "variance", "table", "leakage"):
        return None
    if kind == "leakage":
        return (f"how well someone who knows every other record guesses one record's cell of release {scope}: "
                "the best guess's chance of being right")
    if kind == "budget":
        where = scope if isinstance(scope, str) else f"on {{{', '.join(scope)}}} together"
        return f"how much privacy the releases spend {where}: their epsilon budget"
    margin = f"'s margin on {_names(query.estimand.variables)}" if query.estimand is not None else ""
    if kind == "variance":
        return f"how noisy release {scope}{margin} is: the noise variance of each cell"
    return f"the counts of release {scope}{margin}, read from data"


def _planning_caption(query: Any) -> str | None:
    """sample_size, power, bounds, thresholds: what n buys; allocate: how a survey's epsilon is shared."""
    kind = query.kind
    if kind == "allocate":
        weighted = "weighted " if len({str(w) for _, w in query.method.options["weights"]}) > 1 else ""
        return (f"how to share epsilon = {_number(query.method.options['total'])} among {_listed(list(query.scope))}: "
                f"the split with the least {weighted}{query.method.name} at n = {_number(query.plan.n)}")
    if kind not in ("sample_size", "power", "bounds", "thresholds"):
        return None
    mech, plan = _mechanism_name(query.mechanism), query.plan
    if kind in ("bounds", "thresholds"):
        n = query.method.options.get("n") if query.method is not None else None
        at = f" at n = {_number(n)}" if n is not None else ""
        if kind == "bounds":
            return f"how far estimates of {_estimand_words(query.estimand)} from {mech} can be off{at}"
        return f"where the hybrid estimate of {_estimand_words(query.estimand)} from {mech} switches{at}: thresholds"
    # a coefficient is tested in the regression; the other tests on the estimand's variables
    on = _estimand_words(query.estimand) if query.estimand.kind == "regression" else _names(query.estimand.variables)
    if kind == "power":
        return (f"how likely the test of {plan.test} on {on} rejects with "
                f"n = {_number(plan.n)} reports of {mech}: its power")
    goal = " and ".join(f"{t.criterion} {t.op} {_number(t.value)}" for t in plan.targets) or "its target"
    if plan.test is not None:
        return f"how many respondents {mech} needs: the fewest with {goal} to test {plan.test} on {on}"
    return f"how many respondents {mech} needs for {_estimand_words(query.estimand)}: the fewest with {goal}"


def describe_compare(block: Any) -> str:
    """What a ``compare`` block answers, in one plain line."""
    at = f" at n = {block.n}" if block.n is not None else ""
    return (f"which of {len(block.candidates)} designs is best for {_estimand_words(block.estimand)}{at}, "
            f"on {len(block.criteria)} criteria of utility and privacy")


# ---- design comparison criteria ----------------------------------------------------------------------
@dataclass(frozen=True)
class Criterion:
    """A criterion of a ``compare`` block: the ``side`` it measures (utility or privacy),
    which way is ``better`` (``lower`` or ``higher``) and what it is."""

    name: str
    side: str
    better: str
    doc: str
    #: None where its values compare mechanisms; else why they do not (the criterion is then
    #: shown, never used for dominance between different mechanisms)
    within_mechanism: str | None = None


CRITERIA: dict[str, Criterion] = {c.name: c for c in (
    Criterion("avar_trace", "utility", "lower", "trace of the estimator's asymptotic covariance (n Var, summed)"),
    Criterion("avar_max", "utility", "lower", "largest diagonal entry of the asymptotic covariance"),
    Criterion("max_se", "utility", "lower", "largest standard error of the estimate at n"),
    Criterion("ci_width", "utility", "lower", "width of the widest two-sided Wald interval at n (level 1 - alpha)"),
    Criterion("max_cv", "utility", "lower",
              "largest coefficient of variation at n: SE_j / w_j over the cells with a share w_j > 0 (SE / |mean| "
              "for a mean); max_cv <= 0.3 is the usual publication rule of statistical agencies"),
    Criterion("mse", "utility", "lower",
              "mean squared error at n summed over cells: variance plus squared bias (RR-Independent's limit "
              "is the product of the marginals, not the joint)"),
    Criterion("efficiency", "utility", "higher",
              "the efficient estimator's asymptotic variance over this one's (traces; 1: efficient)",
              "it measures each estimator against its own mechanism's efficient one, not the mechanisms"),
    Criterion("power", "utility", "higher", "power of the block's test at n (level alpha)"),
    Criterion("coverage", "privacy", "higher", "size privacy coverage tau = E[mass of the report]"),
    Criterion("size", "privacy", "lower", "size leakage 1 - tau"),
    Criterion("mutual_information", "privacy", "lower", "mutual information I(X; report) in bits"),
    Criterion("prediction", "privacy", "lower", "prediction leakage: the best guess's accuracy from a report"),
    Criterion("individual", "privacy", "lower",
              "worst case for one respondent: the largest posterior probability of a category after any report"),
    Criterion("epsilon", "privacy", "lower", "local-DP epsilon (inf: no finite guarantee)"),
)}
#: the utility criteria an ``allocate`` query can minimize (lower is better, no test needed)
ALLOCATION_CRITERIA = ("max_se", "ci_width", "max_cv", "avar_trace", "avar_max", "mse")
#: the tests a plan can be powered for: proportion(LABEL, p0), difference(LABEL, delta), independence(X, Y),
#: coefficient(TERM, b0) (a regression's)
POWER_TESTS = ("proportion", "difference", "independence", "coefficient")
#: the estimator a candidate uses when its ``by`` is left out, by estimand and family: an
#: efficient one where there is one (MLE; GRR's moment estimator is its MLE inside the simplex)
DEFAULT_ESTIMATORS: dict[str, dict[str, str]] = {
    "distribution": {"subset": "mle", "grr": "mom", "rr": "mle", "product": "mle", "rr_product": "mom",
                     "oracle": "mom", "multi_oracle": "mom", "two_group": "mle"},
    "joint": {"subset": "mle", "grr": "joint", "rr": "joint", "product": "mle", "rr_product": "castell",
              "oracle": "mom"},
    "mean": {"interval": "npmle", "censored": "npmle", "numeric": "unbiased"},
    "moment": {"interval": "npmle", "censored": "npmle"},
    "cdf": {"interval": "npmle", "censored": "npmle"},
    "regression": {"subset": "mle", "grr": "mle", "rr": "mle", "two_group": "mle"},
    "cheaters": {"two_group": "mle"}, "honesty": {"two_group": "mle"},
}


def default_estimator(estimand: str, family: str) -> str | None:
    """The estimator a comparison candidate or a planning query uses without ``by``.

    Examples
    --------
    >>> default_estimator("distribution", "subset"), default_estimator("joint", "rr_product")
    ('mle', 'castell')
    """
    return DEFAULT_ESTIMATORS.get(estimand, {}).get(family)


# ---- what a back end answers -------------------------------------------------------------------
@dataclass(frozen=True)
class Answers:
    """One row of a back end's declaration: it answers queries of ``kinds`` on mechanisms of
    ``families`` for the runner ``verbs``; optionally only for some ``estimands``, some
    ``methods`` (estimators), and estimators carrying all of ``options``.

    A back end's ``supports(query, verb)`` may still refuse a query its rows match (a
    condition that is not a family, e.g. the estimand's variable being the mechanism's
    own); the registry then looks at the other back ends.

    Examples
    --------
    >>> row = Answers(("epsilon",), ("grr",))
    >>> row.describe()
    'epsilon on grr (analyze, run, simulate)'
    """

    kinds: tuple[str, ...]
    families: tuple[str, ...]
    verbs: tuple[str, ...] = VERBS
    estimands: tuple[str, ...] | None = None
    methods: tuple[str, ...] | None = None
    options: tuple[str, ...] = ()
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in QUERY_KINDS] + \
            [f for f in self.families if f not in FAMILIES] + [v for v in self.verbs if v not in VERBS] + \
            [e for e in self.estimands or () if e not in ESTIMANDS]
        if unknown:
            raise ValueError(f"unknown query kind, family, verb or estimand: {', '.join(unknown)}")

    def matches(self, query: Any, verb: str) -> bool:
        """Whether this row covers ``query`` for ``verb``."""
        if query.kind not in self.kinds or verb not in self.verbs:
            return False
        if family_of(query.mechanism) not in self.families:
            return False
        est, method = query.estimand, query.method
        if self.estimands is not None and (est is None or est.kind not in self.estimands):
            return False
        if self.methods is not None and (method is None or method.name not in self.methods):
            return False
        if self.options and (method is None or not all(o in method.options for o in self.options)):
            return False
        return True

    @property
    def specificity(self) -> tuple[int, int]:
        """How narrow the row is: more conditions first, then fewer families.  The registry
        prefers the most specific matching row (a special case before the general one)."""
        conditions = sum(x is not None for x in (self.estimands, self.methods)) + len(self.options)
        return (conditions, -len(self.families))

    def describe(self, kind: str | None = None) -> str:
        """``"avar of distribution by mom on grr (analyze, run, simulate)"`` (only ``kind``
        among the row's kinds, when given)."""
        text = kind if kind is not None else "/".join(self.kinds)
        if self.estimands is not None:
            text += f" of {'/'.join(self.estimands)}"
        if self.methods is not None:
            text += f" by {'/'.join(self.methods)}"
        if self.options:
            text += f" with {', '.join(self.options)}"
        return f"{text} on {', '.join(self.families)} ({', '.join(self.verbs)})"


def analytic(rows: tuple[Answers, ...]) -> tuple[str, ...]:
    """The kinds that ``rows`` answer without data, in :data:`QUERY_KINDS` order."""
    kinds = {k for r in rows for k in r.kinds}
    return tuple(k for k in ANALYTIC_KINDS if k in kinds)


def explain(kind: str, declarations: Mapping[str, tuple[Answers, ...]], family: str | None = None) -> str:
    """Which back ends answer queries of ``kind``, for which families and verbs; for the
    "not supported yet" message (``declarations``: back-end name -> its rows; ``family``:
    the mechanism family of the query that none answered).

    Examples
    --------
    >>> explain("epsilon", {"rr": (Answers(("epsilon",), ("grr",)),)}, "subset")  # doctest: +NORMALIZE_WHITESPACE
    'epsilon queries on subset designs have no back end; back ends answering epsilon:
     rr: epsilon on grr (analyze, run, simulate)'
    >>> explain("fisher", {})
    'no back end answers fisher queries in this version'
    """
    parts = []
    for name, rows in sorted(declarations.items()):
        mine = [r.describe(kind) for r in rows if kind in r.kinds]
        if mine:
            parts.append(f"{name}: {' or '.join(mine)}")
    if not parts:
        return f"no back end answers {kind} queries in this version"
    on = f" on {FAMILIES[family]}" if family in FAMILIES and family != "release" else ""
    return f"{kind} queries{on} have no back end; back ends answering {kind}: " + "; ".join(parts)
