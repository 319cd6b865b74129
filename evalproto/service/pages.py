"""The leaderboard's pages for people, served beside the JSON API: the tasks (`/`), a
task's leaderboards, a model's page, a dataset's full report, and the forms that submit
predictions and add datasets and metrics.

Pages are made on the server from the API's own figures (the boards, through
evalproto.service.views), by Jinja2 templates that escape every value, so they work with
scripts off. One small script of our own (static/board.js) sorts tables in place and
updates a task's page when its jobs change, polling the JSON API. Every page carries a
Content Security Policy that allows only this origin's script and style sheet (no
inline script, no handler attribute). Links are built by evalproto.service.paths.
"""

from __future__ import annotations

import functools
import re
from html import escape
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from evalproto.base.version import __version__
from evalproto.reports.report import decimals, fixed
from evalproto.service import actions, auth, paths
from evalproto.service.boards import RANKING
from evalproto.service.context import Service
from evalproto.service.deps import REFUSALS, ServiceDep
from evalproto.service.dynaviews import MAX_SLIDER, Dynaboard, dynaboard, sliders
from evalproto.service.errors import Invalid
from evalproto.service.forms import Upload, post_form, uploaded
from evalproto.service.names import MAX_NUMBER, check_name, whole_number
from evalproto.service.views import Section, metric_names, model_dataset, section, stats_link
from evalproto.service.weights import format_weights, parse_weights
from evalproto.sources.specs import MetricSpec

router = APIRouter(include_in_schema=False)

HERE = Path(__file__).parent
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
          "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
"""Only this origin's script, style sheet and JSON; forms post only here."""
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}
_SORT = re.compile(r"-?(rank|model|team|m[0-9]{1,3})")
"""The sorts a table's headings ask for (see views.Sorting)."""
SLIDER = "weight."
"""The name of a weight's slider, before its metric (the sliders' form, scripts off)."""
MAX_WEIGHTS_TEXT = 2000
REPORT_RELOAD_SECONDS = 2
"""How often a report's page looks again while the report is being made."""

_templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                         autoescape=select_autoescape(default=True, default_for_string=True),
                         undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_templates.filters["number"] = lambda value: "" if value is None else repr(float(value))
"""A figure whole, as data-value holds it (the sorting script and tests read it)."""
_templates.filters["fixed"] = lambda value: fixed(value, decimals([value], 1), "n/a")
_templates.filters["weight"] = lambda value: f"{float(value):g}"
_templates.globals["version"] = __version__
_templates.globals["url"] = paths


def render(template: str, **values: Any) -> str:
    """A template's text with these values (every one escaped)."""
    return _templates.get_template(template).render(**values)


def page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A page from its template, with the pages' security headers."""
    return answer(render(template, **values), status)


def answer(text: str, status: int = 200) -> HTMLResponse:
    """An HTML answer with the pages' security headers."""
    return HTMLResponse(text, status_code=status,
                        headers={"Content-Security-Policy": POLICY, **HEADERS})


def wants_page(request: Request) -> bool:
    """Whether an answer to this request is for a person (not under /api)."""
    path = request.url.path
    return not (path == paths.API or path.startswith((f"{paths.API}/", paths.OPENAPI,
                                                      f"{paths.STATIC}/")))


def error_page(status: int, message: str, request_id: str) -> HTMLResponse:
    """A refusal or a failure, as a page (the API's message, escaped)."""
    return page("error.html", status, status_code=status, message=message,
                request_id=request_id)


# -- reading --------------------------------------------------------------------------------

@router.get(paths.INDEX, response_class=HTMLResponse)
def index(service: ServiceDep) -> Response:
    """The tasks, each with its datasets, metrics, models and last submission."""
    tasks = [dict(task, names=metric_names(task["metrics"]), last=_time(task["last"]))
             for task in service.boards.index()]
    return page("index.html", tasks=tasks)


