"""report.html and index.html in a real browser (headless Chromium through selenium).

Each page loads with no console error and no request other than file:// or data:, the
heatmaps are drawn, student text that looks like markup stays text, and the class table
sorts. Full-page screenshots go to test-artifacts/ for a human to look at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from result_samples import SCRIPT, all_samples

from grader.report.files import write_report_html, write_text_atomic
from grader.report.html import render_index

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

try:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver import Chrome
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - depends on the machine
    HAVE_SELENIUM = False

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not HAVE_SELENIUM, reason="selenium is not installed (pip install selenium)"
    ),
    pytest.mark.skipif(
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
        reason=f"needs {CHROMIUM} and {CHROMEDRIVER} (Debian: apt-get install chromium chromium-driver)",
    ),
]

FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--window-size=1280,1000",
)  # fmt: skip


def folder(student: str) -> str:
    """A file-system-safe folder per student (ids may hold '/' and '<')."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", student)


@dataclass(frozen=True)
class Visit:
    console: list[dict[str, Any]]
    requests: list[str]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [e for e in self.console if e.get("level") == "SEVERE"]

    @property
    def external(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file://", "data:"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reports")
    results = all_samples()
    for r in results:
        write_report_html(r, root / folder(r.student) / "report.html")
    html = render_index(results, report_href=lambda s: f"{folder(s)}/report.html")
    write_text_atomic(root / "index.html", html)
    return root


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chrome]:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    drv = Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    drv.set_page_load_timeout(30)
    drv.get("about:blank")
    try:
        yield drv
    finally:
        drv.quit()


def _requests(perf_log: list[dict[str, Any]], url: str) -> list[str]:
    """Every URL requested from the moment `url` itself was, in order. (Earlier entries
    can belong to the browser's own start page, which loads chrome:// resources late.)"""
    urls = []
    for entry in perf_log:
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    assert url in urls, f"{url} was never requested: {urls}"
    return urls[urls.index(url) :]


def logs(drv: Chrome, kind: str) -> list[dict[str, Any]]:
    """The browser's `kind` log ("browser" = console, "performance" = DevTools events)."""
    return cast(list[dict[str, Any]], drv.get_log(kind))  # type: ignore[no-untyped-call]


def visit(drv: Chrome, url: str) -> Visit:
    """Load `url` and return what the console and the network saw during the load."""
    logs(drv, "browser"), logs(drv, "performance")  # drain earlier pages' entries
    drv.get(url)
    assert drv.execute_script("return document.readyState") == "complete"
    return Visit(logs(drv, "browser"), _requests(logs(drv, "performance"), url))


def screenshot(drv: Chrome, name: str) -> Path:
    """The whole page, not just the window."""
    height, chrome = drv.execute_script(
        "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]"
    )
    drv.set_window_size(1280, min(int(height) + int(chrome), 12000))
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    assert drv.save_screenshot(str(path))
    drv.set_window_size(1280, 1000)
    return path


def assert_no_alert(drv: Chrome) -> None:
    try:
        text = drv.switch_to.alert.text
    except NoAlertPresentException:
        return
    pytest.fail(f"an alert ran: {text!r}")


def test_the_check_itself_sees_console_errors_and_external_requests(
    driver: Chrome, tmp_path: Path
) -> None:
    """Negative control: a page that does fetch something is caught."""
    page = tmp_path / "leaky.html"
    page.write_text('<!doctype html><title>x</title><img src="http://127.0.0.1:47/pixel.png">')
    seen = visit(driver, page.as_uri())
    assert seen.external == ["http://127.0.0.1:47/pixel.png"]
    assert seen.errors


@pytest.mark.parametrize("student", [r.student for r in all_samples()], ids=folder)
def test_report_loads_clean(driver: Chrome, site: Path, student: str) -> None:
    seen = visit(driver, (site / folder(student) / "report.html").as_uri())
    assert seen.requests and seen.errors == [] and seen.external == []
    assert driver.find_element(By.ID, "student").text == student
    assert_no_alert(driver)
    screenshot(driver, f"report-{folder(student)}")


def test_heatmaps_are_drawn_with_masked_cells(driver: Chrome, site: Path) -> None:
    visit(driver, (site / "bob" / "report.html").as_uri())
    maps = driver.find_elements(By.CSS_SELECTOR, "svg.heatmap")
    assert len(maps) == 4
    for svg in maps:
        assert svg.is_displayed() and svg.size["width"] > 100 and svg.size["height"] > 100
    leaked = driver.find_elements(By.CSS_SELECTOR, "svg.heatmap g.cell.masked.leaked")
    assert len(leaked) == 23
    assert (
        len(driver.find_elements(By.CSS_SELECTOR, "svg.heatmap g.cell.masked")) == 2 * 12 + 2 * 66
    )
    first = driver.find_element(By.CSS_SELECTOR, "figure.heatmaps")
    ARTIFACTS.mkdir(exist_ok=True)
    assert first.screenshot(str(ARTIFACTS / "heatmap-padding.png"))


def test_student_markup_is_text(driver: Chrome, site: Path) -> None:
    seen = visit(driver, (site / folder(SCRIPT) / "report.html").as_uri())
    assert_no_alert(driver)
    assert seen.errors == [] and seen.external == []
    assert driver.find_elements(By.TAG_NAME, "script") == []
    assert driver.find_elements(By.TAG_NAME, "img") == []
    assert driver.find_element(By.ID, "student").text == SCRIPT
    assert SCRIPT in driver.title
    body = driver.find_element(By.TAG_NAME, "body").text
    assert '"><img src=x onerror=alert(1)>' in body


def _column(drv: Chrome, css: str) -> list[str]:
    return [td.get_attribute("data-value") or "" for td in drv.find_elements(By.CSS_SELECTOR, css)]


def test_index_loads_clean_and_sorts_by_score(driver: Chrome, site: Path) -> None:
    seen = visit(driver, (site / "index.html").as_uri())
    assert seen.errors == [] and seen.external == []
    assert_no_alert(driver)
    screenshot(driver, "index")
    header = driver.find_element(By.CSS_SELECTOR, "#score-header button")
    header.click()
    scores = _column(driver, "#students tbody td.score")
    graded = [float(s) for s in scores if s]
    assert graded == sorted(graded, reverse=True) and scores[-1] == ""  # not graded: last
    assert driver.find_element(By.ID, "score-header").get_attribute("aria-sort") == "descending"
    header.click()
    graded = [float(s) for s in _column(driver, "#students tbody td.score") if s]
    assert graded == sorted(graded)
    driver.find_element(By.LINK_TEXT, "bob").click()
    assert driver.find_element(By.ID, "student").text == "bob"
    assert [e for e in logs(driver, "browser") if e["level"] == "SEVERE"] == []
