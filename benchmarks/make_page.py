#!/usr/bin/env python3
"""Write docs/performance.md's tables and plots from the benchmark history.

  python benchmarks/make_page.py            rewrite the generated parts
  python benchmarks/make_page.py --check    exit 1 naming the parts that differ

The page's generated parts sit between the lines
  <!-- generated: NAME (benchmarks/make_page.py) -->
  <!-- end generated: NAME -->
and everything outside them is hand-written and kept. Each table shows, for
each of its rows, the newest run that measured it (history.newest), and the
other providers of that row from that same run (so a ratio never mixes runs),
and says which runs (date, wheel commit) and machine its rows come from. The
plots are SVG files in docs/performance/ (svg_chart.py: no plotting package
needed). tests/benchmarks/test_performance_page.py fails when the page or a
plot is not what this script writes. Standard library only.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import history  # noqa: E402
from svg_chart import bar_chart, line_chart  # noqa: E402

ROOT = HERE.parent
PAGE = ROOT / "docs" / "performance.md"
PLOTS = ROOT / "docs" / "performance"
BLOCK = re.compile(r"^<!-- generated: (?P<name>[\w-]+) \(benchmarks/make_page.py\) -->\n"
                   r"(?P<body>.*?)"
                   r"^<!-- end generated: (?P=name) -->$", re.MULTILINE | re.DOTALL)

# The H100 headline: (label, op, mode, dtype, shape); my_ops against the case's
# baseline, torch.compile and Liger-Kernel where the run had them.
HEADLINE = [
    ("rms_norm", "rms_norm", "fwd", "bfloat16", "8x4096x4096"),
    ("rms_norm, q/k-norm rows", "rms_norm", "fwd", "bfloat16", "2097152x64"),
    ("rms_norm, q/k-norm rows", "rms_norm", "fwd", "bfloat16", "1048576x128"),
    ("rms_norm, slice read in place", "rms_norm", "fwd", "bfloat16", "32768x4096/8192"),
    ("rms_norm, odd width", "rms_norm", "fwd", "bfloat16", "32768x4097"),
    ("rms_norm, odd width", "rms_norm", "fwd", "bfloat16", "32768x2881"),
    ("rms_norm, float32 weight", "rms_norm", "fwd", "bfloat16+float32 weight", "8x4096x4096"),
    ("rms_norm fwd+bwd", "rms_norm", "fwd+bwd", "bfloat16", "8x4096x4096"),
    ("rms_norm fwd+bwd", "rms_norm", "fwd+bwd", "bfloat16", "1048576x128"),
    ("fused_add_rms_norm", "fused_add_rms_norm", "fwd", "bfloat16", "8x4096x4096"),
    ("fused_add_rms_norm, slices", "fused_add_rms_norm", "fwd", "bfloat16", "32768x4096/8192"),
    ("fused_add_rms_norm, odd width", "fused_add_rms_norm", "fwd", "bfloat16", "32768x4097"),
    ("silu_and_mul", "silu_and_mul", "fwd", "bfloat16", "16384x16384"),
    ("silu_and_mul, slice", "silu_and_mul", "fwd", "bfloat16", "16384x16384/24576"),
    ("silu_and_mul fwd+bwd", "silu_and_mul", "fwd+bwd", "bfloat16", "16384x16384"),
    ("gelu_and_mul (tanh)", "gelu_and_mul", "fwd", "bfloat16", "16384x16384"),
    ("gelu_and_mul (tanh) fwd+bwd", "gelu_and_mul", "fwd+bwd", "bfloat16", "16384x16384"),
    ("gelu_and_mul (erf)", "gelu_and_mul(none)", "fwd", "bfloat16", "16384x16384"),
    ("gelu_and_mul (erf) fwd+bwd", "gelu_and_mul(none)", "fwd+bwd", "bfloat16", "16384x16384"),
    ("matmul (TF32 off)", "matmul", "fwd", "float32", "4096x4096x4096"),
]
HOST_OPS = ["rms_norm", "silu_and_mul", "fused_add_rms_norm"]
HOST_MODES = ["host/no_grad", "host/grad", "host/inference_mode"]
THREE_WAYS = "rms_norm_3ways"
THREE_WAYS_ROWS = [("8x4096x4096", "fwd"), ("8x4096x4096", "fwd+bwd"), ("1048576x128", "fwd"),
                   ("32768x4097", "fwd"), ("32768x4096/8192", "fwd")]
THREE_WAYS_PROVIDERS = ["eager", "F.rms_norm", "compile", "liger", "triton", "cuda_c"]
# bench_decoder_block.py's cases: (mode, shape) in the order the page lists them
DECODER_BLOCK_ROWS = [("prefill", "8x2048x4096"), ("prefill", "1x4096x4096"), ("decode", "64x1x4096"),
                      ("train", "1x4096x4096"), ("train", "8x2048x4096")]
# The fp8 family (bench_fp8.py): each op at its shapes (the output's [rows, width]), bf16
FP8_OPS = ["rms_norm_fp8", "rms_norm_fp8_per_token", "fused_add_rms_norm_fp8", "fused_add_rms_norm_fp8_per_token",
           "silu_and_mul_fp8", "silu_and_mul_fp8_per_token"]
FP8_SHAPES = ["32768x4096", "8192x8192", "64x8192"]


class History:
    """One machine kind's history: the current row of each case and the runs."""

    def __init__(self, kind: str, results: Path):
        self.kind = kind
        self.path = results / history.path_for(kind).name
        self.rows = history.read(self.path)
        self.current = history.newest(self.rows)
        self.shown: list[dict] = []  # the rows a part shows, for its caption

    def row(self, op, mode, dtype, shape, provider="my_ops", note=""):
        row = self.current.get((op, mode, dtype, shape, provider, note))
        if row is not None:
            self.shown.append(row)
        return row

    def beside(self, row: dict, provider: str):
        """The row of another provider for row's case, from row's run."""
        for other in self.rows:
            if other["provider"] == provider and all(other[k] == row[k] for k in
                                                     ("date", "commit", "machine", "op", "mode", "dtype", "shape")):
                self.shown.append(other)
                return other
        return None

    def caption(self) -> str:
        """Where the rows just shown come from; resets the list."""
        runs: dict = {}
        for row in self.shown:
            runs.setdefault((row["date"], row["commit"], row["machine"], row["torch"]), set()).add(id(row))
        self.shown = []
        parts = [f"{date[:10]}, wheel of {commit or 'an unrecorded commit'}: {len(ids)} rows"
                 for (date, commit, _, _), ids in sorted(runs.items(), reverse=True)]
        machines = sorted({(m, t) for _, _, m, t in runs})
        where = "; ".join(f"{m}, torch {t}" for m, t in machines)
        return f"From `benchmarks/results/{self.path.name}` ({where}); runs: {'; '.join(parts)}."


