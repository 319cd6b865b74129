"""`evalproto serve`: the evaluation service on a database, with its job workers.

Imported only when run or listed (cli.main's LAZY_COMMANDS); FastAPI, SQLAlchemy and
uvicorn are imported only when the command runs, and without them (the `serve` extra)
it says how to install them.
"""

from __future__ import annotations

import logging
import re
import signal
import socket
from typing import Any, Optional

import click

from evalproto.cli.options import (
    CONTEXT,
    WholeNumbers,
    reports_errors,
    scheduler_option,
    timeout_option,
)

EXTRA = "pip install 'evalproto[serve]'"
_SIZE = re.compile(r"([0-9]{1,18})([KMG]i?B?)?\Z", re.IGNORECASE)


def _size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """Bytes, from 67108864, 64M or 64MiB."""
    found = _SIZE.match(value.strip())
    if not found or int(found.group(1)) < 1:
        raise click.BadParameter(f"expected a size such as 64M or 1048576, got {value!r}")
    unit = (found.group(2) or " ")[0].upper()
    return int(found.group(1)) << {" ": 0, "K": 10, "M": 20, "G": 30}[unit]


def service_modules() -> Any:
    """evalproto.service.app, or an error that names the extra it needs."""
    try:
        import uvicorn  # noqa: F401

        from evalproto.service import app
    except ImportError as exc:
        raise click.ClickException(f"evalproto serve needs the serve extra ({exc.name} is "
                                   f"not installed): {EXTRA}") from None
    return app


@click.command("serve", context_settings=CONTEXT)
@click.option("--db", "database", default="evalproto.db", show_default=True,
              metavar="URL|FILE",
              help="The database: a SQLite file, or a URL such as "
                   "postgresql+psycopg://USER@HOST/DB. Its schema is created or upgraded "
                   "at start.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=WholeNumbers(0, 65535), default=8000, show_default=True,
              help="The port to listen on (0: any free one).")
@click.option("-j", "--jobs", type=WholeNumbers(min=1), default=1, show_default=True,
              help="Worker processes that score submissions.")
@scheduler_option
@click.option("--max-upload", type=click.UNPROCESSED, callback=_size, default="64M",
              show_default=True, metavar="SIZE",
              help="The largest dataset or prediction file accepted (e.g. 64M, 1G).")
@timeout_option
@reports_errors
def command(database: str, host: str, port: int, jobs: int, scheduler: Optional[str],
            max_upload: int, timeout: Optional[float]) -> None:
    """Serve the evaluation service: tasks, datasets, teams and submissions, scored
    into stats rows by worker processes, with leaderboards at /api (the API's
    description at /openapi.json).

    The admin token comes from EVALPROTO_ADMIN_TOKEN, or is made at the first start
    into a file beside the database (mode 0600), whose path is printed.
    """
    app = service_modules()
    import uvicorn

    from evalproto.service import store

    settings = app.Settings(store.database_url(database), jobs, scheduler, max_upload,
                            timeout)
    listening = _listen(host, port)
    prepared = app.prepare(settings)
    address = listening.getsockname()
    click.echo(f"evalproto serve: database {store.shown(settings.url)} (schema "
               f"{prepared.revision}); admin token {prepared.admin_source}", err=True)
    click.echo(f"evalproto serve: listening on http://{_host(address[0])}:{address[1]} "
               f"with {scheduler or f'{jobs} worker process' + ('es' if jobs > 1 else '')}",
               err=True)
    _log_errors()
    config = uvicorn.Config(app.create_app(prepared.service), log_level="info",
                            timeout_graceful_shutdown=10)
    _serve(uvicorn.Server(config), listening)


def _serve(server: Any, listening: socket.socket) -> None:
    """Run until SIGINT or SIGTERM, which stop a server cleanly (exit status 0): uvicorn
    handles them, then raises them again for the handlers it found, which here do
    nothing (the launcher's would report an interrupted run)."""
    stopping = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, lambda number, frame: None)
                for number in stopping}
    try:
        server.run(sockets=[listening])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or an error that says why not."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
        # connections of a socket that says so; without it each answer on a kept-alive
        # connection waited ~40 ms for the client's delayed ACK between its two writes
        listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: "
                                   f"{exc.strerror or exc}") from None
    return listening


def _log_errors() -> None:
    """The service's log lines (one per refused request, with its id) on stderr, as
    uvicorn writes its own."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s:  evalproto: %(message)s"))
    logger = logging.getLogger("evalproto.service")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