@router.get(paths.TASK_PAGE, response_class=HTMLResponse)
def task_page(service: ServiceDep, request: Request, task: str, round: Optional[str] = None,
              sort: Optional[str] = None, submitted: Optional[str] = None,
              weights: Optional[str] = None) -> Response:
    """A task's leaderboards (of one round, sorted as asked) with each dataset's
    Dynaboard (under the weights asked, as `metric=weight,...`, or by the sliders' form
    with scripts off: `weight.METRIC=W`), and the notice of a submission the form has
    just made."""
    check_name(task, "task")
    chosen = whole_number(round) if round else None
    sort = sort if sort and _SORT.fullmatch(sort) else None  # one page per real sort
    notice = _submission(service, task, submitted)
    if weights is None:
        weights = ",".join(f"{key[len(SLIDER):]}={value}" for key, value
                           in request.query_params.multi_items() if key.startswith(SLIDER))
    weighed, weights_problem = _page_weights(weights)
    version = service.boards.version(task)

    def make() -> str:
        """The task's page as it is now."""
        board = _board(service, task, version)
        rounds = sorted({dataset["round"] for dataset in board["datasets"]
                         if dataset["round"] is not None})
        sections = [section(board, dataset, sort) for dataset in board["datasets"]
                    if chosen is None or dataset["round"] == chosen]
        dynaboards = {shown.dataset: found for shown in sections
                      if (found := _dynaboard(service, task, shown, weighed)) is not None}
        boards = [found for found in dynaboards.values() if found.metrics]
        return render("task.html", board=board, sections=sections, rounds=rounds,
                      dynaboards=dynaboards,
                      perf_name=metric_names(board["metrics"])[board["perf"]],
                      chosen=chosen, submitted=notice, jobs=board["jobs"],
                      sliders=sliders(boards), weights_problem=weights_problem,
                      max_slider=MAX_SLIDER, slider_name=SLIDER,
                      snapshots=_snapshots(service, task))

    if notice is not None:
        return answer(make())
    key = ("task", task, chosen, sort, weighed and format_weights(weighed), weights_problem)
    return answer(service.kept.get(key, version, make, earlier=True))


def _page_weights(text: Optional[str]) -> Tuple[Optional[Dict[str, float]], Optional[str]]:
    """The Dynaboards' weights a page's address asks for, or why they are not taken."""
    if not text:
        return None, None
    if len(text) > MAX_WEIGHTS_TEXT:
        return None, (f"weights: {len(text)} characters, more than {MAX_WEIGHTS_TEXT}; the "
                      f"Dynaboards show the task's weights")
    try:
        return parse_weights(text), None
    except Invalid as exc:
        return None, f"{exc}; the Dynaboards show the task's weights"


def _dynaboard(service: Service, task: str, shown: Section,
               weights: Optional[Dict[str, float]]) -> Optional[Dynaboard]:
    """A dataset's Dynaboard as its section shows it: none on a perturbed copy or a
    dataset without submissions; while new scores of the perf metric are being ranked,
    a note that it follows."""
    if shown.perturbation_of is not None or not shown.lines:
        return None
    if any(cell.status == RANKING for line in shown.lines for cell in line.cells
           if cell.key == shown.perf):
        return Dynaboard(shown.dataset, problem="The Dynaboard follows when the new scores "
                                                "are ranked.")
    try:
        return dynaboard(service.dynaboards.board(task, shown.dataset, weights, others=True))
    except Invalid as exc:
        return Dynaboard(shown.dataset, problem=f"No Dynaboard: {exc}.")


@router.get(paths.MODEL_PAGE, response_class=HTMLResponse)
def model_page(service: ServiceDep, task: str, model: str) -> Response:
    """A model's standing on every dataset and tag, its submissions and stats files."""
    check_name(task, "task")
    check_name(model, "model")
    version = service.boards.version(task)
    return answer(service.kept.get(("model", task, model), version,
                                   lambda: _model_text(service, task, model, version),
                                   earlier=True))


