"""The benchmark history: one CSV per machine kind, results/history-<kind>.csv,
that benchmarks/run.py appends each run's rows to and nothing else writes.
docs/performance.md is generated from it (make_page.py).

A row: when and what ran (date of the run, UTC; commit of the my_ops wheel;
machine; torch; CUDA, empty on the CPU), the case (op, mode, dtype, shape,
provider), and what was measured: device time per call in microseconds,
effective GB/s (matmul: TFLOP/s, as its note says), % of the device copy
measured in the same run, or, for the host modes (bench_host.py), host time
per call. The baseline of the case and the speedup over it are those of the
same run; `source` says where a row came from when it was not written by
run.py (rows converted from earlier result files).

Only the standard library here: make_page.py and its test read the history
without torch.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
FIELDS = ["date", "commit", "machine", "torch", "cuda", "op", "mode", "dtype", "shape", "provider",
          "time_us", "gbps", "pct_of_copy", "host_us", "baseline", "speedup_vs_baseline", "timing", "note",
          "source"]
# The columns that name one case: the newest row of each is its current figure
# (the note tells apart cases of one label, e.g. the first and second call).
CASE = ("op", "mode", "dtype", "shape", "provider", "note")
NUMBERS = ("time_us", "gbps", "pct_of_copy", "host_us", "speedup_vs_baseline")


def path_for(kind: str) -> Path:
    return RESULTS / f"history-{kind}.csv"


def number(value: float) -> str:
    """6 significant digits; empty for a value not measured."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.6g}"


def append(records: list[dict], path: Path) -> None:
    """Append records (dicts with FIELDS as keys; numbers as floats) to path,
    writing the header first for a new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        if new:
            writer.writeheader()
        for record in records:
            assert set(record) == set(FIELDS), sorted(set(record) ^ set(FIELDS))
            writer.writerow({k: number(v) if k in NUMBERS and not isinstance(v, str) else v
                             for k, v in record.items()})


def read(path: Path) -> list[dict]:
    """The rows of a history, numbers as floats (nan where empty)."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == FIELDS, f"{path}: columns {reader.fieldnames}, expected {FIELDS}"
        rows = list(reader)
    for row in rows:
        for key in NUMBERS:
            row[key] = float(row[key]) if row[key] else math.nan
    return rows


def newest(rows: list[dict]) -> dict:
    """case -> the row of the newest run that measured it (ISO dates sort as text;
    of two rows of one case in one run, the later one)."""
    current: dict = {}
    for row in rows:
        case = tuple(row[k] for k in CASE)
        if case not in current or row["date"] >= current[case]["date"]:
            current[case] = row
    return current
