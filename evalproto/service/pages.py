"""The leaderboard's pages for people, served beside the JSON API: the tasks (`/`), a
task's leaderboards (`/tasks/TASK`), a model's page, a dataset's full report, and the
forms that submit predictions and add datasets and metrics.

Pages are made on the server from the API's own figures (Boards, actions), by Jinja2
templates that escape every value, so they work with scripts off. One small script of
our own (static/board.js) sorts tables in place and updates a task's page when its jobs
change, polling the JSON API. Every page carries a Content Security Policy that allows
only this origin's script and style sheet (no inline script, no handler attribute).
Forms that write take the token as a field: there is no cookie, so no other site can
act for a user. A refusal is the API's, with its message, shown beside the form.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.staticfiles import StaticFiles

from evalproto.base.version import __version__
from evalproto.reports.leaderboard import rank_text
from evalproto.reports.report import decimals, fixed
from evalproto.service import actions, store
from evalproto.service.boards import RANKING
from evalproto.service.context import Service
from evalproto.service.errors import Invalid, NotFound, Refused, log_refusal
from evalproto.service.names import MAX_NUMBER, check_name, whole_number
from evalproto.sources.specs import MetricSpec

HERE = Path(__file__).parent
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
          "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
"""Only this origin's script, style sheet and JSON; forms post only here."""
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}
KEPT_PAGES = 64
_SORT = re.compile(r"-?(rank|model|team|m[0-9]{1,3})")
"""The sorts a table's headings ask for (see Sorting)."""
FORM_LIMITS = {"max_files": 1, "max_fields": 8}
"""A form holds a few fields and at most one file (its size bounded as the API's)."""

_templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                         autoescape=select_autoescape(default=True, default_for_string=True),
                         undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_templates.filters["path"] = lambda value: quote(str(value), safe="")
_templates.filters["number"] = lambda value: "" if value is None else repr(float(value))
"""A figure whole, as data-value holds it (the sorting script and tests read it)."""
_templates.filters["fixed"] = lambda value: fixed(value, decimals([value], 1), "n/a")
_templates.globals["version"] = __version__


def render(template: str, **values: Any) -> str:
    return _templates.get_template(template).render(**values)


def page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A page from its template, with the pages' security headers."""
    return answer(render(template, **values), status)


def answer(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status,
                        headers={"Content-Security-Policy": POLICY, **HEADERS})