@router.get(paths.SNAPSHOT_PAGE, response_class=HTMLResponse)
def snapshot_page(service: ServiceDep, snapshot: int, sort: Optional[str] = None) -> Response:
    """A snapshot of a task's boards, frozen: each dataset's leaderboard and Dynaboard
    as they were when it was taken, shown as the task's page shows its boards."""
    frozen = service.snapshots.snapshot(snapshot)
    sort = sort if sort and _SORT.fullmatch(sort) else None
    return page("snapshot.html", snapshot=frozen, taken=_time(frozen["taken"]),
                sections=[section(frozen, dataset, sort) for dataset in frozen["datasets"]],
                perf_name=metric_names(frozen["metrics"])[frozen["perf"]],
                dynaboards={name: dynaboard(board)
                            for name, board in frozen["dynaboards"].items()})


def _snapshots(service: Service, task: str) -> List[Dict[str, Any]]:
    """The task's snapshots as its page lists them."""
    return [dict(found, taken=_time(found["taken"])) for found in service.snapshots.of_task(task)]


def _board(service: Service, task: str, version: Tuple[Any, ...]) -> Dict[str, Any]:
    """The task's leaderboard (not waiting for standings: see evalproto.service.
    standings), kept while its version holds; taken as pages are (Kept's `earlier`)."""
    found: Dict[str, Any] = service.kept.get(
        ("board", task), version, lambda: service.boards.leaderboard(task, wait=False),
        earlier=True)
    return found


def _model_text(service: Service, task: str, model: str, version: Tuple[Any, ...]) -> str:
    """A model's page: its standing on each dataset of the board (with each
    metric's rank and its stats file), and its submissions."""
    history = service.boards.model(task, model)
    board = _board(service, task, version)
    datasets = []
    for dataset in board["datasets"]:
        export = service.kept.get(("export", task, dataset["dataset"]), version,
                                  functools.partial(_export, service, task, dataset["dataset"]),
                                  earlier=True)
        shown = model_dataset(board, dataset, model,
                              stats_link(export, dataset["dataset"], model))
        if shown is not None:
            datasets.append(shown)
    current = {shown.line.submission for shown in datasets}
    runs = [dict(run, finished=_time(run["finished"])) for run in history["runs"]]
    return render("model.html", task=task, model=model, team=history["team"], runs=runs,
                  description=history["description"], link=history["url"],
                  timeout=history["timeout"], datasets=datasets,
                  names=metric_names([metric for metric in board["metrics"]
                                      if metric["kind"] != "measured"]), current=current,
                  history=[dict(record, submitted=record["submitted"].replace("T", " "))
                           for record in history["submissions"]])


@router.get(paths.REPORT_PAGE)
def report(service: ServiceDep, task: str, dataset: str) -> Response:
    """The dataset's full `evalproto report` page, with a way back to its board; while
    it is being made (seconds, the first time), a page that says so and looks again."""
    made = service.exports.report(task, dataset, wait=False)
    if made is None:
        return page("making.html", 202, task=task, dataset=dataset,
                    reload=REPORT_RELOAD_SECONDS)
    text, policy = made
    back = (f'<nav aria-label="Where you are" style="margin-bottom:1em">'
            f'<a href="{escape(paths.dataset_anchor(task, dataset))}">← the leaderboard of '
            f'{escape(task)}</a></nav>\n')
    text = text.replace("<body>\n", f"<body>\n{back}", 1)
    return HTMLResponse(text, headers={
        "Content-Security-Policy": f"{policy}; base-uri 'none'; form-action 'none'; "
                                   f"frame-ancestors 'none'", **HEADERS})


# -- the forms -------------------------------------------------------------------------------

@router.get(paths.SUBMIT_PAGE, response_class=HTMLResponse)
def submit_form(service: ServiceDep, task: str, dataset: Optional[str] = None) -> Response:
    """The form that submits predictions (the dataset chosen when asked)."""
    return _submit_page(service, task, 200, {"dataset": dataset or "", "model": ""})


def _submit_page(service: Service, task: str, status: int, values: Dict[str, str],
                 error: Optional[str] = None) -> Response:
    """The submit form, with a refusal's message beside it."""
    return page("submit.html", status, task=task, datasets=service.boards.datasets(task),
                values=values, error=error)


