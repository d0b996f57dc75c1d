"""One class per kind of result: the fields each kind's answer carries, by name.

A back end answers a query with the class of its kind: ``Estimate(value, se=..., ci95=...,
method=..., n=...)``.  The keywords are the result's fields, declared below (an unknown one
is a TypeError); they are kept in :attr:`~privspec.results.result.Result.extras` in the order
given, which is the order of the JSON contract (:meth:`~privspec.results.result.Result.to_dict`),
and read back as attributes (``r.se``; None where the result has none).  What differs
between kinds in the views and reports (a power curve's plot, a comparison's tables, a
budget's labels) is a method of the kind's class.

Families share a base: :class:`Covariance` (``avar``, ``fisher``, ``moments``,
``variance``), :class:`Privacy` (``epsilon``, ``coverage``, ``leakage``, ``individual``,
``identifiable``, ``optimal_anchor``), :class:`Plan` (``power``, ``sample_size``),
:class:`Bounds` (``bounds``, ``thresholds``).  A frequency oracle's results also say what
the oracle is (:class:`OracleFacts`).

Examples
--------
>>> from privspec.results.values import Vector
>>> r = Estimate(Vector(("a", "b"), (0.25, 0.75)), method="mom", n=400)
>>> r.kind, r.method, r.n, r.se, list(r.to_dict())
('estimate', 'mom', 400, None, ['kind', 'value', 'method', 'n'])
>>> Estimate(0.5, stderr=0.1)
Traceback (most recent call last):
...
TypeError: Estimate has no field 'stderr'
"""
from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar, overload

from privspec.results import plots
from privspec.results.comparison_tables import frame as comparison_frame
from privspec.results.report import comparison_latex, comparison_markdown, comparison_text
from privspec.results.result import Result
from privspec.results.values import Matrix, StepFunction, TestResult

T = TypeVar("T")


