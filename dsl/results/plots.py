"""Plots of estimated distribution functions (matplotlib, a dependency of privspec).

matplotlib is imported only when a plot is drawn, with the non-interactive Agg back end,
so that importing privspec never needs it; without it, :func:`plot_cdf` raises a
:class:`privspec.errors.BackendError` that says how to install it.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from privspec.backends.interval.npmle.estimator import npmle, cdf_confidence_band
>>> left, right = [-np.inf, 0.0, -1.0, 0.5], [0.0, np.inf, 1.0, 2.0]
>>> fit = npmle(left, right)
>>> x = np.linspace(-1.5, 2.5, 9)
>>> band = (x,) + cdf_confidence_band(fit, left, right, None, x)
>>> path = plot_cdf(fit, band, os.path.join(tempfile.mkdtemp(), "cdf.png"))
>>> os.path.getsize(path) > 0
True
"""
from __future__ import annotations

import io
import os
import textwrap
from typing import Any, Sequence

import numpy as np

from privspec import outputs
from privspec.errors import BackendError, Diagnostic
from privspec.results.values import StepFunction

__all__ = ["pyplot", "plot_cdf", "figure_cdf", "figure_estimates", "figure_matrix", "figure_curve"]


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg back end; B030 says how to install it
    where it is missing."""
    try:
        # start-up: matplotlib and pyplot take about 1 s, paid only by a call that draws
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt  # start-up: see above
    except ImportError:
        raise BackendError(Diagnostic("B030", "plotting needs matplotlib, a dependency of privspec that is "
                                      "missing here", hint="pip install matplotlib")) from None
    return plt


def _title(ax: Any, title: str) -> None:
    """The title, folded to lines that fit the figure's width."""
    width = max(int(ax.figure.get_figwidth() * 10), 30)
    ax.set_title(textwrap.fill(title, width=width, break_long_words=False), fontsize="medium")


def _labels(ax: Any, xlabel: str | None, ylabel: str | None, title: str | None) -> None:
    """The axis labels and the title of a figure, each where given."""
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        _title(ax, title)


def _steps(result: Any) -> tuple[np.ndarray, np.ndarray]:
    """Innermost intervals ``(m, 2)`` and masses from an NPMLEResult, a StepFunction or a
    Result whose value is a StepFunction."""
    if isinstance(getattr(result, "value", None), StepFunction):  # a Result
        result = result.value
    if isinstance(result, StepFunction):
        return np.asarray(result.intervals, dtype=float).reshape(-1, 2), np.asarray(result.mass, dtype=float)
    if hasattr(result, "intervals") and hasattr(result, "mass"):
        return np.asarray(result.intervals, dtype=float).reshape(-1, 2), np.asarray(result.mass, dtype=float)
    raise TypeError(f"plot_cdf needs an NPMLE result or a StepFunction, not {type(result).__name__}")


def plot_cdf(result: Any, band: Sequence[Any] | None, path: str | os.PathLike[str], *,
             title: str | None = None, xlabel: str = "y", truth: Any = None) -> str:
    """Draw the estimated CDF as a step function, with its pointwise band, to ``path``
    (:func:`figure_cdf`; the suffix picks the format: ``.png``, ``.svg``, ``.pdf``).  The
    file is written atomically and replaces an earlier picture, never anything that is not
    a regular file (:func:`privspec.outputs.write_atomic`).

    Returns
    -------
    str
        ``path``.
    """
    outputs.check_output(path, force=True)
    fig = figure_cdf(result, band, title=title, xlabel=xlabel, truth=truth)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=os.path.splitext(os.fspath(path))[1][1:].lower() or "png")
    finally:
        pyplot().close(fig)
    outputs.write_bytes_atomic(buf.getvalue(), path, force=True)
    return os.fspath(path)


