"""The JSON API under /api (described at /openapi.json). Reads are public; writes need a
token, checked by the route's dependencies before any body is read. Each route is a
door: it reads through the boards and exports and writes through the actions."""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, Literal, Optional

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field

from evalproto.base.version import __version__
from evalproto.service import actions, auth, paths
from evalproto.service.deps import ServiceDep, TeamDep, Upload, admin, described_body, json_body
from evalproto.service.names import MAX_NUMBER, About
from evalproto.service.weights import parse_weights
from evalproto.sources.specs import MetricSpec

router = APIRouter()

MAX_METRICS = 64
"""The most metrics a task is added with (more can be added one by one)."""
MAX_KEYS = 64
"""The most input or output keys a task declares."""


class MetricIn(BaseModel):
    spec: str = Field(min_length=1, max_length=1000,
                      description='A built-in metric\'s spec ("chrf --word-order 2"), or '
                                  'with kind "command" an evaluator command (admin only)')
    kind: Literal["in-process", "command"] = "in-process"

    def parsed(self) -> MetricSpec:
        """The spec the metrics' code takes."""
        return MetricSpec(self.kind, self.spec)


class TaskIn(BaseModel):
    name: str = Field(max_length=1000)  # check_name says what a name may be
    metrics: List[MetricIn] = Field(min_length=1, max_length=MAX_METRICS)
    perf: Optional[str] = Field(None, max_length=1000,
                                description="The spec of the metric that ranks models "
                                            "(default: the first)")
    input_keys: List[str] = Field([], max_length=MAX_KEYS,
                                  description="The keys of a dataset's rows that a model "
                                              "the server runs receives (with the id)")
    output_keys: List[str] = Field([], max_length=MAX_KEYS,
                                   description="The keys a model's reply must carry "
                                               "besides id and pred")
    weights: Optional[Dict[str, float]] = Field(
        None, max_length=MAX_METRICS + 4,
        description="The Dynaboard's default weights, {metric: weight} (default: the perf "
                    "metric 4, every other metric 1)")


class ModelIn(BaseModel):
    name: str = Field(max_length=1000)
    team: str = Field(max_length=1000, description="The team whose model it is")
    command: str = Field(min_length=1, max_length=10_000,
                         description="The program the server runs (as its own user)")
    timeout: Optional[float] = Field(None, description="The longest wait for one reply, "
                                                       "in seconds (default: none)")
    description: Optional[str] = Field(None, max_length=10_000,
                                       description="What the model is, in a line")
    url: Optional[str] = Field(None, max_length=10_000,
                               description="An http(s) link to its paper or code")


class TeamIn(BaseModel):
    name: str = Field(max_length=1000)


TaskBody = Annotated[TaskIn, Depends(json_body(TaskIn))]
MetricBody = Annotated[MetricIn, Depends(json_body(MetricIn))]
TeamBody = Annotated[TeamIn, Depends(json_body(TeamIn))]
ModelBody = Annotated[ModelIn, Depends(json_body(ModelIn))]
Round = Annotated[Optional[int], Query(ge=0, le=MAX_NUMBER)]
FileName = Annotated[Optional[str], Query()]
Described = Annotated[Optional[str], Query(max_length=10_000,
                                           description="What the model is, in a line")]
Link = Annotated[Optional[str], Query(max_length=10_000,
                                      description="An http(s) link to its paper or code")]


@router.get(paths.API)
def about(service: ServiceDep) -> Dict[str, Any]:
    """The service's version and limits."""
    return {"service": "evalproto", "version": __version__,
            "max_upload": service.settings.max_upload}


@router.get(paths.TASKS)
def list_tasks(service: ServiceDep) -> List[Dict[str, Any]]:
    """Every task with its metrics and datasets."""
    return service.boards.tasks()


@router.post(paths.TASKS, status_code=201, openapi_extra=described_body(TaskIn))
def add_task(service: ServiceDep, who: Annotated[auth.Admin, admin("adding a task")],
             body: TaskBody) -> Dict[str, Any]:
    """Add a task with its metrics (admin)."""
    return actions.add_task(service, who, body.name,
                            [metric.parsed() for metric in body.metrics], body.perf,
                            body.input_keys, body.output_keys, body.weights)


@router.get(paths.TASK)
def get_task(service: ServiceDep, task: str) -> Dict[str, Any]:
    """A task, its metrics and datasets, and its jobs by state."""
    return service.boards.task(task)


@router.post(paths.TASK_METRICS, status_code=201, openapi_extra=described_body(MetricIn))
def add_metric(service: ServiceDep, task: str,
               who: Annotated[auth.Admin, admin("adding a metric")],
               body: MetricBody) -> Dict[str, Any]:
    """Add a metric to a task (admin): every stored submission is queued for it."""
    return actions.add_metric(service, who, task, body.parsed())


@router.post(paths.DATASET, status_code=201)
def add_dataset(service: ServiceDep, task: str, dataset: str,
                who: Annotated[auth.Admin, admin("adding a dataset")], data: Upload,
                round: Round = None, filename: FileName = None,
                perturbation_of: Annotated[Optional[str], Query()] = None,
                kind: Annotated[Optional[str], Query()] = None) -> Dict[str, Any]:
    """Add a dataset to a task (admin): the body is its JSON Lines, rows {"uid" or
    "id", "answer": a reference or a list of references, "tags": [...]}. With
    `perturbation_of` (a dataset of the task) and `kind` (fairness or robustness), a
    perturbed copy of it: each row's "input_id" names the original's row it copies."""
    return actions.add_dataset(service, who, task, dataset, data, round, filename,
                               perturbation_of, kind)


@router.get(paths.DATASET)
def get_dataset(service: ServiceDep, task: str, dataset: str) -> Dict[str, Any]:
    """A dataset's description (not its examples)."""
    return service.boards.dataset(task, dataset)


