"""Golden files of what ``privspec analyze --format json`` (and ``compare --format json``) answers
for every bundled spec.

The refactors of the back ends (one channel core, one NPMLE engine, query kinds as
data: issue 15) must not change a single answer.  For each ``specs/<stem>.privspec``
with queries that ``analyze`` answers, the JSON output is compared with
``tests/golden/<stem>.analysis.json``: exact forms (``expr``, ``latex``), labels, notes
and every other string character for character; floating-point numbers to a relative
1e-9 (the last bits of a quadrature or a BLAS call may differ between machines and
numpy versions, nothing more may).

After an intended change, rewrite them with
``pytest tests/test_analysis_golden.py --update-golden`` and read the diff.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from privspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SPEC_FILES = sorted((ROOT / "specs").glob("*.privspec"))
#: relative tolerance for floating-point numbers (exact forms are compared as text)
RTOL = 1e-9
ATOL = 1e-12


def analysis(path: Path) -> tuple[int, str]:
    """Exit status and JSON output of ``privspec analyze PATH --format json``."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["analyze", str(path), "--format", "json"], stdout=out, stderr=err)
    return code, out.getvalue()


def differences(expected: Any, actual: Any, where: str = "$") -> list[str]:
    """Where ``actual`` differs from ``expected``: strings, keys and lengths exactly, floats
    within :data:`RTOL`.

    Examples
    --------
    >>> differences({"a": [1.0, "x"]}, {"a": [1.0 + 1e-12, "x"]})
    []
    >>> differences({"a": [1.0, "x"]}, {"a": [1.1, "y"]})
    ['$.a[0]: 1.0 -> 1.1', "$.a[1]: 'x' -> 'y'"]
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        if list(expected) != list(actual):
            return [f"{where}: keys {list(expected)} -> {list(actual)}"]
        return [d for k in expected for d in differences(expected[k], actual[k], f"{where}.{k}")]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: length {len(expected)} -> {len(actual)}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in differences(e, a, f"{where}[{i}]")]
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        if math.isclose(expected, actual, rel_tol=RTOL, abs_tol=ATOL):
            return []
    elif type(expected) is type(actual) and expected == actual:
        return []
    return [f"{where}: {expected!r} -> {actual!r}"]



#: the bundled specs whose analysis takes the longest (3 to 10 s): their goldens are slow tests, run by CI
SLOW_ANALYSES = {"planning", "randomized_response", "language"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_ANALYSES else p
                                  for p in SPEC_FILES], ids=[p.stem for p in SPEC_FILES])
def test_analysis_golden(path: Path, update_golden: bool) -> None:
    code, text = analysis(path)
    golden = GOLDEN / f"{path.stem}.analysis.json"
    if not text.strip():  # nothing analyze answers (no queries, or only data queries)
        assert code == 0 and not golden.exists(), f"{path.name}: analyze answered nothing (exit {code})"
        return
    assert code == 0, f"{path.name}: analyze exited {code}"
    actual = json.loads(text)
    if update_golden:
        golden.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    if not golden.exists():
        pytest.fail(f"tests/golden/{golden.name} is missing; run pytest tests/test_analysis_golden.py "
                    "--update-golden and review it")
    found = differences(json.loads(golden.read_text(encoding="utf-8")), actual)
    assert not found, f"{path.name}: analyze output differs from golden/{golden.name} in {len(found)} " \
                      f"places (--update-golden rewrites it after review):\n" + "\n".join(found[:40])


def comparison(path: Path) -> tuple[int, str]:
    """Exit status and JSON output of ``privspec compare PATH --format json``."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["compare", str(path), "--format", "json"], stdout=out, stderr=err)
    return code, out.getvalue()


COMPARE_SPECS = [p for p in SPEC_FILES if (GOLDEN / f"{p.stem}.compare.json").exists()]


def test_every_compare_spec_has_a_golden() -> None:
    """A bundled spec with a ``compare`` block has its comparison golden (the typed comparison
    document must serialize to the JSON it always had)."""
    with_compare = {p.stem for p in SPEC_FILES
                    if any(line.lstrip().startswith("compare ") for line in p.read_text(encoding="utf-8").splitlines())}
    assert with_compare == {p.stem for p in COMPARE_SPECS}


#: the quick run compares this one (4 to 8 s each for the others: slow, run by CI)
QUICK_COMPARES = {"compare_race"}


@pytest.mark.parametrize("path", [p if p.stem in QUICK_COMPARES else pytest.param(p, marks=pytest.mark.slow)
                                  for p in COMPARE_SPECS], ids=[p.stem for p in COMPARE_SPECS])
def test_compare_golden(path: Path, update_golden: bool) -> None:
    code, text = comparison(path)
    assert code == 0, f"{path.name}: compare exited {code}"
    actual = json.loads(text)
    golden = GOLDEN / f"{path.stem}.compare.json"
    if update_golden:
        golden.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    found = differences(json.loads(golden.read_text(encoding="utf-8")), actual)
    assert not found, f"{path.name}: compare output differs from golden/{golden.name} in {len(found)} " \
                      f"places (--update-golden rewrites it after review):\n" + "\n".join(found[:40])
