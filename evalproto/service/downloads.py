"""A dataset's leaderboard as a file to download: CSV, LaTeX or JSON (evalproto.reports.
boardfiles), made of the API's own answers, so that its figures are the leaderboard's
to the bit: the dataset's leaderboard and its Dynaboard under the task's weights where
it has one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from evalproto.reports.boardfiles import board_table, format_board
from evalproto.service.boards import Boards
from evalproto.service.dynaboard import Dynaboards
from evalproto.service.errors import Invalid

MEDIA_TYPES = {"csv": ("text/csv; charset=utf-8", "csv"),
               "latex": ("text/x-tex; charset=utf-8", "tex"),
               "json": ("application/json", "json")}
"""Each format's media type and file name extension."""


@dataclass(frozen=True)
class BoardFile:
    """A leaderboard's file: its text, its media type and the name to save it as."""

    text: str
    media_type: str
    filename: str


class Downloads:
    """The leaderboards' files of one database."""

    def __init__(self, boards: Boards, dynaboards: Dynaboards) -> None:
        self.boards = boards
        self.dynaboards = dynaboards

    def board_file(self, task: str, dataset: str, board_format: str) -> BoardFile:
        """The dataset's leaderboard as a file of `board_format` (csv, latex, json),
        named after the task and the dataset."""
        if board_format not in MEDIA_TYPES:
            raise Invalid(f"format {board_format!r} is none of {', '.join(MEDIA_TYPES)}")
        board = self.boards.leaderboard(task, dataset)
        table = board_table(board, dataset, self.dynaboard(task, dataset))
        media_type, extension = MEDIA_TYPES[board_format]
        return BoardFile(format_board(table, board_format), media_type,
                         f"{task}-{dataset}.{extension}")

    def dynaboard(self, task: str, dataset: str) -> Optional[Dict[str, Any]]:
        """The dataset's Dynaboard under the task's weights, or None where it has none
        (a perturbed copy, or no model scored yet)."""
        try:
            return self.dynaboards.board(task, dataset)
        except Invalid:
            return None
