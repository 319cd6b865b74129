"""What a running service's routes share, the API's and the pages' alike: its settings,
its database, the admin token's hash, the metrics it has loaded, its reads (boards,
exports, Dynaboards, leaderboards' files, snapshots) and its job dispatcher. The routes
reach it through one dependency (evalproto.service.deps.ServiceDep)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from sqlalchemy.engine import URL, Engine

from evalproto.api.dynaboard import INSTANCE_MEMORY
from evalproto.service.boards import Boards
from evalproto.service.cache import Kept
from evalproto.service.deltas import Deltas
from evalproto.service.downloads import Downloads
from evalproto.service.dynaboard import Dynaboards
from evalproto.service.exports import Exports
from evalproto.service.jobs import Dispatcher
from evalproto.service.loaded import LoadedMetrics
from evalproto.service.snapshots import Snapshots
from evalproto.service.standings import Standings
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
    instance_memory: float = INSTANCE_MEMORY  # GiB: memory's offset in the Dynascore


@dataclass
class Service:
    """What the routes share."""

    settings: Settings
    engine: Engine
    admin: str  # the admin token's hash
    loaded: LoadedMetrics = field(default_factory=LoadedMetrics)
    kept: Kept = field(default_factory=Kept)  # pages made, by their task's version
    dispatcher: Optional[Dispatcher] = None

    def __post_init__(self) -> None:
        """The reads of the service's database, made from its engine."""
        self.standings = Standings(self.engine)
        self.deltas = Deltas(self.engine, self.standings)
        self.boards = Boards(self.engine, self.standings, self.deltas, self.kept)
        self.dynaboards = Dynaboards(self.boards, self.settings.instance_memory, self.kept)
        self.exports = Exports(self.boards, self.loaded)
        self.downloads = Downloads(self.boards, self.dynaboards)
        self.snapshots = Snapshots(self.boards, self.dynaboards)

    def wake(self) -> None:
        """Tell the dispatcher that jobs were queued."""
        if self.dispatcher is not None:
            self.dispatcher.wake()
