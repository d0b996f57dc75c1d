"""An oracle's reports in data, and the MLE on them: what the one-attribute and the
multi-attribute back ends (:mod:`privspec.backends.oracles.backend`,
:mod:`privspec.backends.oracles.multi_backend`) share.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph
from privspec.results.kinds import Avar
from privspec.backends.core.populations import bind_parameters
from privspec.backends.data.files import require_columns
from privspec.backends.data.tally import Tally, all_text, strip_texts
from privspec.backends.oracles import sampling
from privspec.backends.oracles.protocol import OneAttributeOracle, Oracle
from privspec.backends.oracles.pure import ibu

#: the observed information of the MLE (``by mle``) is a d x d sum over the distinct support
#: sets: computed up to this many set x category^2 products (about 2 s), else no standard error
MLE_SE_WORK = 2e9

def avar_extras(se_kind: str, facts: dict, V: np.ndarray, **more: Any) -> dict:
    """The extras of an avar result (one attribute or several, one round or longitudinal):
    how it was computed, what the oracle is (``facts``), the trace of ``V``, ``more``, and
    what the matrix means for the kind of standard error."""
    return {"method": "mom", "se_kind": se_kind, **facts, "trace": float(np.trace(V)), **more,
            "meaning": Avar.meaning_of(se_kind)}


def number_of(model: ModelGraph, value: Any, what: str) -> float:
    """A value at the parameters' values, as a float; B410 while a parameter has none."""
    v = bind_parameters(model, value)
    if not getattr(v, "is_number", False):
        raise BackendError(Diagnostic("B410", f"{what} = {v} has no value: a frequency oracle is analysed and run "
                                      "at numbers", hint="give the parameter a value (parameter eps = 1)"))
    return float(v)


# ---- reading reports ------------------------------------------------------------------------------
def read_reports(column: str, protocol: str, o: OneAttributeOracle, engine: Any) -> tuple[Any, np.ndarray]:
    """The distinct reports of ``column`` and their counts (:func:`tally_reports`)."""
    require_column(column, engine)
    tally = engine.tally([column])
    return tally_reports(tally, column, protocol, o), np.asarray(tally.counts, dtype=float)


def tally_reports(tally: Tally, column: str, protocol: str, o: OneAttributeOracle) -> Any:
    """The reports of ``column`` in each distinct tuple of ``tally`` (parsed by ``o``'s
    reader; other columns may be counted beside it: a survey design's); D004 for missing
    values and D013 naming every distinct value that is not a report of the oracle."""
    tally.check_no_missing([column])
    values = np.asarray(tally.column(column), dtype=object)
    text = strip_texts(values) if all_text(values) else np.array([str(v).strip() for v in values], dtype=object)
    reports, bad = o.parse_reports(text)
    mask = np.zeros(len(text), dtype=bool)
    mask[np.asarray(bad, dtype=np.int64)] = True
    check_reports(tally, mask, text, column, protocol, form_hint(o.report_oracle()))
    return reports


def require_column(column: str, engine: Any) -> None:
    """D003 (as for every mechanism) when the engine's data have no such column."""
    require_columns(pd.DataFrame(columns=engine.columns()), [column], getattr(engine, "source", "the data"))


def read_support_counts(column: str, protocol: str, o: OneAttributeOracle, engine: Any) -> tuple[np.ndarray, float]:
    """``C`` (the reports whose support holds each category) and the number of reports of
    ``column``: all the unbiased estimator needs.

    Unary-encoding reports of more than a few categories are nearly all distinct (d = 256,
    epsilon = 4: a million reports, a million texts), and so are local hashing's (a random
    seed each), so an engine that has the rows' texts at hand
    (:meth:`.engines.PandasEngine.text_blocks`, :meth:`~.engines.PandasEngine.text_buffers`)
    gives them as bytes and the reports are parsed and counted row by row, in blocks,
    without grouping them.  Anything else (other
    oracles, a text that is not a report, a missing value) is read as distinct reports
    (:func:`read_reports`), with its messages.
    """
    one = o.report_oracle()
    if one.DECIMAL_TEXT and hasattr(engine, "text_buffers"):
        require_column(column, engine)
        counted = _decimal_support_counts(one, engine.text_buffers(column))
        if counted is not None:
            return counted
    if one.HEX_TEXT and hasattr(engine, "text_blocks"):
        require_column(column, engine)
        blocks = engine.text_blocks(column, 2 * one.packed_width)
        if blocks is not None:
            C = np.zeros(one.d, dtype=np.int64)
            n = 0
            for chars in blocks:
                packed, ok = one.unhex(chars)
                if not ok.all():
                    break                   # not every row is a report: read them as reports
                C += one.support_counts(packed)
                n += len(chars)
            else:
                return C.astype(float), float(n)
    reports, counts = read_reports(column, protocol, o, engine)
    return o.support_counts(reports, counts), float(counts.sum())


