#!/usr/bin/env python3
"""Verify a built my_ops wheel against its build in build_support/matrix.toml.

  ci/build/verify-wheel.py WHEEL --build cu130 [--platform-tag manylinux_2_28_x86_64]
                     [--report report.json] [--skip-tools]
  ci/build/verify-wheel.py WHEEL --label-free [--platform-tag ...]   PyPI's label-free wheel

(--build also takes a pair, e.g. 2.13-cu130: the build that serves it.)
Checks, each failure named in the output:
  name      my_ops-<VERSION>+<label>-cp39-abi3-<platform>.whl
  metadata  Requires-Dist on torch is the build's (plain "torch" for a stable
            build, so an installed torch is never replaced; the torch minor for
            a legacy one); version matches the file name
  buildinfo my_ops/_build_info.json names the build's ABI family, torch, CUDA and arch list
            (the list of the wheel's platform: Linux aarch64 has its own)
  sass      cuobjdump lists SASS for every SM of the arch list, in every kernel
            object, and PTX for the +PTX entries (no more, no less)
  symbols   a stable build's shared objects import no torch C++ symbol, no C
            shim function the oldest torch it claims lacks (ci/build/torch-c-symbols-
            <stable_abi_min>[-macos].txt), and link no libc10 (Linux: nm, readelf;
            macOS: ci/build/macho.py, which also checks that they load nothing but
            system libraries and each other; Windows: ci/build/pe.py)
  license   the repository's LICENSE in .dist-info/licenses/, named by License-File, with
            License-Expression BSD-3-Clause, and the Project-URLs (where to report bugs)
  bundled   only my_ops/_C and libmy_ops inside; no torch or CUDA library
  cmake     my_ops-config.cmake and my_ops-config-version.cmake beside each kernel
            library: what find_package(my_ops) reads in the folder that
            `python -m my_ops --cmake-prefix` prints (docs/deploying.md)
  size      under the matrix's wheel_size_limit_mb
  tools     abi3audit, check-wheel-contents and `twine check` pass
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "build_support"))
sys.path.insert(0, str(HERE))
import macho  # noqa: E402
import matrix  # noqa: E402
import pe  # noqa: E402

FORBIDDEN_LIBRARIES = re.compile(r"(^|/)(libtorch|libc10|libcudart|libcuda\.|libnvrtc|libcublas|libnvToolsExt|libgomp"
                                 r"|torch_|c10_|cudart|nvrtc)[^/]*\.(so|dll|dylib)", re.I)
# The CMake package of a kernel library, in its folder: find_package(my_ops) reads them there.
CMAKE_PACKAGE = ("my_ops-config.cmake", "my_ops-config-version.cmake")
# What a macOS library may load: the system's libraries, and _C its libmy_ops.
MACOS_SYSTEM_LIBRARY = re.compile(r"(/usr/lib/|/System/Library/|@rpath/libmy_ops\.dylib$)")
WHEEL_NAME = re.compile(r"^my_ops-(?P<version>[^-]+)-(?P<python>cp\d+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")


def platform_of(platform_tag: str) -> str:
    """The matrix's platform of a wheel's platform tag: manylinux_2_28_aarch64 -> linux-aarch64."""
    if platform_tag.startswith("win"):
        return "windows"
    if platform_tag.startswith("macosx"):
        return "macos"
    return "linux-aarch64" if platform_tag.endswith("aarch64") else "linux"


class Verification:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.report: dict = {}

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.failures.append(what)
        return ok


def find_cuobjdump() -> str | None:
    for candidate in (os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump")):
        if candidate:
            return candidate
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            for name in ("cuobjdump", "cuobjdump.exe"):
                path = Path(os.environ[var]) / "bin" / name
                if path.is_file():
                    return str(path)
    try:  # the nvidia-cuda-cuobjdump wheel
        import nvidia  # type: ignore

        for base in nvidia.__path__:
            for path in Path(base).glob("*/bin/cuobjdump"):
                return str(path)
    except ImportError:
        pass
    return None


def expected_architectures(arch_list: str) -> tuple[set[str], set[str]]:
    """'7.5;9.0+PTX' -> ({'sm_75', 'sm_90'}, {'sm_90'}): SASS and PTX targets."""
    sass, ptx = set(), set()
    for entry in filter(None, re.split(r"[;, ]+", arch_list.strip())):  # (the CPU build's list is empty)
        match = re.fullmatch(r"(\d+)\.(\d+)([af]?)(\+PTX)?", entry)
        if not match:
            raise SystemExit(f"bad arch list entry {entry!r} in {arch_list!r}")
        sm = f"sm_{match.group(1)}{match.group(2)}{match.group(3)}"
        sass.add(sm)
        if match.group(4):
            ptx.add(sm)
    return sass, ptx


def inspect_kernels(library: Path, cuobjdump: str) -> tuple[Counter, Counter]:
    """Counts of cubins and PTX per SM in a shared library's fatbinaries."""
    out = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(library)], capture_output=True,
                         text=True, check=True).stdout
    cubins = Counter(re.findall(r"\.(sm_\d+[af]?)\.cubin", out))
    ptx = Counter(re.findall(r"\.(sm_\d+[af]?)\.ptx", out))
    return cubins, ptx


