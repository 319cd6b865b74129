"""What the pages' tests share: a board to look at (real WMT22 excerpts, two datasets in
two rounds, two teams, tags), a board of hostile names that the API would refuse (put
straight into the database, as a bug or an old version might have), and reading a
page's HTML."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import lxml.html
from sqlalchemy import create_engine

from evalproto.service import auth, store
from evalproto.service.database import writing

from .conftest import dataset_rows, prediction_rows, systems

HOSTILE_MODEL = "<img src=x onerror=alert(1)>"
HOSTILE_TAG = "</script><script>window.__pwned = 1</script>"
HOSTILE_TEAM = '<b onmouseover="window.__pwned = 2">team</b>'


def jsonl_bytes(rows: List[Dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


@dataclass
class Board:
    """A board made through the API: task `mt` ranked by BLEU, with chrF2++ too."""

    teams: Dict[str, str]  # team -> token
    datasets: Dict[str, bytes]
    predictions: Dict[Tuple[str, str], bytes]  # (dataset, model) -> predictions


def make_board(server: Any) -> Board:
    """Two datasets (WMT22 de-en in round 1, en-de in round 2), four models on the first
    and two on the second, from two teams; scored when this returns."""
    teams = {name: server.ok("POST", "/api/teams", json={"name": name})["token"]
             for name in ("lab-a", "lab-b")}
    server.ok("POST", "/api/tasks", json={"name": "mt", "perf": "bleu", "metrics": [
        {"spec": "bleu"}, {"spec": "chrf --word-order 2"}]})
    datasets = {"wmt22-de-en": jsonl_bytes(dataset_rows("de-en")),
                "wmt22-en-de": jsonl_bytes(dataset_rows("en-de"))}
    for number, (name, data) in enumerate(datasets.items(), 1):
        server.ok("POST", f"/api/tasks/mt/datasets/{name}", params={"round": number},
                  content=data)
    owners = {"lt22": "lab-a", "mixed": "lab-a", "lan-bridge": "lab-b", "human-b": "lab-b",
              "online-a": "lab-a", "jdexplore": "lab-b"}
    predictions = {}
    for dataset, pair in (("wmt22-de-en", "de-en"), ("wmt22-en-de", "en-de")):
        for model, hyps in systems(pair).items():
            if model == "mixed" and pair == "en-de":
                continue
            data = jsonl_bytes(prediction_rows(hyps))
            predictions[dataset, model] = data
            server.ok("POST", f"/api/tasks/mt/datasets/{dataset}/models/{model}",
                      teams[owners[model]], content=data)
    server.wait("mt")
    return Board(teams, datasets, predictions)


def make_hostile_board(server: Any) -> None:
    """Task `xss`: a tag that closes a script, a team and a model whose names are
    markup. The API refuses such names, so they go straight into the database; the
    pages (the task's, its snapshot's) must show them as text all the same."""
    server.ok("POST", "/api/tasks", json={"name": "xss", "metrics": [{"spec": "bleu"}]})
    rows = dataset_rows()
    for row in rows[:40]:
        row["tags"] = [HOSTILE_TAG, *row["tags"]]
    server.ok("POST", "/api/tasks/xss/datasets/tagged", content=jsonl_bytes(rows))
    token = auth.new_token()
    engine = create_engine(server.url)
    try:
        with writing(engine) as connection:
            store.add_team(connection, HOSTILE_TEAM, auth.token_hash(token))
            team = store.team_by_token(connection, auth.token_hash(token))
            task = store.task(connection, "xss")
            dataset = store.dataset(connection, task.id, "tagged")
            for model, hyps in list(systems().items())[:2]:
                name = HOSTILE_MODEL if model == "lt22" else model
                store.submit(connection, task.id, team.id, name, dataset.id,
                             jsonl_bytes(prediction_rows(hyps)))
    finally:
        engine.dispose()
    server.request("GET", "/api", None)  # nothing to wake the jobs with: they are polled
    server.wait("xss")
    server.ok("POST", "/api/tasks/xss/snapshots")  # snapshot 1, whose page shows them too


# -- reading pages ---------------------------------------------------------------------

@contextmanager
def serving_boards(server: Any) -> Iterator[Tuple[Any, Board]]:
    """The server started, with the board of make_board and the hostile one; stopped
    (and checked to stop cleanly) at the end."""
    server.start()
    try:
        board = make_board(server)
        make_hostile_board(server)
        yield server, board
    finally:
        assert server.stop() == 0, server.text()


def parse(text: str) -> Any:
    return lxml.html.document_fromstring(text)


def classed(name: str) -> str:
    """An XPath test for an element of this class."""
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


def board_cells(text: str) -> Dict[Tuple[str, str, str], Dict[str, Optional[str]]]:
    """{(dataset, model, column key): {"value", "text", "status"}} of a task's page."""
    found = {}
    for table in parse(text).xpath(f"//table[{classed('board')}]"):
        dataset = table.get("id").removeprefix("table-")
        keys = table.xpath(".//thead//button/@data-key")
        for row in table.xpath("./tbody/tr"):
            model = row.get("data-model")
            for cell in row.xpath("./*[@data-key]"):
                assert cell.get("data-key") in keys
                found[dataset, model, cell.get("data-key")] = {
                    "value": cell.get("data-value"), "status": cell.get("data-status"),
                    "text": cell.text_content().strip()}
    return found


def models_in_order(text: str, dataset: str) -> List[str]:
    return [str(model) for model in
            parse(text).xpath(f"//table[@id='table-{dataset}']/tbody/tr/@data-model")]
