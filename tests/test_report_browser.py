"""The report in a real browser: Debian's Chromium, headless, driven by Playwright's
Python package (never `playwright install`: the browser is the system's). The page is
opened from a file, offline, and must show no console error, draw every plot at a
visible size, sort its score table, show a hostile hypothesis as text without running
it, and not be blank.

Without Chromium or Playwright the test is skipped, saying why; with
EVALPROTO_REQUIRE_BROWSER=1 (as .ci/run sets) it fails instead.
"""

import io
import json
import os
import shutil

import pytest
from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, read_lines, run_cli

HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           '<svg onload="window.__pwned = 3"></svg> done')


def unavailable(reason: str) -> None:
    if os.environ.get("EVALPROTO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}; EVALPROTO_REQUIRE_BROWSER=1 requires the browser test")
    pytest.skip(reason)


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    unavailable("Chromium is not installed (Debian: apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Playwright's Python package is not installed (pip install playwright)")
    path = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=path, args=["--no-sandbox", "--disable-background-networking"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    work = tmp_path_factory.mktemp("browser")
    hostile = read_lines(DE_EN_HYP2)
    hostile[4] = HOSTILE
    (work / "hostile").write_text("\n".join(hostile) + "\n")
    (work / "groups").write_text("".join("a\n" if i % 2 else "b,<b>c</b>\n" if i % 5 else "\n"
                                         for i in range(150)))
    page, figures = work / "report.html", work / "report.json"
    result = run_cli("report", *DE_EN_REFS, "-i", f"LT22={DE_EN_HYP}",
                     f"<i>x</i>={work / 'hostile'}", f"Lan-Bridge={DE_EN_HYP2}",
                     "--groups", str(work / "groups"), "--paired-ar", "--paired-ar-n", "200",
                     "-o", str(page), "--json", str(figures))
    assert result.exit_code == 0, result.output
    return page, json.loads(figures.read_text())


@pytest.fixture(scope="module")
def opened(browser, report):
    path, figures = report
    context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    messages, requests = [], []
    page.on("console", lambda message: messages.append((message.type, message.text)))
    page.on("pageerror", lambda error: messages.append(("pageerror", str(error))))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri(), wait_until="load")
    yield page, figures, messages, requests
    context.close()


def test_no_console_error_and_no_request_leaves_the_page(opened):
    page, _, messages, requests = opened
    page.wait_for_timeout(200)  # late errors (CSP reports) arrive after load
    assert [m for m in messages if m[0] in ("error", "pageerror", "warning")] == []
    assert all(url.startswith(("file:", "data:")) for url in requests), requests


def test_every_plot_has_a_visible_size(opened, report):
    page, figures, _, _ = opened
    plots = page.locator("figure.plot svg")
    count = plots.count()
    assert count == report[0].read_text().count('<figure class="plot">') >= 12
    for i in range(count):
        plot = plots.nth(i)
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 150, i
        assert plot.is_visible()


def table_systems(page):
    return page.locator("#score-table tbody tr td:first-child").all_inner_texts()


def test_the_score_table_sorts_by_any_column(opened):
    page, figures, _, _ = opened
    names = figures["systems"]
    assert [text.replace(" (baseline)", "") for text in table_systems(page)] == names
    for column, metric in enumerate(figures["metrics"], 2):
        scores = {row["system"]: row["score"] for row in metric["scores"]}
        header = page.locator(f"#score-table thead th:nth-child({column}) button")
        header.click()
        ascending = sorted(names, key=lambda name: scores[name])
        shown = [text.replace(" (baseline)", "") for text in table_systems(page)]
        assert shown == ascending
        assert page.locator(f"#score-table thead th:nth-child({column})").get_attribute(
            "aria-sort") == "ascending"
        header.click()
        assert [text.replace(" (baseline)", "") for text in table_systems(page)] == ascending[::-1]
    page.locator("#score-table thead th:nth-child(1) button").click()  # names, as text
    expected = page.evaluate("names => names.slice().sort((a, b) => a.localeCompare(b))",
                             names)
    assert [text.replace(" (baseline)", "") for text in table_systems(page)] == expected


def test_the_hostile_hypothesis_is_text_and_ran_nothing(opened):
    page, figures, _, _ = opened
    assert "5" in figures["segment_scores"]["losses"]
    assert page.evaluate("typeof window.__pwned") == "undefined"
    segment = page.locator('.segment[data-segment="5"]')
    assert HOSTILE in segment.inner_text()
    assert segment.locator("img, script, svg").count() == 0
    assert page.locator("script").count() == 1  # the page's own
    assert page.locator("text=<i>x</i>").count() >= 1  # a system's name, as typed


def test_a_screenshot_is_not_blank(opened, tmp_path):
    from PIL import Image  # matplotlib's own dependency

    page, _, _, _ = opened
    page.evaluate("window.scrollTo(0, 0)")
    shot = Image.open(io.BytesIO(page.screenshot(full_page=False))).convert("L")
    counts = shot.histogram()  # pixels per grey level
    assert shot.size == (1280, 900)
    assert sum(counts[:128]) > 0.01 * 1280 * 900  # text and lines, not a white page
    assert sum(1 for count in counts if count) > 16
