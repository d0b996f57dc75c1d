"""The ``--data`` arguments of ``privspec run`` read into a default file and files per
mechanism: shared by :meth:`privspec.backends.data.bindings.DataBindings.parse` and the
run from a compiled plan (:mod:`privspec.run_plans`), which imports no pandas."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence


def parse_data_args(items: Sequence[str], mechanisms: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """The default file and the file of each mechanism bound by name, from ``["FILE"]`` or
    ``["M=FILE", "M1,M2=FILE", ...]``; each ``M`` must name a mechanism (ValueError).

    An item whose part before ``=`` does not name mechanisms is a file name (``a=b.csv``
    is a file when it exists or its names are not identifiers).

    Examples
    --------
    >>> parse_data_args(["reports.csv", "c1,c2=other.csv"], ["c1", "c2", "s1"])
    ('reports.csv', {'c1': 'other.csv', 'c2': 'other.csv'})
    >>> parse_data_args(["c9=x.csv"], ["c1"])
    Traceback (most recent call last):
    ...
    ValueError: --data c9=x.csv: no mechanism named 'c9'
    """
    default: str | None = None
    per_mechanism: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        names = [x.strip() for x in name.split(",")]
        if sep and all(x in mechanisms for x in names):
            for x in names:
                per_mechanism[x] = path
        elif sep and not Path(item).exists() and all(x.isidentifier() for x in names):
            unknown = next(x for x in names if x not in mechanisms)
            raise ValueError(f"--data {item}: no mechanism named '{unknown}'")
        elif default is not None:
            raise ValueError("--data: give one default file; bind others with --data MECHANISM=FILE")
        else:
            default = item
    return default, per_mechanism


def columns_fed_twice(observed: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """The columns of one file that several of the mechanisms reading it observe (D006: a
    column holds one mechanism's reports), each with those mechanisms in order; from each
    mechanism's observed columns (:func:`~privspec.backends.data.bindings.observed_columns`).

    Examples
    --------
    >>> columns_fed_twice({"s": ["x"], "t": ["x", "y"], "u": ["z"]})
    {'x': ['s', 't']}
    """
    owners: dict[str, list[str]] = {}
    for name, columns in observed.items():
        for column in sorted(columns):
            owners.setdefault(column, []).append(name)
    return {column: names for column, names in owners.items() if len(names) > 1}
