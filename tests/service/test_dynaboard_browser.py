"""The Dynaboard in a real browser (Debian's Chromium, as test_pages_browser.py drives
it), against a real `evalproto serve`: moving a slider re-ranks the Dynaboard in place
(no navigation) as the API ranks it under those weights, its intervals come from the
API, the address keeps the weights so that opening it again shows the same view, the
keyboard moves a slider, and the filter box narrows every table and the chart to the
models and teams it names. Every request stays on the server's origin and no console
error appears."""

from __future__ import annotations

from typing import Any, Iterator, List, Tuple
from urllib.parse import urlsplit

import pytest

from .conftest import Server, until
from .test_pages_browser import Watched, browser  # noqa: F401 (the browser fixture)
from .test_service_dynaboard import fill_board


@pytest.fixture(scope="module")
def served(tmp_path_factory: Any) -> Iterator[Server]:
    """A server with the Dynaboard of test_service_dynaboard: task nli, dataset dev with
    a robustness and a fairness copy, three models."""
    directory = tmp_path_factory.mktemp("dynaboard-browser")
    server = Server(f"sqlite:///{directory / 'board.db'}", directory, "--jobs", "2").start()
    try:
        fill_board(server, directory)
        yield server
    finally:
        assert server.stop() == 0, server.text()


@pytest.fixture
def watched(browser: Any, served: Server) -> Iterator[Watched]:  # noqa: F811
    with Watched(browser, served.address) as session:
        yield session
    assert session.foreign == []
    assert session.problems() == []


def shown(page: Any) -> List[Tuple[str, str, str]]:
    """The dev Dynaboard's rows as shown: (model, rank, interval)."""
    return [tuple(row) for row in page.locator("#dynaboard-table-dev tbody tr").evaluate_all(
        "rows => rows.map(row => [row.getAttribute('data-dynascore-model'), "
        "row.querySelector('[data-key=rank]').textContent, "
        "row.querySelector('[data-key=interval]').textContent])")]


def expected(server: Server, weights: str) -> List[Tuple[str, str, str]]:
    """The API's Dynaboard under these weights, as the page shows it."""
    found = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None,
                      params={"weights": weights})["models"]
    return [(model["model"], str(model["rank"]),
             f"{model['interval'][0]:.2f}–{model['interval'][1]:.2f}") for model in found]


def test_the_sliders_re_rank_the_dynaboard_in_place(watched, served):
    page = watched.page
    watched.goto("/tasks/nli")
    page.evaluate("window.__same = 'the page as loaded'")
    assert shown(page) == expected(served, "exact-match=4,fairness=1,robustness=1")
    labels = page.locator('input[type="range"]').evaluate_all(
        "inputs => inputs.map(input => input.getAttribute('aria-label'))")
    assert labels == ["exact-match", "fairness", "robustness"]
    page.get_by_label("exact-match", exact=True).fill("0")
    page.get_by_label("robustness", exact=True).fill("5")
    wanted = expected(served, "exact-match=0,fairness=1,robustness=5")
    assert [row[0] for row in shown(page)] == [row[0] for row in wanted]  # at once
    until(lambda: shown(page) == wanted, "the intervals of the page made again")
    assert urlsplit(page.url).query == "weights=exact-match=0,fairness=1,robustness=5"
    assert page.locator("#dynaboard-table-dev .weights-text").text_content() == \
        "exact-match 0, fairness 1, robustness 5"
    assert page.evaluate("window.__same") == "the page as loaded"  # no reload
    watched.goto(urlsplit(page.url).path + "?" + urlsplit(page.url).query)  # a shared view
    assert shown(page) == wanted
    assert page.get_by_label("robustness", exact=True).input_value() == "5"


def test_the_keyboard_moves_a_slider(watched, served):
    page = watched.page
    watched.goto("/tasks/nli?weights=exact-match=1,fairness=0,robustness=0")
    assert shown(page) == expected(served, "exact-match=1,fairness=0,robustness=0")
    slider = page.get_by_label("fairness", exact=True)
    slider.focus()
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert slider.input_value() == "5"
    wanted = expected(served, "exact-match=1,fairness=5,robustness=0")
    until(lambda: shown(page) == wanted, "the re-weighed Dynaboard")
    output = page.locator("label.slider", has=slider).locator("output")
    assert output.text_content() == "5"


def test_the_filter_box_narrows_the_tables_and_the_chart(watched, served):
    page = watched.page
    watched.goto("/tasks/nli")
    box = page.get_by_label("Filter models and teams")
    assert box.is_visible()
    box.fill("lab-b")
    for selector in ("#table-dev tbody tr", "#dynaboard-table-dev tbody tr",
                     "#dataset-dev svg g.mark"):
        rows = page.locator(selector)
        visible = [rows.nth(number).is_visible() for number in range(rows.count())]
        assert visible.count(True) == 1, selector
    assert page.locator('#dynaboard-table-dev tr[data-dynascore-model="model-1"]').is_visible()
    box.fill("model-")
    assert page.locator("#dynaboard-table-dev tbody tr:visible").count() == 3
    box.fill("")
    assert page.locator("#table-dev tbody tr:visible").count() == 3
