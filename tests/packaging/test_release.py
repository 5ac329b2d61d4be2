"""Release automation on this host: the per-pair PEP 503 index, the release
folder, and pip installing through the index from a real HTTP server."""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

import my_ops
from conftest import built_wheel

ROOT = Path(__file__).resolve().parents[2]
# Release and verification steps run on the workflows' Linux runners (bash, nm,
# readelf, sha256sum, symlinks); the Windows and macOS test jobs skip them.
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
PYTHON = sys.executable


def _pair_path() -> str:
    info = my_ops.build_info
    return f"whl/torch{info.torch_minor}/{info.label}"


def _index(site: Path, *inputs: Path, nightly: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, str(ROOT / "ci/release/make_index.py"), "--site", str(site),
                           *(["--nightly"] if nightly else []), *map(str, inputs)],
                          capture_output=True, text=True)


def _pages(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def _served_pairs() -> list[str]:
    """The per-pair index paths that list the built wheel."""
    info = my_ops.build_info
    if info.abi != "stable":
        return [_pair_path()]
    lower = info.torch_range[0]
    return [f"whl/torch{p.split('-')[0]}/{info.label}" for p in info.supported_pairs
            if p.endswith(f"-{info.label}") and tuple(map(int, p.split("-")[0].split("."))) >= lower]


def test_index_layout_hashes_and_metadata(tmp_path):
    wheel = built_wheel()
    site = tmp_path / "site"
    assert _index(site, wheel).returncode == 0
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    files = site / "whl" / "files"
    assert sorted(p.name for p in files.iterdir()) == sorted([wheel.name, f"{wheel.name}.metadata"])
    metadata = (files / f"{wheel.name}.metadata").read_bytes()
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        assert metadata == zf.read(name)
    indexes = _served_pairs()
    if my_ops.build_info.abi == "stable":
        indexes.append(f"whl/{my_ops.build_info.label}")  # the per-CUDA index
        assert _pair_path() in indexes and len(indexes) >= 3
    for index in indexes:
        page = (site / index / "my-ops" / "index.html").read_text()
        up = "../" * (index.count("/") + 1)
        # every page links the one shared file, with its hash and metadata
        assert f'href="{up}files/{wheel.name.replace("+", "%2B")}#sha256={digest}"' in page, index
        # the wheel's Requires-Python: the oldest Python of the torch minors it serves
        floor = "3.10" if my_ops.build_info.abi == "stable" else "3.9"
        assert f'data-requires-python="&gt;={floor}"' in page
        assert f'data-core-metadata="sha256={hashlib.sha256(metadata).hexdigest()}"' in page
        assert '<a href="my-ops/">my-ops</a>' in (site / index / "index.html").read_text()


def test_index_is_idempotent_and_keeps_earlier_releases(tmp_path):
    wheel = built_wheel()
    site = tmp_path / "site"
    earlier = tmp_path / "earlier" / wheel.name.replace("1.0.0", "0.9.0")
    earlier.parent.mkdir()
    shutil.copy(wheel, earlier)  # stands in for an earlier release's wheel of the same pair
    assert _index(site, earlier).returncode == 0
    assert _index(site, wheel).returncode == 0
    first = _pages(site)
    assert _index(site, wheel).returncode == 0
    assert _pages(site) == first
    page = (site / _pair_path() / "my-ops" / "index.html").read_text()
    assert earlier.name in page and wheel.name in page


def test_index_refuses_to_replace_a_released_file(tmp_path):
    wheel = built_wheel()
    site = tmp_path / "site"
    assert _index(site, wheel).returncode == 0
    changed = tmp_path / "changed" / wheel.name
    changed.parent.mkdir()
    shutil.copy(wheel, changed)
    with zipfile.ZipFile(changed, "a") as zf:
        zf.writestr("my_ops/extra.txt", "different bytes")
    result = _index(site, changed)
    assert result.returncode == 1
    assert "released files are immutable" in result.stderr


def test_nightly_index_is_separate(tmp_path):
    site = tmp_path / "site"
    assert _index(site, built_wheel(), nightly=True).returncode == 0
    assert (site / "whl" / "nightly" / _pair_path().removeprefix("whl/") / "my-ops" / "index.html").is_file()
    assert (site / "whl" / "nightly" / "files").is_dir()
    assert not (site / _pair_path()).exists() and not (site / "whl" / "files").exists()


def test_assemble_release_dry_run(tmp_path):
    pytest.importorskip("build.env", reason="needs the sdist builder of ci/lib/requirements.txt")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copy(built_wheel(), wheels)
    out = tmp_path / "release"
    result = subprocess.run(["bash", str(ROOT / "ci/release/assemble-release.sh"), "--wheels", str(wheels), "--out",
                             str(out)], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHON": PYTHON})
    assert result.returncode == 0, result.stdout + result.stderr
    files = sorted(p.name for p in (out / "dist").iterdir())
    version = my_ops.build_info.version.split("+")[0]
    assert f"my_ops-{version}.tar.gz" in files and "SHA256SUMS" in files
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out / "dist", capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == len(files) - 1
    # PyPI gets the sdist and label-free wheels only: it refuses local version labels
    assert sorted(p.name for p in (out / "pypi").iterdir()) == [f"my_ops-{version}.tar.gz"]
    site = tmp_path / "site"
    result = subprocess.run(["bash", str(ROOT / "ci/release/build-site.sh"), "--dist", str(out / "dist"),
                             "--out", str(site)],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHON": PYTHON})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "index.html").is_file()
    assert (site / _pair_path() / "my-ops" / "index.html").is_file()


def _relabel(wheel: Path, version: str, out: Path) -> Path:
    """A copy of `wheel` named and versioned as `version` (for index tests only)."""
    old = wheel.name.split("-")[1].split("+")[0]
    target = out / wheel.name.replace(f"-{old}+", f"-{version}+")
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            name = item.filename.replace(f"my_ops-{old}+", f"my_ops-{version}+")
            if name == "my_ops/_build_info.json" or name.endswith(".dist-info/METADATA"):
                data = data.replace(f"{old}+".encode(), f"{version}+".encode())
            dst.writestr(name, data)
    return target


def test_site_keeps_the_newest_nightlies_and_every_release(tmp_path):
    """ci/release/build-site.sh: this night's wheels plus the published ones (this
    night's among them, already uploaded), of which only the newest
    nightly_keep versions; every release."""
    sys.path.insert(0, str(ROOT / "build_support"))
    import matrix
    keep = int(matrix.load()["defaults"]["nightly_keep"])
    wheel = built_wheel()
    versions = [f"1.0.1.dev202611{day:02d}0317" for day in range(1, keep + 3)]
    published = tmp_path / "published-nightly"
    for version in versions:
        _relabel(wheel, version, published / "nightly")
    tonight = tmp_path / "dist"
    _relabel(wheel, versions[-1], tonight)
    _relabel(wheel, "0.9.0", tmp_path / "published" / "v0.9.0")
    site = tmp_path / "site"
    result = subprocess.run(["bash", str(ROOT / "ci/release/build-site.sh"), "--dist", str(tonight),
                             "--kind", "nightly",
                             "--previous", str(tmp_path / "published"), "--previous-nightly", str(published),
                             "--out", str(site), "--files-url", "https://example.invalid/releases/download"],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHON": PYTHON})
    assert result.returncode == 0, result.stdout + result.stderr
    nightly_page = (site / "whl" / "nightly" / _pair_path().removeprefix("whl/") / "my-ops" / "index.html").read_text()
    listed = [v for v in versions if f"my_ops-{v}%2B" in nightly_page]
    assert listed == versions[-keep:], (listed, versions)
    release_pages = [p.read_text() for p in (site / "whl").rglob("index.html") if "nightly" not in p.parts]
    assert any("/v0.9.0/my_ops-0.9.0%2B" in page for page in release_pages)
    assert not list(site.rglob("*.whl")), "with --files-url the site holds pages only"


# ------------------------------------------------- pip through a real index
@pytest.fixture(scope="module")
def served_index(tmp_path_factory):
    """The index of the built wheel, served over HTTP on 127.0.0.1."""
    site = tmp_path_factory.mktemp("site")
    assert _index(site, built_wheel()).returncode == 0
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def user_env(tmp_path):
    """A fresh venv that already has this torch (the user's), without my_ops.

    torch comes from the test environment through a .pth file pointing at a
    copy-free view of its site-packages minus my_ops, so pip sees torch as
    installed and must fetch my_ops itself.
    """
    import torch

    site_packages = Path(torch.__file__).resolve().parent.parent
    view = tmp_path / "view"
    view.mkdir()
    for entry in site_packages.iterdir():
        if not entry.name.lower().startswith(("my_ops", "my-ops")):
            (view / entry.name).symlink_to(entry)
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    (own_site / "user_torch.pth").write_text(str(view) + "\n")
    return python


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "install", "--no-cache-dir",
                           *args], capture_output=True, text=True, timeout=600)


def _installed_version(python: Path) -> str:
    result = subprocess.run([str(python), "-c", "import my_ops, torch; print(my_ops.__version__, torch.__version__)"],
                            capture_output=True, text=True, cwd="/")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize("index", ["pair", "cuda"])
def test_pip_install_pair_from_index(served_index, user_env, index):
    info = my_ops.build_info
    if index == "cuda" and info.abi != "stable":
        pytest.skip("per-CUDA indexes list stable-ABI wheels")
    path = _pair_path() if index == "pair" else f"whl/{info.label}"
    base = ".".join(info.version.split(".")[:2])
    result = _pip(user_env, f"my_ops=={base}+{info.label}", "--index-url", f"{served_index}/{path}/")
    assert result.returncode == 0, result.stdout + result.stderr
    import torch

    assert _installed_version(user_env) == f"{info.version} {torch.__version__}"  # torch kept


def test_pip_install_with_require_hashes(served_index, user_env, tmp_path):
    wheel = built_wheel()
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"my_ops=={my_ops.build_info.version} --hash=sha256:{digest}\n")
    result = _pip(user_env, "--require-hashes", "-r", str(requirements),
                  "--index-url", f"{served_index}/{_pair_path()}/")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _installed_version(user_env).startswith(my_ops.build_info.version)
    # and a wrong hash is refused
    requirements.write_text(f"my_ops=={my_ops.build_info.version} --hash=sha256:{'0' * 64}\n")
    bad = _pip(user_env, "--force-reinstall", "--no-deps", "--require-hashes", "-r", str(requirements),
               "--index-url", f"{served_index}/{_pair_path()}/")
    assert bad.returncode != 0 and "DO NOT MATCH THE HASHES" in bad.stdout + bad.stderr


def _downstream_wheel(folder: Path) -> Path:
    """A package that depends on my_ops the documented way: my_ops==1.0."""
    name = "downstream_demo-0.1-py3-none-any.whl"
    files = {
        "downstream_demo/__init__.py": b"import my_ops\nNORM = my_ops.rms_norm\n",
        "downstream_demo-0.1.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: downstream_demo\nVersion: 0.1\nRequires-Dist: my_ops==1.0\n",
        "downstream_demo-0.1.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append("downstream_demo-0.1.dist-info/RECORD,,")
    files["downstream_demo-0.1.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    target = folder / name
    with zipfile.ZipFile(target, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return target


def test_downstream_package_resolves_to_the_pair_variant(served_index, user_env, tmp_path):
    downstream = _downstream_wheel(tmp_path)
    result = _pip(user_env, str(downstream), "--index-url", f"{served_index}/{_pair_path()}/")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _installed_version(user_env).startswith(my_ops.build_info.version)
    check = subprocess.run([str(user_env), "-c", "import downstream_demo"], capture_output=True, text=True, cwd="/")
    assert check.returncode == 0, check.stderr
