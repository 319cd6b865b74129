"""The HTTP API (FastAPI; its description at /openapi.json). JSON under /api; the pages
for people (evalproto.service.pages) take the other paths.

Reads are public; writes need a token (see auth). Every refusal is a 4xx answer
{"error": message, "request_id": id} that names what was wrong, and nothing of the
request is stored; anything else that goes wrong is a 500 with the same shape. Each
error is logged in one line with the request's id, and the server keeps serving.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Literal, Optional

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalproto.base.errors import EvalprotoError, SetupError
from evalproto.base.version import __version__
from evalproto.service import actions, auth, pages, store
from evalproto.service.boards import Boards
from evalproto.service.context import MAX_UPLOAD, Service, Settings
from evalproto.service.errors import (
    Invalid,
    NotFound,
    Refused,
    described,
    escaped,
    log_refusal,
)
from evalproto.service.jobs import Dispatcher, Workers
from evalproto.service.names import MAX_NUMBER, check_name
from evalproto.sources.specs import MetricSpec

__all__ = ["MAX_UPLOAD", "Prepared", "Service", "Settings", "create_app", "prepare"]

log = logging.getLogger("evalproto.service")

FIGURE_PROCESSES = max(1, min(4, os.cpu_count() or 1))
"""Processes that compute leaderboards' standings, one metric each at a time."""


# -- request bodies ------------------------------------------------------------------------

class MetricIn(BaseModel):
    spec: str = Field(min_length=1, max_length=1000,
                      description='A built-in metric\'s spec ("chrf --word-order 2"), or '
                                  'with kind "command" an evaluator command (admin only)')
    kind: Literal["in-process", "command"] = "in-process"


MAX_METRICS = 64
"""The most metrics a task is added with (more can be added one by one)."""
MAX_JSON = 256 << 10
"""The bound of a JSON request's body (a task of MAX_METRICS long specs fits): far
below --max-upload, which is for uploaded files."""
SHOWN_PROBLEMS = 3
"""The validation problems a 422 answer names (the rest are counted)."""


class TaskIn(BaseModel):
    name: str = Field(max_length=1000)  # check_name says what a name may be
    metrics: List[MetricIn] = Field(min_length=1, max_length=MAX_METRICS)
    perf: Optional[str] = Field(None, max_length=1000,
                                description="The spec of the metric that ranks models "
                                            "(default: the first)")


class TeamIn(BaseModel):
    name: str = Field(max_length=1000)


# -- the application -------------------------------------------------------------------------

def create_app(service: Service) -> FastAPI:
    """The API of a prepared service (see `prepare`). Its lifespan starts and stops
    the job workers."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        workers = Workers(service.settings.jobs, service.settings.scheduler)
        figures = Workers(FIGURE_PROCESSES)  # a leaderboard's metrics at once
        service.boards.start(figures)
        service.dispatcher = Dispatcher(service.engine, workers, service.settings.timeout,
                                        service.boards.prepare)
        service.dispatcher.start()
        threading.Thread(target=service.boards.prepare, name="evalproto-settle",
                         daemon=True).start()
        try:
            yield
        finally:
            service.dispatcher.stop()
            workers.close()
            figures.close()
            service.boards.close()

    app = FastAPI(title="evalproto evaluation service", version=__version__,
                  lifespan=lifespan, docs_url=None, redoc_url=None,  # their pages use CDNs
                  description="Tasks, datasets and submissions scored into stats rows; "
                              "leaderboards with intervals and significance.")
    app.state.service = service
    # Inside the request ids' middleware: a body found too large is refused where the
    # route reads it, as any refusal is.
    app.add_middleware(BoundedBodies, limit=service.settings.max_upload)
    _handle_errors(app)
    _routes(app, service)
    pages.add_pages(app, service)
    return app


async def _body(request: Request) -> bytes:
    """An upload's bytes (bounded by BoundedBodies). Declared after the token's check in
    a route's parameters, so that no one without a token has a body read."""
    return await request.body()


