"""The packages import only downward and no module imports in a cycle (STYLE.md: the layers).

Read from the code's own import statements, every one of them: at the top of a module, inside a
function, under `if TYPE_CHECKING:`. A cycle dodged by an import inside a function or by a
type-only import is still a cycle: it means a type or a function sits in the wrong layer.
In the spirit of Tornado's test/import_test.py, each module must also import on its own.
Inside tornchat too: the Server below base, base below the handlers, the handlers below the route
table and app; tornchat/events/ below all of HTTP, its modules in the order its __init__.py gives.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = ["storage", "scheduler", "tornchat"]  # bottom up: each imports only those before it
# storage's packages, bottom up (docs/design.md: the module map).
STORAGE_LAYERS = [
    "db", "model", "cache", "text", "media", "org", "channels", "fetch", "push", "messages", "membership", "register",
]  # fmt: skip
# Imports inside functions are allowed here only: the command line loads what a command needs (start-up time).
LAZY_IMPORTERS = {"tornchat.cli"}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    in_function: bool


def module_files() -> dict[str, Path]:
    found = {}
    for top in TOP_LEVEL:
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name lives in (a name inside a module resolves to the module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [f"{module}.{alias.name}" for alias in node.names]


def import_edges(modules: dict[str, Path]) -> list[Edge]:
    edges = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        in_functions = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for imported in _imported_names(node, package):
                    target = _resolve(imported, modules)
                    if target is not None and target != name and not name.startswith(target + "."):
                        edges.append(Edge(name, target, node.lineno, id(node) in in_functions))
    return edges


MODULES = module_files()
EDGES = import_edges(MODULES)


def strongly_connected(nodes: list[str], edges: list[Edge]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the strongly connected components with more than one module."""
    graph: dict[str, list[str]] = {node: [] for node in nodes}
    for edge in edges:
        graph[edge.importer].append(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph[successor])))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def storage_layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "storage" or len(parts) < 2:
        return None
    return STORAGE_LAYERS.index(parts[1]) if parts[1] in STORAGE_LAYERS else None


def test_no_module_imports_in_a_cycle():
    cycles = strongly_connected(sorted(MODULES), EDGES)
    assert cycles == [], f"import cycles: {cycles}"


