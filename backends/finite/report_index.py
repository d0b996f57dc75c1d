"""Which observation of a channel each distinct report text is: one parse, shared by the
run on a tally (:func:`privspec.backends.finite.data.factor_codes`) and the run from a
compiled plan (:mod:`privspec.run_plans`), which imports no pandas.

A subset report is its labels joined by ``|`` in any order, spaces around each ignored;
a randomized-response report is one label; a report of a mechanism whose reports are not
its categories (k-subsets counted by size, ...) is one of the channel's observation labels.

Examples
--------
>>> import privspec
>>> from privspec.backends.core.compile import channel_of
>>> spec = privspec.load("variable x: categorical {a, b, c, d}\\nmechanism m = subset(x, uniform)")
>>> ch = channel_of(spec.model.mechanisms["m"])
>>> mapping, reasons = parse_reports(["b | a", "e", "c|d"], ch)
>>> [ch.obs_labels[i] for i in mapping[[0, 2]]], reasons
(['a|b', 'c|d'], {1: "'e' is not a category"})
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from privspec.backends.data.cell_text import show_value

if TYPE_CHECKING:
    from privspec.backends.core.channel import Channel


@functools.lru_cache(maxsize=64)
def label_positions(labels: tuple[str, ...]) -> dict[str, int]:
    """Each label's index, built once per tuple of labels (not once per distinct report:
    256 reports of 256 categories built 65,536 entries a call).  Read only."""
    return {lab: j for j, lab in enumerate(labels)}


def parse_observation(text: Any, ch: "Channel", labels: tuple[str, ...]) -> tuple[int | None, str]:
    """Observation index of one distinct report, or (None, reason)."""
    if ch.masks is None and ch.obs_labels != ch.x_labels:  # reports that are not categories (kuk: counts)
        idx = ch.index_of(str(text).strip())
        return (idx, "") if idx is not None else (None, f"{show_value(text)} is not a report of this mechanism "
                                                        f"({', '.join(ch.obs_labels)})")
    parts = [t.strip() for t in str(text).split("|")]
    position = label_positions(tuple(labels))
    unknown = [t for t in parts if t not in position]
    if unknown:
        return None, f"{show_value(unknown[0])} is not a category"
    if ch.masks is None:  # one label per report
        if len(parts) != 1:
            return None, "a randomized-response report is one label"
        idx = ch.index_of(parts[0])
        if idx is not None and not np.any(ch.Kn[idx] > 0):
            return None, "this report has probability 0 under the mechanism's randomization matrix"
        return idx, ""
    mask = 0
    for t in parts:
        mask |= 1 << position[t]
    idx = ch.index_of(mask)
    if idx is None:
        return None, "this subset has probability 0 under the declared design (mu_a = 0)"
    return idx, ""


def label_reports(uniques: Sequence[Any], ch: "Channel") -> np.ndarray:
    """The observation index of each distinct report that is one category's label (its
    spaces stripped) of positive probability, for a channel whose reports are its
    categories (randomized response); -1 for the others, and for every report of any other
    channel: :func:`parse_observation` reads those one by one (and says why one is not a
    report).  One dictionary look-up per distinct report and one check of the matrix' rows,
    where the parse of each (d = 256: 256 parses) took milliseconds a call."""
    mapping = np.full(len(uniques), -1, dtype=np.int64)
    if ch.masks is not None or ch.obs_labels != ch.x_labels or not len(uniques):
        return mapping
    position = label_positions(tuple(ch.obs_labels))
    texts = [str(u).strip() for u in uniques]
    mapping[:] = [-1 if "|" in t else position.get(t, -1) for t in texts]
    found = mapping >= 0
    possible = (ch.Kn[mapping[found]] > 0).any(axis=1)   # rows of probability 0: explained apart
    mapping[np.flatnonzero(found)[~possible]] = -1
    return mapping


def parse_reports(uniques: Sequence[Any], ch: "Channel") -> tuple[np.ndarray, dict[int, str]]:
    """The observation index of each distinct report (-1 where it is none) and, for each
    that is none, why (by its position in ``uniques``)."""
    mapping = label_reports(uniques, ch)
    reasons: dict[int, str] = {}
    labels = tuple(ch.x_labels)
    for k in np.flatnonzero(mapping < 0).tolist():   # a subset, or a report to explain
        idx, why = parse_observation(uniques[k], ch, labels)
        if idx is None:
            reasons[k] = why
        else:
            mapping[k] = idx
    return mapping, reasons
