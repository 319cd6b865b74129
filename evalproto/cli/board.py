"""`evalproto board ...`: the evaluation service's client. Each command is one request
(see evalproto.service.client); what the server refuses is one `Error:` line, exit 1.

Imported only when run or listed (cli.main's LAZY_COMMANDS); httpx only when a command
runs.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import click

from evalproto.api import commandline as api
from evalproto.cli.options import CONTEXT, Decimals, WholeNumbers, apply, reports_errors
from evalproto.service.names import check_name

DEFAULT_SERVER = "http://127.0.0.1:8000"
EXPORT_FORMATS = ("stats", "csv", "latex", "json")
EXTRA = "pip install 'evalproto[serve]'"


def _client(server: str, token: Optional[str]) -> Any:
    try:
        from evalproto.service.client import Client
    except ImportError as exc:
        raise click.ClickException(f"evalproto board needs the serve extra ({exc.name} is "
                                   f"not installed): {EXTRA}") from None
    return Client(server, token or None)


def _keys(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> List[str]:
    """A comma-separated list of keys (the server says which it takes)."""
    return [key.strip() for key in value.split(",")] if value else []


def _weights(ctx: click.Context, param: click.Parameter,
             value: Optional[str]) -> Optional[Dict[str, float]]:
    """Weights as METRIC=W,... (a usage error otherwise)."""
    if value is None:
        return None
    from evalproto.service.errors import Invalid
    from evalproto.service.weights import parse_weights

    try:
        return parse_weights(value)
    except Invalid as exc:
        raise click.BadParameter(str(exc).removeprefix("weights: ")) from None


def server_options(command: Callable) -> Callable:
    """--server and --token, from the environment by default."""
    return apply([
        click.option("--server", envvar="EVALPROTO_SERVER", default=DEFAULT_SERVER,
                     show_default=True, metavar="URL",
                     help="The evaluation service (or EVALPROTO_SERVER)."),
        click.option("--token", envvar="EVALPROTO_TOKEN", metavar="TOKEN",
                     help="The admin's or a team's token (or EVALPROTO_TOKEN); reads need "
                          "none."),
    ], command)


@click.group("board", context_settings=CONTEXT)
def command() -> None:
    """Use an evaluation service (`evalproto serve`): add tasks, teams, datasets and
    metrics (admin token), submit predictions (a team's token), read leaderboards,
    export them and freeze them in snapshots."""


@command.command("add-task", context_settings=CONTEXT)
@click.argument("task")
@click.option("-m", "--metric", "metrics", multiple=True, metavar="SPEC",
              help='A built-in metric, e.g. bleu or "chrf --word-order 2". Repeatable.')
@click.option("-e", "--evaluator", "evaluators", multiple=True, metavar="CMD",
              help="An evaluator command spoken to over the protocol (run by the "
                   "server). Repeatable.")
@click.option("--perf", metavar="SPEC",
              help="The metric that ranks the models (default: the first).")
@click.option("--input-keys", metavar="KEY,...", callback=_keys,
              help="The keys of a dataset's rows that a model the server runs receives "
                   "(with the row's id); every row of the task's datasets must hold them.")
@click.option("--output-keys", metavar="KEY,...", callback=_keys,
              help="The keys a model's reply must carry besides id and pred.")
@click.option("--weights", metavar="METRIC=W,...", callback=_weights,
              help="The Dynaboard's default weights (default: the perf metric 4, every "
                   "other metric 1).")
@server_options
@reports_errors
def add_task(task: str, metrics: Tuple[str, ...], evaluators: Tuple[str, ...],
             perf: Optional[str], input_keys: List[str], output_keys: List[str],
             weights: Optional[Dict[str, float]], server: str, token: Optional[str]) -> None:
    """Add a task scored by one or more metrics (admin), and the I/O of the models the
    server runs for it."""
    given = ([{"spec": spec, "kind": "in-process"} for spec in metrics]
             + [{"spec": spec, "kind": "command"} for spec in evaluators])
    if not given:
        raise click.UsageError("name the task's metrics with --metric (or -e)")
    with _client(server, token) as client:
        found = client.add_task(task, given, perf, input_keys, output_keys, weights)
    names = ", ".join(f"{metric['metric']} ({metric['name']})" for metric in found["metrics"])
    io = (f" Models receive {', '.join(found['input_keys'])} and reply with pred"
          f"{''.join(', ' + key for key in found['output_keys'])}."
          if found["input_keys"] else "")
    click.echo(f"Task {found['task']}: {names}; ranked by {found['perf']}.{io}")


def about_options(command: Callable) -> Callable:
    """--description and --url: what a team says of its model, shown beside it."""
    command = click.option(
        "--url", metavar="URL",
        help="A link to the model's paper or code (http or https; \"\" removes it).")(command)
    return click.option(
        "--description", metavar="TEXT",
        help="What the model is, in a line, shown beside it on the boards (\"\" removes "
             "it; without the option it is left as it is).")(command)


@command.command("add-model", context_settings=CONTEXT)
@click.argument("task")
@click.argument("model")
@click.option("--team", required=True, help="The team whose model it is.")
@click.option("--command", "program", required=True, metavar="CMD",
              help="The program the server runs (as its own user): it reads an example a "
                   "line, JSON, and writes a reply a line (docs/models.md).")
@click.option("--timeout", type=Decimals(min=0, min_open=True), metavar="SECONDS",
              help="The longest wait for one of its replies (default: none).")
@about_options
@server_options
@reports_errors
def add_model(task: str, model: str, team: str, program: str, timeout: Optional[float],
              description: Optional[str], url: Optional[str], server: str,
              token: Optional[str]) -> None:
    """Add a model that the server runs for a team (admin): it runs on every dataset
    of the task, and on each one added later; its predictions are scored as a team's."""
    with _client(server, token) as client:
        found = client.add_model(task, model, team, program, timeout, description, url)
    click.echo(f"Model {found['model']} ({found['team']}) added to task {found['task']}; "
               f"{_count(found['runs'], 'run')} queued.")


@command.command("add-team", context_settings=CONTEXT)
@click.argument("team")
@server_options
@reports_errors
def add_team(team: str, server: str, token: Optional[str]) -> None:
    """Add a team (admin) and print its token, shown this once: the team submits with it."""
    with _client(server, token) as client:
        found = client.add_team(team)
    click.echo(f"Team {found['team']} added; its token follows (shown this once):", err=True)
    click.echo(found["token"])


@command.command("add-dataset", context_settings=CONTEXT)
@click.argument("task")
@click.argument("dataset")
@click.argument("file", metavar="FILE")
@click.option("--round", "round_", type=WholeNumbers(min=0),
              help="The round the dataset belongs to.")
@click.option("--perturbation-of", metavar="DATASET",
              help="A perturbed copy of this dataset of the task (evalproto perturb): "
                   "each row's input_id names the row it copies.")
@click.option("--kind", type=click.Choice(["fairness", "robustness"]),
              help="With --perturbation-of: what the copy measures, a metric of the "
                   "original's board.")
@server_options
@reports_errors
def add_dataset(task: str, dataset: str, file: str, round_: Optional[int],
                perturbation_of: Optional[str], kind: Optional[str], server: str,
                token: Optional[str]) -> None:
    """Add a dataset to a task (admin). FILE is JSON Lines: {"uid" or "id", "answer": a
    reference or a list of references, "tags": [...]} per example."""
    if (perturbation_of is None) != (kind is None):
        raise click.UsageError("a perturbed copy takes both --perturbation-of and --kind")
    with _client(server, token) as client:
        found = client.add_dataset(task, dataset, file, round_, perturbation_of, kind)
    tags = f", {len(found['tags'])} tags" if found["tags"] else ""
    shown_round = f", round {found['round']}" if found["round"] is not None else ""
    references = "reference" if found["nrefs"] == 1 else "references"
    each = "each" if isinstance(found["nrefs"], int) else "(a varying number)"
    runs = (f"; {_count(found['runs'], 'run')} of the task's models queued" if found["runs"]
            else "")
    if found.get("perturbation_of"):
        shown_round += f", a {found['kind']} copy of {found['perturbation_of']}"
    click.echo(f"Dataset {found['dataset']} of task {found['task']}: {found['examples']} "
               f"examples, {found['nrefs']} {references} {each}{tags}{shown_round}{runs}.")


@command.command("submit", context_settings=CONTEXT)
@click.argument("task")
@click.argument("model")
@click.argument("dataset")
@click.argument("file", metavar="FILE")
@about_options
@server_options
@reports_errors
def submit(task: str, model: str, dataset: str, file: str, description: Optional[str],
           url: Optional[str], server: str, token: Optional[str]) -> None:
    """Submit a model's predictions on a dataset (a team's token). FILE is JSON Lines:
    {"id", "pred"} for every example. A model's new submission replaces its entry."""
    with _client(server, token) as client:
        found = client.submit(task, model, dataset, file, description, url)
    click.echo(f"Submission {found['submission']}: {found['model']} ({found['team']}) on "
               f"{found['dataset']}, {found['predictions']} predictions; "
               f"{_jobs(found['queued'])} queued.")


@command.command("add-metric", context_settings=CONTEXT)
@click.argument("task")
@click.argument("spec", required=False)
@click.option("-e", "--evaluator", metavar="CMD",
              help="An evaluator command instead of a built-in SPEC.")
@server_options
@reports_errors
def add_metric(task: str, spec: Optional[str], evaluator: Optional[str], server: str,
               token: Optional[str]) -> None:
    """Add a metric to a task (admin): every stored submission is scored with it."""
    if (spec is None) == (evaluator is None):
        raise click.UsageError("give the metric's SPEC (e.g. ter), or a command with -e")
    with _client(server, token) as client:
        found = client.add_metric(task, spec or evaluator,
                                  "in-process" if spec else "command")
    click.echo(f"Metric {found['metric']} ({found['name']}) added to task {found['task']}; "
               f"{_jobs(found['queued'])} queued for the stored submissions.")


def wait_options(command: Callable) -> Callable:
    """--wait and --wait-timeout: first wait for the task's jobs to end."""
    command = click.option(
        "--wait-timeout", type=Decimals(min=0, min_open=True), default=None,
        metavar="SECONDS", help="With --wait: give up after this long (exit status 1). "
                                "[default: wait for as long as it takes]")(command)
    return click.option("--wait", is_flag=True, help="First wait until no job of the task "
                                                     "is queued or running.")(command)


def _wait(client: Any, task: str, wait: bool, wait_timeout: Optional[float]) -> None:
    """Wait for the task's jobs to end, if asked (within `wait_timeout`)."""
    if wait_timeout is not None and not wait:
        raise click.UsageError("--wait-timeout goes with --wait")
    if wait:
        left = client.wait(task, wait_timeout)
        if left is not None:
            raise click.ClickException(
                f"the jobs of {task!r} did not end within {wait_timeout:g} s "
                f"({left['queued']} queued, {left['running']} running)")


@command.command("leaderboard", context_settings=CONTEXT)
@click.argument("task")
@click.argument("dataset", required=False)
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True,
              help="json: one object per (model, dataset, metric).")