class Kept:
    """Pages, and the leaderboards and exports they are made of, each kept with the
    version of its task it was made at (Boards.version): while the version holds, it is
    the same, and a read costs the version's few queries instead of its making (under
    load, readers of 50 model pages share one leaderboard). One reader makes what a new
    version needs; the others wait for it, or, where `earlier` allows, take the one
    made at the version before meanwhile (a page a moment old, which its script
    updates), so that a change does not stall every reader at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[Tuple[Any, ...], Tuple[Tuple[Any, ...], Any]] = OrderedDict()
        self._making: Dict[Tuple[Any, ...], threading.Event] = {}

    def get(self, key: Tuple[Any, ...], version: Tuple[Any, ...], make: Callable[[], Any],
            earlier: bool = False) -> Any:
        while True:
            with self._lock:
                found = self._kept.get(key)
                if found is not None and found[0] == version:
                    self._kept.move_to_end(key)
                    return found[1]
                making = self._making.get(key)
                if making is None:
                    making = self._making[key] = threading.Event()
                    break
                if earlier and found is not None:
                    return found[1]
            making.wait()  # then it is this version's, or this reader makes it
        try:
            value = make()
            with self._lock:
                self._kept[key] = (version, value)
                while len(self._kept) > KEPT_PAGES:
                    self._kept.popitem(last=False)
            return value
        finally:
            with self._lock:
                self._making.pop(key, None)
            making.set()


def wants_page(request: Request) -> bool:
    """Whether an answer to this request is for a person (not under /api)."""
    path = request.url.path
    return not (path == "/api" or path.startswith(("/api/", "/openapi.json", "/static/")))


def error_page(status: int, message: str, request_id: str) -> HTMLResponse:
    """A refusal or a failure, as a page (the API's message, escaped)."""
    return page("error.html", status, status_code=status, message=message,
                request_id=request_id)


# -- what a leaderboard's table shows ------------------------------------------------------

@dataclass
class Column:
    """A metric's column: `key` names it in sorting (m0, m1, ...)."""

    key: str
    name: str
    spec: str
    higher_is_better: bool
    places: int


@dataclass
class Cell:
    """One model's figure under one metric, or the state of its job."""

    key: str
    status: str
    value: Optional[float]
    text: str
    message: Optional[str] = None


@dataclass
class Line:
    """One model's row: `index` is its place in the perf metric's ranking; rows of one
    cluster (models the all-pairs test does not tell apart) share `cluster`."""

    index: int
    model: str
    team: str
    submission: int
    rank: Optional[List[int]]
    cells: List[Cell]
    ranking: bool = False  # scored, its rank being computed
    cluster: Optional[int] = None
    first_of_cluster: bool = False

    @property
    def rank_text(self) -> str:
        return rank_text(self.rank, "–") if self.rank else "ranking…" if self.ranking else "–"

    def value(self, key: str) -> Any:
        """What the row sorts by under a column (None sorts last either way)."""
        if key == "rank":
            return self.index if self.rank else None
        if key in ("model", "team"):
            return getattr(self, key)
        return next(cell.value for cell in self.cells if cell.key == key)


@dataclass
class TagTable:
    """A metric's score of each tag (the corpus score of the tag's segments)."""

    name: str
    tags: List[str]
    lines: List[Tuple[str, List[Tuple[Optional[float], str]]]]


@dataclass
class Sorting:
    """How a table is sorted: by `key`, `reverse`d from that column's natural order
    (best first for a metric, A to Z for names, rank order for ranks)."""

    key: str = "rank"
    reverse: bool = False

    @classmethod
    def parse(cls, value: Optional[str], keys: Sequence[str]) -> Sorting:
        key = (value or "rank").lstrip("-")
        return cls(key, (value or "").startswith("-")) if key in keys else cls()

    def descending(self, column: Optional[Column]) -> bool:
        natural = column is not None and column.higher_is_better
        return natural != self.reverse

    def next(self, key: str) -> str:
        """The sort a heading's button asks for: its column, or reversed if sorted."""
        return f"-{key}" if key == self.key and not self.reverse else key


@dataclass
class Section:
    """A dataset's leaderboard as its page shows it."""

    dataset: str
    round: Optional[int]
    n: int
    nrefs: Any
    columns: List[Column]
    lines: List[Line]
    tag_tables: List[TagTable]
    signatures: List[Tuple[str, str]]
    perf: str  # the key of the perf metric's column, which ranks
    sorting: Sorting = field(default_factory=Sorting)

    @property
    def ranking(self) -> int:
        """How many figures are being ranked (scored, their intervals on the way)."""
        return sum(cell.status == RANKING for line in self.lines for cell in line.cells)

    def aria_sort(self, key: str) -> Optional[str]:
        if key != self.sorting.key:
            return None
        column = next((column for column in self.columns if column.key == key), None)
        return "descending" if self.sorting.descending(column) else "ascending"


def metric_names(metrics: Sequence[Mapping[str, Any]]) -> Dict[str, str]:
    """How each metric is headed: its score's name, or its spec where two share a name
    (as the report heads them)."""
    names = [metric["name"] for metric in metrics]
    return {metric["metric"]: metric["name"] if names.count(metric["name"]) == 1
            else metric["metric"] for metric in metrics}


def section(board: Mapping[str, Any], dataset: Mapping[str, Any],
            sort: Optional[str] = None, only: Optional[str] = None) -> Section:
    """A dataset's section of a leaderboard (the API's JSON), sorted as asked; with
    `only`, of that model's row alone (a model's page)."""
    metrics, perf = board["metrics"], board["perf"]
    names = metric_names(metrics)
    entries = dataset["entries"]
    cells = {(entry["model"], entry["metric"]): entry for entry in entries}
    columns = [Column(f"m{number}", names[metric["metric"]], metric["metric"],
                      bool(metric["higher_is_better"]),
                      decimals([entry["score"] for entry in entries
                                if entry["metric"] == metric["metric"]
                                and entry["score"] is not None], 1))
               for number, metric in enumerate(metrics)]
    lines = []
    for index, model in enumerate(dict.fromkeys(entry["model"] for entry in entries)):
        if only is not None and model != only:
            continue
        first = cells.get((model, perf)) or next(e for e in entries if e["model"] == model)
        ranked = first["status"] == store.DONE and first["rank"] is not None
        lines.append(Line(index, model, first["team"], first["submission"],
                          first["rank"] if ranked else None,
                          [_cell(column, cells.get((model, column.spec)))
                           for column in columns], first["status"] == RANKING))
    _clusters(lines)
    sorting = Sorting.parse(sort, ["rank", "model", "team", *(c.key for c in columns)])
    key_column = next((column for column in columns if column.key == sorting.key), None)
    present = [line for line in lines if line.value(sorting.key) is not None]
    present.sort(key=lambda line: line.value(sorting.key),
                 reverse=sorting.descending(key_column))
    ordered = present + [line for line in lines if line.value(sorting.key) is None]
    signatures = list(dict.fromkeys((names[entry["metric"]], entry["signature"])
                                    for entry in entries if entry["signature"]))
    perf_key = next(column.key for column in columns if column.spec == perf)
    return Section(dataset["dataset"], dataset["round"], dataset["n"], dataset["nrefs"],
                   columns, ordered, _tag_tables(columns, entries, only), signatures, perf_key,
                   sorting)


def _cell(column: Column, entry: Optional[Mapping[str, Any]]) -> Cell:
    if entry is None:
        return Cell(column.key, "none", None, "–")
    places = column.places
    if entry["status"] == RANKING:  # its interval is on the way
        return Cell(column.key, RANKING, entry["score"],
                    f"{fixed(entry['score'], places, 'n/a')} ± …")
    if entry["status"] != store.DONE:
        return Cell(column.key, entry["status"], None, entry["status"], entry["message"])
    return Cell(column.key, store.DONE, entry["score"],
                f"{fixed(entry['score'], places, 'n/a')} ± "
                f"{fixed(entry['half_width'], places, 'n/a')}")


def _clusters(lines: Sequence[Line]) -> None:
    """Number the clusters of the ranked rows (in ranking order): a cluster is the
    models that share a rank range."""
    previous: Optional[List[int]] = None
    cluster = -1
    for line in lines:
        if line.rank is None:
            continue
        if line.rank != previous:
            cluster += 1
            line.first_of_cluster = True
        line.cluster = cluster
        previous = line.rank


def model_tags(shown: Section, model: str
               ) -> Tuple[List[str], List[Tuple[str, List[Tuple[Optional[float], str]]]]]:
    """A model's tag scores on a dataset: the metrics' names, and a row per tag."""
    names = [table.name for table in shown.tag_tables]
    found = {table.name: dict(zip(table.tags, next((values for name, values in table.lines
                                                     if name == model), [])))
             for table in shown.tag_tables}
    tags = list(dict.fromkeys(tag for table in shown.tag_tables for tag in table.tags))
    return names, [(tag, [found[name].get(tag, (None, "–")) for name in names])
                   for tag in tags]


def _tag_tables(columns: Sequence[Column], entries: Sequence[Mapping[str, Any]],
                only: Optional[str] = None) -> List[TagTable]:
    tables = []
    for column in columns:
        scored = [entry for entry in entries if entry["metric"] == column.spec
                  and entry["status"] == store.DONE and (only is None or entry["model"] == only)]
        tags = list(dict.fromkeys(tag for entry in scored for tag in entry["tags"]))
        if not tags:
            continue
        lines = [(entry["model"], [(entry["tags"].get(tag),
                                    fixed(entry["tags"].get(tag), column.places, "n/a"))
                                   for tag in tags]) for entry in scored]
        tables.append(TagTable(column.name, tags, lines))
    return tables


# -- the routes ------------------------------------------------------------------------------

def add_pages(app: FastAPI, service: Service) -> None:
    """The pages' routes and their static files, on the API's application."""
    boards = service.boards
    kept = Kept()
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> Response:
        with store.reading(service.engine) as connection:
            activity = store.task_activity(connection)
            tasks = [(row, actions.task_record(row, store.task_metrics(connection, row.id),
                                               store.task_datasets(connection, row.id)))
                     for row in store.all_tasks(connection)]
        shown = [dict(record, names=metric_names(record["metrics"]),
                      models=activity.get(row.id, (0, None))[0],
                      last=_time(activity.get(row.id, (0, None))[1])) for row, record in tasks]
        return page("index.html", tasks=shown)

    @app.get("/tasks/{task}", response_class=HTMLResponse, include_in_schema=False)
    def task_page(task: str, round: Optional[str] = None, sort: Optional[str] = None,
                  submitted: Optional[str] = None) -> Response:
        check_name(task, "task")
        chosen = whole_number(round) if round else None
        sort = sort if sort and _SORT.fullmatch(sort) else None  # one page per real sort
        notice = _submission(boards, task, submitted)
        version = boards.version(task)

        def make() -> str:
            board = board_of(task, version)
            rounds = sorted({dataset["round"] for dataset in board["datasets"]
                             if dataset["round"] is not None})
            sections = [section(board, dataset, sort) for dataset in board["datasets"]
                        if chosen is None or dataset["round"] == chosen]
            return render("task.html", board=board, sections=sections, rounds=rounds,
                          perf_name=metric_names(board["metrics"])[board["perf"]],
                          chosen=chosen, submitted=notice, jobs=board["jobs"])

        if notice is not None:
            return answer(make())
        return answer(kept.get(("task", task, chosen, sort), version, make, earlier=True))

    @app.get("/tasks/{task}/models/{model}", response_class=HTMLResponse,
             include_in_schema=False)
    def model_page(task: str, model: str) -> Response:
        check_name(task, "task")
        check_name(model, "model")
        version = boards.version(task)
        return answer(kept.get(("model", task, model), version,
                               lambda: model_text(task, model, version), earlier=True))

    def board_of(task: str, version: Tuple[Any, ...]) -> Dict[str, Any]:
        """The task's leaderboard (not waiting for standings: see Boards.standings)."""
        found: Dict[str, Any] = kept.get(("board", task), version,
                                         lambda: boards.leaderboard(task, wait=False))
        return found

    def model_text(task: str, model: str, version: Tuple[Any, ...]) -> str:
        history = boards.model(task, model)
        board = board_of(task, version)
        names = metric_names(board["metrics"])
        datasets = []
        for dataset in board["datasets"]:
            shown = section(board, dataset, only=model)
            line = next(iter(shown.lines), None)
            if line is not None:
                export = kept.get(("export", task, dataset["dataset"]), version,
                                  functools.partial(_export, boards, task, dataset["dataset"]))
                models = len({entry["model"] for entry in dataset["entries"]})
                datasets.append((shown, line, _stats_link(export, dataset["dataset"], model),
                                 model_tags(shown, model), models))
        current = {line.submission for _, line, _, _, _ in datasets}
        return render("model.html", task=task, model=model, team=history["team"],
                      datasets=datasets, names=names, current=current,
                      history=[dict(record, submitted=record["submitted"].replace("T", " "))
                               for record in history["submissions"]])

    @app.get("/tasks/{task}/datasets/{dataset}/report", include_in_schema=False)
    def report(task: str, dataset: str) -> Response:
        check_name(task, "task")
        check_name(dataset, "dataset")
        text, policy = boards.report(task, dataset)
        return HTMLResponse(text, headers={
            "Content-Security-Policy": f"{policy}; base-uri 'none'; form-action 'none'; "
                                       f"frame-ancestors 'none'", **HEADERS})

    def task_datasets(task: str) -> List[Any]:
        with store.reading(service.engine) as connection:
            return store.task_datasets(connection, store.task(connection, task).id)

    @app.get("/tasks/{task}/submit", response_class=HTMLResponse, include_in_schema=False)
    def submit_form(task: str, dataset: Optional[str] = None) -> Response:
        check_name(task, "task")
        return page("submit.html", task=task, datasets=task_datasets(task),
                    values={"dataset": dataset or "", "model": ""}, error=None)

    @app.post("/tasks/{task}/submit", include_in_schema=False)
    async def submit(task: str, request: Request) -> Response:
        check_name(task, "task")
        values: Dict[str, str] = {"dataset": "", "model": ""}
        try:
            async with BoundedForm(request) as form:
                values = {name: _text(form, name) for name in values}
                data, filename = await _file(form, "file", "predictions")
                done = await run_in_threadpool(
                    actions.submit, service, _text(form, "token") or None, task,
                    values["dataset"], values["model"], data, filename)
        except Refused as exc:
            _log(request, exc)
            datasets = await run_in_threadpool(task_datasets, task)
            return page("submit.html", exc.status, task=task, datasets=datasets,
                        values=values, error=exc.message)
        return RedirectResponse(f"/tasks/{quote(task)}?submitted={done['submission']}"
                                f"#dataset-{quote(done['dataset'])}", status_code=303)

    def admin_page(task: str, status: int = 200, values: Optional[Dict[str, str]] = None,
                   **errors: str) -> Response:
        """The admin's forms; `errors` by form (dataset, metric), with its `values`."""
        return page("admin.html", status, task=task, datasets=task_datasets(task),
                    errors=errors, values=values or {})

    @app.get("/tasks/{task}/admin", response_class=HTMLResponse, include_in_schema=False)
    def admin(task: str) -> Response:
        return admin_page(check_name(task, "task"))

    @app.post("/tasks/{task}/admin/datasets", include_in_schema=False)
    async def add_dataset(task: str, request: Request) -> Response:
        check_name(task, "task")
        values: Dict[str, str] = {"dataset": "", "round": ""}
        try:
            async with BoundedForm(request) as form:
                values = {name: _text(form, name) for name in values}
                data, filename = await _file(form, "file", "dataset")
                await run_in_threadpool(actions.add_dataset, service,
                                        _text(form, "token") or None, task, values["dataset"],
                                        data, _round(values["round"]), filename)
        except Refused as exc:
            _log(request, exc)
            return await run_in_threadpool(admin_page, task, exc.status,
                                           dataset=exc.message, values=values)
        return RedirectResponse(f"/tasks/{quote(task)}#dataset-{quote(values['dataset'])}",
                                status_code=303)

    @app.post("/tasks/{task}/admin/metrics", include_in_schema=False)
    async def add_metric(task: str, request: Request) -> Response:
        check_name(task, "task")
        values: Dict[str, str] = {"spec": "", "kind": "in-process"}
        try:
            async with BoundedForm(request) as form:
                values = {name: _text(form, name) or values[name] for name in values}
                if values["kind"] not in ("in-process", "command"):
                    raise Invalid(f"kind: {values['kind']!r} is neither in-process nor "
                                  f"command")
                if not values["spec"].strip():
                    raise Invalid("spec: give a metric's spec, such as chrf")
                await run_in_threadpool(actions.add_metric, service,
                                        _text(form, "token") or None, task,
                                        MetricSpec(values["kind"], values["spec"]))
        except Refused as exc:
            _log(request, exc)
            return await run_in_threadpool(admin_page, task, exc.status,
                                           metric=exc.message, values=values)
        return RedirectResponse(f"/tasks/{quote(task)}", status_code=303)


class BoundedForm:
    """`async with BoundedForm(request) as form`: the request's form, bounded (FORM_LIMITS,
    and the server's --max-upload through BoundedBodies); a body too large or not a
    form is refused as the API refuses it."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.form: Optional[FormData] = None

    async def __aenter__(self) -> FormData:
        try:
            self.form = await self.request.form(**FORM_LIMITS)
        except StarletteHTTPException as exc:
            raise _refusal(exc.status_code, str(exc.detail)) from None
        return self.form

    async def __aexit__(self, *exc: object) -> None:
        if self.form is not None:
            await self.form.close()


def _log(request: Request, refused: Refused) -> None:
    """A form's refusal leaves the line in the log that the API's would."""
    log_refusal(getattr(request.state, "request_id", "-"), request.method,
                request.url.path, refused.status, refused.message)


def _refusal(status: int, message: str) -> Refused:
    refused = Refused(message)
    refused.status = status
    return refused


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


async def _file(form: FormData, name: str, what: str) -> Tuple[bytes, Optional[str]]:
    """An uploaded file's bytes and its name (a base name, as browsers send it)."""
    upload = form.get(name)
    if not isinstance(upload, UploadFile) or not upload.filename:
        raise Invalid(f"file: choose the {what} file to upload")
    return await upload.read(), upload.filename


def _round(value: str) -> Optional[int]:
    if not value:
        return None
    found = whole_number(value)
    if found is None:
        raise Invalid(f"round: {value[:40]!r} is not a whole number from 0 to {MAX_NUMBER}")
    return found


def _time(seconds: Optional[float]) -> Optional[str]:
    return store.iso_time(seconds).replace("T", " ") if seconds is not None else None


def _submission(boards: Any, task: str, submitted: Optional[str]) -> Optional[Dict[str, Any]]:
    """The submission a form has just made, to say so on the task's page."""
    number = whole_number(submitted) if submitted else None
    if number is None:
        return None
    try:
        found: Dict[str, Any] = boards.submission(number)
    except NotFound:
        return None
    return found if found["task"] == task else None


def _export(boards: Any, task: str, dataset: str) -> Dict[str, Any] | str:
    """What an export of the dataset holds, or why there is none yet."""
    try:
        found: Dict[str, Any] = boards.export(task, dataset)
    except Refused as exc:
        return exc.message
    return found


def _stats_link(export: Dict[str, Any] | str, dataset: str, model: str) -> Tuple[bool, str]:
    """(whether the model's stats file can be downloaded, which metrics it holds or
    why not)."""
    if isinstance(export, str):
        return False, export
    if model not in export["models"]:
        return False, f"{model} has no current submission on {dataset}"
    return True, ", ".join(export["metrics"])