def _us(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1f} us" if value < 10000 else f"{value:.0f} us"


def _time(row: dict) -> float:
    """Device time per call, or host time per call for a host mode."""
    return row["host_us"] if row["mode"].startswith("host/") else row["time_us"]


def _ratio(other, mine) -> str:
    if other is None or math.isnan(_time(other)) or math.isnan(_time(mine)):
        return ""
    return f"{_time(other) / _time(mine):.2f}x"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)] + \
        ["| " + " | ".join(r) + " |" for r in rows]


def headline(h: History) -> list[str]:
    rows = []
    for label, op, mode, dtype, shape in HEADLINE:
        mine = h.row(op, mode, dtype, shape, note="TFLOP/s in gbps column; TF32 off" if op == "matmul" else "")
        if mine is None:
            continue
        base = h.beside(mine, mine["baseline"]) if mine["baseline"] else None
        tflops = "TFLOP/s" in mine["note"]
        pct = f"{mine['gbps']:.1f} TFLOP/s" if tflops else f"{mine['pct_of_copy']:.1f}%"
        rows.append([label, dtype, f"`{shape}`", _us(mine["time_us"]), pct,
                     f"{_ratio(base, mine)} `{mine['baseline']}`" if base else "",
                     _ratio(h.beside(mine, "compile"), mine), _ratio(h.beside(mine, "liger"), mine),
                     _run(mine)])
    return _table(["op", "dtype", "shape", "my_ops", "% of copy", "vs baseline", "vs torch.compile",
                   "vs Liger-Kernel", "run"], rows) + ["", h.caption()]


def _run(row: dict) -> str:
    """Which run a row is from (a table can mix runs: each row is its case's newest)."""
    return f"{row['date'][:10]} {row['commit'] or '?'}"


def host(h: History) -> list[str]:
    rows = []
    for op in HOST_OPS:
        cells, baseline = [], ""
        for mode in HOST_MODES:
            mine = next((r for r in h.current.values() if r["op"] == op and r["mode"] == mode
                         and r["provider"] == "my_ops"), None)
            if mine is None:
                cells.append("")
                continue
            h.shown.append(mine)
            baseline = mine["baseline"]
            base = h.beside(mine, baseline)
            cells.append(f"{mine['host_us']:.1f} / {base['host_us']:.1f}" if base else f"{mine['host_us']:.1f}")
        rows.append([f"{op} vs `{baseline}`", *cells])
    return _table(["op (my_ops / baseline, us)", "`torch.no_grad()`", "grad enabled", "`torch.inference_mode()`"],
                  rows) + ["", h.caption()]


