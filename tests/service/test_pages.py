"""The leaderboard's pages over HTTP, on SQLite and PostgreSQL: they show the API's
figures (which are corpus-score's), sort and filter through the server when scripts are
off, escape every user string, carry a Content Security Policy that allows no inline
script, and their forms refuse bad input exactly as the API does (status and message),
storing nothing. The same pages in a real browser: test_pages_browser.py."""

from __future__ import annotations

import contextlib
import re
import threading
import time
import types
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import create_engine, func, select

from evalproto.api.report import format_report, report_from_stats
from evalproto.reports.leaderboard import rank_text
from evalproto.reports.report import decimals, fixed
from evalproto.service.boards import Boards
from evalproto.service.cache import Kept
from evalproto.service.database import database_url, open_engine
from evalproto.service.deltas import Deltas
from evalproto.service.pages import POLICY
from evalproto.service.schema import metadata
from evalproto.service.standings import Standings

from .boardpages import (
    HOSTILE_MODEL,
    HOSTILE_TAG,
    HOSTILE_TEAM,
    Board,
    board_cells,
    classed,
    jsonl_bytes,
    models_in_order,
    parse,
    serving_boards,
)
from .conftest import ADMIN, SERVED, dataset_rows, lines, until
from .conftest import served as served_on

MAX_UPLOAD = 200_000
PAGES = ["/", "/tasks/mt", "/tasks/mt?round=2", "/tasks/mt?sort=-m1", "/tasks/mt/models/lt22",
         "/tasks/mt/submit", "/tasks/mt/admin", "/tasks/xss", "/snapshots/1", "/tasks/nope"]


@pytest.fixture(scope="module", params=SERVED)
def served(request: Any, tmp_path_factory: Any) -> Iterator[Tuple[Any, Board]]:
    """A service (2 job workers, --max-upload 200000) with the board of boardpages and
    its hostile board, all scored."""
    server = served_on(request.param, request, tmp_path_factory.mktemp("pages"), "--jobs",
                       "2", "--max-upload", str(MAX_UPLOAD), jobs=2, max_upload=MAX_UPLOAD)
    with serving_boards(server) as served:
        yield served


def get(server: Any, path: str) -> httpx.Response:
    return server.request("GET", path, token=None)


def post_form(server: Any, path: str, fields: Dict[str, str],
              file: Optional[Tuple[str, bytes]] = None) -> httpx.Response:
    """A form as a browser posts it: multipart (the fields in the page's order, the
    token before the file), no Authorization header."""
    files = {"file": (file[0], file[1], "application/octet-stream")} if file else None
    return server.request("POST", path, token=None, data=fields, files=files,
                          follow_redirects=False, timeout=120)


def shown_error(response: httpx.Response) -> str:
    (error,) = parse(response.text).xpath(f"//*[{classed('error')}]")
    assert error.get("role") == "alert"
    return str(error.text_content())