@router.post(paths.SUBMISSIONS, status_code=201)
def submit(service: ServiceDep, task: str, dataset: str, model: str, team: TeamDep,
           data: Upload, filename: FileName = None, description: Described = None,
           url: Link = None) -> Dict[str, Any]:
    """Submit a model's predictions on a dataset (the team's token): the body is
    JSON Lines, rows {"id", "pred"}, one per example of the dataset. `description` and
    `url` (its paper or code) are shown beside the model ("" removes one)."""
    return actions.submit(service, team, task, dataset, model, data, filename,
                          About(description, url))


@router.get(paths.LEADERBOARD)
def get_leaderboard(service: ServiceDep, task: str,
                    dataset: Optional[str] = None) -> JSONResponse:
    """The leaderboard of a task (or of one of its datasets): one entry per (model,
    dataset, metric) with the score, its 95% bootstrap interval, the rank range
    from the all-pairs test, and each tag's score. (Plain JSON data: answered as it
    is, without FastAPI's walk through every value.)"""
    return JSONResponse(service.boards.leaderboard(task, dataset))


@router.get(paths.JOBS)
def get_jobs(service: ServiceDep, task: str) -> Dict[str, int]:
    """The task's jobs by state: queued, running, done, failed (what `board leaderboard
    --wait` and the task's page poll, to know when the scores have come)."""
    return service.boards.jobs(task)


@router.get(paths.MODEL)
def get_model(service: ServiceDep, task: str, model: str) -> Dict[str, Any]:
    """A model's submissions, oldest first, with their scores."""
    return service.boards.model(task, model)


@router.get(paths.SUBMISSION)
def get_submission(service: ServiceDep, submission: int) -> Dict[str, Any]:
    """One submission with its scores: a replaced one too, so that a submission's
    number (which the submit form's answer names) always leads to it."""
    return service.boards.submission(submission)


@router.get(paths.DYNABOARD)
def get_dynaboard(service: ServiceDep, task: str, dataset: str,
                  weights: Annotated[Optional[str], Query(max_length=4000)] = None
                  ) -> JSONResponse:
    """The dataset's Dynaboard: each model's Dynascore with its 95% bootstrap interval,
    under `weights` (metric=weight,...; by default the task's, else the perf metric 4
    and every other metric 1)."""
    return JSONResponse(service.dynaboards.board(
        task, dataset, parse_weights(weights) if weights is not None else None))


@router.get(paths.EXPORT)
def get_export(service: ServiceDep, task: str, dataset: str) -> Dict[str, Any]:
    """What an export of the dataset holds: each model's current submission, under
    the metrics that scored all of them."""
    return service.exports.export(task, dataset)


@router.get(paths.BOARD_FILE, response_class=Response, responses={200: {"content": {
    "text/csv": {}, "text/x-tex": {}, "application/json": {}}}})
def get_board_file(service: ServiceDep, task: str, dataset: str,
                   board_format: Annotated[Literal["csv", "latex", "json"],
                                           Query(alias="format")]) -> Response:
    """The dataset's leaderboard as a file, to keep or to put in a paper: CSV, a LaTeX
    tabular (the best of each column in bold) or JSON; a row per model with its rank,
    team, scores and their intervals, Dynascore and submission, as the board has them."""
    found = service.downloads.board_file(task, dataset, board_format)
    return Response(found.text, media_type=found.media_type, headers={
        "Content-Disposition": f'attachment; filename="{found.filename}"'})


@router.get(paths.SNAPSHOTS)
def list_snapshots(service: ServiceDep, task: str) -> List[Dict[str, Any]]:
    """The task's snapshots, oldest first: their ids and when each was taken."""
    return service.snapshots.of_task(task)


@router.post(paths.SNAPSHOTS, status_code=201)
def take_snapshot(service: ServiceDep, task: str,
                  who: Annotated[auth.Admin, admin("taking a snapshot")]) -> Dict[str, Any]:
    """Freeze the task's boards as they are now (admin): its leaderboard and each
    dataset's Dynaboard, kept unchanged by later submissions under the id answered."""
    return actions.take_snapshot(service, who, task)


@router.get(paths.SNAPSHOT)
def get_snapshot(service: ServiceDep, snapshot: int) -> Dict[str, Any]:
    """A snapshot: its id, task and time (`taken`), the task's leaderboard as it was
    (the keys of GET /api/tasks/{task}/leaderboard), each original dataset's
    Dynaboard (`dynaboards`) and why a dataset had none (`without_dynaboard`)."""
    return service.snapshots.snapshot(snapshot)


@router.get(paths.STATS_FILE, response_class=PlainTextResponse)
def get_stats_file(service: ServiceDep, task: str, dataset: str, model: str) -> str:
    """A model's stats file (evalproto reduce and report --stats read it)."""
    return service.exports.stats_file(task, dataset, model)


@router.post(paths.MODELS, status_code=201, openapi_extra=described_body(ModelIn))
def add_model(service: ServiceDep, task: str, who: Annotated[auth.Admin, admin("adding a model")],
              body: ModelBody) -> Dict[str, Any]:
    """Add a model that the server runs for a team (admin: its command runs as the
    server's user); it is run on every dataset of the task, and on each added later."""
    return actions.add_model(service, who, task, body.name, body.team, body.command,
                             body.timeout, About(body.description, body.url))


@router.post(paths.TEAMS, status_code=201, openapi_extra=described_body(TeamIn))
def add_team(service: ServiceDep, who: Annotated[auth.Admin, admin("adding a team")],
             body: TeamBody) -> Dict[str, str]:
    """Add a team (admin); the answer holds its token, shown this once."""
    return actions.add_team(service, who, body.name)
