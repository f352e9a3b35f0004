"""The import graph of ``src/skillgrad`` has no cycles and no imports that point up.

Every ``import`` / ``from ... import`` counts, wherever it is (module level, inside a function,
under ``if TYPE_CHECKING``): a lazy import is still a dependency. Modules are grouped into
units (a sub-package, or a top-level module) and the units into layers, lowest first. A module
may import its own layer and any layer below it, never one above. Inside a unit, modules must
not import each other in a cycle either.

The layers, lowest first, and why each sits where it does:

- foundations: ``errors``, ``types``, ``plugins``, ``stats``, ``redact``, ``assets``,
  ``safeparse`` — plain data and helpers (``assets``: pinned registry files, used by models and
  benchmarks; ``safeparse``: bounded JSON and the one YAML loader for outside text);
- ``prompts`` (the .md templates and their renderer);
- ``skill`` (the skill document: ``match``, ``package``, ``document``; ``skill_hash`` lives
  here);
- ``runs`` — the run directory, its records (``records``) and its one reader (``view``), and
  the call store (never train/ types): the model wrappers meter and cache into its store, so it
  sits below ``models``;
- ``models`` — backends and wrappers (never the registry, tasks or the test fakes);
- ``scorers`` — the loss functions and their lookup (the judge calls a model);
- ``executors`` — where a rollout's heavy, model-free part runs (a thread, or a Ray task);
- ``sandbox``, then ``harnesses`` — running untrusted code and agent CLIs (``transcript``:
  the optimizer's token-budgeted view of an agent's steps);
- ``tasks`` — the Task protocol, rollout kinds (chat, tool, code, harness, environment) and how
  a kind's trajectories render (``views``: ``train`` asks the view, never sniffs a kind), data
  loading;
- ``benchmarks`` — the built-in tasks on the generated-task base;
- ``registry`` — tasks, scorers and providers by name;
- ``config``, ``callbacks``; then ``train``, the algorithm, with two sub-rooms kept apart:
  ``train.trust`` (whether a gain can be believed) and ``train.screens`` (what may enter the
  skill) never import each other, and the phases reach the trust checks only through the loop
  and the gate's re-measured noise (``TRUST_USERS``);
- ``session``, ``evaluate``, ``fit``, ``trackers`` — assembling and running a run;
- the package's ``__init__`` (the public API, also what a sweep worker calls);
- ``sweep``, then ``report`` and ``export`` (read runs and sweeps), then ``dashboard``;
- ``cli`` (the app, the commands each module registers on it, the console), and
  ``__main__``.

``skillgrad.testing`` (the shipped fakes) sits above everything: no production module imports it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Lowest first; units in one inner tuple share a layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "types", "plugins", "stats", "redact", "assets", "safeparse"),
    ("prompts",),
    ("skill",),
    ("runs",),
    ("models",),
    ("scorers",),
    ("executors",),
    ("sandbox",),
    ("harnesses",),
    ("tasks",),
    ("benchmarks",),
    ("registry",),
    ("config", "callbacks"),
    ("train",),
    ("session", "evaluate", "fit", "trackers"),
    ("__init__",),
    ("sweep",),
    ("report", "export"),
    ("dashboard",),
    ("cli", "__main__"),
    ("testing",),
)
TEST_FAKES = "skillgrad.testing"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``tree`` imports anywhere. ``from pkg import name`` counts
    as importing ``pkg`` (it reads the package's namespace, half-built while ``pkg/__init__``
    is still importing the caller) and also ``pkg.name`` when that is a module; relative imports
    are resolved against ``module``. ``import pkg.sub`` counts ``pkg.sub`` only: every module
    implicitly imports its parent packages, and that alone is no cycle."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                out.add(base)
                out.add(f"{base}.{alias.name}")
    return {m for m in out if m in known}


def build_graph(root: Path, top: str = "skillgrad") -> dict[str, set[str]]:
    """Module -> the package modules it imports (self-imports dropped)."""
    files = {module_name(p, root): p for p in sorted((root / top).rglob("*.py"))}
    known = set(files)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        deps = imported_modules(tree, name, path.name == "__init__.py", known)
        graph[name] = deps - {name}
    return graph


def find_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for dep in graph.get(node, ()):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def unit_of(module: str) -> str:
    """``skillgrad.tasks.chat`` -> ``tasks``; ``skillgrad`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(unit: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int:
    for rank, units in enumerate(layers):
        if unit in units:
            return rank
    raise KeyError(unit)


def upward_edges(
    graph: Mapping[str, Iterable[str]], layers: tuple[tuple[str, ...], ...] = LAYERS
) -> list[str]:
    """Every import from a module into a strictly higher layer, as ``a -> b`` lines."""
    bad = []
    for module, deps in sorted(graph.items()):
        here = layer_of(unit_of(module), layers)
        for dep in sorted(deps):
            if layer_of(unit_of(dep), layers) > here:
                bad.append(f"{module} -> {dep}")
    return bad


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """Built in a fresh interpreter: CPython 3.11's AST constructor keeps a recursion counter
    that threads left running by earlier tests (servers, Ray, sqlite) can upset, which fails
    ``ast.parse`` with "AST constructor recursion depth mismatch" inside a long test session."""
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from test_import_graph import SRC, build_graph; "
        "print(json.dumps({k: sorted(v) for k, v in build_graph(SRC).items()}))"
    )
    here = Path(__file__).resolve().parent
    out = subprocess.run(
        [sys.executable, "-c", script, str(here)], capture_output=True, text=True, check=True
    )
    return {k: set(v) for k, v in json.loads(out.stdout).items()}


def test_every_unit_has_a_layer(graph: dict[str, set[str]]) -> None:
    placed = {u for units in LAYERS for u in units}
    missing = sorted({unit_of(m) for m in graph} - placed)
    assert not missing, f"add these to LAYERS (and to the docstring): {missing}"


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    cycles = find_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_import_points_up(graph: dict[str, set[str]]) -> None:
    bad = upward_edges(graph)
    assert not bad, "imports that point up (see LAYERS):\n" + "\n".join(bad)


def test_the_top_level_stays_small() -> None:
    """The package's top level reads as the architecture: at most 16 modules besides
    ``__init__`` and ``__main__``; everything else lives in a sub-package of its room."""
    top = sorted(p.stem for p in (SRC / "skillgrad").glob("*.py"))
    modules = [m for m in top if m not in ("__init__", "__main__")]
    assert len(modules) <= 16, modules


TRUST_USERS = {"skillgrad.train.loop", "skillgrad.train.validate"}
"""The modules of ``train`` outside ``train.trust`` that may import it."""
NO_TRAIN = ("report", "dashboard", "tasks")
"""Units that never import ``train`` (the viewers read run directories; tasks sit below)."""


def _in(module: str, room: str) -> bool:
    return module == room or module.startswith(room + ".")


def test_trust_and_screens_are_rooms_of_their_own(graph: dict[str, set[str]]) -> None:
    trust, screens = "skillgrad.train.trust", "skillgrad.train.screens"
    crossing = sorted(
        f"{m} -> {d}"
        for m, deps in graph.items()
        for d in deps
        if (_in(m, trust) and _in(d, screens)) or (_in(m, screens) and _in(d, trust))
    )
    assert crossing == []
    users = sorted(
        m
        for m, deps in graph.items()
        if _in(m, "skillgrad.train") and not _in(m, trust) and any(_in(d, trust) for d in deps)
    )
    assert set(users) <= TRUST_USERS, users


def test_viewers_and_tasks_never_import_train(graph: dict[str, set[str]]) -> None:
    bad = sorted(
        f"{m} -> {d}"
        for m, deps in graph.items()
        if unit_of(m) in NO_TRAIN
        for d in deps
        if _in(d, "skillgrad.train")
    )
    assert bad == []


def test_production_code_never_imports_the_test_fakes(graph: dict[str, set[str]]) -> None:
    users = sorted(m for m, deps in graph.items() if TEST_FAKES in deps and m != TEST_FAKES)
    assert users == []


# -- the checker itself, on a synthetic package --------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_checker_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "low.py": "def f():\n    from pkg.high import g\n    return g\n",
            "high.py": "from pkg import low\n",
            "mid/__init__.py": "",
            "mid/a.py": "from . import b\n",
            "mid/b.py": "from ..low import f\n",
        },
    )
    graph = build_graph(root, top="pkg")
    assert graph["pkg.high"] == {"pkg", "pkg.low"}
    assert graph["pkg.mid.a"] == {"pkg.mid", "pkg.mid.b"}  # relative imports resolve
    assert graph["pkg.mid.b"] == {"pkg.low"}
    assert find_cycles(graph) == [["pkg.high", "pkg.low"]]


def test_checker_flags_an_upward_import(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "base.py": "import pkg.top.thing\n",
            "top/__init__.py": "",
            "top/thing.py": "from pkg.base import x\n",
        },
    )
    graph = build_graph(root, top="pkg")
    layers = (("__init__",), ("base",), ("top",))
    assert upward_edges(graph, layers) == ["pkg.base -> pkg.top.thing"]
    assert upward_edges({"pkg.top.thing": {"pkg.base"}}, layers) == []
    assert find_cycles(graph) == [["pkg.base", "pkg.top.thing"]]


def test_checker_finds_a_package_importing_itself_through_a_submodule(tmp_path: Path) -> None:
    """``pkg/__init__`` imports ``pkg.app``, which reads ``data`` from the half-built ``pkg``
    (``from pkg import data``): the cycle ``skillgrad.dashboard`` had. Importing the submodule
    itself (``from pkg.data import x``) is no cycle."""
    root = _package(
        tmp_path,
        {
            "__init__.py": "from pkg.app import serve\n",
            "app.py": "from pkg import data\n\ndef serve():\n    return data.rows()\n",
            "data.py": "def rows():\n    return []\n",
        },
    )
    graph = build_graph(root, top="pkg")
    assert graph["pkg.app"] == {"pkg", "pkg.data"}
    assert find_cycles(graph) == [["pkg", "pkg.app"]]
    (root / "pkg" / "app.py").write_text("from pkg.data import rows\n")
    assert find_cycles(build_graph(root, top="pkg")) == []
    (root / "pkg" / "app.py").write_text("import pkg\n")
    assert find_cycles(build_graph(root, top="pkg")) == [["pkg", "pkg.app"]]