def test_no_package_imports_in_a_cycle():
    def package(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if parts[0] == "storage" and len(parts) > 2 else parts[0]

    packages = sorted({package(module) for module in MODULES})
    edges = [Edge(package(e.importer), package(e.imported), e.line, e.in_function) for e in EDGES]
    edges = [edge for edge in edges if edge.importer != edge.imported]
    cycles = strongly_connected(packages, edges)
    assert cycles == [], f"package cycles: {cycles}"


def test_no_project_imports_inside_functions():
    inside = [f"{e.importer}:{e.line} imports {e.imported}" for e in EDGES if e.in_function]
    inside = [line for line in inside if line.split(":")[0] not in LAZY_IMPORTERS]
    assert inside == []


def test_top_level_packages_import_only_downward():
    upward = [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in EDGES
        if TOP_LEVEL.index(e.imported.split(".")[0]) > TOP_LEVEL.index(e.importer.split(".")[0])
    ]
    assert upward == []


def test_storage_and_scheduler_know_nothing_of_tornado():
    found = []
    for name, path in MODULES.items():
        if name.split(".")[0] in ("storage", "scheduler"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = _imported_names(node, name)
                    found += [f"{name}:{node.lineno}" for imported in names if imported.split(".")[0] == "tornado"]
    assert found == []


def test_every_storage_module_sits_in_a_layer():
    loose = [name for name in MODULES if name.startswith("storage.") and storage_layer(name) is None]
    assert loose == [], "every storage module belongs to a package named in STORAGE_LAYERS"


def test_storage_packages_import_only_downward():
    upward = [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in EDGES
        if (low := storage_layer(e.importer)) is not None
        and (high := storage_layer(e.imported)) is not None
        and high > low
    ]
    assert upward == []


def test_the_checks_see_a_cycle_and_an_upward_edge():
    nodes = ["storage.db.a", "storage.model.b", "storage.model.c"]
    edges = [Edge("storage.db.a", "storage.model.b", 1, True), Edge("storage.model.b", "storage.db.a", 1, False)]
    assert strongly_connected(nodes, edges) == [["storage.db.a", "storage.model.b"]]
    assert storage_layer("storage.model.b") > storage_layer("storage.db.a")
    # The project's own graph is read whole: an import in a function and one under TYPE_CHECKING count.
    assert any(e.importer == "tornchat.cli" and e.in_function for e in EDGES)
    assert len(MODULES) > 100 and len(EDGES) > 500


IMPORT_EACH = """
import importlib, sys
names = sys.argv[1:]
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m.split(".")[0] in ("storage", "scheduler", "tornchat")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {error!r}")
print("\\n".join(failed))
"""


def test_each_module_imports_on_its_own():
    names = sorted(name for name in MODULES if not name.endswith("__main__"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, *names], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_modules_stay_under_500_lines():
    """STYLE.md: a module past about 500 lines is split by concern."""
    long = {
        name: n for name, path in MODULES.items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert long == {}


# tornchat's own layers, bottom up (STYLE.md: app.py is the one place where the layers meet). A module
# not named here sits at the bottom: the package itself, settings, params, the HTTP edge, events, ...
TORNCHAT_LAYERS = [
    ("tornchat.server",),  # the Server every handler reaches through self.server
    ("tornchat.base",),  # the base handler
    ("tornchat.handlers",),  # one module per resource
    ("tornchat.routes",),  # the API's route table
    ("tornchat.openapi",),  # the document of the route table
    ("tornchat.app",),  # the Application: routes, handlers and Server wired together
    ("tornchat.cli", "tornchat.__main__"),  # the command line
]
# Who may import the handlers besides other handlers: the route table and the Application.
HANDLER_IMPORTERS = {"tornchat.routes", "tornchat.app"}
# Who may import the route table: what serves it, documents it, or starts the server.
ROUTE_TABLE_IMPORTERS = {"tornchat.app", "tornchat.openapi", "tornchat.cli"}
# tornchat/events/, bottom up (its __init__.py describes them); outside the package it imports only these.
EVENTS_LAYERS = ["bus", "body", "gc_hold", "queue", "forms", "saved", "registry"]
EVENTS_MAY_IMPORT = ("storage", "tornchat.settings")


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def tornchat_layer(module: str) -> int | None:
    if not _within(module, "tornchat"):
        return None
    for index, prefixes in enumerate(TORNCHAT_LAYERS, start=1):
        if any(_within(module, prefix) for prefix in prefixes):
            return index
    return 0


def events_layer(module: str) -> int | None:
    if module == "tornchat.events":
        return len(EVENTS_LAYERS)  # the package: its __init__ may import any of them
    if not _within(module, "tornchat.events"):
        return None
    return EVENTS_LAYERS.index(module.split(".")[2])


def tornchat_upward_edges(edges: list[Edge]) -> list[str]:
    return [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in edges
        if (low := tornchat_layer(e.importer)) is not None
        and (high := tornchat_layer(e.imported)) is not None
        and high > low
    ]


def handler_imports_from_outside(edges: list[Edge]) -> list[str]:
    return [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in edges
        if _within(e.imported, "tornchat.handlers")
        and not _within(e.importer, "tornchat.handlers")
        and e.importer not in HANDLER_IMPORTERS
    ]


def route_table_imports(edges: list[Edge]) -> list[str]:
    return [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in edges
        if e.imported == "tornchat.routes" and e.importer not in ROUTE_TABLE_IMPORTERS
    ]


def events_stray_edges(edges: list[Edge]) -> list[str]:
    stray = []
    for e in edges:
        low = events_layer(e.importer)
        if low is None:
            continue
        high = events_layer(e.imported)
        outside_allowed = high is None and any(_within(e.imported, allowed) for allowed in EVENTS_MAY_IMPORT)
        if not (outside_allowed or (high is not None and high < low)):
            stray.append(f"{e.importer}:{e.line} imports {e.imported}")
    return stray


def test_every_events_module_sits_in_a_layer():
    loose = [name for name in MODULES if _within(name, "tornchat.events") and name != "tornchat.events"]
    loose = [name for name in loose if name.split(".")[2] not in EVENTS_LAYERS]
    assert loose == [], "every tornchat/events/ module is named in EVENTS_LAYERS"


def test_tornchat_modules_import_only_downward():
    """Handlers never import app, the route table, openapi or cli; base and Server import no handler."""
    assert tornchat_upward_edges(EDGES) == []


def test_only_the_route_table_and_app_import_handlers():
    assert handler_imports_from_outside(EDGES) == []
    assert route_table_imports(EDGES) == []


def test_events_import_only_storage_settings_and_events_below_them():
    """tornchat/events/ knows nothing of HTTP: no handler, not base, not the Server."""
    assert events_stray_edges(EDGES) == []


def test_the_tornchat_checks_see_what_they_forbid():
    bad = [
        Edge("tornchat.handlers.drafts", "tornchat.app", 1, False),
        Edge("tornchat.handlers.drafts", "tornchat.routes", 2, False),
        Edge("tornchat.handlers.drafts", "tornchat.cli", 3, True),
        Edge("tornchat.base", "tornchat.handlers.drafts", 4, False),
        Edge("tornchat.server", "tornchat.base", 5, False),
        Edge("tornchat.events.queue", "tornchat.handlers.events", 6, False),
        Edge("tornchat.events.forms", "tornchat.base", 7, False),
        Edge("tornchat.events.body", "tornchat.events.queue", 8, False),
        Edge("tornchat.cli", "tornchat.handlers.drafts", 9, True),
        Edge("tornchat.events.registry", "tornchat.server", 10, False),
    ]

    def lines(found: list[str]) -> list[int]:
        return [int(line.split(":")[1].split()[0]) for line in found]

    assert lines(tornchat_upward_edges(bad)) == [1, 2, 3, 4, 5, 6, 7, 10]
    assert lines(handler_imports_from_outside(bad)) == [4, 6, 9]
    assert lines(route_table_imports(bad)) == [2]
    assert lines(events_stray_edges(bad)) == [6, 7, 8, 10]
    good = [
        Edge("tornchat.app", "tornchat.handlers.web", 1, False),
        Edge("tornchat.handlers.subscriptions", "tornchat.handlers.channels", 2, False),
        Edge("tornchat.openapi", "tornchat.routes", 3, False),
        Edge("tornchat.events.registry", "tornchat.events.forms", 4, False),
        Edge("tornchat.events.queue", "tornchat.settings", 5, False),
        Edge("tornchat.events.forms", "storage.org.users", 6, False),
    ]
    checks = [tornchat_upward_edges, handler_imports_from_outside, route_table_imports, events_stray_edges]
    assert [check(good) for check in checks] == [[], [], [], []]