def counts(url: str) -> Dict[str, int]:
    """How many rows each table holds, but the servers' heartbeats."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return {table.name: int(connection.execute(
                select(func.count()).select_from(table)).scalar_one())
                for table in metadata.sorted_tables if table.name != "servers"}
    finally:
        engine.dispose()


# -- every page ----------------------------------------------------------------------------

def test_every_page_has_the_policy_and_no_inline_script(served):
    server, _ = served
    for path in PAGES:
        response = get(server, path)
        assert response.status_code == (404 if "nope" in path else 200), path
        assert response.headers["content-type"].startswith("text/html")
        assert response.headers["content-security-policy"] == POLICY
        assert "unsafe" not in POLICY and "script-src 'self'" in POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert "set-cookie" not in response.headers
        document = parse(response.text)
        assert [script.get("src") for script in document.xpath("//script")] == [
            "/static/board.js"], path
        assert document.xpath("//*[@style]") == [] and document.xpath("//style") == []
        handlers = [(element.tag, name) for element in document.iter()
                    if isinstance(element.tag, str)
                    for name in element.attrib if name.lower().startswith("on")]
        assert handlers == [], path
        for link in document.xpath("//@href | //@src | //@action"):
            assert link.startswith(("/", "#")) and not link.startswith("//"), (path, link)
    for name, kind in (("board.js", "javascript"), ("board.css", "text/css"),
                       ("favicon.svg", "image/svg+xml")):
        response = get(server, f"/static/{name}")
        assert response.status_code == 200 and kind in response.headers["content-type"]


def test_errors_of_pages_are_pages_and_of_the_api_json(served):
    server, _ = served
    for path, status, message in (
            ("/tasks/nope", 404, "no task 'nope'"),
            ("/tasks/mt/models/nope", 404, "the task has no model 'nope'"),
            ("/tasks/Bad", 400, "task name 'Bad' is not valid"),
            ("/tasks/mt/datasets/nope/report", 404, "the task has no dataset 'nope'"),
            ("/nowhere", 404, "no such resource: /nowhere")):
        response = get(server, path)
        assert response.status_code == status, path
        assert response.headers["content-type"].startswith("text/html")
        assert message in shown_error(response)
        assert response.headers["x-request-id"] in response.text
    api = get(server, "/api/tasks/nope")
    assert api.status_code == 404 and api.json()["error"] == "no task 'nope'"


# -- what the pages show ----------------------------------------------------------------------

def test_the_task_page_shows_the_apis_figures(served):
    server, _ = served
    board = server.ok("GET", "/api/tasks/mt/leaderboard", None)
    text = get(server, "/tasks/mt").text
    cells = board_cells(text)
    keys = {metric["metric"]: f"m{number}" for number, metric in enumerate(board["metrics"])}
    assert board["datasets"] and all(section["entries"] for section in board["datasets"])
    for section in board["datasets"]:
        dataset = section["dataset"]
        entries = section["entries"]
        assert models_in_order(text, dataset) == list(dict.fromkeys(
            entry["model"] for entry in entries))
        for entry in entries:
            assert entry["status"] == "done"
            places = decimals([other["score"] for other in entries
                               if other["metric"] == entry["metric"]], 1)
            cell = cells[dataset, entry["model"], keys[entry["metric"]]]
            assert cell["value"] == repr(entry["score"])  # the API's float, whole
            assert cell["text"] == (f"{fixed(entry['score'], places, '')} ± "
                                    f"{fixed(entry['half_width'], places, '')}")
            if entry["metric"] == board["perf"]:
                rank = cells[dataset, entry["model"], "rank"]["text"]
                assert rank == rank_text(entry["rank"], "–")
                assert re.fullmatch(r"[0-9]+(–[0-9]+)?", rank)
            assert cells[dataset, entry["model"], "team"]["text"] == entry["team"]


def test_clusters_share_a_shade_and_a_rule_opens_each(served):
    server, _ = served
    board = server.ok("GET", "/api/tasks/mt/leaderboard", None, params={
        "dataset": "wmt22-de-en"})
    ranks = [entry["rank"] for entry in board["datasets"][0]["entries"]
             if entry["metric"] == "bleu"]
    rows = parse(get(server, "/tasks/mt").text).xpath(
        "//table[@id='table-wmt22-de-en']/tbody/tr")
    assert len(rows) == len(ranks) >= 4
    assert len({tuple(rank) for rank in ranks}) < len(ranks)  # a cluster of two or more
    for number, (row, rank) in enumerate(zip(rows, ranks)):
        first = number == 0 or ranks[number - 1] != rank
        assert ("cluster-start" in row.get("class").split()) == first
        shade = [name for name in row.get("class").split() if name in ("cluster-0",
                                                                        "cluster-1")]
        assert len(shade) == 1
        if not first:
            assert shade[0] in rows[number - 1].get("class").split()


def test_per_tag_scores_are_behind_a_disclosure(served):
    server, _ = served
    board = server.ok("GET", "/api/tasks/mt/leaderboard", None, params={
        "dataset": "wmt22-de-en"})
    document = parse(get(server, "/tasks/mt").text)
    (details,) = document.xpath("//details[@id='tags-wmt22-de-en']")
    assert details.get("open") is None
    assert details.xpath("./summary")[0].text_content() == "Scores by tag"
    tables = details.xpath(".//table")
    assert [table.xpath("./caption")[0].text_content() for table in tables] == [
        "BLEU by tag", "chrF2++ by tag"]
    for table, metric in zip(tables, ("bleu", "chrf --word-order 2")):
        tags = [head.text_content() for head in table.xpath("./thead//th")][1:]
        for row in table.xpath("./tbody/tr"):
            model = row.xpath("./th")[0].text_content()
            (entry,) = [entry for entry in board["datasets"][0]["entries"]
                        if entry["model"] == model and entry["metric"] == metric]
            assert tags == list(entry["tags"])
            assert [cell.get("data-value") for cell in row.xpath("./td")] == [
                repr(entry["tags"][tag]) for tag in tags]


def test_headings_sort_through_the_server_when_scripts_are_off(served):
    server, _ = served
    board = server.ok("GET", "/api/tasks/mt/leaderboard", None, params={
        "dataset": "wmt22-de-en"})
    entries = board["datasets"][0]["entries"]
    bleu = {entry["model"]: entry["score"] for entry in entries if entry["metric"] == "bleu"}
    ranked = list(bleu)
    for sort, expected in (("rank", ranked), ("-rank", ranked[::-1]),
                           ("model", sorted(bleu)), ("-model", sorted(bleu, reverse=True)),
                           ("m0", sorted(bleu, key=lambda model: -bleu[model])),
                           ("-m0", sorted(bleu, key=lambda model: bleu[model]))):
        text = get(server, f"/tasks/mt?sort={quote(sort)}").text
        assert models_in_order(text, "wmt22-de-en") == expected, sort
        key = sort.lstrip("-")
        (head,) = parse(text).xpath(f"//table[@id='table-wmt22-de-en']//th[.//button["
                                    f"@data-key='{key}']]")
        natural = "descending" if key == "m0" else "ascending"
        other = {"ascending": "descending", "descending": "ascending"}[natural]
        assert head.get("aria-sort") == (other if sort.startswith("-") else natural)
        button = head.xpath(".//button")[0]
        assert button.get("type") == "submit" and button.get("name") == "sort"
        assert button.get("value") == (key if sort.startswith("-") else f"-{key}")
        assert button.get("form") == "sort-wmt22-de-en"
    assert models_in_order(get(server, "/tasks/mt?sort=nonsense").text,
                           "wmt22-de-en") == ranked


def test_the_round_filter(served):
    server, _ = served
    document = parse(get(server, "/tasks/mt").text)
    assert document.xpath("//select[@id='round']/option/@value") == ["", "1", "2"]
    assert document.xpath("//label[@for='round']")[0].text_content() == "Round"
    for query, shown in (("?round=1", ["wmt22-de-en"]), ("?round=2", ["wmt22-en-de"]),
                         ("", ["wmt22-de-en", "wmt22-en-de"]), ("?round=7", []),
                         ("?round=x", ["wmt22-de-en", "wmt22-en-de"])):
        text = get(server, f"/tasks/mt{query}").text
        assert [table.get("id") for table in parse(text).xpath("//table[@class='board']")] == [
            f"table-{name}" for name in shown], query


def test_a_task_of_one_round_has_no_round_filter_and_directions_are_marked(served):
    """A filter with one round to choose filters nothing; a metric where lower is better
    (TER) is marked so on every page that shows it."""
    server, board = served
    server.ok("POST", "/api/tasks", json={"name": "one-round", "metrics": [
        {"spec": "ter"}, {"spec": "bleu"}]})
    server.ok("POST", "/api/tasks/one-round/datasets/ds", params={"round": 1},
              content=board.datasets["wmt22-de-en"])
    server.ok("POST", "/api/tasks/one-round/datasets/ds/models/lt22", board.teams["lab-a"],
              content=board.predictions["wmt22-de-en", "lt22"])
    server.wait("one-round")
    document = parse(get(server, "/tasks/one-round").text)
    assert document.xpath("//select[@id='round']") == []
    marks = {button.get("data-key"): (button.get("title"), button.xpath(
        f"./span[{classed('better')}]")[0].text_content())
        for button in document.xpath("//table[@id='table-ds']/thead//button[@data-better]")}
    assert marks == {"m0": ("lower is better", "↓"), "m1": ("higher is better", "↑")}
    model = parse(get(server, "/tasks/one-round/models/lt22").text)
    heads = [" ".join(head.text_content().split()) for head in model.xpath(
        f"//table[{classed('scores')}]/tbody/tr/th")]
    assert heads == ["TER ↓ (lower is better) (ranks)", "BLEU ↑ (higher is better)"]
    index = parse(get(server, "/").text)
    (row,) = [row for row in index.xpath("//table/tbody/tr")
              if row.xpath("./th")[0].text_content() == "one-round"]
    assert row.xpath("./td")[1].text_content() == "TER ↓ (ranks), BLEU ↑"


def test_the_index_lists_tasks_with_datasets_metrics_models_and_last_submission(served):
    server, _ = served
    rows = parse(get(server, "/").text).xpath("//table/tbody/tr")
    found = {row.xpath("./th")[0].text_content(): [cell.text_content() for cell in
                                                     row.xpath("./td")] for row in rows}
    assert list(found)[:2] == ["mt", "xss"]  # in the order they were added
    datasets, metrics, models, last = found["mt"]
    assert datasets == "wmt22-de-en (round 1), wmt22-en-de (round 2)"
    assert metrics == "BLEU ↑ (ranks), chrF2++ ↑"  # higher is better, marked
    names = {entry["model"] for entry in server.leaderboard("mt")}
    assert models == str(len(names)) and len(names) >= 6
    submitted = [record["submitted"] for model in names
                 for record in server.ok("GET", f"/api/tasks/mt/models/{model}",
                                         None)["submissions"]]
    assert last == max(submitted).replace("T", " ")
    assert found["xss"][2] == "2"


def test_the_model_page(served):
    server, _ = served
    board = server.ok("GET", "/api/tasks/mt/leaderboard", None)
    history = server.ok("GET", "/api/tasks/mt/models/lt22", None)
    document = parse(get(server, "/tasks/mt/models/lt22").text)
    assert document.xpath("//h1")[0].text_content() == "lt22"
    for section in board["datasets"]:
        mine = [entry for entry in section["entries"] if entry["model"] == "lt22"]
        where = f"//section[@id='dataset-{section['dataset']}']"
        if not mine:
            assert document.xpath(where) == []
            continue
        scores = document.xpath(f"{where}//table[{classed('scores')}]/tbody/tr/td[@data-value]")
        assert [cell.get("data-value") for cell in scores] == [repr(e["score"]) for e in mine]
        tags = document.xpath(f"{where}//table[{classed('tags')}]/tbody/tr")
        assert [row.xpath("./th")[0].text_content() for row in tags] == list(mine[0]["tags"])
        for row in tags:
            tag = row.xpath("./th")[0].text_content()
            assert [cell.get("data-value") for cell in row.xpath("./td")] == [
                repr(entry["tags"][tag]) for entry in mine]
        ranks = document.xpath(f"{where}//table[{classed('scores')}]/tbody/tr/td"
                               f"[starts-with(@data-key, 'rank-')]")
        # every metric's own rank, as the API gives it (was empty but for the perf metric)
        assert [cell.text_content() for cell in ranks] == [
            rank_text(entry["rank"], "–") for entry in mine]
        (link,) = document.xpath(f"{where}//a[@download]")
        assert link.get("href") == f"/api/tasks/mt/datasets/{section['dataset']}/stats/lt22"
        stats = get(server, link.get("href"))
        assert stats.status_code == 200 and stats.text.startswith("#evalproto-stats")
    rows = document.xpath("//section[@id='history']//tbody/tr")
    assert [int(row.get("data-submission")) for row in rows] == [
        record["submission"] for record in history["submissions"]]
    for row, record in zip(rows, history["submissions"]):
        assert [cell.get("data-value") for cell in row.xpath("./td[@data-value]")] == [
            repr(score["score"]) for score in record["scores"]]


@pytest.mark.parametrize("served", ["sqlite"], indirect=True)  # figures, not storage
def test_the_report_page_is_evalprotos_report_of_the_export(served, tmp_path):
    """The page is `evalproto report --stats` on the export's stats files, in the
    leaderboard's order, with the dataset's tags as groups: byte for byte."""
    server, board = served
    order = list(dict.fromkeys(entry["model"] for entry in server.leaderboard(
        "mt", "wmt22-en-de")))
    paths = []
    for model in order:
        path = tmp_path / f"{model}.stats"
        path.write_text(get(server, f"/api/tasks/mt/datasets/wmt22-en-de/stats/{model}").text)
        paths.append(str(path))
    groups = tmp_path / "groups"
    groups.write_text("".join(",".join(row["tags"]) + "\n" for row in dataset_rows("en-de")))
    expected = format_report(report_from_stats(paths, groups=str(groups)), "html")
    path = "/tasks/mt/datasets/wmt22-en-de/report"
    first = get(server, path)
    if first.status_code == 202:  # being made: a page that says so, and looks again
        document = parse(first.text)
        assert document.xpath("//meta[@http-equiv='refresh']/@content") == ["2"]
        assert "being made" in document.xpath(f"//*[{classed('notice')}]")[0].text_content()
        assert "/tasks/mt#dataset-wmt22-en-de" in document.xpath("//main//a/@href")
    else:
        assert first.status_code == 200
    response = until(lambda: (lambda found: found if found.status_code == 200 else None)(
        get(server, path)), "the report to be made")
    (back,) = parse(response.text).xpath("//body/nav[1]/a")
    assert back.get("href") == "/tasks/mt#dataset-wmt22-en-de"  # a way back to the board
    assert back.text_content() == "← the leaderboard of mt"
    shown = re.sub(r'<nav aria-label="Where you are"[^>]*>.*?</nav>\n', "", response.text,
                   count=1)
    assert shown == expected
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"',
                       expected).group(1)
    assert response.headers["content-security-policy"].startswith(policy + ";")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_hostile_names_and_tags_are_text(served):
    server, _ = served
    for path in ("/", "/tasks/xss", "/snapshots/1"):
        response = get(server, path)
        for hostile in (HOSTILE_MODEL, HOSTILE_TAG, HOSTILE_TEAM):
            assert hostile not in response.text
        document = parse(response.text)
        assert document.xpath("//img | //b | //script[not(@src)]") == [], path
        if path == "/":
            continue
        models = document.xpath("//table[@id='table-tagged']/tbody/tr/th")
        assert HOSTILE_MODEL in [model.text_content() for model in models]
        assert HOSTILE_TEAM in document.xpath("//table[@id='table-tagged']/tbody/tr/td["
                                              "@data-key='team']")[0].text_content()
        assert HOSTILE_TAG in [head.text_content() for head in document.xpath(
            "//details//thead//th")]
    document = parse(get(server, "/tasks/xss").text)
    (link,) = document.xpath("//table[@id='table-tagged']/tbody/tr/th/a[starts-with("
                             "@href, '/tasks/xss/models/%3C')]")
    assert link.get("href") == f"/tasks/xss/models/{quote(HOSTILE_MODEL, safe='')}"
    refused = get(server, link.get("href"))  # such a name is not valid: said as text
    assert refused.status_code == 400 and HOSTILE_MODEL not in refused.text
    assert shown_error(refused).startswith(f"model name {HOSTILE_MODEL!r} is not valid")


def test_pages_do_not_wait_for_standings_and_show_new_scores_as_ranking(served):
    """Boards.leaderboard(wait=False), as the pages read it: a set of evaluations not
    ranked yet shows the standings last computed for the models unchanged, the others
    "ranking" with their stored score, in score order, until the background computation
    brings the API's figures."""
    server, board = served
    engine = open_engine(database_url(server.url))
    try:
        standings = Standings(engine)  # nothing computed yet, no workers
        fresh = Boards(engine, standings, Deltas(engine, standings))
        first = fresh.leaderboard("mt", "wmt22-de-en", wait=False)["datasets"][0]["entries"]
        api = server.leaderboard("mt", "wmt22-de-en")
        assert {entry["status"] for entry in first} == {"ranking"}
        assert {(e["model"], e["metric"]): e["score"] for e in first} == {
            (e["model"], e["metric"]): e["score"] for e in api}
        assert all(e["rank"] is None and e["half_width"] is None for e in first)
        bleu = [e["score"] for e in first if e["metric"] == "bleu"]
        assert bleu == sorted(bleu, reverse=True)
        until(lambda: fresh.leaderboard("mt", "wmt22-de-en", wait=False) == server.ok(
            "GET", "/api/tasks/mt/leaderboard", None, params={"dataset": "wmt22-de-en"}),
            "the background computation to give the API's leaderboard")

        data = jsonl_bytes([{"id": f"s{number}", "pred": hyp} for number, hyp in
                            enumerate(lines("de-en.ref.B.en")[:75] +
                                      lines("de-en.hyp.LT22.en")[75:], 1)])
        server.ok("POST", "/api/tasks/mt/datasets/wmt22-de-en/models/half-human",
                  board.teams["lab-b"], content=data)
        server.wait("mt")
        before = {e["model"]: e for e in first if e["metric"] == "bleu"}
        ranked_before = {e["model"]: e for e in api if e["metric"] == "bleu"}
        shown = [e for e in fresh.leaderboard("mt", "wmt22-de-en", wait=False)[
            "datasets"][0]["entries"] if e["metric"] == "bleu"]
        new = next(e for e in shown if e["model"] == "half-human")
        assert new["status"] == "ranking" and new["rank"] is None
        for entry in shown:
            if entry["model"] in before:  # the standings computed before, kept meanwhile
                assert entry["status"] == "done"
                assert entry["rank"] == ranked_before[entry["model"]]["rank"]
        assert [e["score"] for e in shown] == sorted((e["score"] for e in shown),
                                                     reverse=True)
        until(lambda: fresh.leaderboard("mt", "wmt22-de-en", wait=False) == server.ok(
            "GET", "/api/tasks/mt/leaderboard", None, params={"dataset": "wmt22-de-en"}),
            "the new model to be ranked")
    finally:
        engine.dispose()


