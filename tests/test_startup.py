"""Start-up budgets, counted in modules rather than seconds (bench/startup.py times them):
what ``import privspec``, the command line's start and an analysis load.

- ``import privspec`` and ``privspec --version`` load none of numpy, scipy, sympy, pandas
  or lark (they cost about 1 s together).
- Importing every back end (what routing a query does) and ``privspec analyze`` of the
  urn load no ``scipy.stats`` (0.4-0.9 s), ``scipy.optimize``, ``scipy.integrate``,
  ``scipy.special`` (0.2-0.35 s) or ``scipy.linalg``: a back end names them as
  ``scipy.stats.x`` and they load when a computation first uses them.
- Routing imports every back-end module but not the collection server (starlette, asyncio):
  the subpackages of ``NO_BACK_ENDS`` register no back end.
- Routing imports only the back-end modules whose :data:`privspec.backends.HOMES` entry
  reaches the query (its kind and family): ``privspec analyze`` of the urn (subset designs)
  loads the finite back end and none of the others; every module that registers a back end
  is in ``HOMES`` and every row of its ``ANSWERS`` inside its reach (else it would never be
  routed to).
- The program itself (``python -m privspec``, the console script) imports what a verb
  stands on with the cycle collector paused and then freezes those objects (``gc.freeze``);
  a caller of ``cli.main(argv)`` in its own process is never frozen.
- ``privspec run`` of a subset design on a Parquet file loads no ``scipy`` submodule (its
  95% intervals use the written-out normal quantile), no store (sqlite3, the submissions'
  checks, which load every back end) and no back end but the finite one.
- ``privspec analyze`` of the planning spec (sample sizes and power) loads no ``scipy.stats``:
  its normal quantiles and cdf are :mod:`scipy.special`'s (what ``scipy.stats.norm`` calls).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("numpy", "scipy", "sympy", "pandas", "lark")
SCIPY_HEAVY = ("scipy.stats", "scipy.optimize", "scipy.integrate", "scipy.special", "scipy.linalg")


def loaded_after(code: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` are in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([n for n in {list(names)!r} if n in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_privspec_loads_no_library() -> None:
    assert loaded_after("import privspec", LIBRARIES) == []


def test_the_command_line_starts_without_the_libraries() -> None:
    code = ("import contextlib, io\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--version'])\n    except SystemExit:\n        pass")
    assert loaded_after(code, LIBRARIES) == []


def test_loading_every_back_end_leaves_the_heavy_scipy_modules_out() -> None:
    assert loaded_after("import privspec.backends as b\nb.load_all()", SCIPY_HEAVY) == []


def test_routing_imports_the_back_ends_and_not_the_collection_server() -> None:
    code = ("import contextlib, io\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['analyze', 'specs/urn.privspec']) == 0\n"
            "import privspec.backends as b\nb.load_all()")
    assert loaded_after(code, ("starlette", "privspec.backends.collect.server")) == []


def test_the_subpackages_routing_leaves_out_register_no_back_end() -> None:
    from privspec.backends import NO_BACK_ENDS
    for name in NO_BACK_ENDS:
        registering = [p.name for p in (ROOT / "backends" / name).rglob("*.py")
                       if re.search(r"^@register\b", p.read_text(encoding="utf-8"), re.MULTILINE)]
        assert registering == [], f"backends/{name} registers a back end that routing would not load"


@pytest.mark.parametrize("spec", ["specs/urn.privspec"])
def test_analyze_loads_no_heavy_scipy_module_it_does_not_use(spec: str) -> None:
    code = ("import contextlib, io\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['analyze', {spec!r}]) == 0")
    assert loaded_after(code, SCIPY_HEAVY) == []


def test_planning_loads_no_scipy_stats() -> None:
    code = ("import contextlib, io\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['analyze', 'specs/planning.privspec']) == 0")
    assert loaded_after(code, ("scipy.stats",)) == []


#: the back-end modules a subset design's analysis has no use for (routing: HOMES)
OTHER_BACK_ENDS = tuple(f"privspec.backends.{m}" for m in (
    "rr.backend", "rr.two_group_backend", "interval.backend", "oracles.backend", "numeric.backend",
    "releases.backend", "design.comparison", "design.allocation"))


def test_every_module_that_registers_a_back_end_has_a_home() -> None:
    from privspec.backends import HOMES, NO_BACK_ENDS
    registering = {p.relative_to(ROOT / "backends").with_suffix("").as_posix().replace("/", ".")
                   for p in (ROOT / "backends").rglob("*.py")
                   if p.relative_to(ROOT / "backends").parts[0] not in NO_BACK_ENDS
                   and re.search(r"^@register\b", p.read_text(encoding="utf-8"), re.MULTILINE)}
    assert registering == set(HOMES)


def test_every_declared_row_is_inside_its_modules_reach() -> None:
    import privspec.backends as b
    b.load_all()
    for cls in b.REGISTRY.values():
        reach = b.HOMES[cls.__module__.removeprefix("privspec.backends.")]
        for row in cls.ANSWERS:
            for kind in row.kinds:
                for family in row.families:
                    assert reach.covers(kind, family), (cls.REGISTER_NAME, kind, family)


def test_analyzing_a_subset_design_loads_the_finite_back_end_only() -> None:
    code = ("import contextlib, io\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['analyze', 'specs/urn.privspec']) == 0")
    assert loaded_after(code, ("privspec.backends.finite.backend", *OTHER_BACK_ENDS)) == \
        ["privspec.backends.finite.backend"]


def test_the_program_freezes_its_imports_and_a_caller_of_main_is_left_alone() -> None:
    run_main = ("import contextlib, gc, io, sys\nfrom privspec.cli import main\n"
                "with contextlib.redirect_stdout(io.StringIO()):\n"
                "    assert main({argv}) == 0\n"
                "print(gc.get_freeze_count() > 0, gc.isenabled())")
    for argv, frozen in (("None", "True"), ("['analyze', 'specs/urn.privspec']", "False")):
        code = "import sys\nsys.argv = ['privspec', 'analyze', 'specs/urn.privspec']\n" + run_main.format(argv=argv)
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        assert out.stdout.split() == [frozen, "True"], argv


def test_running_a_subset_design_on_parquet_loads_no_scipy_store_or_other_back_end(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    spec = tmp_path / "s.privspec"
    spec.write_text("variable x: categorical {a, b, c, d}\nmechanism s = subset(x, uniform)\n"
                    "query w = estimate distribution(x) from s by mom\n", encoding="utf-8")
    data = tmp_path / "s.parquet"
    pd.DataFrame({"x": ["a|b", "a|c", "b|d", "c|d", "a|d", "b|c", "a|b"] * 5}).to_parquet(data)
    code = ("import contextlib, io\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['run', {str(spec)!r}, '--data', {str(data)!r}]) == 0")
    unwanted = ("scipy.special", "scipy.stats", "sqlite3", "privspec.backends.collect.store", *OTHER_BACK_ENDS)
    assert loaded_after(code, ("privspec.backends.finite.backend", *unwanted)) == ["privspec.backends.finite.backend"]



def test_every_spec_query_is_answered_by_a_back_end_whose_home_routing_imports_for_it() -> None:
    """What a fresh process routes a query to is what routing with every back end loaded
    picks: that back end's module is one routing imports for the query."""
    import privspec
    import privspec.backends as b
    from privspec.model.query_kinds import family_of
    b.load_all()
    checked = 0
    for path in sorted((ROOT / "specs").glob("*.privspec")):
        for q in privspec.load(path).model.queries.values():
            for verb in ("analyze", "run", "simulate"):
                chosen = b.backend_for(q, verb)
                if chosen is not None:
                    home = type(chosen).__module__.removeprefix("privspec.backends.")
                    assert b.HOMES[home].covers(q.kind, family_of(q.mechanism)), (path.stem, q.name, verb, home)
                    checked += 1
    assert checked > 100