def find_library(names: list[str], folder: str = "my_ops") -> str | None:
    """libmy_ops.so (Linux), .dylib (macOS) or my_ops.dll (Windows) in `folder` among the wheel's files."""
    found = [n for n in names if re.fullmatch(rf"{re.escape(folder)}/(libmy_ops\.so|libmy_ops\.dylib|my_ops\.dll)", n)]
    return found[0] if len(found) == 1 else None


TORCH_CXX_SYMBOL = re.compile(r"\b(c10|at|torch|caffe2)::")
# The same, mangled (Itanium ABI): a name, typeinfo or vtable nested in one of those namespaces.
TORCH_CXX_MANGLED = re.compile(r"_Z(T[IVS])?N[rVKO]*(3c10|2at|5torch|6caffe2)\d")
# The same, decorated by MSVC: a name whose outermost namespace is one of them.
TORCH_CXX_DECORATED = re.compile(r"^\?.*@(c10|at|torch|caffe2)@@")


def torch_cxx_imports(library: Path) -> list[str]:
    """The torch C++ symbols a shared object imports (Linux: demangled; macOS, Windows: mangled)."""
    if macho.is_macho(library):
        return [s for s in macho.undefined_symbols(library) if TORCH_CXX_MANGLED.match(s)]
    if pe.is_pe(library):
        return [n for names in pe.imports(library).values() for n in names if TORCH_CXX_DECORATED.match(n)]
    out = subprocess.run(["nm", "-D", "--undefined-only", "-C", str(library)], capture_output=True,
                         text=True, check=True).stdout
    return [line.split(None, 1)[-1] for line in out.splitlines() if TORCH_CXX_SYMBOL.search(line)]


