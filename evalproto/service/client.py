"""The service's HTTP client (httpx), which `evalproto board` is built on. Each call
returns the server's JSON; a refusal, or a server that cannot be reached, is a
ServiceError whose message is the one line to show."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import httpx

from evalproto.base.errors import EvalprotoError
from evalproto.service import paths
from evalproto.service.names import token_problem

TIMEOUT = httpx.Timeout(300.0, connect=10.0)
WAIT_POLL = 0.25


class ServiceError(EvalprotoError):
    """The service refused a request, or could not be reached."""


class Client:
    """A client of one server, with a token or none (reads need none)."""

    def __init__(self, server: str, token: Optional[str] = None) -> None:
        """A client of `server`; a token that no request could carry is refused here."""
        self.server = server.rstrip("/")
        token = checked_token(token.strip()) if token else None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.server, headers=headers, timeout=TIMEOUT)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **options: Any) -> httpx.Response:
        """One request; a refusal or a server out of reach is a ServiceError."""
        try:
            response = self._http.request(method, path, **options)
        except httpx.TransportError as exc:
            raise ServiceError(f"cannot reach the evaluation service at {self.server} "
                               f"({exc or type(exc).__name__}); is `evalproto serve` running "
                               f"there? (--server or EVALPROTO_SERVER)") from None
        if response.status_code >= 400:
            try:
                message = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                message = f"HTTP {response.status_code} {response.reason_phrase}"
            raise ServiceError(str(message))
        return response

    def _json(self, method: str, path: str, **options: Any) -> Any:
        """One request's JSON answer."""
        return self._call(method, path, **options).json()

    def _upload(self, path: str, file: str, params: Dict[str, Any]) -> Any:
        """POST a file's bytes, refused here if the server would refuse its size."""
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise ServiceError(f"{file}: cannot read: {exc.strerror or exc}") from None
        limit = self._json("GET", paths.API)["max_upload"]
        if len(data) > limit:
            raise ServiceError(f"{file}: {len(data)} bytes, more than the server takes "
                               f"(--max-upload {limit})")
        params = {"filename": Path(file).name, **params}
        return self._json("POST", path, content=data, params=params,
                          headers={"Content-Type": "application/x-ndjson"})

    # -- the calls ----------------------------------------------------------------------
    # Names go into paths quoted (evalproto.service.paths): the server refuses a bad one
    # with its own message.

    def add_task(self, task: str, metrics: List[Dict[str, str]],
                 perf: Optional[str] = None, input_keys: Sequence[str] = (),
                 output_keys: Sequence[str] = (),
                 weights: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
        """Add a task with its metrics ([{"spec", "kind"}]), its models' I/O and its
        Dynaboard's weights."""
        return self._json("POST", paths.TASKS, json={
            "name": task, "metrics": metrics, "perf": perf, "input_keys": list(input_keys),
            "output_keys": list(output_keys), "weights": weights})

    def add_model(self, task: str, model: str, team: str, command: str,
                  timeout: Optional[float] = None, description: Optional[str] = None,
                  url: Optional[str] = None) -> Dict[str, Any]:
        """Add a model that the server runs for a team (with what it is and its link)."""
        return self._json("POST", paths.fill(paths.MODELS, task=task), json={
            "name": model, "team": team, "command": command, "timeout": timeout,
            "description": description, "url": url})

    def add_team(self, team: str) -> Dict[str, str]:
        """Add a team; the answer holds its token."""
        return self._json("POST", paths.TEAMS, json={"name": team})

    def add_dataset(self, task: str, dataset: str, file: str, round_: Optional[int] = None,
                    perturbation_of: Optional[str] = None,
                    kind: Optional[str] = None) -> Dict[str, Any]:
        """Add a dataset from a JSON Lines file (a perturbed copy of another, with
        `perturbation_of` and `kind`)."""
        given = {"round": round_, "perturbation_of": perturbation_of, "kind": kind}
        params = {name: value for name, value in given.items() if value is not None}
        return self._upload(paths.fill(paths.DATASET, task=task, dataset=dataset), file, params)

    def submit(self, task: str, model: str, dataset: str, file: str,
               description: Optional[str] = None, url: Optional[str] = None) -> Dict[str, Any]:
        """Submit a model's predictions from a JSON Lines file (with what the model is
        and its link, if given)."""
        given = {"description": description, "url": url}
        return self._upload(paths.fill(paths.SUBMISSIONS, task=task, dataset=dataset,
                                       model=model), file,
                            {name: value for name, value in given.items() if value is not None})

    def add_metric(self, task: str, spec: str, kind: str) -> Dict[str, Any]:
        """Add a metric to a task; the stored submissions are queued for it."""
        return self._json("POST", paths.fill(paths.TASK_METRICS, task=task),
                          json={"spec": spec, "kind": kind})

    def dynaboard(self, task: str, dataset: str,
                  weights: Optional[str] = None) -> Dict[str, Any]:
        """A dataset's Dynaboard, under these weights (metric=weight,...)."""
        params = {"weights": weights} if weights is not None else {}
        return self._json("GET", paths.fill(paths.DYNABOARD, task=task, dataset=dataset),
                          params=params)

    def leaderboard(self, task: str, dataset: Optional[str] = None) -> Dict[str, Any]:
        """A task's leaderboard (or one dataset's)."""
        params = {"dataset": dataset} if dataset else {}  # quoted by httpx
        return self._json("GET", paths.fill(paths.LEADERBOARD, task=task), params=params)

    def jobs(self, task: str) -> Dict[str, int]:
        """A task's jobs by state."""
        return self._json("GET", paths.task_jobs(task))

    def wait(self, task: str, timeout: Optional[float] = None) -> Optional[Dict[str, int]]:
        """Until no job of the task is queued or running (None), or for at most
        `timeout` seconds: then the jobs by state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            counts = self.jobs(task)
            if not counts["queued"] and not counts["running"]:
                return None
            if deadline is not None and time.monotonic() >= deadline:
                return counts
            time.sleep(WAIT_POLL if deadline is None
                       else max(0.0, min(WAIT_POLL, deadline - time.monotonic())))

    def export(self, task: str, dataset: str) -> Dict[str, Any]:
        """What an export of a dataset holds."""
        return self._json("GET", paths.fill(paths.EXPORT, task=task, dataset=dataset))

    def stats_file(self, task: str, dataset: str, model: str) -> str:
        """A model's stats file on a dataset, as text."""
        return self._call("GET", paths.stats_file(task, dataset, model)).text

    def board_file(self, task: str, dataset: str, board_format: str) -> str:
        """A dataset's leaderboard as a file's text: csv, latex or json."""
        return self._call("GET", paths.board_file(task, dataset, board_format)).text

    def take_snapshot(self, task: str) -> Dict[str, Any]:
        """Freeze a task's boards; the answer names the snapshot's id."""
        return self._json("POST", paths.fill(paths.SNAPSHOTS, task=task))

    def snapshots(self, task: str) -> List[Dict[str, Any]]:
        """A task's snapshots, oldest first: their ids and when each was taken."""
        return self._json("GET", paths.fill(paths.SNAPSHOTS, task=task))

    def snapshot(self, snapshot: int) -> Dict[str, Any]:
        """A snapshot: the task's leaderboard and Dynaboards as they were."""
        return self._json("GET", paths.snapshot(snapshot))


def checked_token(token: str) -> str:
    """`token`, if it can be one (the message never shows it)."""
    problem = token_problem(token)
    if problem is not None:
        raise ServiceError(f"the token (--token or EVALPROTO_TOKEN) is not a token: "
                           f"{problem}")
    return token