def _admin(action: str) -> Callable[..., Awaitable[Optional[str]]]:
    """A dependency that refuses anyone but the admin, before the body is read."""

    async def admin(request: Request) -> Optional[str]:
        token = auth.bearer(request.headers.get("authorization"))
        auth.require_admin(token, request.app.state.service.admin, action)
        return token

    return admin


def _team(request: Request) -> Optional[str]:
    """A dependency that refuses any token but a team's, before the body is read."""
    token = auth.bearer(request.headers.get("authorization"))
    service: Service = request.app.state.service
    auth.team_of(service.engine, token, service.admin)
    return token


def _json(model: Any) -> Callable[..., Awaitable[Any]]:
    """A dependency reading a JSON body of at most MAX_JSON bytes into `model`, after the
    dependencies before it (the token's check): FastAPI would read a model parameter's
    body before any of them."""

    async def parse(request: Request) -> Any:
        limit = min(MAX_JSON, request.app.state.service.settings.max_upload)
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise StarletteHTTPException(413, f"a JSON request's body is at most "
                                                  f"{limit} bytes")
        try:
            return model.model_validate_json(bytes(data))
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None

    return parse


def _json_body(model: Any) -> Dict[str, Any]:
    """The OpenAPI description of a route's JSON body (read by `_json`)."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": model.model_json_schema()}}}}


_TASK_BODY = Depends(_json(TaskIn))
_METRIC_BODY = Depends(_json(MetricIn))
_TEAM_BODY = Depends(_json(TeamIn))


def _routes(app: FastAPI, service: Service) -> None:
    boards = service.boards

    @app.get("/api")
    def about() -> Dict[str, Any]:
        """The service's version and limits."""
        return {"service": "evalproto", "version": __version__,
                "max_upload": service.settings.max_upload}

    @app.get("/api/tasks")
    def list_tasks() -> List[Dict[str, Any]]:
        """Every task with its metrics and datasets."""
        return actions.all_tasks(service)

    @app.post("/api/tasks", status_code=201, openapi_extra=_json_body(TaskIn))
    def add_task(token: Optional[str] = Depends(_admin("adding a task")),
                 body: TaskIn = _TASK_BODY) -> Dict[str, Any]:
        """Add a task with its metrics (admin)."""
        check_name(body.name, "task")
        specs = [MetricSpec(metric.kind, metric.spec) for metric in body.metrics]
        repeated = [spec.spec for spec in specs if specs.count(spec) > 1]
        if repeated:
            raise Invalid(f"the metric {repeated[0]!r} is given twice")
        perf = body.perf if body.perf is not None else specs[0].spec
        if perf not in [spec.spec for spec in specs]:
            raise Invalid(f"the perf metric {perf!r} is not one of the task's metrics "
                          f"({', '.join(spec.spec for spec in specs)})")
        entries = [boards.entry(spec) for spec in specs]
        with store.writing(service.engine) as connection:
            store.add_task(connection, body.name, entries, perf)
            task = store.task(connection, body.name)
            return actions.task_record(task, store.task_metrics(connection, task.id), [])

    @app.get("/api/tasks/{task}")
    def get_task(task: str) -> Dict[str, Any]:
        """A task, its metrics and datasets, and its jobs by state."""
        with store.reading(service.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            record = actions.task_record(row, store.task_metrics(connection, row.id),
                                         store.task_datasets(connection, row.id))
            record["jobs"] = store.job_counts(connection, row.id)
        return record

    @app.post("/api/tasks/{task}/metrics", status_code=201,
              openapi_extra=_json_body(MetricIn))
    def add_metric(task: str, token: Optional[str] = Depends(_admin("adding a metric")),
                   body: MetricIn = _METRIC_BODY) -> Dict[str, Any]:
        """Add a metric to a task (admin): every stored submission is queued for it."""
        return actions.add_metric(service, token, task, MetricSpec(body.kind, body.spec))

    @app.post("/api/tasks/{task}/datasets/{dataset}", status_code=201)
    def add_dataset(task: str, dataset: str,
                    token: Optional[str] = Depends(_admin("adding a dataset")),
                    data: bytes = Depends(_body),
                    round: Optional[int] = Query(None, ge=0, le=MAX_NUMBER),
                    filename: Optional[str] = Query(None)) -> Dict[str, Any]:
        """Add a dataset to a task (admin): the body is its JSON Lines, rows {"uid" or
        "id", "answer": a reference or a list of references, "tags": [...]}."""
        return actions.add_dataset(service, token, task, dataset, data, round, filename)

    @app.get("/api/tasks/{task}/datasets/{dataset}")
    def get_dataset(task: str, dataset: str) -> Dict[str, Any]:
        with store.reading(service.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            found = store.dataset(connection, row.id, check_name(dataset, "dataset"))
        return actions.dataset_record(found)

    @app.post("/api/tasks/{task}/datasets/{dataset}/models/{model}", status_code=201)
    def submit(task: str, dataset: str, model: str, token: Optional[str] = Depends(_team),
               data: bytes = Depends(_body),
               filename: Optional[str] = Query(None)) -> Dict[str, Any]:
        """Submit a model's predictions on a dataset (the team's token): the body is
        JSON Lines, rows {"id", "pred"}, one per example of the dataset."""
        return actions.submit(service, token, task, dataset, model, data, filename)

    @app.get("/api/tasks/{task}/leaderboard")
    def get_leaderboard(task: str, dataset: Optional[str] = None) -> Dict[str, Any]:
        """The leaderboard of a task (or of one of its datasets): one entry per (model,
        dataset, metric) with the score, its 95% bootstrap interval, the rank range
        from the all-pairs test, and each tag's score."""
        check_name(task, "task")
        if dataset is not None:
            check_name(dataset, "dataset")
        return boards.leaderboard(task, dataset)

    @app.get("/api/tasks/{task}/jobs")
    def get_jobs(task: str) -> Dict[str, int]:
        """The task's jobs by state: queued, running, done, failed."""
        with store.reading(service.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            return store.job_counts(connection, row.id)

    @app.get("/api/tasks/{task}/models/{model}")
    def get_model(task: str, model: str) -> Dict[str, Any]:
        """A model's submissions, oldest first, with their scores."""
        return boards.model(check_name(task, "task"), check_name(model, "model"))

    @app.get("/api/submissions/{submission}")
    def get_submission(submission: int) -> Dict[str, Any]:
        """One submission (a replaced one too) with its scores."""
        if not 0 <= submission <= MAX_NUMBER:  # beyond the database's integers
            raise NotFound(f"no submission {submission}")
        return boards.submission(submission)

    @app.get("/api/tasks/{task}/datasets/{dataset}/stats")
    def get_export(task: str, dataset: str) -> Dict[str, Any]:
        """What an export of the dataset holds: each model's current submission, under
        the metrics that scored all of them."""
        return boards.export(check_name(task, "task"), check_name(dataset, "dataset"))

    @app.get("/api/tasks/{task}/datasets/{dataset}/stats/{model}",
             response_class=PlainTextResponse)
    def get_stats_file(task: str, dataset: str, model: str) -> str:
        """A model's stats file (evalproto reduce and report --stats read it)."""
        return boards.stats_file(check_name(task, "task"), check_name(dataset, "dataset"),
                                 check_name(model, "model"))

    @app.post("/api/teams", status_code=201, openapi_extra=_json_body(TeamIn))
    def add_team(token: Optional[str] = Depends(_admin("adding a team")),
                 body: TeamIn = _TEAM_BODY) -> Dict[str, str]:
        """Add a team (admin); the answer holds its token, shown this once."""
        check_name(body.name, "team")
        team_token = auth.new_token()
        with store.writing(service.engine) as connection:
            store.add_team(connection, body.name, auth.token_hash(team_token))
        return {"team": body.name, "token": team_token}


# -- errors --------------------------------------------------------------------------------

def _answer(request: Request, status: int, message: str,
            logged: Optional[str] = None) -> Response:
    """An error's answer (JSON, or a page for a page's request), and its one line in
    the log (`logged`, if the log is to say more than the answer)."""
    request_id = getattr(request.state, "request_id", "-")
    log_refusal(request_id, request.method, request.url.path, status, logged or message)
    if pages.wants_page(request):
        return pages.error_page(status, message, request_id)
    return JSONResponse({"error": message, "request_id": request_id}, status_code=status)


def _handle_errors(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        return _answer(request, exc.status, exc.message)

    @app.exception_handler(EvalprotoError)
    async def failed(request: Request, exc: EvalprotoError) -> Response:
        """What evalproto could not do (a metric command that fails), said as it says
        it: a server error, yet one with a message."""
        return _answer(request, 500, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        """The first few problems (a huge body may have a great many), each cut short."""
        errors = exc.errors()
        problems = []
        for error in errors[:SHOWN_PROBLEMS]:
            where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
            said = str(error.get("msg"))[:200]
            problems.append(f"{where[:200]}: {said}" if where else said)
        if len(errors) > SHOWN_PROBLEMS:
            problems.append(f"and {len(errors) - SHOWN_PROBLEMS} more problems")
        return _answer(request, 422, "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = str(exc.detail) if exc.status_code != 404 else (
            f"no such resource: {request.url.path}")
        return _answer(request, exc.status_code, message)

    @app.middleware("http")
    async def request_ids(request: Request,
                          call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        request.state.request_id = secrets.token_hex(6)
        try:
            response = await call_next(request)
        except ClientDisconnect:  # no one to answer, and no fault of the server's
            log.info("request %s: %s %s: the client went away before its body ended",
                     request.state.request_id, request.method, escaped(request.url.path))
            response = Response(status_code=400)
        except Exception as exc:  # a bug: one line in the log, no traceback in the answer
            if os.environ.get("EVALPROTO_TRACEBACK"):
                log.exception("request %s", request.state.request_id)
            response = _answer(request, 500, f"internal error ({type(exc).__name__}); the "
                                             f"server's log has its request id",
                               logged=f"internal error ({described(exc)})")
        response.headers["X-Request-ID"] = request.state.request_id
        return response


class BoundedBodies:
    """Refuse a request body beyond `limit` bytes (413), before it is all read: the
    declared length is checked first, then the bytes as they come."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            # more than 18 digits is beyond any limit (and 4,300 beyond what int() reads)
            if declared.isdigit() and (len(declared) > 18 or int(declared) > self.limit):
                raise self._too_large()
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise self._too_large()
            return message

        await self.app(scope, bounded, send)

    def _too_large(self) -> StarletteHTTPException:
        """An HTTP error, which FastAPI passes on from wherever the body is read."""
        return StarletteHTTPException(413, f"the upload is larger than this server's "
                                           f"--max-upload ({self.limit} bytes)")


# -- starting ------------------------------------------------------------------------------

@dataclass
class Prepared:
    service: Service
    revision: str
    admin_source: str


def prepare(settings: Settings) -> Prepared:
    """The database migrated to the newest schema and the admin token in place: what a
    server needs before it listens."""
    engine = store.open_engine(settings.url)
    try:
        revision = store.migrate(engine)
    except DBAPIError as exc:
        raise SetupError(f"cannot use the database {store.shown(settings.url)}: "
                         f"{' '.join(str(exc.orig or exc).split())}") from None
    database_file = store.sqlite_file(settings.url)
    token_file = (database_file.with_name(database_file.name + ".admin-token")
                  if database_file is not None else Path("evalproto-admin-token"))
    admin = auth.admin_token(engine, token_file.absolute())
    return Prepared(Service(settings, engine, admin.digest, Boards(engine)), revision,
                    admin.source)