@click.option("-w", "--width", type=WholeNumbers(min=0, max=99), default=1,
              show_default=True, help="Decimals of the scores in the text table.")
@click.option("--snapshot", type=WholeNumbers(min=0), metavar="ID",
              help="The leaderboard as snapshot ID froze it (evalproto board snapshot), "
                   "not as it is now.")
@wait_options
@server_options
@reports_errors
def leaderboard(task: str, dataset: Optional[str], output_format: str, width: int,
                snapshot: Optional[int], wait: bool, wait_timeout: Optional[float],
                server: str, token: Optional[str]) -> None:
    """Print a task's leaderboard (of one dataset, or of all): every model's score with
    its 95% bootstrap interval, its rank range from the all-pairs test, and its
    per-tag scores, sorted by the task's perf metric."""
    if snapshot is not None and wait:
        raise click.UsageError("--snapshot shows a frozen board: it has no jobs to --wait "
                               "for")
    with _client(server, token) as client:
        _wait(client, task, wait, wait_timeout)
        board = (client.leaderboard(task, dataset) if snapshot is None
                 else _frozen(client, task, dataset, snapshot))
    if output_format == "json":
        text = api.json_lines([entry for section in board["datasets"]
                               for entry in section["entries"]])
    else:
        text = api.format_leaderboard(board, width)
    click.echo(text, nl=False)


