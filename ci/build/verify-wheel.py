#!/usr/bin/env python3
"""Verify a built my_ops wheel against its build in build_support/matrix.toml.

  ci/build/verify-wheel.py WHEEL --build cu130 [--platform-tag manylinux_2_28_x86_64]
                     [--report report.json] [--skip-tools]

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
  bundled   only my_ops/_C and libmy_ops inside; no torch or CUDA library
  size      under the matrix's wheel_size_limit_mb
  tools     abi3audit, check-wheel-contents and `twine check` pass
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


def find_library(names: list[str]) -> str | None:
    """my_ops/libmy_ops.so (Linux), .dylib (macOS) or my_ops/my_ops.dll (Windows) among the wheel's files."""
    found = [n for n in names if re.fullmatch(r"my_ops/(libmy_ops\.so|libmy_ops\.dylib|my_ops\.dll)", n)]
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


def run_tool(v: Verification, name: str, command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    ok = result.returncode == 0
    v.report.setdefault("tools", {})[name] = "ok" if ok else "failed"
    v.check(ok, f"tools: {name} failed:\n{result.stdout}{result.stderr}")


def verify(wheel: Path, build: matrix.Build, platform_tag: str | None, skip_tools: bool,
           size_limit_mb: float, base_version: str, labelled: bool = True,
           torch_c_symbols: Path | None = None) -> Verification:
    v = Verification()
    size_mb = wheel.stat().st_size / 1e6
    v.report.update(wheel=wheel.name, build=build.name, abi=build.abi, size_mb=round(size_mb, 2))

    # name
    match = WHEEL_NAME.match(wheel.name)
    if not v.check(match is not None, f"name: {wheel.name} is not my_ops-VERSION-cp39-abi3-PLATFORM.whl"):
        return v
    expected_version = f"{base_version}+{build.label}" if labelled else base_version
    v.check(match["version"] == expected_version, f"name: version {match['version']}, expected {expected_version}")
    v.check(match["python"] == "cp39" and match["abi"] == "abi3",
            f"name: tags {match['python']}-{match['abi']}, expected cp39-abi3 (one wheel for every CPython >= 3.9)")
    if platform_tag:
        v.check(match["platform"] == platform_tag, f"name: platform {match['platform']}, expected {platform_tag}")
    arch_list = build.arch_list_for(platform_of(match["platform"]))
    v.report["arch_list"] = arch_list

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        metadata = zf.read(f"{dist_info}/METADATA").decode()
        build_info = json.loads(zf.read("my_ops/_build_info.json"))
        libraries = [n for n in names if re.search(r"\.(so|pyd|dll|dylib)(\.|$)", n)]
        extension = [n for n in libraries if re.match(r"my_ops/_C[.\w-]*\.(so|pyd)$", n)]
        library = find_library(names)
        v.check(len(extension) == 1, f"bundled: expected one my_ops/_C extension, found {extension}")
        if v.check(library is not None, "bundled: expected my_ops/libmy_ops.so, .dylib or my_ops/my_ops.dll"):
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
                elif v.check(cuobjdump is not None,
                             "sass: no cuobjdump (set CUOBJDUMP or install nvidia-cuda-cuobjdump)"):
                    cubins, ptx = inspect_kernels(library_path, cuobjdump)
                    v.report.update(sass=sorted(cubins, key=lambda s: int(re.sub(r"\D", "", s))),
                                    ptx=sorted(ptx, key=lambda s: int(re.sub(r"\D", "", s))))
                    v.check(set(cubins) == sass_expected,
                            f"sass: SASS for {sorted(cubins)}, expected {sorted(sass_expected)}")
                    v.check(set(ptx) == ptx_expected, f"sass: PTX for {sorted(ptx)}, expected {sorted(ptx_expected)}")
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
                        oldest_file, oldest = oldest_torch_c_symbols(torch_c_symbols,
                                                                     macos=library.endswith(".dylib"))
                        newer = [f for f in torch_c_imports(Path(tmp) / name) if f not in oldest]
                        v.report.setdefault("torch_c_imports_newer_than_oldest", {})[name] = newer
                        v.check(not newer, f"symbols: {name} calls C shim functions the oldest torch it claims "
                                           f"lacks ({oldest_file}): {newer[:5]}")
                        needed = needed_libraries(Path(tmp) / name)
                        c10 = [n for n in needed if re.match(r"(lib)?c10", n.rsplit("/", 1)[-1], re.I)]
                        v.check(not c10, f"symbols: {name} links {c10}")

    # metadata
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

    # build info
    v.report["build_info"] = {k: build_info.get(k) for k in ("version", "abi", "torch_requirement", "torch_version",
                                                            "cuda_version", "arch_list", "commit")}
    v.check(build_info.get("version") == expected_version, f"buildinfo: version {build_info.get('version')}")
    v.check(build_info.get("abi") == build.abi, f"buildinfo: ABI {build_info.get('abi')}, expected {build.abi}")
    v.check(build_info.get("torch_requirement") == build.torch_requirement,
            f"buildinfo: torch requirement {build_info.get('torch_requirement')}, expected {build.torch_requirement}")
    v.check(str(build_info.get("torch_version", "")).startswith(build.torch + "."),
            f"buildinfo: built against torch {build_info.get('torch_version')}, expected {build.torch}.x")
    if build.cuda == matrix.CPU:
        v.check(not build_info.get("cuda_version"), f"buildinfo: CUDA {build_info.get('cuda_version')}, "
                                                    "expected none (the CPU build)")
    else:
        v.check(str(build_info.get("cuda_version", "")).startswith(build.cuda + "."),
                f"buildinfo: CUDA {build_info.get('cuda_version')}, expected {build.cuda}")
    v.check(build_info.get("arch_list") == arch_list,
            f"buildinfo: arch list {build_info.get('arch_list')}, expected {arch_list}")

    # bundled libraries
    bundled = [n for n in libraries if n not in extension and n != library]
    v.report["bundled_libraries"] = bundled
    v.check(not bundled, f"bundled: libraries grafted into the wheel: {bundled}")
    v.check(not any(FORBIDDEN_LIBRARIES.search(n) for n in names),
            f"bundled: torch/CUDA libraries inside: {[n for n in names if FORBIDDEN_LIBRARIES.search(n)]}")

    # size
    v.check(size_mb <= size_limit_mb, f"size: {size_mb:.1f} MB, over the {size_limit_mb} MB limit")

    if not skip_tools:
        run_tool(v, "abi3audit", [sys.executable, "-m", "abi3audit", "--strict", "--report", str(wheel)])
        run_tool(v, "check-wheel-contents", [sys.executable, "-m", "check_wheel_contents", str(wheel)])
        run_tool(v, "twine check", [sys.executable, "-m", "twine", "check", "--strict", str(wheel)])
    return v


def expected_base_version() -> str:
    """VERSION, or the nightly version when MY_OPS_NIGHTLY is set (as the build computes it)."""
    sys.path.insert(0, str(ROOT / "build_support"))
    import metadata_provider

    return metadata_provider.base_version()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--build", "--pair", dest="build", required=True,
                        help="a build (cu130, 2.6-cu124), a pair it serves (2.13-cu130), or 'default'")
    parser.add_argument("--platform-tag", help="expected platform tag, e.g. manylinux_2_28_x86_64")
    parser.add_argument("--report", type=Path, help="write the findings as JSON here")
    parser.add_argument("--skip-tools", action="store_true", help="skip abi3audit, check-wheel-contents, twine")
    parser.add_argument("--no-label", action="store_true", help="the label-free PyPI build of the pair")
    parser.add_argument("--torch-c-symbols", type=Path, help="the oldest stable torch's C shim functions "
                        "(default: ci/build/torch-c-symbols-<stable_abi_min>.txt)")
    args = parser.parse_args()

    data = matrix.load()
    build = matrix.find_build(data["defaults"]["default_pair"] if args.build == "default" else args.build, data)
    base_version = expected_base_version()
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