def three_ways(h: History) -> tuple[list[str], dict[str, str]]:
    rows, present = [], []
    for shape, mode in THREE_WAYS_ROWS:
        anchor = h.row(THREE_WAYS, mode, "bfloat16", shape, provider="cuda_c")
        if anchor is None:
            continue
        cells = {p: h.beside(anchor, p) for p in THREE_WAYS_PROVIDERS}
        present += [p for p, r in cells.items() if r is not None and p not in present]
        rows.append((f"`{shape}` {mode}", cells))
    providers = [p for p in THREE_WAYS_PROVIDERS if p in present]
    body = [[label, *(f"{_us(c[p]['time_us'])} ({c[p]['pct_of_copy']:.1f}%)" if c.get(p) else "" for p in providers),
             _run(next(r for r in c.values() if r is not None))] for label, c in rows]
    lines = _table(["bf16", *providers, "run"], body)
    if not rows:
        return lines + ["", h.caption()], {}
    # the plot: the table's % of copy, a bar per implementation (the table says which run each row is from)
    groups = {label.replace("`", ""): {p: c[p]["pct_of_copy"] for p in providers if c.get(p)} for label, c in rows}
    name = "h100-rms-norm-three-ways.svg"
    svg = bar_chart(f"rms_norm three ways, bf16 ({h.current[next(iter(h.current))]['machine']})",
                    "% of copy bandwidth", groups)
    return lines + ["", f"![rms_norm three ways: % of copy bandwidth per implementation](performance/{name})", "",
                    h.caption()], {name: svg}


def _block_ratio(mine: dict, theirs: dict) -> str:
    """my_ops / torch, with the range of the run's per-round ratios where it timed rounds."""
    spread = re.search(r"per round ([\d.]+-[\d.]+)", mine["timing"])
    return f"{mine['time_us'] / theirs['time_us']:.3f}" + (f" ({spread[1]})" if spread else "")


def decoder_block(h: History) -> list[str]:
    """The block's time per call, torch's ops and my_ops', eager and compiled, from one run per row."""
    rows = []
    for mode, shape in DECODER_BLOCK_ROWS:
        anchor = h.row("decoder_block", mode, "bfloat16", shape, provider="torch eager")
        if anchor is None:
            continue
        cells = []
        for how in ("eager", "compile"):
            torch_row = anchor if how == "eager" else h.beside(anchor, f"torch {how}")
            mine = h.beside(anchor, f"my_ops {how}")
            cells += [_us(torch_row["time_us"]) if torch_row else "", _us(mine["time_us"]) if mine else "",
                      _block_ratio(mine, torch_row) if mine and torch_row else ""]
        batch, tokens, _ = shape.split("x")
        rows.append([mode, f"{batch} x {tokens}", *cells, _run(anchor)])
    return _table(["mode", "tokens", "torch eager", "my_ops eager", "ratio", "torch compile", "my_ops compile",
                   "ratio", "run"], rows) + ["", h.caption()]


def first_use(h: History) -> list[str]:
    """The Triton op's first use in a fresh process, from the newest run that timed it."""
    timed = [r for r in h.rows if r["op"] == THREE_WAYS and r["mode"].startswith("first-")]
    if not timed:
        return []
    run = max((r["date"], r["commit"]) for r in timed)
    timed = [r for r in timed if (r["date"], r["commit"]) == run]
    h.shown += timed
    caches = list(dict.fromkeys(r["timing"].split(", ")[-1] for r in timed))
    rows = []
    for mode, note in dict.fromkeys((r["mode"], r["note"]) for r in timed):
        cells = []
        for cache in caches:
            r = next((r for r in timed if (r["mode"], r["note"]) == (mode, note) and r["timing"].endswith(cache)),
                     None)
            cells.append("" if r is None else f"{r['time_us'] / 1e3:.1f} ms")
        rows.append([f"{mode}{f' ({note})' if note else ''}", *cells])
    return _table(["Triton op, wall time", *caches], rows) + ["", h.caption()]


def fp8(h: History) -> list[str]:
    rows = []
    for op in FP8_OPS:
        for shape in FP8_SHAPES:
            mine = h.row(op, "fwd", "bfloat16", shape)
            if mine is None:
                continue
            compiled, eager = h.beside(mine, "compile"), h.beside(mine, "eager")
            rows.append([op, f"`{shape}`", _us(mine["time_us"]), f"{mine['pct_of_copy']:.1f}%",
                         _us(compiled["time_us"]) if compiled else "", _ratio(compiled, mine),
                         _ratio(eager, mine), _run(mine)])
    if not rows:
        return []
    return _table(["op", "shape", "my_ops", "% of copy", "torch.compile", "vs torch.compile", "vs eager", "run"],
                  rows) + ["", h.caption()]


