"""The layers run one way (ARCHITECTURE.md): every import inside evalproto goes to the
same or a lower layer, and no modules import each other in a circle. An AST walk over
the sources, so that function-level imports count too."""

import ast
import configparser
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "evalproto"
LAYERS = ["base", "wire", "metrics", "evaluators", "readers", "perturb", "sources", "stats",
          "reports", "api", "service", "cli"]
"""Lowest first. `api` is evalproto/api/ and the package's __init__ (the public names)."""


def modules() -> Dict[str, Path]:
    """Every module of evalproto, by dotted name; the built-in evaluators live in the
    repository's evaluators/ folder and install as evalproto.evaluators."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in (ROOT / "evaluators").glob("*.py"):
        name = "evalproto.evaluators" + ("" if path.stem == "__init__" else f".{path.stem}")
        found[name] = path
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("api", "__main__"):
        return LAYERS.index("api" if parts[-1] != "__main__" else "cli")
    return LAYERS.index(parts[1])


def imports(module: str, path: Path, known: Set[str]) -> Set[str]:
    """The evalproto modules that `module` imports, wherever in the file."""
    found = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name.startswith("evalproto") and name != module:
                found.add(name)
    return found


def graph() -> Dict[str, Set[str]]:
    known = modules()
    return {module: imports(module, path, set(known)) for module, path in known.items()}


def test_every_import_goes_to_the_same_or_a_lower_layer():
    upward = [f"{module} ({LAYERS[layer(module)]}) imports {target} ({LAYERS[layer(target)]})"
              for module, targets in graph().items() for target in targets
              if target != "evalproto" and layer(target) > layer(module)]
    assert upward == []


def test_only_the_public_api_imports_the_package_itself():
    """`from evalproto import X` is the public API, for users and for the CLI."""
    inward = [module for module, targets in graph().items()
              if "evalproto" in targets and layer(module) < LAYERS.index("api")]
    assert inward == []


def test_no_circle_of_imports():
    edges = graph()
    circles: List[List[str]] = []
    state: Dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: List[str]) -> None:
        state[module] = 1
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_cli_uses_only_the_public_api_and_its_own_door():
    """The command line declares options and calls `evalproto`'s public names, what
    `evalproto.api.commandline` offers it beyond them, or the evaluation service it
    starts and is the client of (the launcher, which must start evaluators before
    anything slow, reaches the process utility directly)."""
    reaching = [f"{module} imports {target}" for module, targets in graph().items()
                if module.startswith("evalproto.cli") for target in targets
                if not target.startswith(("evalproto.cli", "evalproto.service"))
                and target not in ("evalproto", "evalproto.api.commandline")
                and not (module == "evalproto.cli.launch" and target == "evalproto.base.processes")]
    assert reaching == []


def test_the_door_of_the_command_line_leads_to_no_public_name():
    """A public name is reached as `evalproto.NAME`; the door holds only plumbing."""
    import evalproto
    import evalproto.api.commandline as door

    assert set(door.__all__) & set(evalproto.__all__) == set()


def test_every_subpackage_is_installed():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    declared = set(config["options"]["packages"].split())
    packages = {module for module, path in modules().items() if path.name == "__init__.py"}
    assert packages == declared


def test_messages_below_the_command_line_name_parameters_not_options():
    """An error or warning of the API or a layer below it names a setting as the Python
    caller knows it (`data_format`, which the command line turns into --data-format),
    never as a command-line option (`--data-format`, `-j`)."""
    import re

    option = re.compile(r"(?:^|[\s(])(?:--[a-z]|-[a-z]{1,3}\s)")
    examples = ("'bleu --tokenize intl'", "pip install -e .")  # a spec, a shell command
    found = []
    for module, path in modules().items():
        if layer(module) >= LAYERS.index("service") or module.endswith("wire.server"):
            continue  # the evaluators' own command line (wire.server) speaks of options
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if not (name.endswith(("Error", "Problem", "Warning")) or name == "warn"):
                continue
            for argument in node.args[:1]:
                for part in ast.walk(argument):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str) \
                            and option.search(part.value) and not any(
                                example in part.value for example in examples):
                        found.append(f"{module}:{node.lineno}: {part.value!r}")
    assert found == []


SERVICE = [["errors"], ["names", "paths", "weights"], ["schema"], ["database", "migrations"],
           ["results"], ["store"], ["jobstore", "auth", "loaded", "workers", "cache", "client"],
           ["standings", "measured"], ["deltas"], ["boards", "jobs"], ["exports", "dynaboard"],
           ["downloads", "snapshots"], ["context"],
           ["actions", "deps", "views"], ["forms", "dynaviews"], ["api", "pages"], ["app"],
           ["server"]]
"""The service's rooms, lowest first (ARCHITECTURE.md): the routes (api, pages) reach the
service through its dependencies (deps), write through the actions and read through the
boards (and exports), which alone use the queries (store, results, jobstore), which alone use the
schema and the database."""
ROUTES = ("api", "pages")
DATABASE = ("store", "results", "jobstore", "schema", "database")


def service_room(module: str) -> int:
    part = module.split(".")[2]
    return next(number for number, room in enumerate(SERVICE) if part in room)


def test_the_services_modules_import_one_way():
    service = {module: targets for module, targets in graph().items()
               if module.startswith("evalproto.service.")}
    assert {module.split(".")[2] for module in service} == {
        part for room in SERVICE for part in room}
    upward = [f"{module} imports {target}" for module, targets in service.items()
              for target in targets if target.startswith("evalproto.service.")
              and service_room(target) >= service_room(module)]
    assert upward == []


def test_no_module_that_declares_routes_speaks_to_the_database():
    reaching = [f"{module} imports {target}" for module, targets in graph().items()
                if module.split(".")[-1] in ROUTES and module.startswith("evalproto.service")
                for target in targets if target.split(".")[-1] in DATABASE]
    assert reaching == []
    declaring = [module for module, path in modules().items()
                 if module.startswith("evalproto.service") and "@router." in path.read_text()]
    assert sorted(declaring) == [f"evalproto.service.{name}" for name in ROUTES]
