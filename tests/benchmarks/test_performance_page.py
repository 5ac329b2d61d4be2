"""docs/performance.md and its plots are what benchmarks/make_page.py writes
from the benchmark history (benchmarks/results/history-*.csv), and the
history is read as benchmarks/run.py writes it. Standard library and the
files only: no GPU, no plotting package."""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import history  # noqa: E402
import make_page  # noqa: E402

FIX = "run `python benchmarks/make_page.py` and commit the page and its plots"


def test_page_is_what_make_page_writes():
    page = make_page.PAGE.read_text()
    want, plots = make_page.render(page)
    assert page == want, f"docs/performance.md is not current: {FIX}"
    written = {p.name for p in make_page.PLOTS.glob("*.svg")}
    assert written == set(plots), f"docs/performance/ holds {sorted(written)}, the page makes {sorted(plots)}: {FIX}"
    for name, svg in plots.items():
        assert (make_page.PLOTS / name).read_text() == svg, f"docs/performance/{name} is not current: {FIX}"


def test_a_new_run_changes_the_page(tmp_path):
    """The check can fail: a newer run of a headline row (appended as run.py
    appends) shows on the page with its date and commit."""
    shutil.copy(history.path_for("h100"), tmp_path)
    shutil.copy(history.path_for("cpu"), tmp_path)
    current = history.newest(history.read(history.path_for("h100")))
    mine = current[("rms_norm", "fwd", "bfloat16", "8x4096x4096", "my_ops", "")]
    base = current[("rms_norm", "fwd", "bfloat16", "8x4096x4096", "F.rms_norm", "")]
    run = {"date": "2099-01-01T00:00:00Z", "commit": "abcdef0", "source": "benchmarks/run.py"}
    history.append([{**mine, **run, "time_us": 150.0}, {**base, **run, "time_us": 300.0}],
                   tmp_path / history.path_for("h100").name)
    page, _ = make_page.render(make_page.PAGE.read_text(), results=tmp_path)
    assert page != make_page.PAGE.read_text()
    assert "| rms_norm | bfloat16 | `8x4096x4096` | 150.0 us |" in page
    assert "2.00x `F.rms_norm`" in page
    assert "2099-01-01, wheel of abcdef0: 2 rows" in page


def test_generated_parts_are_all_there():
    """A part whose marker lines went missing is an error, not a silently dropped table."""
    page = make_page.PAGE.read_text()
    broken = page.replace("<!-- end generated: h100-host -->", "")
    with pytest.raises(ValueError, match="generated parts"):
        make_page.render(broken)


def test_history_round_trip_and_newest(tmp_path):
    path = tmp_path / "history-test.csv"
    case = {"machine": "m", "torch": "2.11.0", "cuda": "13.0", "op": "rms_norm", "mode": "fwd",
            "dtype": "bfloat16", "shape": "4x8", "provider": "my_ops", "gbps": 1.0, "pct_of_copy": math.nan,
            "host_us": math.nan, "baseline": "", "speedup_vs_baseline": math.nan, "timing": "", "note": "",
            "source": "test"}
    history.append([{**case, "date": "2026-01-02T00:00:00Z", "commit": "b", "time_us": 2.0},
                    {**case, "date": "2026-01-01T00:00:00Z", "commit": "a", "time_us": 1.0}], path)
    history.append([{**case, "date": "2026-01-01T12:00:00Z", "commit": "c", "time_us": 3.0}], path)
    rows = history.read(path)
    assert path.read_text().count("date,commit") == 1  # one header
    assert [r["time_us"] for r in rows] == [2.0, 1.0, 3.0] and math.isnan(rows[0]["pct_of_copy"])
    (newest,) = history.newest(rows).values()
    assert (newest["commit"], newest["time_us"]) == ("b", 2.0)


def test_history_columns_are_checked(tmp_path):
    path = tmp_path / "history-test.csv"
    path.write_text("date,commit,op\n2026-01-01,a,rms_norm\n")
    with pytest.raises(AssertionError, match="columns"):
        history.read(path)


def test_bar_chart_bars_are_proportional_to_their_values():
    """Each bar's height is its value on the axis from 0; a series missing from a group draws no bar."""
    import random
    import re

    import svg_chart

    a, b = random.uniform(10, 50), random.uniform(60, 100)
    svg = svg_chart.bar_chart("t", "y", {"g1 fwd": {"x": a, "y": b}, "g2": {"y": a}})
    heights = [float(h) for h in re.findall(r'<rect class="bar" [^>]*height="([\d.]+)"', svg)]
    assert len(heights) == 3
    assert heights[0] / heights[1] == pytest.approx(a / b, abs=0.01)
    assert heights[2] == pytest.approx(heights[0], abs=0.1)
    assert ">g1<tspan" in svg and ">fwd</tspan>" in svg