def cpu(h: History) -> list[str]:
    rows = []
    for (op, mode, dtype, shape, provider, note), mine in sorted(h.current.items()):
        if provider != "my_ops":
            continue
        h.shown.append(mine)
        base = h.beside(mine, mine["baseline"]) if mine["baseline"] else None
        rows.append([op, mode, dtype, f"`{shape}`", _us(_time(mine)),
                     f"{_ratio(base, mine)} `{mine['baseline']}`" if base else ""])
    return _table(["op", "mode", "dtype", "shape", "my_ops", "vs baseline"], rows) + ["", h.caption()]


def sweep_plots(h: History) -> tuple[list[str], dict[str, str]]:
    """rms_norm forward, bf16: effective GB/s over the hidden size (32768 rows) and the rows (hidden 4096)."""
    dense = re.compile(r"^\d+x\d+$")
    lines, files = [], {}
    for name, title, x_label, pick, key in [
            ("h100-rms-norm-hidden.svg", "rms_norm forward, bf16, 32768 rows", "hidden size",
             lambda s: s.startswith("32768x"), lambda s: int(s.split("x")[1])),
            ("h100-rms-norm-rows.svg", "rms_norm forward, bf16, hidden 4096", "rows",
             lambda s: s.endswith("x4096"), lambda s: int(s.split("x")[0]))]:
        series: dict = {}
        for (op, mode, dtype, shape, provider, note), row in sorted(h.current.items()):
            if op == "rms_norm" and mode == "fwd" and dtype == "bfloat16" and dense.match(shape) and pick(shape):
                series.setdefault(provider, []).append((key(shape), row["pct_of_copy"]))
                h.shown.append(row)
        if not series:
            continue
        files[name] = line_chart(f"{title} ({h.current[next(iter(h.current))]['machine']})", x_label,
                                 "% of copy bandwidth", series)
        lines += [f"![{title}: % of copy bandwidth per provider](performance/{name})", ""]
    return lines + [h.caption()], files


# The generated parts the page holds, each once: <machine kind>-<what>.
PARTS = ["h100-headline", "h100-plots", "h100-host", "h100-three-ways", "h100-first-use", "h100-fp8",
         "h100-decoder-block", "cpu-table"]


def render(page: str, results: Path = history.RESULTS) -> tuple[str, dict[str, str]]:
    """The page with every generated part rewritten from the histories in
    results, and the plot files (name -> SVG text)."""
    names = [m["name"] for m in BLOCK.finditer(page)]
    if names != PARTS:
        raise ValueError(f"{PAGE.name} holds the generated parts {names}; make_page.py writes {PARTS}, in that order")
    machines = {kind: History(kind, results) for kind in {name.partition("-")[0] for name in PARTS}}
    files: dict[str, str] = {}

    def part(name: str) -> list[str]:
        kind, _, what = name.partition("-")
        h = machines[kind]
        if what in ("plots", "three-ways"):  # (parts with plots: their lines and their SVG files)
            lines, svgs = (sweep_plots if what == "plots" else three_ways)(h)
            files.update(svgs)
            return lines
        return {"headline": headline, "host": host, "first-use": first_use,
                "decoder-block": decoder_block, "fp8": fp8, "table": cpu}[what](h)

    def replace(match: re.Match) -> str:
        name = match["name"]
        body = "\n".join(part(name))
        return (f"<!-- generated: {name} (benchmarks/make_page.py) -->\n{body}\n"
                f"<!-- end generated: {name} -->")

    return BLOCK.sub(replace, page), files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if the page is not current")
    args = parser.parse_args()
    page = PAGE.read_text()
    new_page, files = render(page)
    stale = [PAGE] if new_page != page else []
    stale += [PLOTS / name for name, text in files.items()
              if not (PLOTS / name).exists() or (PLOTS / name).read_text() != text]
    extra = sorted(set(PLOTS.glob("*.svg")) - {PLOTS / name for name in files})
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is not what benchmarks/make_page.py writes", file=sys.stderr)
        for path in extra:
            print(f"{path.relative_to(ROOT)}: no generated part writes it", file=sys.stderr)
        return 1 if stale or extra else 0
    PAGE.write_text(new_page)
    PLOTS.mkdir(exist_ok=True)
    for name, text in files.items():
        (PLOTS / name).write_text(text)
    for path in extra:
        path.unlink()
    print(f"wrote {PAGE.relative_to(ROOT)} and {len(files)} plots in {PLOTS.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
