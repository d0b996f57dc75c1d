"""The survey page of a fielded spec (``privspec serve``'s ``GET /``): one self-contained
HTML document whose script privatizes the answers on the respondent's device and sends
the reports only.

:func:`survey_page` asks one question per privatized variable: a fieldset whose legend is
the variable's name, radio buttons labelled with its categories in the spec's order (a
combined variable is asked as its parts, which the randomizer joins), a number input
bounded by the declared range for a continuous variable a numeric local-DP mechanism
(``laplace``, ``duchi``, ``piecewise``, ``hm``, ``square_wave``) privatizes.  An
interval mechanism never asks for the value: the page draws the anchors
(``drawAnchors``) and asks which of the random ranges holds it, as the interval-privacy
paper's survey interface does (Fig. 6(b): a value in the ``disclose`` range is given
exactly in its optional box); ``progressive`` asks its rounds as successive questions
(``nextAnchor``, ``answerRound``).  On submit the randomizer (:mod:`.randomizer`'s module,
inlined: ``crypto.getRandomValues``) draws the reports, the page POSTs ``{"reports":
{"<mechanism>": <report>}}`` to ``submit_url`` and shows the submission's id, or the
server's error; a retry sends the same reports again, never a second draw of the same
answers.

Nothing is loaded from anywhere: CSS and script inline, and a Content-Security-Policy that
lets the page connect to its own origin only and run only its own script (by its
SHA-256), and forbids the browser's own form submission (which would send the answers).
jinja2 renders it (autoescaped: labels and the title are the spec's text).
"""
from __future__ import annotations

import base64
import hashlib
from typing import Any, Sequence

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import IntervalMechanism, ProgressiveMechanism, SelectiveMechanism
from privspec.backends.collect.randomizer import client_module, mechanism_law
from privspec.backends.collect.store_checks import fieldable
from privspec.backends.interval.laws import nearest_double

#: mechanisms whose question shows random ranges (or rounds): the value is never typed
RANGED = (IntervalMechanism, ProgressiveMechanism, SelectiveMechanism)


def page_mechanisms(model: Any, mechanisms: Sequence[str] | None = None) -> list[str]:
    """The mechanisms the survey page fields: ``mechanisms`` (each must be one the
    randomizer runs: its B000 error otherwise), or by default every mechanism whose
    reports a survey collects (:func:`~.store_checks.fieldable`) and the randomizer runs,
    the others left out; B000 naming why each was refused when none is left.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("parameter e > 0\\nvariable c: categorical {a, b}\\n"
    ...                   "mechanism k = grr(c, epsilon = 1)\\nmechanism s = grr(c, epsilon = e)").model
    >>> page_mechanisms(m)
    ['k']
    """
    if mechanisms is not None:
        names = list(mechanisms)
        client_module(model, names)  # the randomizer's own refusal (B000, B009, unknown name) when one fails
        return names
    kept, refused = [], []
    for name in fieldable(model):
        try:
            mechanism_law(model, model.mechanisms[name], name)
        except BackendError as e:
            refused.append(f"'{name}': {e.diagnostics[0].message}")
            continue
        kept.append(name)
    if not kept:
        why = "; ".join(refused) if refused else "the spec declares no mechanism whose reports a survey collects"
        raise BackendError(Diagnostic("B000", f"no mechanism of this spec can be fielded by the survey page: {why}",
                                      hint="a survey fields finite mechanisms, the frequency oracles, interval(...), "
                                           "progressive(...), selective(...) and the numeric local-DP "
                                           "mechanisms"))
    return kept


