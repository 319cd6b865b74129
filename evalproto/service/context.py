"""What a running service's routes share, the API's and the pages' alike: its settings,
its database, the admin token's hash, its leaderboards and its job dispatcher."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlalchemy.engine import URL, Engine

from evalproto.service.boards import Boards
from evalproto.service.jobs import Dispatcher
from evalproto.sources.process import DEFAULT_TIMEOUT

MAX_UPLOAD = 64 << 20
"""The default bound of a request's body: a WMT test set's dataset (a few MiB) many
times over."""


@dataclass
class Settings:
    """How a server runs (the options of `evalproto serve`)."""

    url: URL
    jobs: int = 1
    scheduler: Optional[str] = None
    max_upload: int = MAX_UPLOAD
    timeout: Optional[float] = DEFAULT_TIMEOUT


@dataclass
class Service:
    """What the routes share."""

    settings: Settings
    engine: Engine
    admin: str  # the admin token's hash
    boards: Boards
    dispatcher: Optional[Dispatcher] = None

    def wake(self) -> None:
        """Tell the dispatcher that jobs were queued."""
        if self.dispatcher is not None:
            self.dispatcher.wake()
