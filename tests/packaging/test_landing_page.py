"""The index's install selector, driven in headless Chromium: picking a pair
shows the exact pip command for it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ci" / "release"))
sys.path.insert(0, str(ROOT / "build_support"))
import make_landing_page as landing_page  # noqa: E402
import matrix  # noqa: E402

webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (ci/test/requirements-browser.txt)")
from selenium.webdriver.support.ui import Select  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="needs Debian's chromium and chromium-driver (ci/test.sh installs them)")

BASE = "https://example.test/my_ops"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, str(ROOT / "ci/release/make_landing_page.py"), "--site", str(site),
                    "--base-url", BASE], check=True, capture_output=True)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    driver.get((site / "index.html").as_uri())
    yield driver
    driver.quit()


def _command(driver) -> str:
    return driver.find_element("id", "command").text


def test_opens_on_the_default_pair(browser):
    pair = matrix.default_pair()
    assert Select(browser.find_element("id", "torch")).first_selected_option.text == pair.torch
    assert _command(browser) == f"pip install my_ops==1.0+{pair.label} --extra-index-url {BASE}/{pair.index_path}"
    note = browser.find_element("id", "note").text
    assert "PyPI" in note
    assert f"its CUDA version's index: {BASE}/whl/{pair.label}/" in note  # the default pair is stable


@pytest.mark.parametrize("name", ["2.6-cu124", "2.12-cu126", "2.15-cu132", "2.10-cu126", "2.13-cpu"])
def test_picking_a_pair_shows_its_command(browser, name):
    pair = matrix.find_pair(name)
    Select(browser.find_element("id", "torch")).select_by_value(pair.torch)
    cuda = Select(browser.find_element("id", "cuda"))
    offered = sorted(o.get_attribute("value") for o in cuda.options)
    assert offered == sorted(p.cuda for p in matrix.all_pairs() if p.torch == pair.torch)
    cuda.select_by_value(pair.cuda)
    options = Select(browser.find_element("id", "os")).options
    # e.g. no Windows for Linux-only variants
    assert [o.get_attribute("value") for o in options] == list(pair.platforms)
    # each platform by its own name
    assert [o.text for o in options] == [landing_page.PLATFORM_NAMES[p] for p in pair.platforms]
    assert _command(browser) == f"pip install my_ops==1.0+{pair.label} --extra-index-url {BASE}/{pair.index_path}"