def survey_page(model: Any, mechanisms: Sequence[str] | None = None, *, submit_url: str = "api/submit") -> str:
    """The survey page of ``model``'s ``mechanisms`` (default: :func:`page_mechanisms`).

    Parameters
    ----------
    model : ModelGraph
        The spec's model (``privspec.load(path).model``).
    mechanisms : sequence of str, optional
        The mechanisms fielded (each submission holds a report of each).
    submit_url : str
        Where the page POSTs ``{"reports": {...}}`` (relative to the page: same origin).

    Returns
    -------
    str
        One HTML document, starting ``<!DOCTYPE html>``.

    Raises
    ------
    privspec.errors.BackendError
        B000 when a mechanism named cannot be run by the randomizer, or none of the
        spec's can (:func:`page_mechanisms`); B009 for one whose parameters have no value.
    KeyError
        A mechanism name the spec does not declare.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('spec "Colours"\\nvariable c: categorical {red, "dark blue"}\\n'
    ...                   'mechanism k = grr(c, epsilon = 1)').model
    >>> page = survey_page(m)
    >>> "<title>Colours</title>" in page, 'value="dark blue"' in page, "Math.random" in page
    (True, True, False)
    """
    import jinja2  # start-up: only a survey page renders a template
    from markupsafe import Markup  # start-up: with jinja2

    names = page_mechanisms(model, mechanisms)
    ranged = {n: mechanism_law(model, model.mechanisms[n], n)["factors"][0] for n in names
              if isinstance(model.mechanisms[n], RANGED)}
    privatized = [n for n in names if n not in ranged]
    env = jinja2.Environment(loader=jinja2.PackageLoader("privspec", "templates"),
                             autoescape=jinja2.select_autoescape(["html.j2"], default_for_string=False),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    survey = {"mechanisms": names, "privatized": privatized, "ranged": ranged, "submitUrl": submit_url}
    script = script_text(client_module(model, privatized or names)) + "\n" \
        + env.get_template("survey.js.j2").render(survey=survey)
    view = {"title": model.title or "Survey", "questions": questions(model, names), "ranged": bool(ranged),
            "policy": policy(script)}
    return env.get_template("survey.html.j2").render(v=view, script=Markup(script))


def questions(model: Any, names: Sequence[str]) -> list[dict[str, Any]]:
    """The page's questions in order: the plain variables the privatized mechanisms read
    (in the spec's order of variables, each once), then one per interval mechanism."""
    asked: list[str] = []
    out = []
    for name in names:
        mechanism = model.mechanisms[name]
        if isinstance(mechanism, RANGED):
            continue
        for variable in mechanism.variables:
            asked += [c for c in variable.components() if c not in asked]
    for name in (v for v in model.variables if v in asked):
        variable = model.variables[name]
        if variable.is_categorical:
            out.append({"kind": "categorical", "name": name, "labels": list(variable.labels)})
        else:
            lo, hi = (number_text(e) for e in (variable.lower, variable.upper))
            shown = f"between {lo} and {hi}" if lo is not None and hi is not None else \
                f"at least {lo}" if lo is not None else f"at most {hi}" if hi is not None else None
            out.append({"kind": "continuous", "name": name, "min": lo, "max": hi, "range": shown})
    for name in names:
        mechanism = model.mechanisms[name]
        if isinstance(mechanism, (IntervalMechanism, SelectiveMechanism)):
            # selective(M, ...): M's ranges asked alike; the device then decides whether to send
            base = mechanism.base if isinstance(mechanism, SelectiveMechanism) else mechanism
            disclose = None if base.disclose is None else [number_text(e) for e in base.disclose]
            out.append({"kind": "interval", "name": name, "variable": mechanism.variable.name,
                        "disclose": disclose, "selective": isinstance(mechanism, SelectiveMechanism)})
        elif isinstance(mechanism, ProgressiveMechanism):
            out.append({"kind": "progressive", "name": name, "variable": mechanism.variable.name,
                        "rounds": int(mechanism.rounds)})
    return out


def number_text(x: Any) -> str | None:
    """A declared bound as the page writes it (the shortest text of its double; None for
    an infinite end)."""
    value = nearest_double(x)
    if value in (float("inf"), float("-inf")):
        return None
    return str(int(value)) if value.is_integer() else repr(value)


def script_text(module: str) -> str:
    """The randomizer module made safe inside ``<script>``: no ``</script`` nor ``<!--``
    can end or bend the element (a category label may hold either; both are only ever
    inside the module's string literals, where the escapes read the same)."""
    return module.replace("</", "<\\/").replace("<!--", "\\u003C!--")


def policy(script: str) -> str:
    """The page's Content-Security-Policy: nothing loaded, inline styles, only this
    script (by its SHA-256), connections to its own origin (the submission) only, no form
    submission by the browser."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "connect-src 'self'; form-action 'none'; base-uri 'none'")


__all__ = ["survey_page", "page_mechanisms", "questions", "policy", "script_text"]
