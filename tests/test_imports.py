"""The package's import graph (no import cycles inside lmcourse/; no module imports another's
private name), read from the source, so it holds for modules no test happens to import.

Every import counts, a function's own ``import`` included: a cycle through a function-level
import works only until someone moves that import to the top. Imports under ``if TYPE_CHECKING:``
do not run, so they are left out (annotations may name a type both ways)."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGE = ROOT / "lmcourse"


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _runtime_imports(tree: ast.Module):
    """Every Import/ImportFrom node, but those under ``if TYPE_CHECKING:``."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def _graph():
    """({module: modules it imports}, [(importer, module, private name)])."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, (path, tree) in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(tree):
            if isinstance(node, ast.Import):
                edges[name].update(a.name for a in node.names if a.name in modules)
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source not in modules:
                continue
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:  # `from . import train`: the module itself
                    edges[name].add(f"{source}.{alias.name}")
                else:
                    edges[name].add(source)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append((name, source, alias.name))
        edges[name].discard(name)
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    cycles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        path.append(module)
        for nxt in sorted(edges[module]):
            if state.get(nxt) == "open":
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path)
        path.pop()
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [])
    return cycles


def test_the_graph_is_read_at_all():
    """A reader that found nothing would pass the two tests below: it must see known edges."""
    edges, _ = _graph()
    assert len(edges) > 40
    assert "lmcourse.distributed" in edges["lmcourse.train"]
    assert "lmcourse.grading.classify" in edges["lmcourse.grading.grade"]


def test_no_import_cycles_in_the_package():
    cycles = _cycles(_graph()[0])
    assert not cycles, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_name():
    private = _graph()[1]
    assert not private, "private names imported across modules:\n" + "\n".join(
        f"  {m} imports {name} from {src}" for m, src, name in private)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