class Field(Generic[T]):
    """A named field of a kind of result: ``se: Field[Vector] = Field("standard errors")``.

    Its value is the result's extra of that name (``key``: another name in the JSON, where
    the attribute's name is taken by a view); None where the result has none."""

    def __init__(self, doc: str, key: str | None = None) -> None:
        self.__doc__ = doc
        self.key = key

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = self.key or name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> "Field[T]": ...

    @overload
    def __get__(self, obj: Result, owner: type | None = None) -> T | None: ...

    def __get__(self, obj: Result | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj.extras.get(self.key)


class Typed(Result):
    """A result of a known kind: its kind fixed by its class, its fields declared by name.

    ``Kind(value, *, fit=None, inference=None, **fields)``; ``fields`` are kept in the order
    given (the JSON's)."""

    kind: ClassVar[str]  # type: ignore[misc]
    #: the JSON names of the fields the class declares (its own and its bases')
    FIELDS: ClassVar[frozenset[str]] = frozenset()
    #: fields named by a prefix and a name of the spec's (``cross_covariance_income``)
    PREFIXES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.FIELDS = frozenset(f.key for klass in cls.__mro__ for f in vars(klass).values() if isinstance(f, Field))

    def __init__(self, value: Any, *, fit: Any = None, inference: Any = None, query: Any = None,
                 **fields: Any) -> None:
        for name in fields:
            if name not in self.FIELDS and not name.startswith(self.PREFIXES):
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
        super().__init__(type(self).kind, value, fields, fit=fit, inference=inference, query=query)

    def with_fields(self, **fields: Any) -> "Typed":
        """This result with ``fields`` set (a new one after the others), the rest as it is."""
        return type(self)(self.value, fit=self.fit, inference=self.inference, query=self.query,
                          **{**self.extras, **fields})


class OracleFacts:
    """What a local-DP frequency oracle is, quoted by each of its results."""

    protocol: Field[str] = Field("the protocol (after adp's choice), or the multi-attribute protocol")
    p_star: Field[float] = Field("p*: the probability that a report supports the true category")
    q_star: Field[float] = Field("q*: the probability that a report supports another category")
    p_star_formula: Field[str] = Field("p* in closed form")
    q_star_formula: Field[str] = Field("q* in closed form")
    variance_formula: Field[str] = Field("n Var(f_hat_v) in closed form")
    variance_meaning: Field[str] = Field("what the variance formula is")
    g: Field[int] = Field("the hash range of a local-hashing protocol")
    k: Field[int] = Field("the subset size of a subset-selection protocol")
    K: Field[int] = Field("the Hadamard dimension of a Hadamard-response protocol")
    permanent: Field[dict] = Field("a longitudinal oracle's memoized response: p1, q1")
    instantaneous: Field[dict] = Field("a longitudinal oracle's response per collection: p2, q2")
    composition: Field[str] = Field("how a longitudinal oracle's p* and q* compose")
    attributes: Field[int] = Field("the number of attributes of a multi-attribute protocol")
    oracles: Field[list] = Field("the attributes' oracles")
    attribute_epsilon: Field[Any] = Field("each attribute's oracle's epsilon")
    epsilon_any_change: Field[float] = Field("the loss of a whole report between any two tuples")
    epsilon_one_attribute: Field[float] = Field("the loss between tuples differing in one attribute")
    attribute: Field[int] = Field("the attribute the result is about (its index)")
    fake: Field[str] = Field("rsfd's variant: how the fake reports are drawn")
    fakes: Field[list] = Field("rsfd: each attribute's fake reports")


# ---- estimates -----------------------------------------------------------------------------------------
class NumericFacts:
    """Fields of the results about a numeric value under local DP (laplace, duchi, piecewise,
    hm, square_wave; docs/numeric.md)."""

    worst_case_noise: Field[float] = Field("the papers' worst case: the largest noise variance of one report's "
                                           "estimate over the values, in the variable's units")
    worst_case_noise_unit: Field[float] = Field("the same on the mechanism's domain ([-1, 1]; square wave [0, 1])")
    noise_at_population: Field[float] = Field("the noise variance of one report's estimate, averaged over the "
                                              "population")
    population_variance: Field[float] = Field("the variance of the value in the population")
    histogram_mean: Field[float] = Field("the mean of the estimated histogram")


class Estimate(Typed, OracleFacts, NumericFacts):
    """An estimate from reports: a Vector by category, a Table for a joint, a number (a mean,
    a moment), a location and scale, or a distribution function (a StepFunction, with its
    fit for ``cdf(x)``, ``band(x)``, ``quantile(q)``)."""

    kind = "estimate"
    method: Field[str] = Field("the estimator")
    n: Field[int] = Field("respondents the estimate is from")
    se: Field[Any] = Field("standard errors, labelled like the value")
    se_kind: Field[str] = Field("population or conditional: which question the standard errors answer")
    ci95: Field[Any] = Field("95% intervals, by category (joint tables: a lower and an upper table)")
    ci95_method: Field[str] = Field("how the 95% intervals are made", key="ci_method")
    se_method: Field[str] = Field("how the standard errors are made")
    se_target: Field[str] = Field("what the standard errors are of")
    se_note: Field[str] = Field("why there are no standard errors")
    target: Field[str] = Field("what the interval covers")
    effective_n: Field[float] = Field("the number of respondents the standard error is worth")
    loglik: Field[float] = Field("the log likelihood at the estimate")
    iterations: Field[int] = Field("iterations of the fit")
    kkt: Field[float] = Field("the fit's largest violation of its optimality conditions")
    converged: Field[bool] = Field("whether the fit converged")
    parameters: Field[dict] = Field("a parametric fit's location and scale")
    data: Field[str] = Field("the data the estimate is from")
    assumes: Field[str] = Field("what the estimator assumes of the reports")
    anchors: Field[list] = Field("Example 2's anchor range [a, b]")
    n_null: Field[int] = Field("reports that are null (no range)")
    pointwise_band: Field[dict] = Field("the pointwise 95% band of F at the fit's points", key="band")
    innermost: Field[list] = Field("the innermost intervals, with their own brackets")
    range: Field[list] = Field("the functional over every placement of mass in its interval")
    placement: Field[str] = Field("where each innermost interval's mass is placed")
    coverage_note: Field[str] = Field("what the interval's coverage rests on")
    noise: Field[str] = Field("the noise of a noisy count")
    noise_scale: Field[float] = Field("its scale")
    start: Field[str] = Field("where the fit starts")
    last_change: Field[float] = Field("the fit's last change")
    projection: Field[str] = Field("how the estimate is brought onto the simplex")
    negative_cells: Field[int] = Field("cells the unconstrained estimate put below 0")
    sum: Field[float] = Field("the sum of the estimate")
    reports_of_attribute: Field[int] = Field("reports of the attribute (smp: the respondents who sampled it)")
    clusters: Field[list] = Field("RR-Independent's clusters of dependent attributes")
    threshold: Field[float] = Field("the Cramer's V above which attributes are clustered")
    cramers_v: Field[Any] = Field("Cramer's V between the attributes")
    chosen: Field[str] = Field("the estimator hybrid chose")
    switch: Field[str] = Field("how hybrid chooses")
    rule: Field[str] = Field("hybrid's rule")
    castell_bound: Field[float] = Field("Theorem 6's error bound")
    independent_bound: Field[float] = Field("Theorem 5's error bound")
    n_star: Field[float] = Field("the n above which castell is preferred")
    castell_mse: Field[float] = Field("castell's estimated MSE")
    independent_mse: Field[float] = Field("RR-Independent's estimated MSE")
    independent_variance: Field[float] = Field("RR-Independent's estimated variance")
    independent_bias2: Field[float] = Field("RR-Independent's estimated squared bias")
    bias2_max: Field[float] = Field("the bound on the squared bias")
    margin: Field[float] = Field("the margin of hybrid's variance rule")
    wald: Field[dict] = Field("a regression's Wald test per coefficient: z = estimate / se and its p-value")
    lr_test: Field[dict] = Field("a regression's likelihood-ratio test of all slopes = 0")
    wald_test: Field[dict] = Field("a regression's Wald test of all slopes = 0 (with survey weights: on the "
                                   "design-based covariance)")
    item_model: Field[dict] = Field("a regression with a randomized-response predictor: the item's multinomial logit "
                                    "on the other covariates (coefficients and standard errors)")
    meaning: Field[str] = Field("what the estimate is, where its kind does not say")
    design: Field[str] = Field("the survey design of the data: its weights, strata and clusters columns")
    deff: Field[Any] = Field("the design effect: the design-based variance over simple random sampling's at "
                             "the same n")
    weighted_n: Field[float] = Field("the sum of the survey weights")
    strata: Field[int] = Field("the strata of the survey design")
    psus: Field[int] = Field("the primary sampling units of the survey design (clusters, or rows)")
    replicates: Field[int] = Field("the replicate weight columns of the survey design")
    pseudo_loglik: Field[float] = Field("the weighted pseudo-log-likelihood at the estimate")
    scale_vif: Field[float] = Field("a regression's noise scale: its variance inflation factor against the "
                                    "coefficients (over 10: the scale is weakly identified)")
    note: Field[str] = Field("what to know about the estimate")

    def to_frame(self) -> Any:
        """One number or a table of them: the estimate with its se and interval per category."""
        if isinstance(self.value, (dict, StepFunction)):
            return super().to_frame()
        return self.estimate_frame()


# ---- covariances ---------------------------------------------------------------------------------------
class Covariance(Typed):
    """A covariance or information matrix (or a variance) of an estimator or of the reports."""

    method: Field[str] = Field("the estimator whose covariance it is")
    evaluation: Field[str] = Field("how it was evaluated: exact, floating point, symbolic, quadrature ...")
    formula: Field[str] = Field("the formula evaluated")
    meaning: Field[str] = Field("what the matrix is, in the papers' notation")
    closed_form: Field[str] = Field("the closed form evaluated")
    note: Field[str] = Field("what to know about it")


class Avar(Covariance, OracleFacts, NumericFacts):
    """``n`` times an estimator's covariance in the limit (``avar``)."""

    kind = "avar"
    #: what an avar matrix of the category shares is, for each kind of standard error
    MEANING: ClassVar[dict[str, str]] = {
        "population": "asymptotic covariance of sqrt(n) (w_hat - w)",
        "conditional": "asymptotic covariance of sqrt(n) (w_hat - pi) given the respondents' true table pi "
                       "(privacy noise only)"}
    se_kind: Field[str] = Field("population or conditional: which question the covariance answers")
    trace: Field[Any] = Field("its trace: the limit of n E||w_hat - w||^2")
    trace_uniform: Field[Any] = Field("the trace at the uniform population")
    eigenvalues: Field[list] = Field("its eigenvalues, largest first")
    scaled_loss_limit: Field[str] = Field("the law of the scaled loss in the limit")
    max_variance: Field[float] = Field("its largest diagonal entry")
    fixed_population: Field[str] = Field("the covariance given the respondents' true values")
    unidentified_mass: Field[float] = Field("population mass the anchors do not reach")
    limit: Field[list] = Field("the estimator's limit (where it is not the truth)")
    bias: Field[Any] = Field("the limit less the truth")
    bias_squared: Field[float] = Field("the squared norm of the bias")
    fisher_information: Field[list] = Field("the Fisher information of a parametric fit")
    parameters: Field[list] = Field("the parameters of the fit")
    cross_collection_covariance: Field[Matrix] = Field("n Cov of two collections' estimates (longitudinal)")
    change_covariance: Field[Matrix] = Field("n Var of the change between two collections (longitudinal)")
    #: n Cov with another attribute's estimate: ``cross_covariance_<attribute>``, a field each
    PREFIXES = ("cross_covariance_",)

    @property
    def cross_covariance(self) -> dict[str, Matrix]:
        """n Cov with each other attribute's estimate, by attribute (a multi-attribute oracle's;
        ``cross_covariance_<attribute>`` in the JSON)."""
        prefix = self.PREFIXES[0]
        return {k[len(prefix):]: v for k, v in self.extras.items() if k.startswith(prefix)}

    @classmethod
    def meaning_of(cls, se_kind: str) -> str:
        """What the avar matrix of the category shares is for ``se_kind`` (population or conditional)."""
        return cls.MEANING[se_kind]


class Fisher(Covariance):
    """The Fisher information of the mechanism (``fisher``)."""

    kind = "fisher"
    I_w: Field[Matrix] = Field("the information about w")
    parameterization: Field[str] = Field("how theta parameterizes w")


class Moments(Covariance):
    """The reports' moments (``moments``): the matrices Q, H, C and the vector gamma."""

    kind = "moments"
    r_p: Field[Any] = Field("the uniform design's r_p (Eq. 6)")
    epsilon: Field[Any] = Field("a randomized response's epsilon")


class Variance(Covariance):
    """The variance of a release's noisy totals (``variance``)."""

    kind = "variance"
    calibration: Field[str] = Field("how the noise is calibrated")
    privacy_loss: Field[Any] = Field("the release's privacy loss")
    noise_variance: Field[Any] = Field("the variance of the noise on one total")
    cells_per_total: Field[int] = Field("cells summed in a total")
    covariance: Field[Any] = Field("the covariance of the totals")
    empirical: Field[float] = Field("the variance of drawn releases")
    n: Field[int] = Field("respondents")
    reps: Field[int] = Field("releases drawn")


# ---- tests ---------------------------------------------------------------------------------------------
class HypothesisTest(Typed):
    """A hypothesis test (``test``): its value a :class:`~privspec.results.values.TestResult`."""

    kind = "test"
    n: Field[int] = Field("respondents")
    calibration: Field[str] = Field("how the statistic's null law is calibrated")
    null: Field[str] = Field("the null hypothesis")
    draws: Field[int] = Field("Monte Carlo draws of the null law")
    seed: Field[int] = Field("their seed")
    p_value_mc_se: Field[float] = Field("the Monte Carlo standard error of the p-value")
    note: Field[str] = Field("what to know about the test")
    rao_scott: Field[dict] = Field("beside a design-based test: the Rao-Scott second-order corrected test "
                                   "(statistic, ndf, ddf, p_value, pearson, mean_deff, deffs)")

    @property
    def method(self) -> str | None:  # type: ignore[override]
        """The test."""
        return self.value.method if isinstance(self.value, TestResult) else None


# ---- simulations ---------------------------------------------------------------------------------------
class Simulation(Typed, OracleFacts):
    """Replications drawn from the population: empirical against analytic (``simulation``)."""

    kind = "simulation"
    method: Field[str] = Field("the estimator replicated")
    se_kind: Field[str] = Field("population or conditional")
    n: Field[int] = Field("respondents per replication")
    reps: Field[int] = Field("replications")
    seed: Field[int] = Field("the seed")
    skipped: Field[int] = Field("replications without an estimate")
    evaluation: Field[str] = Field("how the analytic value was evaluated")
    ci95_method: Field[str] = Field("how each replication's intervals are made", key="ci_method")
    se_method: Field[str] = Field("how each replication's standard errors are made")
    ci95_target: Field[str] = Field("what the intervals are to cover")
    projection: Field[str] = Field("how each estimate is brought onto the simplex")
    calibration: Field[str] = Field("how a test's null law is calibrated")
    seconds: Field[float] = Field("the time the replications took")
    draws: Field[int] = Field("Monte Carlo draws of a test's null law")
    chosen: Field[dict] = Field("how often hybrid chose each estimator")
    note: Field[str] = Field("what is drawn and compared")


# ---- privacy -------------------------------------------------------------------------------------------
class Privacy(Typed):
    """What a mechanism reveals or protects, without data."""

    evaluation: Field[str] = Field("how it was evaluated: exact, floating point, symbolic ...")
    meaning: Field[str] = Field("what the value is, in the papers' notation")


class Epsilon(Privacy, OracleFacts):
    """The mechanism's local-DP epsilon (``epsilon``)."""

    kind = "epsilon"
    reason: Field[str] = Field("why the epsilon is this")
    read_back: Field[Any] = Field("the epsilon read back from the report probabilities")
    declared: Field[Any] = Field("the epsilon declared")
    first: Field[Any] = Field("a longitudinal oracle's epsilon of the first collection")
    read_back_first: Field[float] = Field("that one read back")
    after_collections: Field[dict] = Field("the loss after t collections, t = 1 .. 10")
    simulation: Field[str] = Field("what simulate draws for it")


class Coverage(Privacy):
    """How much of the domain a report covers (``coverage``)."""

    kind = "coverage"
    metric: Field[str] = Field("size, mutual_information or prediction")
    note: Field[str] = Field("what to know about it")
    p_coverage_at_least_tau: Field[Any] = Field("the probability of a coverage of at least tau")
    collect_probability: Field[Any] = Field("the probability that a report is collected")
    coverage_collected: Field[Any] = Field("the coverage of the collected reports")
    error: Field[float] = Field("the error of the quadrature")
    ignorability: Field[Any] = Field("whether the coarsening is ignorable")
    estimate: Field[float] = Field("the coverage estimated from data")
    estimator: Field[str] = Field("how it is estimated")
    coverages: Field[Any] = Field("each mechanism's own coverage (composition)")
    bound: Field[float] = Field("Theorem 4's lower bound on the ensemble's coverage (composition)")
    n: Field[int] = Field("reports")
    individual: Field[Any] = Field("each report's coverage")
    data: Field[str] = Field("the data")


class Leakage(Privacy):
    """What a report (or a released table) reveals, by metric (``leakage``)."""

    kind = "leakage"
    calibration: Field[str] = Field("a release's noise calibration")
    privacy_loss: Field[Any] = Field("a release's privacy loss")


class Individual(Privacy):
    """One respondent's leakage before and after a report (``individual``)."""

    kind = "individual"
    observed: Field[str] = Field("the report observed")
    optimal_guess: Field[str] = Field("the optimal guess of the category from it")


class Identifiable(Privacy):
    """Whether the mechanism identifies the population (``identifiable``)."""

    kind = "identifiable"
    reason: Field[str] = Field("why")


class OptimalAnchor(Privacy):
    """The anchor law that minimizes the information bound (``optimal_anchor``)."""

    kind = "optimal_anchor"
    variable: Field[str] = Field("the variable")
    support: Field[list] = Field("its support")
    normalizing_constant: Field[Any] = Field("the density's normalizing constant")
    information_bound: Field[Any] = Field("the information bound at the optimum")
    bound_with_mechanism_anchor: Field[Any] = Field("the bound with the mechanism's own anchor")
    efficiency: Field[Any] = Field("the mechanism's anchor's efficiency")
    unidentified_mass: Field[float] = Field("population mass the mechanism's anchors do not reach")
    note: Field[str] = Field("what to know about it")
    simulation: Field[str] = Field("what simulate draws for it")


# ---- planning ------------------------------------------------------------------------------------------
class Plan(Typed):
    """A planning answer: how many respondents, or what power at n."""

    test: Field[str] = Field("the test planned for")
    estimator: Field[str] = Field("the estimator planned for")

    def title_subject(self, estimand: Any, mechanism: str | None) -> str:
        """What a plot's title says the result is: the plan, then the spec's estimand and mechanism."""
        what = self.subject()
        if estimand is not None:
            what += f" ({estimand} from {mechanism})" if mechanism else f" ({estimand})"
        return what

    def subject(self) -> str:
        """What is planned."""
        return self.kind


class Power(Plan):
    """The power of a test at n respondents, with its curve over n (``power``)."""

    kind = "power"
    n: Field[int] = Field("respondents")
    curve: Field[dict] = Field("the power over n: lists n and power")

    def subject(self) -> str:
        return f"power of the {self.test}" if self.test else self.kind

    def plot(self, x: Any = None, alpha: float = 0.05) -> Any:
        """The power over n, the power at the result's n marked."""
        if not isinstance(self.curve, dict):
            return super().plot(x, alpha)
        return plots.figure_curve(self.curve["n"], self.curve["power"], ylabel="power", title=self.names().title(),
                                  mark=(float(self.n), float(self.value)),
                                  mark_label=f"n = {self.n:,}: power {float(self.value):.3g}")


class SampleSize(Plan):
    """The fewest respondents that meet a target (``sample_size``); its fit the criterion over n."""

    kind = "sample_size"
    target: Field[str] = Field("the target met")
    achieved: Field[float] = Field("the criterion at the sample size")
    at_n_minus_1: Field[float] = Field("the criterion at one respondent fewer")

    def subject(self) -> str:
        return f"sample size for {self.target}"

    def plot(self, x: Any = None, alpha: float = 0.05) -> Any:
        """The criterion over n, the target and the sample size marked."""
        if self.fit is None or not hasattr(self.fit, "over"):
            return super().plot(x, alpha)
        n, values = self.fit.over(int(self.value))
        return plots.figure_curve(n, values, ylabel=self.fit.criterion, title=self.names().title(),
                                  mark=(float(self.value), float(self.achieved)),
                                  mark_label=f"n = {int(self.value):,}", target=self.fit.target,
                                  target_label=f"target {self.target or ''}")


class Allocation(Typed):
    """A survey's total epsilon shared among its questions (``allocate``): its value each
    question's epsilon; beside it the parameters' values, the epsilon spent on each variable,
    each question's utility, the weighted loss, and the same for the equal split."""

    kind = "allocation"
    LABELS = "question"
    criterion: Field[str] = Field("the utility criterion minimized (lower is better)")
    n: Field[int] = Field("respondents")
    total: Field[float] = Field("the epsilon of the whole survey (every question's, summed)")
    parameters: Field[Any] = Field("each free epsilon parameter's value")
    per_variable: Field[Matrix] = Field("the epsilon each question spends on each variable; 'all': their sums")
    weights: Field[Any] = Field("each question's weight")
    utility: Field[Any] = Field("each question's criterion at its epsilon")
    weighted_loss: Field[float] = Field("the sum of the weights times the utilities")
    equal_epsilon: Field[Any] = Field("each question's epsilon under the equal split")
    equal_utility: Field[Any] = Field("each question's criterion under the equal split")
    equal_loss: Field[float] = Field("the weighted loss of the equal split")
    multiplier: Field[float] = Field("the Lagrange multiplier: the loss saved by one more unit of total epsilon")
    kkt_residual: Field[float] = Field("the largest violation of the KKT conditions, relative to the multiplier")
    method: Field[str] = Field("how the allocation was found")
    note: Field[str] = Field("what to know about it")

    def to_frame(self) -> Any:
        """One row per question: its epsilon, weight and utility, and the equal split's."""
        import pandas as pd  # start-up: pandas costs about 0.6 s; only the Python API's frames need it

        columns = {"epsilon": self.value, "weight": self.weights, self.criterion or "utility": self.utility,
                   "equal_epsilon": self.equal_epsilon, f"equal_{self.criterion or 'utility'}": self.equal_utility}
        return pd.DataFrame({k: [float(x) for x in v.values] for k, v in columns.items()},
                            index=pd.Index(list(self.value.labels), name="question"))


# ---- releases ------------------------------------------------------------------------------------------
class Budget(Typed):
    """The privacy budget of the spec's releases (``budget``), by variable or in total."""

    kind = "budget"
    LABELS = "variable"
    releases: Field[Any] = Field("the releases and what each spends")
    epsilon: Field[Any] = Field("the total epsilon")
    privacy_loss: Field[Any] = Field("the total privacy loss")
    privacy_loss_expr: Field[str] = Field("its exact form")
    expr: Field[str] = Field("the total's exact form")
    calibration: Field[str] = Field("how the noise is calibrated")
    mechanism: Field[str] = Field("the release mechanism")
    protect: Field[Any] = Field("what the releases protect")
    private_on: Field[Any] = Field("the variables the releases are private on")
    exact_totals: Field[Any] = Field("the totals released exactly")
    note: Field[str] = Field("what to know about the budget")


class ReleasedTable(Typed):
    """A released table of noisy totals (``table``), with its standard errors."""

    kind = "table"
    method: Field[str] = Field("the release mechanism")
    n: Field[int] = Field("respondents")
    se: Field[Any] = Field("standard errors of the cells")
    se_expr: Field[str] = Field("their exact form")
    empirical_se: Field[Any] = Field("the standard errors of drawn releases")
    calibration: Field[str] = Field("how the noise is calibrated")
    privacy_loss: Field[Any] = Field("the release's privacy loss")
    totals: Field[Any] = Field("the totals released")
    negative_cells: Field[int] = Field("cells below 0")
    data: Field[str] = Field("the data")
    reps: Field[int] = Field("releases drawn")
    note: Field[str] = Field("what to know about the table")


# ---- bounds --------------------------------------------------------------------------------------------
class Bounds(Typed):
    """The castell paper's error bounds (``bounds``) by number of attributes."""

    kind = "bounds"
    n: Field[Any] = Field("respondents (text when symbolic)")
    expr: Field[Any] = Field("the entries' exact forms")
    latex: Field[Any] = Field("the entries in LaTeX")
    meaning: Field[str] = Field("what each entry means")


class Thresholds(Bounds):
    """Where castell is preferred to RR-Independent (``thresholds``), by number of attributes."""

    kind = "thresholds"


# ---- comparison ----------------------------------------------------------------------------------------
class Comparison(Typed):
    """A ``compare`` block's answer: its value the comparison document, shown as tables."""

    kind = "comparison"

    def to_frame(self) -> Any:
        return comparison_frame(self.value)

    def as_text(self, verbose: bool = True) -> str:
        return comparison_text(self.value)

    def as_markdown(self) -> str:
        return comparison_markdown(self.value)

    def as_latex(self) -> str:
        return comparison_latex(self.value)