def test_kept_pages_are_made_once_per_version_and_readers_do_not_pile_up():
    kept = Kept()
    made: List[str] = []
    assert kept.get(("page",), (1,), lambda: made.append("v1") or "page 1") == "page 1"
    assert kept.get(("page",), (1,), lambda: made.append("again") or "no") == "page 1"
    started, finish = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        assert finish.wait(30)
        made.append("v2")
        return "page 2"

    maker = threading.Thread(target=lambda: kept.get(("page",), (2,), slow))
    maker.start()
    assert started.wait(30)
    assert kept.get(("page",), (2,), lambda: "no", earlier=True) == "page 1"  # meanwhile
    waiter: List[str] = []
    waiting = threading.Thread(target=lambda: waiter.append(kept.get(("page",), (2,),
                                                                     lambda: "no")))
    waiting.start()
    finish.set()
    maker.join(30)
    waiting.join(30)
    assert waiter == ["page 2"] and made == ["v1", "v2"]
    assert kept.get(("page",), (3,), lambda: "page 3") == "page 3"


def test_under_load_a_page_a_moment_old_is_taken_and_never_older(monkeypatch):
    from evalproto.service import cache

    kept = Kept()
    assert kept.get(("page",), (1,), lambda: "page 1") == "page 1"
    # one reader: the present, whatever the page's age
    assert kept.get(("page",), (2,), lambda: "page 2", earlier=True) == "page 2"
    with contextlib.ExitStack() as readers:
        for _ in range(cache.BUSY + 1):
            readers.enter_context(kept.serving())
        assert kept.get(("page",), (3,), lambda: "page 3", earlier=True) == "page 2"
        assert kept.get(("page",), (3,), lambda: "page 3") == "page 3"  # not `earlier`
        made_at = time.monotonic()
        monkeypatch.setattr(cache.time, "monotonic", lambda: made_at + cache.GRACE + 0.01)
        assert kept.get(("page",), (4,), lambda: "page 4", earlier=True) == "page 4"
    monkeypatch.undo()
    assert kept.get(("page",), (5,), lambda: "page 5", earlier=True) == "page 5"