def torch_c_imports(library: Path) -> list[str]:
    """The C shim functions (aoti_torch_*, torch_*) a shared object imports."""
    if macho.is_macho(library):
        names = macho.undefined_symbols(library)
    elif pe.is_pe(library):
        names = [n for names in pe.imports(library).values() for n in names]
    else:
        out = subprocess.run(["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True,
                             check=True).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    return sorted(n for n in names if re.fullmatch(r"(aoti_torch_|torch_)\w+", n))


def oldest_torch_c_symbols(path: Path | None, macos: bool = False) -> tuple[str, set[str]]:
    """(its path, the C shim functions) the oldest stable torch exports:
    ci/build/torch-c-symbols-<stable_abi_min>.txt, or its -macos list (macOS
    torch has no CUDA or oneDNN shims; ci/build/torch_c_symbols.py)."""
    suffix = "-macos" if macos else ""
    path = path or HERE / f"torch-c-symbols-{matrix.load()['defaults']['stable_abi_min']}{suffix}.txt"
    lines = path.read_text().splitlines()
    return str(path), {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def needed_libraries(library: Path) -> list[str]:
    """The libraries a shared object loads: ELF's NEEDED sonames, Mach-O's install names, PE's DLLs."""
    if macho.is_macho(library):
        return macho.linked_libraries(library)
    if pe.is_pe(library):
        return list(pe.imports(library))
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


PROJECT_URLS = ("Homepage", "Issues", "Documentation", "Changelog")


def check_license(v: Verification, wheel: Path, metadata: str, dist_info: str) -> None:
    """BSD-3-Clause needs its notice in every copy: the repository's LICENSE, byte for byte,
    in .dist-info/licenses/ (PEP 639), named by License-File; and the Project-URLs that say
    where the project lives and where to report a bug (`pip show` prints them)."""
    licensed = f"{dist_info}/licenses/LICENSE"
    with zipfile.ZipFile(wheel) as zf:
        shipped = zf.read(licensed) if licensed in zf.namelist() else None
    if v.check(shipped is not None, f"license: no {licensed} in the wheel"):
        v.check(shipped == (ROOT / "LICENSE").read_bytes(),
                f"license: {licensed} differs from the repository's LICENSE")
    headers = metadata.split("\n\n", 1)[0]  # (the description, the README, follows)
    fields = [line.split(":", 1) for line in headers.splitlines() if ":" in line]
    values = {}
    for key, value in fields:
        values.setdefault(key.strip(), []).append(value.strip())
    v.check(values.get("License-Expression") == ["BSD-3-Clause"],
            f"license: License-Expression {values.get('License-Expression')}, expected BSD-3-Clause")
    v.check(values.get("License-File") == ["LICENSE"], f"license: License-File {values.get('License-File')}, "
                                                       "expected LICENSE")
    urls = {entry.split(",", 1)[0].strip() for entry in values.get("Project-URL", [])}
    missing = [label for label in PROJECT_URLS if label not in urls]
    v.check(not missing, f"license: no Project-URL for {missing}")
    v.report["license"] = licensed if shipped is not None else None


def run_tool(v: Verification, name: str, command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    ok = result.returncode == 0
    v.report.setdefault("tools", {})[name] = "ok" if ok else "failed"
    v.check(ok, f"tools: {name} failed:\n{result.stdout}{result.stderr}")


def check_kernel_library(v: Verification, zf: zipfile.ZipFile, folder: str, build: matrix.Build, arch_list: str,
                         torch_c_symbols: Path | None) -> list[str]:
    """One kernel library (its _C extension and libmy_ops) in `folder` of the wheel, against its build:
    device code per SM (SASS and PTX), no CUDA in the CPU library, macOS system libraries only, and,
    for the stable ABI, no torch C++ symbol or C shim function newer than the oldest torch. Returns
    the library's files."""
    names = zf.namelist()
    extension = [n for n in names if re.fullmatch(rf"{re.escape(folder)}/_C[.\w-]*\.(so|pyd)", n)]
    library = find_library(names, folder)
    v.check(len(extension) == 1, f"bundled: expected one {folder}/_C extension, found {extension}")
    missing = [f"{folder}/{name}" for name in CMAKE_PACKAGE if f"{folder}/{name}" not in names]
    v.check(not missing, f"cmake: {missing} missing: find_package(my_ops) reads them beside the kernel library, "
                         "in the folder `python -m my_ops --cmake-prefix` prints")
    if not v.check(library is not None, f"bundled: expected {folder}/libmy_ops.so, .dylib or my_ops.dll"):
        return extension
    report = v.report if folder == "my_ops" else v.report.setdefault("libraries", {}).setdefault(folder, {})
    with tempfile.TemporaryDirectory() as tmp:
        zf.extract(library, tmp)
        for name in extension:
            zf.extract(name, tmp)
        library_path = Path(tmp) / library
        cuobjdump = find_cuobjdump()
        sass_expected, ptx_expected = expected_architectures(arch_list)
        if build.cuda == matrix.CPU:
            # the CPU library: no device code, and no CUDA or torch_cuda library linked
            needed = needed_libraries(library_path)
            cuda_needed = [n for n in needed
                           if re.match(r"(lib)?(cuda|cudart|torch_cuda|c10_cuda)", n.rsplit("/", 1)[-1], re.I)]
            v.check(not cuda_needed, f"cpu: {library} links CUDA libraries {cuda_needed}")
        elif pe.is_pe(library_path) and not sys.platform.startswith("win"):
            # a Linux cuobjdump reads no Windows DLL: the Windows build job checked these same bytes
            report["sass"] = "not read here (a Windows DLL; its build job's verification read it)"
        elif v.check(cuobjdump is not None,
                     "sass: no cuobjdump (set CUOBJDUMP or install nvidia-cuda-cuobjdump)"):
            cubins, ptx = inspect_kernels(library_path, cuobjdump)
            report.update(sass=sorted(cubins, key=lambda s: int(re.sub(r"\D", "", s))),
                          ptx=sorted(ptx, key=lambda s: int(re.sub(r"\D", "", s))))
            v.check(set(cubins) == sass_expected,
                    f"sass: SASS for {sorted(cubins)}, expected {sorted(sass_expected)} ({library})")
            v.check(set(ptx) == ptx_expected,
                    f"sass: PTX for {sorted(ptx)}, expected {sorted(ptx_expected)} ({library})")
            # every kernel translation unit carries every target
            v.check(len(set(cubins.values()) | set(ptx.values())) <= 1,
                    f"sass: uneven kernels per target: cubins {dict(cubins)}, ptx {dict(ptx)}")
        if library.endswith(".dylib"):
            for name in [library, *extension]:
                foreign = [n for n in needed_libraries(Path(tmp) / name) if not MACOS_SYSTEM_LIBRARY.match(n)]
                v.check(not foreign, f"bundled: {name} loads libraries a Mac does not have: {foreign}")
        if build.abi == "stable":
            for name in [library, *extension]:
                imports = torch_cxx_imports(Path(tmp) / name)
                v.report.setdefault("torch_cxx_imports", {})[name] = len(imports)
                v.check(not imports, f"symbols: {name} imports torch C++ symbols (not the "
                                     f"stable ABI): {imports[:5]}")
                oldest_file, oldest = oldest_torch_c_symbols(torch_c_symbols, macos=library.endswith(".dylib"))
                newer = [f for f in torch_c_imports(Path(tmp) / name) if f not in oldest]
                v.report.setdefault("torch_c_imports_newer_than_oldest", {})[name] = newer
                v.check(not newer, f"symbols: {name} calls C shim functions the oldest torch it claims "
                                   f"lacks ({oldest_file}): {newer[:5]}")
                needed = needed_libraries(Path(tmp) / name)
                c10 = [n for n in needed if re.match(r"(lib)?c10", n.rsplit("/", 1)[-1], re.I)]
                v.check(not c10, f"symbols: {name} links {c10}")
            if not pe.is_pe(library_path) and not macho.is_macho(library_path):
                # (it reads symbols with the host's nm: ELF here; a Mach-O or PE file would read as empty)
                torch_abi_audit(v, Path(tmp) / folder, Path(library).name, report)
    return [*extension, library]


def torch_abi_audit(v: Verification, folder: Path, library: str, report: dict) -> None:
    """A second opinion on the stable-ABI audit above: Quansight's torch-abi-audit (PyPI; Linux and
    macOS), which classifies the same symbols with its own rules and maps each C shim function to
    the torch release that added it (its vendored shim_function_versions). Both must agree that
    the library uses only the stable ABI and needs no torch newer than stable_abi_min."""
    if importlib.util.find_spec("torch_abi_audit") is None:
        report["torch_abi_audit"] = "not installed (ci/build/requirements-verify.txt: Linux x86_64)"
        return
    result = subprocess.run([sys.executable, "-c", "import sys; from torch_abi_audit.cli import main; "
                             "sys.exit(main())", str(folder), "--json"], capture_output=True, text=True)
    if not v.check(result.returncode == 0, f"symbols: torch-abi-audit failed on {folder.name}: {result.stderr}"):
        return
    audit = json.loads(result.stdout)
    oldest = tuple(int(p) for p in matrix.load()["defaults"]["stable_abi_min"].split("."))
    findings = {}
    for entry in [*audit.get("extensions", []), *audit.get("bundled_libs", [])]:
        torch = entry.get("torch") or {}
        name = Path(entry["path"]).name
        needs = torch.get("min_torch_version")
        findings[name] = {"uses_torch": torch.get("uses_torch"), "stable": torch.get("stable"),
                          "min_torch_version": needs}
        v.check(not torch.get("uses_torch") or torch.get("stable"),
                f"symbols: torch-abi-audit finds {name} outside the stable ABI: {torch}")
        v.check(needs is None or tuple(int(p) for p in needs.split(".")[:2]) <= oldest,
                f"symbols: torch-abi-audit finds {name} needs torch {needs}, newer than the oldest it claims")
    # the kernel library registers its ops through the C shim: no torch symbol read means no reading at all
    v.check(bool(findings.get(library, {}).get("uses_torch")),
            f"symbols: torch-abi-audit read no torch symbol in {library}: {findings.get(library)}")
    report["torch_abi_audit"] = findings


def check_build_info(v: Verification, build_info: dict, build: matrix.Build, arch_list: str,
                     expected_version: str, where: str = "buildinfo") -> None:
    """A build record (my_ops/_build_info.json, or one library's) against its build."""
    v.check(build_info.get("version") == expected_version,
            f"{where}: version {build_info.get('version')}, expected {expected_version}")
    v.check(build_info.get("abi") == build.abi, f"{where}: ABI {build_info.get('abi')}, expected {build.abi}")
    v.check(build_info.get("torch_requirement") == build.torch_requirement,
            f"{where}: torch requirement {build_info.get('torch_requirement')}, expected {build.torch_requirement}")
    v.check(str(build_info.get("torch_version", "")).startswith(build.torch + "."),
            f"{where}: built against torch {build_info.get('torch_version')}, expected {build.torch}.x")
    if build.cuda == matrix.CPU:
        v.check(not build_info.get("cuda_version"), f"{where}: CUDA {build_info.get('cuda_version')}, "
                                                    "expected none (the CPU build)")
    else:
        v.check(str(build_info.get("cuda_version", "")).startswith(build.cuda + "."),
                f"{where}: CUDA {build_info.get('cuda_version')}, expected {build.cuda}")
    v.check(build_info.get("arch_list") == arch_list,
            f"{where}: arch list {build_info.get('arch_list')}, expected {arch_list}")


def check_metadata(v: Verification, metadata: str, build: matrix.Build, expected_version: str) -> None:
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    torch_requires = [r for r in requires if re.match(r"torch\b", r) and "extra ==" not in r]
    v.report["requires_torch"] = torch_requires
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    wanted = matrix.wheel_dependency(build.torch)
    ok = len(torch_requires) == 1 and Requirement(torch_requires[0]).specifier == SpecifierSet(
        wanted.removeprefix("torch"))
    v.check(ok, f"metadata: Requires-Dist {torch_requires}, expected {wanted}")
    metadata_version = re.search(r"^Version: (.+)$", metadata, re.M).group(1)
    v.check(metadata_version == expected_version, f"metadata: Version {metadata_version}, expected {expected_version}")


def check_name(v: Verification, wheel: Path, expected_version: str, platform_tag: str | None) -> str | None:
    """The wheel's platform tag, once its name is checked (None: not a my_ops wheel name)."""
    match = WHEEL_NAME.match(wheel.name)
    if not v.check(match is not None, f"name: {wheel.name} is not my_ops-VERSION-cp39-abi3-PLATFORM.whl"):
        return None
    v.check(match["version"] == expected_version, f"name: version {match['version']}, expected {expected_version}")
    v.check(match["python"] == "cp39" and match["abi"] == "abi3",
            f"name: tags {match['python']}-{match['abi']}, expected cp39-abi3 (one wheel for every CPython >= 3.9)")
    if platform_tag:
        v.check(match["platform"] == platform_tag, f"name: platform {match['platform']}, expected {platform_tag}")
    return match["platform"]


def check_bundled_size_and_tools(v: Verification, wheel: Path, names: list[str], own: list[str],
                                 size_limit_mb: float, skip_tools: bool) -> None:
    libraries = [n for n in names if re.search(r"\.(so|pyd|dll|dylib)(\.|$)", n)]
    bundled = [n for n in libraries if n not in own]
    v.report["bundled_libraries"] = bundled
    v.check(not bundled, f"bundled: libraries grafted into the wheel: {bundled}")
    v.check(not any(FORBIDDEN_LIBRARIES.search(n) for n in names),
            f"bundled: torch/CUDA libraries inside: {[n for n in names if FORBIDDEN_LIBRARIES.search(n)]}")
    size_mb = wheel.stat().st_size / 1e6
    v.report["size_mb"] = round(size_mb, 2)
    v.check(size_mb <= size_limit_mb, f"size: {size_mb:.1f} MB, over the {size_limit_mb} MB limit")
    if not skip_tools:
        run_tool(v, "abi3audit", [sys.executable, "-m", "abi3audit", "--strict", "--report", str(wheel)])
        run_tool(v, "check-wheel-contents", [sys.executable, "-m", "check_wheel_contents", str(wheel)])
        run_tool(v, "twine check", [sys.executable, "-m", "twine", "check", "--strict", str(wheel)])


def _dist_info(names: list[str]) -> str:
    return next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))


def _metadata_and_info(zf: zipfile.ZipFile) -> tuple[str, dict]:
    dist_info = _dist_info(zf.namelist())
    return zf.read(f"{dist_info}/METADATA").decode(), json.loads(zf.read("my_ops/_build_info.json"))


def verify(wheel: Path, build: matrix.Build, platform_tag: str | None, skip_tools: bool,
           size_limit_mb: float, base_version: str, labelled: bool = True,
           torch_c_symbols: Path | None = None) -> Verification:
    v = Verification()
    v.report.update(wheel=wheel.name, build=build.name, abi=build.abi, size_mb=round(wheel.stat().st_size / 1e6, 2))
    expected_version = f"{base_version}+{build.label}" if labelled else base_version
    tag = check_name(v, wheel, expected_version, platform_tag)
    if tag is None:
        return v
    arch_list = build.arch_list_for(platform_of(tag))
    v.report["arch_list"] = arch_list
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata, build_info = _metadata_and_info(zf)
        own = check_kernel_library(v, zf, "my_ops", build, arch_list, torch_c_symbols)
    check_metadata(v, metadata, build, expected_version)
    check_license(v, wheel, metadata, _dist_info(names))
    v.report["build_info"] = {k: build_info.get(k) for k in ("version", "abi", "torch_requirement", "torch_version",
                                                            "cuda_version", "arch_list", "commit")}
    check_build_info(v, build_info, build, arch_list, expected_version)
    check_bundled_size_and_tools(v, wheel, names, own, size_limit_mb, skip_tools)
    return v


def label_free_libraries(platform: str, data: dict) -> dict[str, matrix.Build]:
    """Label -> build of every kernel library PyPI's wheel for `platform` holds (ci/build/bundle-wheels.py)."""
    default = matrix.find_build(data["defaults"]["default_pair"], data)
    members = set(data["defaults"]["label_free_builds"]) | ({default.name} if platform in default.platforms else set())
    return {b.label: b for b in matrix.all_builds(data) if b.name in members and platform in b.platforms}


def verify_label_free(wheel: Path, data: dict, platform_tag: str | None, skip_tools: bool, base_version: str,
                      torch_c_symbols: Path | None = None) -> Verification:
    """PyPI's label-free wheel: no local label, and each kernel library under my_ops/_libraries/<label>/
    checked against its own build as a labelled wheel's is; then size and the tools, as for any wheel."""
    v = Verification()
    v.report.update(wheel=wheel.name, build="label-free")
    tag = check_name(v, wheel, base_version, platform_tag)
    if tag is None:
        return v
    platform = platform_of(tag)
    expected = label_free_libraries(platform, data)
    default = matrix.find_build(data["defaults"]["default_pair"], data)
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata, build_info = _metadata_and_info(zf)
        found = sorted({n.split("/")[2] for n in names if n.startswith("my_ops/_libraries/") and n.count("/") >= 3})
        v.report["libraries"] = {label: {} for label in found}
        v.check(found == sorted(expected), f"libraries: my_ops/_libraries/ holds {found}, "
                                           f"expected {sorted(expected)} (label_free_builds for {platform})")
        v.check(build_info.get("label") == "" and sorted(build_info.get("libraries", [])) == found,
                f"buildinfo: label {build_info.get('label')!r} and libraries {build_info.get('libraries')}, "
                f"expected '' and {found}")
        v.check(build_info.get("version") == base_version,
                f"buildinfo: version {build_info.get('version')}, expected {base_version}")
        own = []
        for label in found:
            if label not in expected:
                continue
            build, folder = expected[label], f"my_ops/_libraries/{label}"
            arch_list = build.arch_list_for(platform)
            own += check_kernel_library(v, zf, folder, build, arch_list, torch_c_symbols)
            info_name = f"{folder}/_build_info.json"  # (my_ops-config-version.cmake reads it too)
            v.check(info_name in names, f"buildinfo {label}: {info_name} is missing")
            if info_name in names:
                library_info = json.loads(zf.read(info_name))
                check_build_info(v, library_info, build, arch_list, f"{base_version}+{label}",
                                 where=f"buildinfo {label}")
    check_metadata(v, metadata, default, base_version)
    check_license(v, wheel, metadata, _dist_info(names))
    check_bundled_size_and_tools(v, wheel, names, own, float(data["defaults"]["wheel_size_limit_mb"]), skip_tools)
    return v


def expected_base_version() -> str:
    """VERSION, or the nightly version when MY_OPS_NIGHTLY is set (as the build computes it)."""
    sys.path.insert(0, str(ROOT / "build_support"))
    import metadata_provider

    return metadata_provider.base_version()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--build", "--pair", dest="build",
                        help="a build (cu130, 2.6-cu124), a pair it serves (2.13-cu130), or 'default'")
    parser.add_argument("--label-free", action="store_true",
                        help="PyPI's label-free wheel (ci/build/bundle-wheels.py): each library against its build")
    parser.add_argument("--platform-tag", help="expected platform tag, e.g. manylinux_2_28_x86_64")
    parser.add_argument("--report", type=Path, help="write the findings as JSON here")
    parser.add_argument("--skip-tools", action="store_true", help="skip abi3audit, check-wheel-contents, twine")
    parser.add_argument("--no-label", action="store_true", help="the label-free PyPI build of the pair")
    parser.add_argument("--torch-c-symbols", type=Path, help="the oldest stable torch's C shim functions "
                        "(default: ci/build/torch-c-symbols-<stable_abi_min>.txt)")
    args = parser.parse_args()

    data = matrix.load()
    base_version = expected_base_version()
    if args.label_free:
        v = verify_label_free(args.wheel, data, args.platform_tag, args.skip_tools, base_version,
                              torch_c_symbols=args.torch_c_symbols)
    else:
        if not args.build:
            parser.error("--build is required (or --label-free)")
        build = matrix.find_build(data["defaults"]["default_pair"] if args.build == "default" else args.build, data)
        v = verify(args.wheel, build, args.platform_tag, args.skip_tools,
                   float(data["defaults"]["wheel_size_limit_mb"]), base_version, labelled=not args.no_label,
                   torch_c_symbols=args.torch_c_symbols)
    v.report["ok"] = not v.failures
    v.report["failures"] = v.failures
    if args.report:
        args.report.write_text(json.dumps(v.report, indent=2) + "\n")
    summary = (f"{args.wheel.name}: {v.report.get('size_mb')} MB, SASS {' '.join(v.report.get('sass', []))}, "
               f"PTX {' '.join(v.report.get('ptx', []))}, requires {' '.join(v.report.get('requires_torch', []))}")
    if v.failures:
        print(f"FAILED {summary}")
        for failure in v.failures:
            print(f"  - {failure}")
        return 1
    print(f"ok {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
