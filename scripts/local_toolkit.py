#!/usr/bin/env python3
"""Assemble a CUDA toolkit from PyPI packages, for building a pair on a Linux
host that lacks that CUDA version.

  scripts/local_toolkit.py --cuda 13.2 [--prefix .toolkits]   # prints the CUDA_HOME to use

The packages come from build_support/matrix.toml. `pip_toolkit` (CUDA 13): PyPI
packages that install into one tree, nvidia/cu13/{bin,include,lib,nvvm}, a
toolkit root once lib64 points at lib. `debian_toolkit` (CUDA 12.4): Debian
packages of another suite, fetched with apt-get download into a private
package list (the system's apt configuration is not touched), unpacked with
dpkg -x and arranged as a toolkit root with its own nvcc.profile. Other CUDA
12.x versions have neither; asking for one fails with that explanation.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "build_support"))
import matrix  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


NVCC_PROFILE = """\
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:$(TOP)/nvvm/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
"""


def _link(target: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def assemble_debian(cuda: str, spec: dict, prefix: Path) -> Path:
    """A toolkit root from Debian packages of spec['suite'], unpacked under prefix."""
    target = prefix / f"cuda-{cuda}"
    root, debs, lists = target / "unpacked", target / "debs", target / "apt-lists"
    stamp = target / ".packages"
    packages = spec["packages"]
    if not (stamp.is_file() and stamp.read_text() == "\n".join(packages)):
        for folder in (debs, lists / "partial"):
            folder.mkdir(parents=True, exist_ok=True)
        (target / "no-parts").mkdir(exist_ok=True)
        sources = target / "sources.list"
        sources.write_text(f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                           f"http://deb.debian.org/debian {spec['suite']} main contrib non-free\n")
        apt = ["apt-get", "-q", "-o", f"Dir::Etc::SourceList={sources}",
               "-o", f"Dir::Etc::SourceParts={target / 'no-parts'}",
               "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Etc::Preferences={target / 'no-parts' / 'none'}",
               "-o", f"Dir::Etc::PreferencesParts={target / 'no-parts'}", "-o", "APT::Sandbox::User=root"]
        subprocess.run([*apt, "update"], check=True, stdout=sys.stderr)  # stdout is the answer
        subprocess.run([*apt, "download", *packages], check=True, cwd=debs, stdout=sys.stderr)
        if root.exists():
            shutil.rmtree(root)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True, stdout=sys.stderr)
        stamp.write_text("\n".join(packages))
    toolkit = target / "root"
    if toolkit.exists():
        shutil.rmtree(toolkit)
    bin_dir = toolkit / "bin"
    bin_dir.mkdir(parents=True)
    debian_bin = root / "usr/lib/nvidia-cuda-toolkit/bin"
    # nvcc reads nvcc.profile beside its real path: copy it, with a profile of our own
    shutil.copy2(debian_bin / "nvcc", bin_dir / "nvcc")
    (bin_dir / "nvcc.profile").write_text(NVCC_PROFILE)
    _link(debian_bin / "crt", bin_dir / "crt")
    for tool in (root / "usr/bin").iterdir():
        if tool.name != "nvcc":
            _link(tool, bin_dir / tool.name)
    _link(debian_bin / "cicc", toolkit / "nvvm/bin/cicc")
    _link(root / "usr/lib/nvidia-cuda-toolkit/libdevice", toolkit / "nvvm/libdevice")
    _link(root / "usr/include", toolkit / "include")
    for library in (root / "usr/lib/x86_64-linux-gnu").glob("lib*"):
        if library.name.startswith(("libcudart", "libnvvm")):
            _link(library, toolkit / "lib64" / library.name)
            if library.name.startswith("libnvvm"):
                _link(library, toolkit / "nvvm/lib64" / library.name)
    return toolkit


def assemble(cuda: str, prefix: Path) -> Path:
    data = matrix.load()
    spec = data["cuda"].get(cuda)
    if spec is None:
        raise SystemExit(f"matrix.toml has no CUDA {cuda}")
    if spec.get("debian_toolkit"):
        return assemble_debian(cuda, spec["debian_toolkit"], prefix)
    packages = spec.get("pip_toolkit", [])
    if not packages:
        raise SystemExit(
            f"CUDA {cuda} cannot be assembled here: PyPI's nvidia-cuda-nvcc wheels for it carry no "
            f"nvcc and no Debian suite packages it (see matrix.toml). Install the CUDA {cuda} toolkit "
            f"and set CUDA_HOME, or build this pair in its builder container ({spec['linux_image']})."
        )
    target = prefix / f"cuda-{cuda}"
    root = target / "nvidia" / f"cu{cuda.split('.')[0]}"
    stamp = target / ".packages"
    if not (stamp.is_file() and stamp.read_text() == "\n".join(packages)):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade",
                        "--target", str(target), *packages], check=True, stdout=sys.stderr)
        stamp.write_text("\n".join(packages))
    nvcc = root / "bin" / "nvcc"
    if not nvcc.is_file():
        raise SystemExit(f"{nvcc} is missing after installing {' '.join(packages)}")
    lib64 = root / "lib64"
    if not lib64.exists():
        lib64.symlink_to("lib")
    # Linking with -lcudart needs the unversioned name the runtime wheel leaves out.
    runtime = sorted((root / "lib").glob("libcudart.so.*"))
    if runtime and not (root / "lib" / "libcudart.so").exists():
        (root / "lib" / "libcudart.so").symlink_to(runtime[0].name)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cuda", required=True, help="CUDA version, e.g. 13.2")
    parser.add_argument("--prefix", type=Path, default=ROOT / ".toolkits")
    args = parser.parse_args()
    print(assemble(args.cuda, args.prefix.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