def test_under_load_readers_that_come_during_a_versions_read_take_that_read(monkeypatch):
    from evalproto.service import cache

    now = [1000.0]
    monkeypatch.setattr(cache, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    waiting, started, finish = threading.Event(), threading.Event(), threading.Event()

    class Watched(threading.Event):
        """The cache's events, which say when a reader waits on one."""

        def wait(self, timeout=None):
            waiting.set()
            return super().wait(timeout)

    monkeypatch.setattr(cache, "threading", types.SimpleNamespace(Lock=threading.Lock,
                                                                  Event=Watched))
    kept, reads = Kept(), []
    assert kept.recent(("version",), lambda: reads.append(1) or 1) == 1
    assert kept.recent(("version",), lambda: reads.append(2) or 2) == 2  # one reader: read

    def slow(value):
        def read():
            started.set()
            assert finish.wait(30)
            now[0] += 2 * cache.RECENT  # a read slower than RECENT: still taken
            reads.append(value)
            if value == "fails":
                raise RuntimeError("the database went away")
            return value
        return read

    def alongside(make):
        """The first reader's read (`make`) and, once it waits for it, a second's."""
        for event in (waiting, started, finish):
            event.clear()
        first = threading.Thread(target=lambda: with_suppressed(kept.recent, make),
                                 daemon=True)
        first.start()
        assert started.wait(30)
        joined: List[Any] = []
        second = threading.Thread(target=lambda: joined.append(kept.recent(
            ("version",), lambda: reads.append("second") or "second")), daemon=True)
        second.start()
        assert waiting.wait(30)  # the second reader waits for the first's read
        finish.set()
        first.join(30)
        second.join(30)
        return joined

    def with_suppressed(recent, make):
        with contextlib.suppress(RuntimeError):
            recent(("version",), make)

    with contextlib.ExitStack() as readers:
        for _ in range(cache.BUSY + 1):
            readers.enter_context(kept.serving())
        assert kept.recent(("version",), lambda: reads.append(0) or 0) == 2  # recent enough
        now[0] += cache.RECENT + 0.01
        assert alongside(slow(3)) == [3] and reads == [1, 2, 3]
        now[0] += cache.RECENT + 0.01
        assert alongside(slow("fails")) == ["second"]  # its read failed: it read itself
        assert reads == [1, 2, 3, "fails", "second"]
    now[0] += 0.01
    assert kept.recent(("version",), lambda: reads.append(5) or 5) == 5  # not under load


# -- forms -------------------------------------------------------------------------------------

def test_a_submission_through_the_form(served):
    server, board = served
    before = counts(server.url)
    data = jsonl_bytes([{"id": f"s{number}", "pred": hyp} for number, hyp in
                        enumerate(lines("de-en.hyp.LT22.en")[::-1], 1)])
    response = post_form(server, "/tasks/mt/submit", {
        "dataset": "wmt22-de-en", "model": "form-model", "token": board.teams["lab-a"]},
        ("reversed.jsonl", data))
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    found = re.fullmatch(r"/tasks/mt\?submitted=([0-9]+)#dataset-wmt22-de-en", location)
    assert found
    submission = server.ok("GET", f"/api/submissions/{found.group(1)}", None)
    assert (submission["model"], submission["team"]) == ("form-model", "lab-a")
    assert counts(server.url)["submissions"] == before["submissions"] + 1
    page = get(server, location)
    (notice,) = parse(page.text).xpath(f"//*[{classed('notice')}]")
    assert f"Submission {found.group(1)} received: form-model (lab-a) on wmt22-de-en" in (
        " ".join(notice.text_content().split()))
    cells = board_cells(page.text)
    assert {cells["wmt22-de-en", "form-model", key]["status"] for key in ("m0", "m1")} <= {
        "queued", "running", "ranking", "done"}
    server.wait("mt")
    entries = server.leaderboard("mt", "wmt22-de-en")  # the API waits for the standings
    cells = board_cells(get(server, "/tasks/mt").text)
    for entry in entries:
        if entry["model"] == "form-model":
            assert cells["wmt22-de-en", "form-model", "rank"]["text"] == rank_text(
                entry["rank"], "–")
            key = "m0" if entry["metric"] == "bleu" else "m1"
            assert cells["wmt22-de-en", "form-model", key]["value"] == repr(entry["score"])


def submit_cases(board: Board) -> List[Tuple[str, Dict[str, str], bytes, int, str]]:
    """(what, fields, file, status, part of the message) of refused submissions."""
    good = board.predictions["wmt22-de-en", "lt22"]
    rows = good.decode().splitlines()
    team = board.teams["lab-a"]
    fields = {"dataset": "wmt22-de-en", "model": "refused-model", "token": team}
    return [
        ("no token", dict(fields, token=""), good, 401, "needs the team's token"),
        ("a token that is no one's", dict(fields, token="x" * 40), good, 401, "no team's"),
        ("the admin token", dict(fields, token=ADMIN), good, 403, "does not submit"),
        ("another team's model", dict(fields, model="lan-bridge"), good, 403,
         "belongs to team 'lab-b'"),
        ("a bad model name", dict(fields, model="Bad Model"), good, 400,
         "model name 'Bad Model' is not valid"),
        ("an unknown dataset", dict(fields, dataset="nope"), good, 404,
         "no dataset 'nope'"),
        ("a missing id", fields, "\n".join(rows[1:]).encode(), 400,
         "no prediction for id 's2'"),
        ("a line that is not JSON", fields, "\n".join([rows[0], "{oops", *rows[2:]]).encode(),
         400, "line 2"),
        ("a pred that is not a string", fields,
         "\n".join([rows[0].replace('"pred": ', '"pred": ["a"], "x": '), *rows[1:]]).encode(),
         400, "line 1"),
        ("an unknown, hostile id", fields, "\n".join(
            [*rows, '{"id": "<script>window.__pwned = 1</script>", "pred": "x"}']).encode(),
         400, "<script>window.__pwned = 1</script>"),
        ("an empty file", fields, b"", 400, "no prediction for id 's1' (and 149 more)"),
        ("a file beyond --max-upload", fields, b"x" * (MAX_UPLOAD + 1), 413, "--max-upload"),
    ]


def test_the_submit_form_refuses_as_the_api_does_and_stores_nothing(served):
    server, board = served
    server.wait("mt")
    before = counts(server.url)
    for what, fields, data, status, part in submit_cases(board):
        page = post_form(server, "/tasks/mt/submit", fields, ("preds.jsonl", data))
        api = server.request(
            "POST", f"/api/tasks/mt/datasets/{fields['dataset']}/models/{fields['model']}",
            token=fields["token"] or None, params={"filename": "preds.jsonl"}, content=data)
        assert (page.status_code, api.status_code) == (status, status), what
        message = api.json()["error"]
        assert part in message, what
        assert shown_error(page) == message, what  # beside the form, the API's words
        assert "<script>window" not in page.text
        document = parse(page.text)
        assert document.xpath("//form/@aria-describedby") == ["submit-error"]
        if status != 413:  # a body too large is not read, so neither are its fields
            assert document.xpath("//input[@id='model']/@value") == [fields["model"]]
        assert document.xpath("//input[@id='token']/@value") == []  # never sent back
        assert counts(server.url) == before, what
    page = post_form(server, "/tasks/mt/submit", {"dataset": "wmt22-de-en", "model": "m",
                                                  "token": board.teams["lab-a"]})
    assert page.status_code == 400
    assert shown_error(page) == "file: choose the predictions file to upload"
    assert counts(server.url) == before


def test_the_admin_forms_add_and_refuse_as_the_api_does(served):
    server, board = served
    server.ok("POST", "/api/tasks", json={"name": "admin-forms", "metrics": [
        {"spec": "bleu"}]})
    data = jsonl_bytes(dataset_rows()[:20])
    before = counts(server.url)
    for what, fields, file, status, part in (
            ("a team's token", {"dataset": "ds", "token": board.teams["lab-a"]}, data, 403,
             "needs the admin token"),
            ("no token", {"dataset": "ds", "token": ""}, data, 401, "needs the admin token"),
            ("a bad name", {"dataset": "DS!", "token": ADMIN}, data, 400,
             "dataset name 'DS!' is not valid"),
            ("a bad line", {"dataset": "ds", "token": ADMIN},
             data + b'{"uid": "x"}\n', 400, "line 21")):
        page = post_form(server, "/tasks/admin-forms/admin/datasets", fields,
                         ("ds.jsonl", file))
        api = server.request("POST", f"/api/tasks/admin-forms/datasets/{fields['dataset']}",
                             token=fields["token"] or None,
                             params={"filename": "ds.jsonl"}, content=file)
        assert (page.status_code, api.status_code) == (status, status), what
        assert part in api.json()["error"], what
        assert shown_error(page) == api.json()["error"], what
        assert parse(page.text).xpath("//input[@id='dataset-name']/@value") == [
            fields["dataset"]]
        assert counts(server.url) == before, what
    page = post_form(server, "/tasks/admin-forms/admin/datasets",
                     {"dataset": "ds", "round": "x", "token": ADMIN}, ("ds.jsonl", data))
    assert page.status_code == 400 and shown_error(page).startswith("round: 'x' is not")
    assert counts(server.url) == before

    added = post_form(server, "/tasks/admin-forms/admin/datasets",
                      {"dataset": "ds", "round": "3", "token": ADMIN}, ("ds.jsonl", data))
    assert added.status_code == 303
    assert added.headers["location"] == "/tasks/admin-forms#dataset-ds"
    described = server.ok("GET", "/api/tasks/admin-forms/datasets/ds", None)
    assert (described["round"], described["examples"]) == (3, 20)
    again = post_form(server, "/tasks/admin-forms/admin/datasets",
                      {"dataset": "ds", "token": ADMIN}, ("ds.jsonl", data))
    assert again.status_code == 409 and "already" in shown_error(again)

    before = counts(server.url)
    for what, fields, status, part in (
            ("a team's token", {"spec": "chrf", "token": board.teams["lab-a"]}, 403,
             "needs the admin token"),
            ("an unknown metric", {"spec": "nosuch", "token": ADMIN}, 400, "nosuch"),
            ("a metric it has", {"spec": "bleu", "token": ADMIN}, 409, "already")):
        page = post_form(server, "/tasks/admin-forms/admin/metrics", fields)
        api = server.request("POST", "/api/tasks/admin-forms/metrics", token=fields["token"],
                             json={"spec": fields["spec"]})
        assert (page.status_code, api.status_code) == (status, status), what
        assert part in api.json()["error"] and shown_error(page) == api.json()["error"], what
        assert counts(server.url) == before, what
    added = post_form(server, "/tasks/admin-forms/admin/metrics",
                      {"spec": "chrf", "kind": "in-process", "token": ADMIN})
    assert added.status_code == 303 and added.headers["location"] == "/tasks/admin-forms"
    assert [metric["metric"] for metric in server.ok(
        "GET", "/api/tasks/admin-forms", None)["metrics"]] == ["bleu", "chrf"]
    refused = post_form(server, "/tasks/admin-forms/admin/metrics",
                        {"spec": "chrf", "kind": "shell", "token": ADMIN})
    assert refused.status_code == 400 and shown_error(refused).startswith("kind: 'shell'")


def test_a_forms_token_is_checked_before_its_file_is_read(served):
    """A form's token comes before its file, and is checked as it arrives: without the
    right one, the form is refused for the token (401, 403) before its file is read (a
    file whose part never ends would be refused as no form, 400, once read); a file sent
    before the token is refused unread."""
    server, board = served
    before = counts(server.url)
    boundary = "b0undary"

    def form(*parts: Tuple[str, Optional[str], bytes], end: bool = True) -> bytes:
        body = b""
        for name, filename, value in parts:
            named = f'; filename="{filename}"' if filename else ""
            body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\""
                     f"{named}\r\n\r\n").encode() + value + b"\r\n"
        return body + (f"--{boundary}--\r\n".encode() if end else b"")

    def post(path: str, body: bytes) -> httpx.Response:
        return server.request("POST", path, token=None, content=body, headers={
            "content-type": f"multipart/form-data; boundary={boundary}"})

    unending = form(("dataset", None, b"wmt22-de-en"), ("model", None, b"m"),
                    ("token", None, b"TOKEN"), end=False) + (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
        f"filename=\"p.jsonl\"\r\n\r\n").encode() + b'{"id": "s1"'
    assert post("/tasks/mt/submit", unending.replace(
        b"TOKEN", board.teams["lab-a"].encode())).status_code == 400  # read: no form
    for token, status, said in ((b"", 401, "needs the team's token"),
                                (b"x" * 40, 401, "no team's"),
                                (ADMIN.encode(), 403, "does not submit")):
        page = post("/tasks/mt/submit", unending.replace(b"TOKEN", token))
        assert (page.status_code, said in shown_error(page)) == (status, True), token
    page = post("/tasks/mt/admin/datasets", unending.replace(b"TOKEN", b"not-the-admin's"))
    assert page.status_code == 403 and "needs the admin token" in shown_error(page)
    page = post("/tasks/mt/submit", form(
        ("file", "p.jsonl", board.predictions["wmt22-de-en", "lt22"]),
        ("token", None, board.teams["lab-a"].encode())))
    assert page.status_code == 400
    assert shown_error(page) == "the form's token must come before its file"
    assert counts(server.url) == before


