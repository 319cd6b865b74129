"""Snapshots: frozen copies of a task's boards, each with an id, unchanged by later
submissions (a paper cites one; the end of a round keeps one). A snapshot holds the
task's leaderboard as `GET /api/tasks/{task}/leaderboard` gives it, and the Dynaboard
of each of its original datasets under the task's weights, where one can be made. It
is kept as the JSON it was read as, so that it reads back the same to the byte; taking
one is a write (evalproto.service.actions.take_snapshot), reading them is here."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from evalproto.service import store
from evalproto.service.boards import Boards
from evalproto.service.database import iso_time, reading
from evalproto.service.dynaboard import Dynaboards
from evalproto.service.errors import Invalid, NotFound
from evalproto.service.names import MAX_NUMBER, check_name


class Snapshots:
    """The snapshots of one database, and what a new one holds."""

    def __init__(self, boards: Boards, dynaboards: Dynaboards) -> None:
        self.boards = boards
        self.dynaboards = dynaboards

    def boards_now(self, task: str) -> Dict[str, Any]:
        """What a snapshot of the task taken now holds: its leaderboard (its scores
        awaited, with their intervals and ranks), each original dataset's Dynaboard
        (`dynaboards`) and why a dataset has none (`without_dynaboard`: no model scored
        yet, say)."""
        board = self.boards.leaderboard(check_name(task, "task"))
        dynaboards: Dict[str, Any] = {}
        without: Dict[str, str] = {}
        for section in board["datasets"]:
            if section["perturbation_of"] is not None:
                continue  # a copy: its figures are on its original's Dynaboard
            try:
                dynaboards[section["dataset"]] = self.dynaboards.board(task, section["dataset"])
            except Invalid as exc:
                without[section["dataset"]] = str(exc)
        return {**board, "dynaboards": dynaboards, "without_dynaboard": without}

    def snapshot(self, snapshot_id: int) -> Dict[str, Any]:
        """A snapshot: its id, its task, when it was taken, and the boards it holds."""
        if not 0 <= snapshot_id <= MAX_NUMBER:  # beyond the database's integers
            raise NotFound(f"no snapshot {snapshot_id}")
        with reading(self.boards.engine) as connection:
            row = store.snapshot(connection, snapshot_id)
        frozen: Dict[str, Any] = json.loads(bytes(row.data))
        return {"id": row.id, "task": row.task, "taken": iso_time(row.created), **frozen}

    def of_task(self, task: str) -> List[Dict[str, Any]]:
        """A task's snapshots, oldest first: their ids and when each was taken."""
        with reading(self.boards.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            found = store.task_snapshots(connection, row.id)
        return [snapshot_record(snapshot.id, task, snapshot.created) for snapshot in found]


def snapshot_record(snapshot_id: int, task: str, created: float) -> Dict[str, Any]:
    """A snapshot as a list of them shows it."""
    return {"id": snapshot_id, "task": task, "taken": iso_time(created)}
