"""The evaluation service's application (FastAPI): the API's router (evalproto.service.
api, JSON under /api, described at /openapi.json) and the pages' (evalproto.service.
pages), the lifespan that starts and stops the job workers, the bounds of request
bodies, and the answers to errors.

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
from typing import Any, AsyncIterator, Awaitable, Callable, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalproto.base.errors import EvalprotoError, SetupError
from evalproto.base.version import __version__
from evalproto.service import api, auth, database, pages, paths
from evalproto.service.context import MAX_UPLOAD, Service, Settings
from evalproto.service.deps import REFUSALS, status_of
from evalproto.service.errors import described, escaped, log_refusal
from evalproto.service.jobs import Dispatcher
from evalproto.service.workers import Workers

__all__ = ["MAX_UPLOAD", "Prepared", "Service", "Settings", "create_app", "prepare"]

log = logging.getLogger("evalproto.service")

FIGURE_PROCESSES = max(1, min(4, os.cpu_count() or 1))
"""Processes that compute leaderboards' standings, one metric each at a time."""
SHOWN_PROBLEMS = 3
"""The validation problems a 422 answer names (the rest are counted)."""


def create_app(service: Service) -> FastAPI:
    """The application of a prepared service (see `prepare`). Its lifespan starts and
    stops the job workers."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        """Start the job and standings workers and the dispatcher with the
        application, and stop them (and the metrics loaded here) with it."""
        workers = Workers(service.settings.jobs, service.settings.scheduler)
        figures = Workers(FIGURE_PROCESSES)  # a leaderboard's metrics at once
        service.standings.start(figures)
        service.dispatcher = Dispatcher(service.engine, workers, service.settings.timeout,
                                        service.boards.warm)
        service.dispatcher.start()
        threading.Thread(target=service.boards.warm, name="evalproto-settle",
                         daemon=True).start()
        try:
            yield
        finally:
            service.dispatcher.stop()
            workers.close()
            figures.close()
            service.loaded.close()

    app = FastAPI(title="evalproto evaluation service", version=__version__,
                  lifespan=lifespan, docs_url=None, redoc_url=None,  # their pages use CDNs
                  description="Tasks, datasets and submissions scored into stats rows; "
                              "leaderboards with intervals and significance.")
    app.state.service = service
    # Inside the request ids' middleware: a body found too large is refused where the
    # route reads it, as any refusal is.
    app.add_middleware(BoundedBodies, limit=service.settings.max_upload)
    _handle_errors(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount(paths.STATIC, StaticFiles(directory=Path(pages.__file__).parent / "static"),
              name="static")
    return app


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
    """Answer every error in one shape, logged in one line: the service's and
    the records' refusals, evalproto's failures, invalid requests, HTTP errors, and bugs."""
    for refusal in REFUSALS:
        @app.exception_handler(refusal)
        async def refused(request: Request, exc: Exception) -> Response:
            """A refusal, with its status and message."""
            return _answer(request, status_of(exc), str(exc))

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
        """Starlette's own errors (an unknown path, a body too large) in our shape."""
        message = str(exc.detail) if exc.status_code != 404 else (
            f"no such resource: {request.url.path}")
        return _answer(request, exc.status_code, message)

    @app.middleware("http")
    async def request_ids(request: Request,
                          call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        """Give every request an id (its answer's X-Request-ID, and its log
        line's), and turn what escapes the handlers into one logged line and a 500."""
        request.state.request_id = secrets.token_hex(6)
        try:
            with request.app.state.service.kept.serving():
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
        """Bound bodies of the wrapped application at `limit` bytes."""
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its body's messages counted as they come."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        seen = 0

        async def bounded() -> Message:
            """The next message of the body, refused once the bound is passed."""
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
    engine = database.open_engine(settings.url)
    try:
        revision = database.migrate(engine)
    except DBAPIError as exc:
        raise SetupError(f"cannot use the database {database.shown(settings.url)}: "
                         f"{' '.join(str(exc.orig or exc).split())}") from None
    database_file = database.sqlite_file(settings.url)
    token_file = (database_file.with_name(database_file.name + ".admin-token")
                  if database_file is not None else Path("evalproto-admin-token"))
    admin = auth.admin_token(engine, token_file.absolute())
    return Prepared(Service(settings, engine, admin.digest), revision, admin.source)