def test_a_form_that_is_not_one_is_refused_in_words(served):
    server, _ = served
    response = server.request("POST", "/tasks/mt/submit", token=None, timeout=60,
                              headers={"content-type": "multipart/form-data; boundary=x"},
                              content=b"--x\r\nContent-Disposition: form-data; "
                                      b"name=\"a\"\r\n\r\n")
    assert response.status_code == 400 and response.headers["content-type"].startswith(
        "text/html")
    until(lambda: "POST /tasks/mt/submit -> 400" in server.text(), "the refusal's line in the log")
    assert "Traceback" not in server.text()


def test_the_templates_and_static_files_ship_with_the_package():
    """setup.cfg's package_data takes every file the pages need into a wheel."""
    import configparser
    from fnmatch import fnmatch

    config = configparser.ConfigParser()
    config.read(Path(__file__).parent.parent.parent / "setup.cfg")
    patterns = [pattern.strip() for pattern in
                config["options.package_data"]["evalproto.service"].split(",")]
    root = Path(__file__).parent.parent.parent / "evalproto" / "service"
    files = [path.relative_to(root).as_posix() for folder in ("templates", "static")
             for path in (root / folder).iterdir()]
    assert len(files) >= 10
    assert [name for name in files if not any(fnmatch(name, p) for p in patterns)] == []
