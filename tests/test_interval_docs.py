"""docs/interval-privacy.md: its specs and data scripts are current (its commands run in
tests/test_docs.py, which also checks the output it quotes)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "interval-privacy.md"


def test_bundled_data_are_what_the_scripts_make(tmp_path, monkeypatch):
    import importlib.util

    for script, files in (("make_interval.py", ["interval_raw.csv"]),
                          ("make_interval_table2.py", [f"interval_table2_{k}pct.csv" for k in (0, 1, 5)])):
        spec = importlib.util.spec_from_file_location("maker", ROOT / "specs" / "data" / script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setattr(module, "HERE", tmp_path)
        module.main()
        for f in files:
            assert pd.read_csv(tmp_path / f).equals(pd.read_csv(ROOT / "specs" / "data" / f)), f


def test_figure_is_there():
    assert (ROOT / "docs" / "img" / "interval_cdf.png").stat().st_size > 10_000
    assert "img/interval_cdf.png" in PAGE.read_text(encoding="utf-8")