@command.command("dynaboard", context_settings=CONTEXT)
@click.argument("task")
@click.argument("dataset")
@click.option("--weights", metavar="METRIC=W,...",
              help="Each metric's weight, e.g. exact-match=4,throughput=1,memory=1 "
                   "(default: the task's, else the perf metric 4 and every other 1).")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True,
              help='json: one object per model: "model", "dynascore", "interval", ...')
@click.option("-w", "--width", type=WholeNumbers(min=0, max=99), default=1,
              show_default=True, help="Decimals of the figures in the text table.")
@wait_options
@server_options
@reports_errors
def dynaboard(task: str, dataset: str, weights: Optional[str], output_format: str,
              width: int, wait: bool, wait_timeout: Optional[float], server: str,
              token: Optional[str]) -> None:
    """Print a dataset's Dynaboard: each model's Dynascore (Dynabench's, weighing the
    perf metric against fairness, robustness, throughput and memory) with its 95%
    bootstrap interval, best first."""
    with _client(server, token) as client:
        _wait(client, task, wait, wait_timeout)
        board = client.dynaboard(task, dataset, weights)
    if output_format == "json":
        text = api.json_lines(board["models"])
    else:
        text = api.format_dynaboard(board, width)
    click.echo(text, nl=False)


def _frozen(client: Any, task: str, dataset: Optional[str], snapshot: int) -> Dict[str, Any]:
    """A snapshot's leaderboard (of one dataset, or of all), checked to be the task's."""
    board: Dict[str, Any] = client.snapshot(snapshot)
    if board["task"] != task:
        raise click.ClickException(f"snapshot {snapshot} is of task {board['task']!r}, not "
                                   f"{task!r}")
    if dataset is not None:
        board["datasets"] = [found for found in board["datasets"]
                             if found["dataset"] == dataset]
        if not board["datasets"]:
            raise click.ClickException(f"snapshot {snapshot} of {task!r} has no dataset "
                                       f"{dataset!r}")
    return board


