"""Every write of the service, whichever door it comes in by (the JSON API or a page's
form): both call these functions, so that a form's refusal is the API's refusal, with
the same message (the line, the id, the name at fault), and nothing of a refused
request is stored. Each takes the identity (auth.Admin or auth.Team) that its door
made of a checked token: no write is made without one."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from evalproto.api.board import read_upload
from evalproto.base.errors import EvalprotoError, InputError
from evalproto.base.items import Item
from evalproto.base.numerals import to_json
from evalproto.readers.datasets import read_copies, read_inputs
from evalproto.reports.statsfiles import check_ids
from evalproto.service import auth, store
from evalproto.service.boards import task_record
from evalproto.service.context import Service
from evalproto.service.database import content_hash, reading, writing
from evalproto.service.deltas import DELTA_METRICS
from evalproto.service.errors import Invalid
from evalproto.service.measured import MEASURED
from evalproto.service.names import (
    About,
    check_keys,
    check_name,
    upload_name,
)
from evalproto.service.snapshots import snapshot_record
from evalproto.sources.models import model_argv
from evalproto.sources.specs import MetricSpec
from evalproto.wire.protocol import format_score_requests

PERTURBATIONS = DELTA_METRICS
"""The kinds of perturbed copy, each a delta metric of its original's board."""
WEIGHABLE = (*MEASURED, *DELTA_METRICS)
"""What a Dynaboard weighs besides the task's metrics."""
MAX_TIMEOUT = 86400.0
"""The longest --timeout a model may have: a day for one reply."""