def figure_cdf(result: Any, band: Sequence[Any] | None, *, title: str | None = None, xlabel: str = "y",
               truth: Any = None, ylabel: str = "F") -> Any:
    """The estimated CDF as a step function, with its pointwise band: a matplotlib Figure.

    Parameters
    ----------
    result : NPMLEResult, StepFunction or Result
        The estimate.  Each innermost interval's mass is drawn at its right end (the
        convention of :meth:`NPMLEResult.cdf`); the innermost intervals with mass are
        shaded beneath the curve, as the NPMLE does not say where in them the mass lies.
    band : (x, lower, upper) or None
        Pointwise confidence bounds at ``x`` (from
        :func:`privspec.backends.interval.npmle.estimator.cdf_confidence_band`), drawn as a shaded region.
    title, xlabel, ylabel : str
        Labels.
    truth : callable, optional
        A reference CDF (vectorized) drawn dashed, e.g. the population's in a simulation.
    """
    plt = pyplot()
    intervals, mass = _steps(result)
    cum = np.minimum(np.cumsum(mass), 1.0)
    right = intervals[:, 1]
    finite = np.concatenate([intervals[np.isfinite(intervals)].ravel(),
                             [] if band is None else np.asarray(band[0], dtype=float)])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    lo, hi = lo - pad, hi + pad
    fig, ax = plt.subplots(figsize=(7, 4.2))
    if band is not None:
        bx, blo, bhi = (np.asarray(v, dtype=float) for v in band)
        order = np.argsort(bx)
        ax.fill_between(bx[order], blo[order], bhi[order], step="post", alpha=0.25,
                        color="tab:blue", linewidth=0, label="pointwise band")
    # the curve: 0 up to the first right end, then a jump at each right end
    xs = np.concatenate([[lo], np.clip(right, lo, hi), [hi]])
    ys = np.concatenate([[0.0], cum, [cum[-1] if cum.size else 1.0]])
    ax.step(xs, ys, where="post", color="tab:blue", label="NPMLE")
    for (a, b), m in zip(intervals, mass):
        if m > 0 and b > a:
            ax.axvspan(max(a, lo), min(b, hi), color="0.85", alpha=0.5, linewidth=0)
    if truth is not None:
        grid = np.linspace(lo, hi, 400)
        ax.plot(grid, truth(grid), "--", color="0.3", label="truth")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        _title(ax, title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def figure_estimates(params: Any, lower: Any = None, upper: Any = None, *, title: str | None = None,
                     xlabel: str | None = None, ylabel: str | None = None, interval: str | None = None) -> Any:
    """Estimates with their intervals (a pandas Series and two of the same index): a Figure,
    the estimates on the x axis (``xlabel``), one row per label (``ylabel``: what the labels
    are); ``interval`` names the intervals in the legend."""
    plt = pyplot()
    labels = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in params.index]
    y = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1.2))
    values = np.asarray(params, dtype=float)
    if lower is not None and upper is not None:
        err = np.vstack([values - np.asarray(lower, dtype=float), np.asarray(upper, dtype=float) - values])
        ax.errorbar(values, y, xerr=np.maximum(err, 0.0), fmt="o", color="tab:blue", capsize=3,
                    label=f"estimate and {interval}" if interval else None)
    else:
        ax.plot(values, y, "o", color="tab:blue")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.axvline(0.0, color="0.7", linewidth=0.8)
    _labels(ax, xlabel, ylabel, title)
    if interval and lower is not None:
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig


def figure_matrix(frame: Any, *, title: str | None = None, xlabel: str | None = None,
                  ylabel: str | None = None) -> Any:
    """A labelled matrix (a DataFrame) as a heat map: a Figure."""
    plt = pyplot()
    data = np.asarray(frame, dtype=float)
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * data.shape[1], 0.8 + 0.5 * data.shape[0]))
    bound = float(np.nanmax(np.abs(data))) or 1.0
    im = ax.imshow(data, cmap="RdBu_r", vmin=-bound, vmax=bound)
    ax.set_xticks(range(data.shape[1]), [str(c) for c in frame.columns], rotation=45, ha="right")
    ax.set_yticks(range(data.shape[0]), [str(r) for r in frame.index])
    fig.colorbar(im, ax=ax)
    _labels(ax, xlabel, ylabel, title)
    fig.tight_layout()
    return fig


def figure_curve(n: Sequence[float], values: Sequence[float], *, ylabel: str, title: str | None = None,
                 mark: tuple[float, float] | None = None, mark_label: str | None = None,
                 target: float | None = None, target_label: str | None = None) -> Any:
    """A criterion (power, a standard error ...) over the number of respondents ``n`` (log
    scale): a Figure, with the point ``mark`` (the n asked, or the sample size found) and
    the horizontal line ``target`` marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(np.asarray(n, dtype=float), np.asarray(values, dtype=float), "-", color="tab:blue", label=ylabel)
    if target is not None:
        ax.axhline(float(target), color="tab:red", linestyle="--", linewidth=1, label=target_label or "target")
    if mark is not None:
        ax.plot([mark[0]], [mark[1]], "o", color="tab:red", label=mark_label)
        ax.axvline(float(mark[0]), color="0.6", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("respondents n")
    ax.set_ylabel(ylabel)
    if title:
        _title(ax, title)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig
