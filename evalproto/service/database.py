"""The service's database as a place: which one (--db), its engine (SQLite set up for
a server's threads), transactions that read or write, and its migrations to the newest
schema. Every statement is built by SQLAlchemy with bound parameters; nothing from a
request is pasted into SQL."""

from __future__ import annotations

import hashlib
import os
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence

from sqlalchemy import Table, create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError

from evalproto.base.errors import SetupError


def database_url(database: str) -> URL:
    """A SQLAlchemy URL from --db: a URL (postgresql://, sqlite:///...), or a path of a
    SQLite file. PostgreSQL is spoken through psycopg 3."""
    if "://" not in database:
        return URL.create("sqlite", database=str(Path(database)))
    try:
        url = make_url(database)
    except ArgumentError:
        raise SetupError(f"--db {database!r} is neither a file nor a database URL") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise SetupError(f"--db {url.render_as_string()!r}: evalproto stores its data in "
                      f"SQLite or PostgreSQL")
    if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
        raise SetupError("--db: an in-memory SQLite database lasts one connection; give a "
                      "file")
    return url


def shown(url: URL) -> str:
    """A URL to print: its password hidden."""
    return url.render_as_string(hide_password=True)


def sqlite_file(url: URL) -> Optional[Path]:
    """The file of a SQLite database, or None for another database."""
    return Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None


def open_engine(url: URL) -> Engine:
    """An engine for the service's threads. SQLite gets write-ahead logging (readers
    never wait for the writer), waits for a lock instead of failing, and takes the
    write lock when a writing transaction begins (`writing`), so that two writers never
    deadlock upgrading their read locks. An error's message never shows the statement's
    parameters (a token's hash, a team's predictions), which errors are logged with."""
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_size=10, max_overflow=30, pool_pre_ping=True,
                             hide_parameters=True)
    _create_private(Path(str(url.database)))
    # as many connections as PostgreSQL's: the server's threads read at once, and a
    # connection opened beyond the pool is set up (its pragmas) and closed each time
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60},
                           pool_size=10, max_overflow=30, hide_parameters=True)

    @event.listens_for(engine, "connect")
    def connected(connection: Any, record: Any) -> None:
        """Set up each new SQLite connection: write-ahead logging, foreign keys,
        waits for locks, transactions begun by `began`."""
        connection.isolation_level = None  # transactions begin where `began` says
        cursor = connection.cursor()
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON",
                       "busy_timeout=60000"):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def began(connection: Connection) -> None:
        """Begin a writing transaction with the write lock taken at once."""
        immediate = connection.get_execution_options().get("evalproto_writes")
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _create_private(path: Path) -> None:
    """Create a SQLite database's file, if it is not there, readable by its owner only
    (it holds every upload; its -wal and -shm files take its mode)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:  # a directory that is not there: SQLite's error says so
        pass


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A transaction that writes: committed whole at the end, or rolled back whole."""
    with engine.connect() as connection:
        connection.execution_options(evalproto_writes=True)
        with connection.begin():
            yield connection


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A transaction that only reads (one consistent view)."""
    with engine.connect() as connection, connection.begin():
        yield connection


MIGRATIONS = Path(__file__).parent / "migrations"


def migrate(engine: Engine) -> str:
    """Bring the database to the newest schema (creating it if empty) in one
    transaction; the revision it is at. Servers starting together on one PostgreSQL
    database take turns."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with writing(engine) as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(2028)")
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        return str(MigrationContext.configure(connection).get_current_revision())


def content_hash(data: bytes) -> str:
    """The SHA-256 of an upload, by which equal files are known."""
    return hashlib.sha256(data).hexdigest()


def now() -> float:
    """The time stored with each row (seconds since the epoch)."""
    return time.time()


def iso_time(seconds: float) -> str:
    """A stored time (seconds since the epoch) as ISO 8601, in UTC."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds"
                                                                  ).replace("+00:00", "Z")


def insert_new(connection: Connection, table: Table, values: Dict[str, Any],
               unique: Sequence[str]) -> bool:
    """Insert a row unless one with the same `unique` columns is there (another
    request's, a moment ago); whether this one was inserted."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).values(**values).on_conflict_do_nothing(
        index_elements=list(unique))
    key = next(iter(table.primary_key.columns))  # returned only by a row inserted
    return connection.execute(statement.returning(key)).first() is not None