def add_task(service: Service, admin: auth.Admin, name: str, specs: List[MetricSpec],
             perf: Optional[str], input_keys: Sequence[str] = (),
             output_keys: Sequence[str] = (),
             weights: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
    """Add a task with its metrics (the first ranks, unless `perf` names another), the
    I/O of the models the server runs for it (the keys of a dataset's rows a model
    receives, and the keys its replies carry besides "id" and "pred"), and its
    Dynaboard's default weights."""
    check_name(name, "task")
    check_keys(input_keys, "input")
    check_keys(output_keys, "output")
    repeated = [spec.spec for spec in specs if specs.count(spec) > 1]
    if repeated:
        raise Invalid(f"the metric {repeated[0]!r} is given twice")
    perf = perf if perf is not None else specs[0].spec
    if perf not in [spec.spec for spec in specs]:
        raise Invalid(f"the perf metric {perf!r} is not one of the task's metrics "
                      f"({', '.join(spec.spec for spec in specs)})")
    if weights is not None:
        weighable = [spec.spec for spec in specs] + list(WEIGHABLE)
        unknown = [metric for metric in weights if metric not in weighable]
        if unknown:
            raise Invalid(f"weights: {unknown[0]!r} is neither a metric of the task nor one "
                          f"of {', '.join(WEIGHABLE)}")
        if any(not 0 <= weight < float("inf") for weight in weights.values()) or \
                not sum(weights.values()) > 0:
            raise Invalid("weights: each weight is 0 or more, and not all are 0")
    entries = [service.loaded.entry(spec) for spec in specs]
    with writing(service.engine) as connection:
        store.add_task(connection, name, entries, perf, input_keys, output_keys, weights)
        task = store.task(connection, name)
        return task_record(task, store.task_metrics(connection, task.id), [])


def add_model(service: Service, admin: auth.Admin, task: str, name: str, team: str,
              command: str, timeout: Optional[float],
              about: Optional[About] = None) -> Dict[str, Any]:
    """Add a model that the server runs for a team (its command runs as the server's
    user: only the admin adds one), and queue its run on every dataset of the task.
    `timeout` is the longest wait for one of its replies, in seconds; `about`, its
    description and link."""
    check_name(task, "task")
    check_name(name, "model")
    check_name(team, "team")
    try:
        model_argv(command)
    except EvalprotoError as exc:
        raise Invalid(f"command: {exc}") from None
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT:
        raise Invalid(f"timeout: {timeout!r} is not a number of seconds from 0 to "
                      f"{MAX_TIMEOUT:g}")
    with writing(service.engine) as connection:
        row = store.task(connection, task)
        owner = store.team(connection, team)
        _, queued = store.add_model(connection, row.id, owner.id, name, command, timeout,
                                    about and about.checked())
    service.wake()
    return {"task": task, "model": name, "team": team, "timeout": timeout, "runs": queued}


def add_team(service: Service, admin: auth.Admin, name: str) -> Dict[str, str]:
    """Add a team; the answer holds its token, shown this once."""
    check_name(name, "team")
    token = auth.new_token()
    with writing(service.engine) as connection:
        store.add_team(connection, name, auth.token_hash(token))
    return {"team": name, "token": token}


def add_metric(service: Service, admin: auth.Admin, task: str,
               spec: MetricSpec) -> Dict[str, Any]:
    """Add a metric to a task: every stored submission is queued for it."""
    check_name(task, "task")
    with reading(service.engine) as connection:
        store.task(connection, task)  # an unknown task before a metric is loaded
    entry = service.loaded.entry(spec)
    with writing(service.engine) as connection:
        row = store.task(connection, task)
        queued = store.add_metric(connection, row.id, entry)
    service.wake()
    return {"task": task, "metric": entry.spec, "name": entry.name,
            "signature": entry.signature, "queued": queued}


def add_dataset(service: Service, admin: auth.Admin, task: str, dataset: str, data: bytes,
                round_: Optional[int], filename: Optional[str],
                perturbation_of: Optional[str] = None,
                kind: Optional[str] = None) -> Dict[str, Any]:
    """Add a dataset to a task, from its JSON Lines; with `perturbation_of`, a perturbed
    copy of another of its datasets (each row's input_id names the original's row it
    copies), whose `kind` (fairness, robustness) the original's board gains."""
    check_name(task, "task")
    check_name(dataset, "dataset")
    name = upload_name(filename, f"{dataset}.jsonl")
    corpus = read(name, data)
    try:  # an id that an export's stats files could not hold
        check_ids(corpus.ids)
    except EvalprotoError as exc:
        raise Invalid(f"{name}: {exc}") from None
    tags = sorted({tag for segment in corpus.tags or [] for tag in segment})
    with reading(service.engine) as connection:
        row = store.task(connection, task)
        input_keys, _ = store.task_io(row)
        original = _original(connection, row.id, perturbation_of, kind)
        original_data = store.dataset_data(connection, original.id) if original else None
    try:
        if input_keys:  # every row holds what a model receives
            read_inputs(name, input_keys, {name: data})
        if original_data is not None:  # every row copies one of the original's
            original_name = f"{perturbation_of}.jsonl"
            read_copies(name, read(original_name, original_data).ids, {name: data})
    except EvalprotoError as exc:
        raise Invalid(str(exc)) from None
    with writing(service.engine) as connection:
        row = store.task(connection, task)
        runs = store.add_dataset(connection, row.id, dataset, round_, data, len(corpus.ids),
                                 corpus.nrefs, original.id if original else None, kind)
    service.wake()
    return {"task": task, "dataset": dataset, "round": round_, "examples": len(corpus.ids),
            "nrefs": corpus.nrefs, "tags": tags, "content_hash": content_hash(data),
            "perturbation_of": perturbation_of, "kind": kind, "runs": runs}


def _original(connection: Any, task_id: int, name: Optional[str],
              kind: Optional[str]) -> Any:
    """The dataset a perturbed copy copies (None for a dataset of its own), checked:
    one of the task's, no copy itself, without a copy of that kind yet."""
    if (name is None) != (kind is None):
        raise Invalid("a perturbed dataset names both the dataset it copies "
                      "(perturbation_of) and its kind (fairness or robustness)")
    if name is None:
        return None
    if kind not in PERTURBATIONS:
        raise Invalid(f"kind: {kind!r} is neither {' nor '.join(PERTURBATIONS)}")
    original = store.dataset(connection, task_id, check_name(name, "dataset"))
    if original.perturbation_of is not None:
        raise Invalid(f"the dataset {name!r} is itself a perturbed copy: name the original")
    taken = [copy.name for copy in store.dataset_copies(connection, original.id)
             if copy.kind == kind]
    if taken:
        raise Invalid(f"the dataset {name!r} has a {kind} copy already: {taken[0]!r}")
    return original


def take_snapshot(service: Service, admin: auth.Admin, task: str) -> Dict[str, Any]:
    """Keep a frozen copy of the task's boards as they are now (see evalproto.service.
    snapshots), stored whole in one statement or not at all.

    Only the admin takes one: a snapshot is a permanent record that the task's page
    lists as the organisers' ("frozen"), cited by papers and kept at a round's end.
    Anyone may save the public leaderboard's JSON for themselves; a team that could
    take official snapshots could pick the moment that flatters it, or fill the page."""
    frozen = service.snapshots.boards_now(check_name(task, "task"))
    data = to_json(frozen).encode("utf-8")
    with writing(service.engine) as connection:
        row = store.task(connection, task)
        taken = store.add_snapshot(connection, row.id, data)
    return snapshot_record(taken.id, task, taken.created)


def submit(service: Service, team: auth.Team, task: str, dataset: str, model: str,
           data: bytes, filename: Optional[str],
           about: Optional[About] = None) -> Dict[str, Any]:
    """Submit a model's predictions on a dataset, as the team (`about`: what it says
    of the model, shown beside it on the boards)."""
    for value, what in ((task, "task"), (dataset, "dataset"), (model, "model")):
        check_name(value, what)
    about = about and about.checked()
    with reading(service.engine) as connection:
        row = store.task(connection, task)
        found = store.dataset(connection, row.id, dataset)
        dataset_bytes = store.dataset_data(connection, found.id)
        metrics = store.task_metrics(connection, row.id)
    name = upload_name(filename, f"{model}.jsonl")
    if name == f"{dataset}.jsonl":
        name = f"predictions {name}"
    corpus = read(f"{dataset}.jsonl", dataset_bytes, (name, data))
    if any(metric.kind == "command" for metric in metrics):
        check_sendable(name, corpus)
    with writing(service.engine) as connection:
        submission, queued = store.submit(connection, row.id, team.id, model, found.id, data,
                                          about)
    service.wake()
    return {"submission": submission, "task": task, "dataset": dataset, "model": model,
            "team": team.name, "predictions": found.examples, "queued": queued}


def check_sendable(name: str, corpus: Any) -> None:
    """Refuse predictions that an evaluator command's protocol cannot carry (a newline,
    "|||", a lone surrogate): their job would fail."""
    hyps = next(iter(corpus.systems.values()))
    try:
        format_score_requests([Item(tuple(refs), hyp) for refs, hyp in zip(corpus.refs, hyps)])
    except InputError as exc:
        where = f"id {corpus.ids[exc.item]!r}" if exc.item is not None else "a prediction"
        raise Invalid(f"{name}: the prediction for {where} cannot be scored by the task's "
                      f"evaluator command: {exc.problem}") from None


def read(name: str, data: bytes, predictions: Optional[Tuple[str, bytes]] = None) -> Any:
    """An upload read as corpus-score reads the file; an error names its line or id."""
    try:
        return read_upload((name, data), predictions)
    except EvalprotoError as exc:
        raise Invalid(str(exc)) from None