@command.command("snapshot", context_settings=CONTEXT)
@click.argument("task")
@wait_options
@server_options
@reports_errors
def snapshot(task: str, wait: bool, wait_timeout: Optional[float], server: str,
             token: Optional[str]) -> None:
    """Freeze a task's boards as they are now (admin): its leaderboard and each
    dataset's Dynaboard, kept unchanged by later submissions, listed on the task's page
    (its own page: /snapshots/ID). Prints the snapshot's id."""
    with _client(server, token) as client:
        _wait(client, task, wait, wait_timeout)
        found = client.take_snapshot(task)
    click.echo(f"Snapshot {found['id']} of task {found['task']} taken at {found['taken']}; "
               f"its id follows.", err=True)
    click.echo(found["id"])


@command.command("snapshots", context_settings=CONTEXT)
@click.argument("task")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True,
              help='json: one object per snapshot: "id", "task", "taken".')
@server_options
@reports_errors
def snapshots(task: str, output_format: str, server: str, token: Optional[str]) -> None:
    """List a task's snapshots, oldest first: each one's id and when it was taken
    (UTC). `evalproto board leaderboard TASK --snapshot ID` prints one."""
    with _client(server, token) as client:
        found = client.snapshots(task)
    if output_format == "json":
        text = api.json_lines(found)
    elif found:
        text = "".join(f"{record['id']}\t{record['taken']}\n" for record in found)
    else:
        text = f"No snapshot of {task} yet.\n"
    click.echo(text, nl=False)


@command.command("export", context_settings=CONTEXT)
@click.argument("task")
@click.argument("dataset")
@click.option("-f", "--format", "export_format", type=click.Choice(EXPORT_FORMATS),
              default="stats", show_default=True,
              help="stats: each model's stats file, MODEL.stats in the directory -o; csv, "
                   "latex (a tabular) or json: the dataset's leaderboard as one file.")
@click.option("-o", "--output", required=True, metavar="DIR|FILE",
              help="--format stats: the directory to write the stats files into (made if "
                   "need be); else the file to write (- for standard output).")
@server_options
@reports_errors
def export(task: str, dataset: str, export_format: str, output: str, server: str,
           token: Optional[str]) -> None:
    """Write a dataset's leaderboard: each model's stats file (for `evalproto reduce`
    and `evalproto report --stats`), or the board as CSV, a LaTeX tabular or JSON: a
    row per model with its rank, team, each metric's score with the half width of its
    95% bootstrap interval, the Dynascore with its interval where the dataset has a
    Dynaboard, and the submission with its time."""
    if export_format == "stats":
        if output == "-":
            raise click.UsageError("--format stats writes a file per model into a "
                                   "directory; -o - takes --format csv, latex or json")
        _export_stats(task, dataset, output, server, token)
        return
    if os.path.isdir(output):
        raise click.UsageError(f"{output} is a directory; --format {export_format} writes "
                               f"one file: name it (or - for standard output)")
    with _client(server, token) as client:
        text = client.board_file(task, dataset, export_format)
    api.write_output(output, text)
    if output != "-":
        click.echo(f"Wrote the leaderboard of {task} / {dataset} as {export_format} to "
                   f"{output}.", err=True)


def _export_stats(task: str, dataset: str, directory: str, server: str,
                  token: Optional[str]) -> None:
    """Write each model's stats file of a dataset into `directory`."""
    with _client(server, token) as client:
        plan = client.export(task, dataset)
        for model in plan["models"]:  # a file is named after each: no path from a server
            check_name(model, "model")
        texts = {model: client.stats_file(task, dataset, model) for model in plan["models"]}
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(f"{directory}: cannot make the directory: "
                                   f"{exc.strerror or exc}") from None
    for model, text in texts.items():
        api.write_output(os.path.join(directory, f"{model}.stats"), text)
    click.echo(f"Wrote {len(texts)} stats files to {directory} ({', '.join(plan['metrics'])})."
               + (f" Not every model is scored yet with: {', '.join(plan['left_out'])}."
                  if plan["left_out"] else "")
               + (f" Left out, their scoring failed: {', '.join(plan['failed_models'])}."
                  if plan.get("failed_models") else ""))


def _jobs(count: int) -> str:
    return _count(count, "scoring job")


def _count(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"
