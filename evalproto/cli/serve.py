"""`evalproto serve`: the evaluation service on a database, with its job workers.

Imported only when run or listed (cli.main's LAZY_COMMANDS); FastAPI, SQLAlchemy and
uvicorn are imported only when the command runs, and without them (the `serve` extra)
it says how to install them.
"""

from __future__ import annotations

import re
from typing import Any, Optional

import click

from evalproto.cli.options import (
    CONTEXT,
    Decimals,
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
    """evalproto.service.server, or an error that names the extra it needs."""
    try:
        from evalproto.service import server
    except ImportError as exc:
        raise click.ClickException(f"evalproto serve needs the serve extra ({exc.name} is "
                                   f"not installed): {EXTRA}") from None
    return server


@click.command("serve", context_settings=CONTEXT)
@click.option("--db", "database_option", default="evalproto.db", show_default=True,
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
@click.option("--instance-memory", type=Decimals(min=0, min_open=True), default=16,
              show_default=True, metavar="GIB",
              help="The memory of the machine models run on, in GiB: the Dynascore's "
                   "memory metric is this less a model's peak memory (Dynabench's 16).")
@timeout_option
@reports_errors
def command(database_option: str, host: str, port: int, jobs: int, scheduler: Optional[str],
            max_upload: int, instance_memory: float, timeout: Optional[float]) -> None:
    """Serve the evaluation service: tasks, datasets, teams and submissions, scored
    into stats rows by worker processes, with leaderboards at /api (the API's
    description at /openapi.json).

    The admin token comes from EVALPROTO_ADMIN_TOKEN, or is made at the first start
    into a file beside the database (mode 0600), whose path is printed.
    """
    server = service_modules()
    from evalproto.service import app, database

    settings = app.Settings(database.database_url(database_option), jobs, scheduler,
                            max_upload, timeout, instance_memory)
    listening = server.listen(host, port)
    prepared = app.prepare(settings)
    click.echo(f"evalproto serve: database {database.shown(settings.url)} (schema "
               f"{prepared.revision}); admin token {prepared.admin_source}", err=True)
    click.echo(f"evalproto serve: listening on {server.address(listening)} with "
               f"{scheduler or f'{jobs} worker process' + ('es' if jobs > 1 else '')}",
               err=True)
    server.run(prepared.service, listening)
