"""peercore's imports run downward only (issue 19, item 6).

The graph is read from the source (``ast``), as ``../shared/tools/import_graph.py`` reads it:
an edge for every ``import peercore.x`` / ``from peercore.x import y`` (``y`` a submodule
when one exists), at module level or inside a function. The rules:

- no import cycle among peercore modules (a cycle hid behind imports moved into functions);
- at most :data:`MAX_FUNCTION_IMPORTS` imports of peercore modules sit inside functions
  (the rest were there to dodge cycles; those left load something heavy on first use only,
  e.g. the CLI's handlers, so ``peercore --help`` starts in a tenth of a second);
- the layers: the maths and the domain never import the application layer, the store,
  the CLI or the dashboard; the application layer never imports the CLI or the dashboard;
  nothing outside the CLI imports it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "peercore"
MAX_FUNCTION_IMPORTS = 40

# module prefix -> prefixes it may not import (a lower layer never reaches up)
LAYERS = {
    "peercore.domain": ("peercore.app", "peercore.store", "peercore.cli", "peercore.ui", "peercore.jobs"),
    "peercore.ranking": ("peercore.app", "peercore.store", "peercore.cli", "peercore.ui", "peercore.jobs"),
    "peercore.position": ("peercore.app", "peercore.store", "peercore.cli", "peercore.ui", "peercore.jobs"),
    "peercore.agreement": ("peercore.app", "peercore.store", "peercore.cli", "peercore.ui", "peercore.jobs"),
    "peercore.store": ("peercore.app", "peercore.cli", "peercore.ui"),
    "peercore.app": ("peercore.cli", "peercore.ui"),
    "peercore.io": ("peercore.app", "peercore.cli", "peercore.ui"),
    "peercore.jobs": ("peercore.cli", "peercore.ui"),
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _target(name: str, modules) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


# A string that names a peercore module (``"peercore.jobs.review"``, or ``"peercore.cli.data:import_cmd"``
# as the CLI's handler table writes it): what a lazy import by name (``importlib.import_module``, a
# module ``__getattr__``) will import.
MODULE_NAME = re.compile(r"^peercore(\.\w+)+(:\w+)?$")


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """module -> the peercore modules it imports; and every import inside a function (module, line, target).

    Imports by name count as imports: ``importlib.import_module("peercore.x")`` or
    ``__import__("peercore.x")`` is an import where it is written (inside a function when it
    is); a table of module names a lazy importer reads (a module ``__getattr__``'s, the CLI's
    handlers) is one import inside a function, from the module that holds the table, to each
    module it names.
    """
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    inside: list[tuple[str, int, str]] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        called_by_name: set[int] = set()  # literal arguments of import_module / __import__ (ids of their nodes)

        def visit(node, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, True)
                    continue
                targets = []
                if isinstance(child, ast.Import):
                    targets = [alias.name for alias in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        base = ".".join(package.split(".")[:len(package.split(".")) - child.level + 1] +
                                        ([base] if base else []))
                    targets = [f"{base}.{alias.name}" for alias in child.names] or [base]
                elif isinstance(child, ast.Call):
                    name = getattr(child.func, "attr", None) or getattr(child.func, "id", None)
                    first = child.args[0] if child.args else None
                    if name in ("import_module", "__import__") and isinstance(first, ast.Constant) \
                            and isinstance(first.value, str):
                        targets = [first.value]
                        called_by_name.add(id(first))
                found = {_target(name, modules) for name in targets if name.startswith("peercore")} - {None, module}
                edges[module] |= found
                if in_function and found:  # one statement counts once
                    inside.append((module, child.lineno, ", ".join(sorted(found))))
                visit(child, in_function)

        visit(tree, False)
        table = {_target(node.value.partition(":")[0], modules) for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in called_by_name
                 and MODULE_NAME.match(node.value)} - {None, module}
        if table:
            edges[module] |= table
            inside.append((module, 0, "by name: " + ", ".join(sorted(table))))
    return edges, inside


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in list(edges):
        if v not in index:
            connect(v)
    return out


def test_the_graph_is_read_from_the_source():
    edges, inside = import_graph()
    assert "peercore.app.study" in edges["peercore.app.leaderboard"]  # a known edge: the reader works
    assert len(edges) > 50
    # imports by name count: the CLI's handler table, the lazy exports of peercore.jobs
    assert "peercore.cli.data" in edges["peercore.cli.parsers"]
    assert "peercore.jobs.review" in edges["peercore.jobs"]
    assert any(module == "peercore.jobs" and target.startswith("by name:") for module, _, target in inside)


def test_no_import_cycle_among_peercore_modules():
    edges, _ = import_graph()
    assert _cycles(edges) == []


def test_few_imports_hide_inside_functions():
    _, inside = import_graph()
    listed = "\n".join(f"{m}:{line} -> {t}" for m, line, t in sorted(inside))
    assert len(inside) <= MAX_FUNCTION_IMPORTS, f"{len(inside)} imports inside functions:\n{listed}"


def test_lower_layers_never_import_upper_ones():
    edges, _ = import_graph()
    wrong = []
    for module, targets in edges.items():
        for layer, forbidden in LAYERS.items():
            if module == layer or module.startswith(layer + "."):
                wrong += [f"{module} -> {t}" for t in targets if any(t == f or t.startswith(f + ".") for f in forbidden)]
        if not module.startswith("peercore.cli"):
            wrong += [f"{module} -> {t}" for t in targets if t.startswith("peercore.cli") and module != "peercore.__main__"]
    assert wrong == []