def _decimal_support_counts(o: Oracle, buffers: list[tuple[np.ndarray, np.ndarray]] | None,
                            rows: int = 1 << 16) -> tuple[np.ndarray, float] | None:
    """``C`` and ``n`` from the rows' texts of local hashing (``seed:value``, nearly all
    distinct: a tally would hash and sort every one), parsed from their bytes in blocks of
    ``rows``; None when there are no such texts or a row is not a report."""
    if buffers is None:
        return None
    C = np.zeros(o.d, dtype=np.int64)
    n = 0
    for data, offsets in buffers:
        for lo in range(0, len(offsets) - 1, rows):
            reports, ok = o.parse_buffers(data, offsets[lo:lo + rows + 1])
            if not ok.all():
                return None                 # not every row is a report: read them as reports
            C += o.support_counts(reports).astype(np.int64)
            n += len(ok)
    return C.astype(float), float(n)


def check_reports(tally: Any, bad: np.ndarray, text: np.ndarray, column: str, protocol: str, hint: str) -> None:
    """D013 naming every distinct value of ``column`` that is not a report (``bad``, over
    the tally's distinct tuples; ``text`` their values) with its rows."""
    if not bad.any():
        return
    shown_values = text[bad]
    shown = ", ".join(repr(t) for t in shown_values[:5]) + (" ..." if len(shown_values) > 5 else "")
    many = len(shown_values) > 1
    raise DataError(Diagnostic("D013", f"{len(shown_values)} distinct value{'s' if many else ''} in {tally.source} "
                                       f"{'are' if many else 'is'} not {protocol} reports of {column}: {shown}",
                               rows=tally.locate(bad), columns=(column,), hint=hint))


def form_hint(o: Oracle) -> str:
    """How ``o``'s reports are written, for a message about data that are not."""
    return f"{o.kind} reports are {o.form()}; privatize writes them"


def _mle_covariance(sets: np.ndarray, counts: np.ndarray, f: np.ndarray, pair: tuple[float, float]
                    ) -> np.ndarray | None:
    """n times the covariance of the MLE from the observed information (the Hessian of the
    log-likelihood ``sum_y c_y log(L f)_y``, ``-sum_y c_y g_y g_y^T`` with ``g_y = L_y / (L
    f)_y``) on the simplex (``f = alpha + B theta``); None when too large or singular (an
    estimate on the boundary)."""
    m, d = sets.shape
    if m * d * d > MLE_SE_WORK:
        return None
    a, b = pair
    J = np.zeros((d, d))
    step = max(1, int(4e6 // d))
    for lo in range(0, m, step):
        L = np.where(sets[lo:lo + step], a, b)
        g = L / (L @ f)[:, None]
        J += g.T @ (g * counts[lo:lo + step, None])
    n = counts.sum()
    B = np.vstack([np.eye(d - 1), -np.ones((1, d - 1))])
    try:
        Vt = np.linalg.inv(B.T @ J @ B / n)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(Vt)) or np.any(np.diag(Vt) < 0):
        return None
    return B @ Vt @ B.T


def mle_fit(o: Oracle, reports: Any, counts: np.ndarray, pair: tuple[float, float]
            ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """The MLE (the IBU) from reports of ``o``'s form whose likelihood is ``pair`` in / out of
    their support: the estimate, n times its covariance (None when unknown) and the
    log-likelihood (up to a constant)."""
    sets, c = o.support_sets(reports, counts)
    w = ibu(o, sets, c, pair=pair)
    a, b = pair
    loglik = float(np.sum(c * np.log(np.where(sets, a, b) @ w)))
    return w, _mle_covariance(sets, c, w, pair), loglik


