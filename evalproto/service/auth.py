"""Tokens: the admin's (adds tasks, teams, datasets and metrics) and each team's (submits
its own models). A token is 32 random bytes (`secrets.token_urlsafe`); the database
keeps only its SHA-256, which for a token of that entropy is as good as a slow hash, and
a presented token is compared in constant time. Nothing here logs a token.

A checked token becomes an identity, Admin or Team, and every write
(evalproto.service.actions) takes one: a write cannot be made without the check."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from sqlalchemy.engine import Engine

from evalproto.service import store
from evalproto.service.database import reading, writing
from evalproto.service.errors import Forbidden, Invalid, Unauthorized
from evalproto.service.names import token_problem

ADMIN_ENV = "EVALPROTO_ADMIN_TOKEN"
ADMIN_SETTING = "admin_token_sha256"
TOKEN_BYTES = 32


def new_token() -> str:
    """A new token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AdminToken:
    """Where the admin token comes from, for the start-up message (never the token)."""

    digest: str
    source: str


def admin_token(engine: Engine, token_file: Path) -> AdminToken:
    """The admin token's hash: EVALPROTO_ADMIN_TOKEN's, or the one made at the first
    start, whose token was written to `token_file` (mode 0600)."""
    given = os.environ.get(ADMIN_ENV)
    if given is not None:
        problem = token_problem(given)
        if problem is not None:
            raise Invalid(f"{ADMIN_ENV} is not a token: {problem}")
        if len(given) < 16:
            raise Invalid(f"{ADMIN_ENV} is too short to be a token: give at least 16 "
                                f"characters (e.g. python3 -c 'import secrets; "
                                f"print(secrets.token_urlsafe())')")
        return AdminToken(token_hash(given), f"from {ADMIN_ENV}")
    with reading(engine) as connection:
        digest = store.setting(connection, ADMIN_SETTING)
    if digest is not None:
        return AdminToken(digest, f"in {token_file}, written at the first start"
                          if token_file.exists() else "made at the first start (its file "
                          f"{token_file} is gone: set {ADMIN_ENV} to choose a new one)")
    token = new_token()
    with writing(engine) as connection:
        digest = store.set_setting_once(connection, ADMIN_SETTING, token_hash(token))
        if digest == token_hash(token):
            _write_secret(token_file, token)
    return AdminToken(digest, f"in {token_file} (mode 0600)")


def _write_secret(path: Path, token: str) -> None:
    """Write the token into a new file only its owner can read (replacing a stale one)."""
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as stream:
        stream.write(token + "\n")
    os.replace(temporary, path)


def bearer(header: Optional[str]) -> Optional[str]:
    """The token of an `Authorization: Bearer TOKEN` header."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


@dataclass(frozen=True)
class Admin:
    """The admin, whose token was checked."""


@dataclass(frozen=True)
class Team:
    """A team, whose token was checked: it submits as this team."""

    id: int
    name: str


def is_admin(token: Optional[str], admin_digest: str) -> bool:
    """Whether the token is the admin's (compared in constant time)."""
    return token is not None and hmac.compare_digest(token_hash(token), admin_digest)


def admin(token: Optional[str], admin_digest: str, action: str) -> Admin:
    """The admin, if the token is the admin's; anyone else is refused `action`."""
    if token is None:
        raise Unauthorized(f"{action} needs the admin token (--token or EVALPROTO_TOKEN)")
    if not is_admin(token, admin_digest):
        raise Forbidden(f"{action} needs the admin token; this one is not it")
    return Admin()


def team(engine: Engine, token: Optional[str], admin_digest: str) -> Team:
    """The team whose token this is; anyone else is refused."""
    if token is None:
        raise Unauthorized("a submission needs the team's token (--token or EVALPROTO_TOKEN)")
    digest = token_hash(token)
    with reading(engine) as connection:
        found = store.team_by_token(connection, digest)
    if found is None or not hmac.compare_digest(found.token_hash, digest):
        if is_admin(token, admin_digest):
            raise Forbidden("the admin token does not submit: a submission is a team's, "
                            "made with that team's token")
        raise Unauthorized("this token is no team's: a submission needs the team's token")
    return Team(int(found.id), str(found.name))
