"""The leaderboard's pages in a real browser: Debian's Chromium, headless, driven by
Playwright's Python package (never `playwright install`), against a real `evalproto
serve` on a loopback port (SQLite). A person opens the tasks, follows one, submits
predictions through the form and sees the row queued, then scored, without a reload;
sorts by a heading, with the mouse and the keyboard; opens a model's page and the full
report. Hostile names and tags show as text and run nothing. Every request stays on the
server's origin (each one is routed and recorded), no console error appears, every
table and plot has a visible size, and the screenshot is not blank.

Without Chromium or Playwright the tests are skipped, saying why; with
EVALPROTO_REQUIRE_BROWSER=1 (as .ci/run sets) they fail instead. With
EVALPROTO_SCREENSHOT=PATH the leaderboard's screenshot is also written to PATH (the one
in docs/leaderboard.png was made so).
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any, Iterator, List, Tuple
from urllib.parse import urlsplit

import pytest
from test_report_browser import chromium, unavailable

from .boardpages import (
    HOSTILE_MODEL,
    HOSTILE_TAG,
    HOSTILE_TEAM,
    Board,
    jsonl_bytes,
    serving_boards,
)
from .conftest import DEADLINE, Server, dataset_rows, lines, until
from .test_service_jobs import GATED_EVALUATOR

ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Playwright's Python package is not installed (pip install playwright)")
    path = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: Any) -> Iterator[Tuple[Server, Board]]:
    """A server with one worker (so that a gated job can hold the queue) and the boards
    of boardpages."""
    directory = tmp_path_factory.mktemp("browser-pages")
    server = Server(f"sqlite:///{directory / 'board.db'}", directory, "--jobs", "1")
    with serving_boards(server) as served:
        yield served


class Watched:
    """A browser context whose every request is routed (one that would leave the
    server's origin is aborted and recorded), with the console's messages, the page's
    errors, dialogs and navigations recorded."""

    def __init__(self, browser: Any, origin: str, **options: Any) -> None:
        self.origin = origin
        self.context = browser.new_context(viewport=VIEWPORT, **options)
        self.requests: List[str] = []
        self.foreign: List[str] = []
        self.messages: List[Tuple[str, str]] = []
        self.dialogs: List[str] = []
        self.navigations: List[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda message: self.messages.append(
            (message.type, message.text)))
        self.page.on("pageerror", lambda error: self.messages.append(("pageerror",
                                                                      str(error))))
        self.page.on("dialog", self._dialog)
        self.page.on("framenavigated", lambda frame: self.navigations.append(frame.url)
                     if frame == self.page.main_frame else None)

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            self.foreign.append(url)
            route.abort()
        else:
            route.continue_()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def goto(self, path: str) -> Any:
        response = self.page.goto(self.origin + path, wait_until="load")
        return response

    def problems(self) -> List[Tuple[str, str]]:
        return [message for message in self.messages
                if message[0] in ("error", "warning", "pageerror")]

    def close(self) -> None:
        self.page.wait_for_timeout(200)  # late messages (a CSP report) arrive after load
        self.context.close()

    def __enter__(self) -> "Watched":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@pytest.fixture
def watched(browser: Any, served: Tuple[Server, Board]) -> Iterator[Watched]:
    """A watched context; at its end no request has left the origin, and no console
    error, page error or dialog has come."""
    with Watched(browser, served[0].address) as session:
        yield session
    assert session.foreign == []
    assert session.problems() == []
    assert session.dialogs == []
    assert session.requests  # the routing saw the traffic


def assert_visible_sizes(page: Any, selector: str, width: float = 100,
                         height: float = 40) -> int:
    """Every element that `selector` finds (outside a closed disclosure) is visible with
    at least this size; how many."""
    found = page.locator(selector)
    count = found.count()
    for number in range(count):
        element = found.nth(number)
        if element.evaluate("e => !!e.closest('details:not([open])')"):
            continue
        element.scroll_into_view_if_needed()
        box = element.bounding_box()
        assert element.is_visible(), (selector, number)
        assert box is not None and box["width"] >= width and box["height"] >= height, (
            selector, number, box)
    return count


def table_models(page: Any, dataset: str) -> List[str]:
    return page.locator(f"#table-{dataset} tbody tr").evaluate_all(
        "rows => rows.map(row => row.getAttribute('data-model'))")


def not_blank(shot: bytes) -> None:
    from PIL import Image  # matplotlib's own dependency

    image = Image.open(io.BytesIO(shot)).convert("L")
    counts = image.histogram()
    assert image.size == (VIEWPORT["width"], VIEWPORT["height"])
    assert sum(counts[:128]) > 0.01 * image.size[0] * image.size[1]  # text, lines
    assert sum(1 for count in counts if count) > 16


# -- the tests ---------------------------------------------------------------------------------

def test_from_the_tasks_to_a_leaderboard(watched):
    page = watched.page
    watched.goto("/")
    assert page.title() == "Tasks · evalproto"
    assert_visible_sizes(page, "table")
    page.get_by_role("link", name="mt", exact=True).click()
    page.wait_for_url("**/tasks/mt")
    assert page.get_by_role("heading", name="mt", exact=True).is_visible()
    assert assert_visible_sizes(page, "table.board", 400, 100) == 2
    page.locator("#tags-wmt22-de-en summary").click()
    assert assert_visible_sizes(page, "#tags-wmt22-de-en table", 300, 80) == 2
    page.locator("#tags-wmt22-de-en summary").click()
    page.evaluate("window.scrollTo(0, 0)")
    shot = page.screenshot(full_page=False)
    not_blank(shot)
    wanted = os.environ.get("EVALPROTO_SCREENSHOT")
    if wanted:
        Path(wanted).write_bytes(shot)
    assert all(url.startswith(watched.origin) for url in watched.requests)
    assert any(url.endswith("/static/board.js") for url in watched.requests)


def test_a_heading_sorts_in_place(watched, served):
    server, _ = served
    page = watched.page
    watched.goto("/tasks/mt")
    page.evaluate("window.__same = 'the page as loaded'")
    entries = server.leaderboard("mt", "wmt22-de-en")
    bleu = {e["model"]: e["score"] for e in entries if e["metric"] == "bleu"}
    ranked = list(bleu)
    assert table_models(page, "wmt22-de-en") == ranked
    heading = page.locator("#table-wmt22-de-en thead th").filter(has=page.get_by_role(
        "button", name="BLEU", exact=True))
    button = heading.get_by_role("button")
    button.click()
    assert table_models(page, "wmt22-de-en") == sorted(bleu, key=lambda m: -bleu[m])
    assert heading.get_attribute("aria-sort") == "descending"
    button.click()
    assert table_models(page, "wmt22-de-en") == sorted(bleu, key=lambda m: bleu[m])
    assert heading.get_attribute("aria-sort") == "ascending"
    page.locator("#table-wmt22-de-en").get_by_role("button", name="Model").click()
    assert table_models(page, "wmt22-de-en") == sorted(bleu)
    assert page.locator("#table-wmt22-de-en").get_attribute("data-sort") == "model"
    page.locator("#table-wmt22-de-en").get_by_role("button", name="Rank").click()
    assert table_models(page, "wmt22-de-en") == ranked
    assert table_models(page, "wmt22-en-de") == list(dict.fromkeys(
        e["model"] for e in server.leaderboard("mt", "wmt22-en-de")))  # untouched
    assert page.evaluate("window.__same") == "the page as loaded"
    assert len(watched.navigations) == 1


def tab_to(page: Any, selector: str, presses: int = 80) -> List[str]:
    """Press Tab until `selector` has the focus; what had it on the way."""
    seen = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(
            "() => { const e = document.activeElement; return e.id || e.getAttribute("
            "'data-key') || e.textContent.trim().slice(0, 40); }"))
        if page.evaluate(f"() => document.activeElement.matches({selector!r})"):
            return seen
    raise AssertionError(f"Tab never reached {selector}: {seen}")


def test_the_keyboard_reaches_labelled_sort_buttons_and_form_fields(watched, served):
    server, _ = served
    page = watched.page
    watched.goto("/tasks/mt")
    for name in ("Rank", "Model", "Team", "BLEU", "chrF2++"):
        assert page.get_by_role("button", name=name, exact=True).count() == 2
    tab_to(page, "#table-wmt22-de-en button[data-key=m0]")
    page.keyboard.press("Enter")
    bleu = {e["model"]: e["score"] for e in server.leaderboard("mt", "wmt22-de-en")
            if e["metric"] == "bleu"}
    assert table_models(page, "wmt22-de-en") == sorted(bleu, key=lambda m: -bleu[m])
    page.keyboard.press("Space")
    assert table_models(page, "wmt22-de-en") == sorted(bleu, key=lambda m: bleu[m])

    watched.goto("/tasks/mt/submit")
    # the task is said, not a field that looks editable and is not
    assert page.get_by_label("Task", exact=True).count() == 0
    assert page.locator("form p.fixed").inner_text() == "Task: mt"
    for label, kind in (("Dataset", "select"), ("Model", "input"),
                        ("Team token", "input"), ("Predictions", "input")):
        field = page.get_by_label(label, exact=True)
        assert field.count() == 1 and field.evaluate("e => e.tagName.toLowerCase()") == kind
    seen = tab_to(page, "button[type=submit]")
    order = [name for name in seen if name in ("dataset", "model", "token", "file")]
    assert order == ["dataset", "model", "token", "file"]  # the token before the file
    assert page.get_by_role("button", name="Submit", exact=True).is_visible()

    watched.goto("/tasks/mt/admin")
    for label in ("Name", "Round", "Examples", "Spec", "Kind"):
        assert page.get_by_label(label, exact=True).count() == 1
    assert page.get_by_label("Admin token", exact=True).count() == 2


@pytest.fixture
def gate(served: Tuple[Server, Board], tmp_path: Path) -> Iterator[Path]:
    """The server's one worker held by a job of task `gate` until the file this gives
    is removed (the job's evaluator waits while it exists)."""
    server, board = served
    path = tmp_path / "gate"
    evaluator = tmp_path / "gated_evaluator.py"
    evaluator.write_text(GATED_EVALUATOR)
    command = f"{sys.executable} {evaluator} {path}"
    server.ok("POST", "/api/tasks", json={"name": "gate", "metrics": [
        {"spec": command, "kind": "command"}]})
    rows = dataset_rows()[:5]
    server.ok("POST", "/api/tasks/gate/datasets/ds", content=jsonl_bytes(rows))
    path.touch()
    server.ok("POST", "/api/tasks/gate/datasets/ds/models/held", board.teams["lab-a"],
              content=jsonl_bytes([{"id": row["uid"], "pred": "x"} for row in rows]))
    until(lambda: Path(f"{path}.reached").exists(), "the gated job to hold the worker")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        server.wait("gate")


def test_a_submission_shows_queued_then_scored_without_a_reload(watched, served, gate,
                                                                tmp_path):
    server, board = served
    page = watched.page
    predictions = tmp_path / "from-browser.jsonl"
    predictions.write_bytes(jsonl_bytes([{"id": f"s{number}", "pred": hyp} for number, hyp
                                         in enumerate(lines("de-en.hyp.Lan-Bridge.en"), 1)
                                         if number % 3] +
                                        [{"id": f"s{number}", "pred": hyp} for number, hyp
                                         in enumerate(lines("de-en.hyp.LT22.en"), 1)
                                         if not number % 3]))
    watched.goto("/tasks/mt")
    page.get_by_role("link", name="Submit predictions").click()
    page.wait_for_url("**/tasks/mt/submit")
    page.get_by_label("Dataset", exact=True).select_option("wmt22-de-en")
    page.get_by_label("Model", exact=True).fill("from-browser")
    page.get_by_label("Team token", exact=True).fill(board.teams["lab-a"])
    page.get_by_label("Predictions", exact=True).set_input_files(str(predictions))
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_url("**/tasks/mt?submitted=*")
    row = page.locator('#table-wmt22-de-en tbody tr[data-model="from-browser"]')
    assert row.count() == 1
    cells = row.locator("td.score")
    assert cells.evaluate_all("cells => cells.map(c => c.dataset.status)") == [
        "queued", "queued"]
    assert cells.first.inner_text() == "queued"
    assert "Submission" in page.get_by_role("status").first.inner_text()
    page.evaluate("window.__same = 'the page after the submission'")
    arrived = len(watched.navigations)

    gate.unlink()  # the worker is free: the submission's jobs run
    page.wait_for_function(
        "() => { const cells = document.querySelectorAll("
        "'#table-wmt22-de-en tr[data-model=\"from-browser\"] td.score');"
        " return cells.length === 2 && [...cells].every(c => c.dataset.status === 'done'); }",
        timeout=DEADLINE * 1000)
    assert page.evaluate("window.__same") == "the page after the submission"
    assert len(watched.navigations) == arrived  # updated in place, never reloaded
    server.wait("mt")
    scores = {e["metric"]: e for e in server.leaderboard("mt", "wmt22-de-en")
              if e["model"] == "from-browser"}
    shown = row.locator("td.score").evaluate_all("cells => cells.map(c => c.dataset.value)")
    assert shown == [repr(scores["bleu"]["score"]), repr(scores["chrf --word-order 2"][
        "score"])]
    assert page.locator(".jobs").inner_text().startswith("Scoring jobs: 0 queued, 0 running")
    assert any(url.endswith("/api/tasks/mt/jobs") for url in watched.requests)


def test_the_model_page_and_the_full_report(watched, served):
    server, _ = served
    page = watched.page
    watched.goto("/tasks/mt")
    page.locator("#table-wmt22-de-en").get_by_role("link", name="lt22", exact=True).click()
    page.wait_for_url("**/tasks/mt/models/lt22")
    assert assert_visible_sizes(page, "table") == 3  # its scores, its tags, its history
    link = page.locator("#dataset-wmt22-de-en a[download]")
    stats = page.request.get(watched.origin + link.get_attribute("href"))
    assert stats.ok and stats.text() == server.request(
        "GET", "/api/tasks/mt/datasets/wmt22-de-en/stats/lt22", None).text
    page.locator("#dataset-wmt22-de-en").get_by_role(
        "link", name="The dataset's full report.").click()
    page.wait_for_url("**/tasks/mt/datasets/wmt22-de-en/report")
    # while it is being made, the page says so and reloads itself until it is there
    page.locator("h1", has_text="evalproto report: ").wait_for(timeout=120_000)
    back = page.get_by_role("link", name="← the leaderboard of mt")
    assert back.is_visible() and back.get_attribute("href") == "/tasks/mt#dataset-wmt22-de-en"
    assert assert_visible_sizes(page, "figure.plot svg", 200, 150) >= 8
    assert assert_visible_sizes(page, "#score-table", 300, 60) == 1
    page.locator("#score-table thead th:nth-child(2) button").click()
    assert page.locator("#score-table thead th:nth-child(2)").get_attribute(
        "aria-sort") == "ascending"  # the report's own script runs under the policy


def test_hostile_names_and_tags_show_as_text_and_run_nothing(watched):
    page = watched.page
    watched.goto("/")
    assert page.get_by_role("link", name="xss", exact=True).is_visible()
    page.get_by_role("link", name="xss", exact=True).click()
    page.wait_for_url("**/tasks/xss")
    table = page.locator("#table-tagged")
    assert table.get_by_role("link", name=HOSTILE_MODEL, exact=True).is_visible()
    assert table.get_by_text(HOSTILE_TEAM, exact=True).first.is_visible()
    page.locator("#tags-tagged summary").click()
    assert page.locator("#tags-tagged").get_by_text(HOSTILE_TAG, exact=True).is_visible()
    assert page.locator("main img, main b, main script").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script").count() == 1


def test_a_refused_form_says_why_beside_it_and_runs_nothing(browser, served, tmp_path):
    """The only console message is the browser's note of the 400 answer itself."""
    server, board = served
    with Watched(browser, server.address) as session:
        page = session.page
        session.goto("/tasks/mt/submit")
        hostile = tmp_path / "hostile.jsonl"
        hostile.write_bytes(board.predictions["wmt22-de-en", "lt22"] + jsonl_bytes(
            [{"id": "<img src=x onerror=alert(1)>", "pred": "x"}]))
        page.get_by_label("Model", exact=True).fill("hostile-ids")
        page.get_by_label("Team token", exact=True).fill(board.teams["lab-a"])
        page.get_by_label("Predictions", exact=True).set_input_files(str(hostile))
        page.get_by_role("button", name="Submit", exact=True).click()
        alert = page.get_by_role("alert")
        alert.wait_for()
        expected = server.request(
            "POST", "/api/tasks/mt/datasets/wmt22-de-en/models/hostile-ids",
            board.teams["lab-a"], params={"filename": "hostile.jsonl"},
            content=hostile.read_bytes()).json()["error"]
        assert "<img src=x onerror=alert(1)>" in expected
        assert alert.inner_text() == expected
        form = page.locator("form.form")
        assert form.get_attribute("aria-describedby") == alert.get_attribute("id")
        assert page.get_by_label("Model", exact=True).input_value() == "hostile-ids"
        assert page.get_by_label("Team token", exact=True).input_value() == ""
        assert page.locator("main img").count() == 0
        assert session.dialogs == [] and session.foreign == []
    assert [text for kind, text in session.problems()] == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)"]


def test_the_pages_work_with_scripts_off(browser, served):
    server, _ = served
    with Watched(browser, server.address, java_script_enabled=False) as session:
        page = session.page
        session.goto("/tasks/mt")
        bleu = {e["model"]: e["score"] for e in server.leaderboard("mt", "wmt22-de-en")
                if e["metric"] == "bleu"}
        page.locator("#table-wmt22-de-en").get_by_role("button", name="BLEU").click()
        page.wait_for_url("**/tasks/mt?sort=m0*")
        assert table_models(page, "wmt22-de-en") == sorted(bleu, key=lambda m: -bleu[m])
        page.locator("#table-wmt22-de-en").get_by_role("button", name="BLEU").click()
        page.wait_for_url("**/tasks/mt?sort=-m0*")
        assert table_models(page, "wmt22-de-en") == sorted(bleu, key=lambda m: bleu[m])
        page.get_by_label("Round", exact=True).select_option("2")
        page.get_by_role("button", name="Show", exact=True).click()
        page.wait_for_url("**/tasks/mt?round=2")
        assert page.locator("table.board").count() == 1
        assert page.locator("#table-wmt22-en-de").is_visible()
        assert_visible_sizes(page, "table.board", 400, 60)
    assert session.foreign == [] and session.problems() == [] and session.dialogs == []
