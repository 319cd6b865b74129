"""What the service does for a request that writes, whichever door it comes in by: the
JSON API or a page's form. Both call these functions, so a form's refusal is the API's
refusal, with the same message (the line, the id, the name at fault), and nothing of a
refused request is stored."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from evalproto.api.board import read_upload
from evalproto.base.errors import EvalprotoError, InputError
from evalproto.base.items import Item
from evalproto.reports.statsfiles import check_ids
from evalproto.service import auth, store
from evalproto.service.context import Service
from evalproto.service.errors import Invalid
from evalproto.service.names import check_name, upload_name
from evalproto.sources.specs import MetricSpec
from evalproto.wire.protocol import format_score_requests


def add_metric(service: Service, token: Optional[str], task: str,
               spec: MetricSpec) -> Dict[str, Any]:
    """Add a metric to a task (admin): every stored submission is queued for it."""
    auth.require_admin(token, service.admin, "adding a metric")
    check_name(task, "task")
    with store.reading(service.engine) as connection:
        store.task(connection, task)  # an unknown task before a metric is loaded
    entry = service.boards.entry(spec)
    with store.writing(service.engine) as connection:
        row = store.task(connection, task)
        queued = store.add_metric(connection, row.id, entry)
    service.wake()
    return {"task": task, "metric": entry.spec, "name": entry.name,
            "signature": entry.signature, "queued": queued}


def add_dataset(service: Service, token: Optional[str], task: str, dataset: str,
                data: bytes, round_: Optional[int], filename: Optional[str]
                ) -> Dict[str, Any]:
    """Add a dataset to a task (admin), from its JSON Lines."""
    auth.require_admin(token, service.admin, "adding a dataset")
    check_name(task, "task")
    check_name(dataset, "dataset")
    name = upload_name(filename, f"{dataset}.jsonl")
    corpus = read(name, data)
    try:  # an id that an export's stats files could not hold
        check_ids(corpus.ids)
    except EvalprotoError as exc:
        raise Invalid(f"{name}: {exc}") from None
    tags = sorted({tag for segment in corpus.tags or [] for tag in segment})
    with store.writing(service.engine) as connection:
        row = store.task(connection, task)
        store.add_dataset(connection, row.id, dataset, round_, data, len(corpus.ids),
                          corpus.nrefs)
    return {"task": task, "dataset": dataset, "round": round_, "examples": len(corpus.ids),
            "nrefs": corpus.nrefs, "tags": tags, "content_hash": store.content_hash(data)}


def submit(service: Service, token: Optional[str], task: str, dataset: str, model: str,
           data: bytes, filename: Optional[str]) -> Dict[str, Any]:
    """Submit a model's predictions on a dataset (the team's token)."""
    for value, what in ((task, "task"), (dataset, "dataset"), (model, "model")):
        check_name(value, what)
    team = auth.team_of(service.engine, token, service.admin)
    with store.reading(service.engine) as connection:
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
    with store.writing(service.engine) as connection:
        submission, queued = store.submit(connection, row.id, team, model, found.id, data)
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


def all_tasks(service: Service) -> List[Dict[str, Any]]:
    """Every task with its metrics, datasets and number of models."""
    with store.reading(service.engine) as connection:
        return [task_record(task, store.task_metrics(connection, task.id),
                            store.task_datasets(connection, task.id))
                for task in store.all_tasks(connection)]


def task_record(task: Any, metrics: List[Any], datasets: List[Any]) -> Dict[str, Any]:
    return {"task": task.name, "perf": task.perf, "created": store.iso_time(task.created),
            "metrics": [{"metric": metric.spec, "kind": metric.kind, "name": metric.name,
                         "signature": metric.signature,
                         "higher_is_better": metric.higher_is_better} for metric in metrics],
            "datasets": [dataset_record(dataset) for dataset in datasets]}


def dataset_record(dataset: Any) -> Dict[str, Any]:
    return {"dataset": dataset.name, "round": dataset.round, "examples": dataset.examples,
            "nrefs": dataset.nrefs, "content_hash": dataset.content_hash,
            "created": store.iso_time(dataset.created)}
