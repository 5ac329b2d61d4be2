#!/usr/bin/env python3
"""Write the index's landing page: an install selector (torch x CUDA x OS ->
the exact pip command), generated from build_support/matrix.toml. Plain HTML and a
little JavaScript, no external assets.

  ci/release/make_landing_page.py --site site [--base-url https://my-ops.github.io/my_ops]
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "build_support"))
import matrix  # noqa: E402

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>my_ops wheels</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
  label { display: inline-block; margin-right: 1.5rem; }
  select { font-size: 1rem; margin-left: .3rem; }
  pre { background: #f4f4f4; padding: 1rem; white-space: pre-wrap; word-break: break-all; }
  table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .2rem .5rem; }
</style>
</head>
<body>
<h1>my_ops wheels</h1>
<p>Pick the torch you run; the command installs the my_ops wheel that serves it.
Each pair has its own <a href="https://peps.python.org/pep-0503/">PEP 503</a> index with sha256 hashes
and PEP 658 metadata; a package that depends on <code>my_ops==1.0</code> gets the same wheel.
From torch 2.10 on, one wheel per CUDA version (built on the LibTorch stable ABI) serves every
torch minor of that CUDA major; it is also listed on its CUDA version's own index
(<code>whl/cu130/</code>). Older torch gets one wheel per pair.</p>
<p>
  <label>torch <select id="torch"></select></label>
  <label>CUDA <select id="cuda"></select></label>
  <label>OS <select id="os"></select></label>
</p>
<pre id="command"></pre>
<p id="note"></p>
<h2>All pairs</h2>
<table>
<tr><th>torch</th><th>CUDA</th><th>wheel</th><th>platforms</th><th>GPU architectures</th><th>index</th></tr>
__ROWS__
</table>
<script>
const PAIRS = __PAIRS__;
const BASE = __BASE__;
const DEFAULT = __DEFAULT__;
const OS_NAMES = __OS_NAMES__;
const byId = (id) => document.getElementById(id);
function fill(select, values, keep) {
  const previous = keep ? select.value : null;
  select.innerHTML = "";
  for (const [value, text] of values) {
    const option = document.createElement("option");
    option.value = value; option.textContent = text; select.appendChild(option);
  }
  if (previous && values.some(([v]) => v === previous)) select.value = previous;
}
function unique(list) { return [...new Set(list)]; }
function update(changed) {
  const torch = byId("torch").value;
  if (changed === "torch" || changed === "init") {
    const cudas = PAIRS.filter((p) => p.torch === torch).map((p) => p.cuda);
    fill(byId("cuda"), unique(cudas).map((c) => [c, c]), true);
  }
  const pair = PAIRS.find((p) => p.torch === torch && p.cuda === byId("cuda").value);
  fill(byId("os"), pair.platforms.map((o) => [o, OS_NAMES[o]]), true);
  const command = `pip install my_ops==1.0+${pair.label} --extra-index-url ${BASE}/${pair.index_path}`;
  byId("command").textContent = command;
  const notes = [];
  if (pair.abi === "stable" && pair.label === "cpu") {
    notes.push(`The same wheel serves every CPU-only torch >= 2.10; its index: ${BASE}/whl/cpu/`);
  } else if (pair.abi === "stable") {
    notes.push(`The same wheel serves every torch >= 2.10 with CUDA ${pair.cuda.split(".")[0]}.x; ` +
               `its CUDA version's index: ${BASE}/whl/${pair.label}/`);
  }
  if (pair.name === DEFAULT) {
    notes.push("This is also PyPI's default build: plain `pip install my_ops` gives the same kernels.");
  } else if (pair.label === "cpu") {
    notes.push("PyPI's plain `pip install my_ops` holds the same CPU kernels, and loads them under a CPU-only torch.");
  }
  byId("note").textContent = notes.join(" ");
}
function init() {
  const torches = unique(PAIRS.map((p) => p.torch)).reverse();
  fill(byId("torch"), torches.map((t) => [t, t]), false);
  const [defaultTorch, defaultLabel] = DEFAULT.split("-");
  byId("torch").value = defaultTorch;
  update("init");
  byId("cuda").value = PAIRS.find((p) => p.name === DEFAULT).cuda;
  update("cuda");
  byId("torch").addEventListener("change", () => update("torch"));
  byId("cuda").addEventListener("change", () => update("cuda"));
  byId("os").addEventListener("change", () => update("os"));
}
init();
</script>
</body>
</html>
"""


# The selector's name of each platform of build_support/matrix.py.
PLATFORM_NAMES = {"linux": "Linux x86_64", "linux-aarch64": "Linux aarch64", "windows": "Windows x64",
                  "macos": "macOS arm64"}


def render(base_url: str) -> str:
    data = matrix.load()
    pairs = matrix.all_pairs(data)
    selector = [{"name": p.name, "torch": p.torch, "cuda": p.cuda, "label": p.label, "abi": p.abi,
                 "platforms": list(p.platforms), "index_path": p.index_path} for p in pairs]
    rows = "\n".join(
        f"<tr><td>{p.torch}</td><td>{p.cuda}</td><td>+{p.label} {p.abi}</td><td>{', '.join(p.platforms)}</td>"
        f"<td>{html.escape(matrix.arch_text(p))}</td>"
        f"<td><a href=\"{p.index_path}\">{p.index_path}</a></td></tr>" for p in pairs)
    return (TEMPLATE.replace("__ROWS__", rows)
            .replace("__PAIRS__", json.dumps(selector))
            .replace("__BASE__", json.dumps(base_url.rstrip("/")))
            .replace("__DEFAULT__", json.dumps(data["defaults"]["default_pair"]))
            .replace("__OS_NAMES__", json.dumps(PLATFORM_NAMES)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--base-url", default=None, help="the index's public URL (default: matrix.toml's)")
    args = parser.parse_args()
    base = args.base_url or matrix.load()["defaults"]["index_url"]
    args.site.mkdir(parents=True, exist_ok=True)
    (args.site / "index.html").write_text(render(base))
    print(f"wrote {args.site / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
