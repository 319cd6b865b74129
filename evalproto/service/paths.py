"""Every path of the service, written once. The routes are declared with these
templates, and the pages, the templates and the HTTP client (evalproto board) build
their links with the functions below, so that a path changes in one place. A name goes
into a path quoted, as one segment."""

from __future__ import annotations

from typing import Optional, Union
from urllib.parse import quote, urlencode

# -- the JSON API -----------------------------------------------------------------------------

API = "/api"
TASKS = "/api/tasks"
TASK = "/api/tasks/{task}"
TASK_METRICS = "/api/tasks/{task}/metrics"
DATASET = "/api/tasks/{task}/datasets/{dataset}"
SUBMISSIONS = "/api/tasks/{task}/datasets/{dataset}/models/{model}"
LEADERBOARD = "/api/tasks/{task}/leaderboard"
JOBS = "/api/tasks/{task}/jobs"
MODELS = "/api/tasks/{task}/models"
MODEL = "/api/tasks/{task}/models/{model}"
SUBMISSION = "/api/submissions/{submission}"
EXPORT = "/api/tasks/{task}/datasets/{dataset}/stats"
DYNABOARD = "/api/tasks/{task}/datasets/{dataset}/dynaboard"
STATS_FILE = "/api/tasks/{task}/datasets/{dataset}/stats/{model}"
BOARD_FILE = "/api/tasks/{task}/datasets/{dataset}/export"
SNAPSHOTS = "/api/tasks/{task}/snapshots"
SNAPSHOT = "/api/snapshots/{snapshot}"
TEAMS = "/api/teams"
OPENAPI = "/openapi.json"

# -- the pages --------------------------------------------------------------------------------

INDEX = "/"
TASK_PAGE = "/tasks/{task}"
MODEL_PAGE = "/tasks/{task}/models/{model}"
REPORT_PAGE = "/tasks/{task}/datasets/{dataset}/report"
SUBMIT_PAGE = "/tasks/{task}/submit"
ADMIN_PAGE = "/tasks/{task}/admin"
ADMIN_DATASETS = "/tasks/{task}/admin/datasets"
ADMIN_METRICS = "/tasks/{task}/admin/metrics"
SNAPSHOT_PAGE = "/snapshots/{snapshot}"
STATIC = "/static"


def fill(template: str, query: Optional[dict] = None, fragment: Optional[str] = None,
         **parts: Union[str, int]) -> str:
    """A path from its template, each part quoted as one segment; with a query string
    (None values left out) and a fragment."""
    path = template.format(**{name: quote(str(value), safe="") for name, value in parts.items()})
    given = {name: value for name, value in (query or {}).items() if value is not None}
    if given:
        path += "?" + urlencode(given)
    return path + (f"#{quote(fragment, safe='')}" if fragment else "")


def static(name: str) -> str:
    """A static file's path (the style sheet, the script, the icon)."""
    return f"{STATIC}/{quote(name)}"


def task_page(task: str, **query: Optional[Union[str, int]]) -> str:
    """A task's leaderboards."""
    return fill(TASK_PAGE, query, task=task)


def dataset_anchor(task: str, dataset: str) -> str:
    """A dataset's section of its task's page."""
    return fill(TASK_PAGE, fragment=f"dataset-{dataset}", task=task)


def model_page(task: str, model: str) -> str:
    """A model's page."""
    return fill(MODEL_PAGE, task=task, model=model)


def report_page(task: str, dataset: str) -> str:
    """A dataset's full report."""
    return fill(REPORT_PAGE, task=task, dataset=dataset)


def submit_page(task: str) -> str:
    """A task's form that submits predictions."""
    return fill(SUBMIT_PAGE, task=task)


def admin_page(task: str) -> str:
    """A task's admin forms."""
    return fill(ADMIN_PAGE, task=task)


def admin_datasets(task: str) -> str:
    """Where the form that adds a dataset posts."""
    return fill(ADMIN_DATASETS, task=task)


def admin_metrics(task: str) -> str:
    """Where the form that adds a metric posts."""
    return fill(ADMIN_METRICS, task=task)


def task_jobs(task: str) -> str:
    """A task's jobs by state (what its page polls)."""
    return fill(JOBS, task=task)


def stats_file(task: str, dataset: str, model: str) -> str:
    """A model's stats file on a dataset."""
    return fill(STATS_FILE, task=task, dataset=dataset, model=model)


def board_file(task: str, dataset: str, board_format: str) -> str:
    """A dataset's leaderboard as a file: csv, latex or json."""
    return fill(BOARD_FILE, {"format": board_format}, task=task, dataset=dataset)


def snapshot_page(snapshot: int) -> str:
    """A snapshot's page."""
    return fill(SNAPSHOT_PAGE, snapshot=snapshot)


def snapshot_anchor(snapshot: int, dataset: str) -> str:
    """A dataset's section of a snapshot's page."""
    return fill(SNAPSHOT_PAGE, fragment=f"dataset-{dataset}", snapshot=snapshot)


def snapshot(snapshot_id: int) -> str:
    """A snapshot's JSON."""
    return fill(SNAPSHOT, snapshot=snapshot_id)