@router.post(paths.SUBMIT_PAGE)
async def submit(service: ServiceDep, task: str, request: Request) -> Response:
    """Submit predictions, as the team whose token the form holds."""
    check_name(task, "task")

    def act(team: auth.Team, values: Dict[str, str], upload: Optional[Upload]) -> str:
        file = uploaded(upload, "predictions")
        done = actions.submit(service, team, task, values["dataset"], values["model"],
                              file.data, file.filename)
        return paths.fill(paths.TASK_PAGE, {"submitted": done["submission"]},
                          f"dataset-{done['dataset']}", task=task)

    return await post_form(
        request, {"dataset": "", "model": ""}, "file",
        lambda token: auth.team(service.engine, token, service.admin), act,
        lambda status, message, values: _submit_page(service, task, status, values, message))


@router.get(paths.ADMIN_PAGE, response_class=HTMLResponse)
def admin(service: ServiceDep, task: str) -> Response:
    """The admin's forms."""
    return _admin_page(service, check_name(task, "task"))


def _admin_page(service: Service, task: str, status: int = 200,
                values: Optional[Dict[str, str]] = None, **errors: str) -> Response:
    """The admin's forms; `errors` by form (dataset, metric), with its `values`."""
    return page("admin.html", status, task=task, datasets=service.boards.datasets(task),
                errors=errors, values=values or {})


def _as_admin(service: Service, action: str) -> Any:
    """What makes the admin of a form's token, for `action`."""
    return lambda token: auth.admin(token, service.admin, action)


@router.post(paths.ADMIN_DATASETS)
async def add_dataset(service: ServiceDep, task: str, request: Request) -> Response:
    """Add a dataset, as the admin."""
    check_name(task, "task")

    def act(admin: auth.Admin, values: Dict[str, str], upload: Optional[Upload]) -> str:
        file = uploaded(upload, "dataset")
        actions.add_dataset(service, admin, task, values["dataset"], file.data,
                            _round(values["round"]), file.filename)
        return paths.dataset_anchor(task, values["dataset"])

    return await post_form(
        request, {"dataset": "", "round": ""}, "file", _as_admin(service, "adding a dataset"),
        act, lambda status, message, values: _admin_page(service, task, status, values,
                                                         dataset=message))


@router.post(paths.ADMIN_METRICS)
async def add_metric(service: ServiceDep, task: str, request: Request) -> Response:
    """Add a metric, as the admin: every stored submission is queued for it."""
    check_name(task, "task")

    def act(admin: auth.Admin, values: Dict[str, str], upload: Optional[Upload]) -> str:
        kind = values["kind"] or "in-process"
        if kind not in ("in-process", "command"):
            raise Invalid(f"kind: {kind!r} is neither in-process nor command")
        if not values["spec"]:
            raise Invalid("spec: give a metric's spec, such as chrf")
        actions.add_metric(service, admin, task, MetricSpec(kind, values["spec"]))
        return paths.task_page(task)

    return await post_form(
        request, {"spec": "", "kind": ""}, None, _as_admin(service, "adding a metric"), act,
        lambda status, message, values: _admin_page(service, task, status, values,
                                                    metric=message))


def _round(value: str) -> Optional[int]:
    """A round as the form gives it: none, or a whole number."""
    if not value:
        return None
    found = whole_number(value)
    if found is None:
        raise Invalid(f"round: {value[:40]!r} is not a whole number from 0 to {MAX_NUMBER}")
    return found


def _time(iso: Optional[str]) -> Optional[str]:
    """A stored time as the pages show it."""
    return iso.replace("T", " ") if iso is not None else None


def _submission(service: Service, task: str, submitted: Optional[str]) -> Optional[Dict[str, Any]]:
    """The submission a form has just made, to say so on the task's page."""
    number = whole_number(submitted) if submitted else None
    if number is None:
        return None
    try:
        found: Dict[str, Any] = service.boards.submission(number)
    except REFUSALS:  # gone, or another server's number
        return None
    return found if found["task"] == task else None


def _export(service: Service, task: str, dataset: str) -> Dict[str, Any] | str:
    """What an export of the dataset holds, or why there is none yet."""
    try:
        found: Dict[str, Any] = service.exports.export(task, dataset)
    except REFUSALS as exc:
        return str(exc)
    return found
