"""The package's import graph, read from the source, so it holds for modules no test happens to import:
no import cycles inside lmcourse/, dependencies one way (the students' library <- the reference <-
marking <- grading <- the commands and the author's tools), and no module imports another's private
name.

Every import counts: a function's own ``import`` (a cycle through it works only until someone moves
it to the top), one under ``if TYPE_CHECKING:`` (a type named both ways ties the two modules as
much as a call does), and ``importlib.import_module("lmcourse....")`` with the name written out."""

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


def _imports(tree: ast.Module):
    """Every Import/ImportFrom node, and the module named by each ``import_module("...")`` call or course
    path of an exercise's rules."""
    nodes, named = [], []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            nodes.append(n)
        elif isinstance(n, ast.Call) and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) \
                == "import_module" and n.args and isinstance(n.args[0], ast.Constant) \
                and isinstance(n.args[0].value, str):
            named.append(n.args[0].value)
        elif isinstance(n, ast.Call) and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in (
                "exercise_rules", "course"):    # course paths ("module:name"), imported when a case starts
            named += [a.value.partition(":")[0] for a in n.args if isinstance(a, ast.Constant) and type(a.value) is str]
    return nodes, named


def _graph():
    """({module: modules it imports}, [(importer, module, private name)])."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, (path, tree) in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        nodes, named = _imports(tree)
        edges[name].update(m for m in named if m in modules)
        for node in nodes:
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


# the layers, lowest first: a module imports from its own layer or a lower one
LAYERS = ("library", "reference", "marking", "grading", "commands")
_FOLDER_LAYER = {"reference": "reference", "marking": "marking", "grading": "grading", "commands": "commands",
                 "authoring": "commands"}
# top-level modules that serve the commands rather than the notebooks: notebook_runner runs notebooks
# for `lmcourse solutions`, the build and the benchmarks (and writes the executed pages with grading's exporter)
_MODULE_LAYER = {"lmcourse.notebook_runner": "commands"}
# the edges that still go up, each with why; one that is gone must leave this list too
UPWARD = {
    ("lmcourse.grading.gradescope", "lmcourse.commands.paths"): "where the course's clone is",
    ("lmcourse.grading.shard", "lmcourse.commands.paths"): "where the course's clone is",
    ("lmcourse.grading.similarity_report", "lmcourse.commands.paths"): "where the course's clone is",
    ("lmcourse.grading.template", "lmcourse.commands.paths"): "where the course's clone is",
    # the grader's side of marking (left out of every kernel's package): nbgrader's preprocessors
    ("lmcourse.marking.grader", "lmcourse.grading.scan"): "plain nbgrader's scan of the student's cells",
    ("lmcourse.marking.grader", "lmcourse.grading.how"): "the answers' text read for what they refuse, "
                                                         "outside the kernel",
    ("lmcourse.marking.grader", "lmcourse.grading.sandbox_runner"): "a display update kept as its record",
    ("lmcourse.marking.grader", "lmcourse.grading.unreadable"): "answers whose code the judge cannot read, "
                                                                "flagged outside the kernel",
    # given code that runs an earlier notebook's answer when called (09's prose names it where it is)
    ("lmcourse.nn.seq2seq", "lmcourse.reference.decoding"): "beam_decode runs 07's beam_search",
}


def layer(module: str) -> int:
    parts = module.split(".")
    name = _MODULE_LAYER.get(module) or (_FOLDER_LAYER.get(parts[1], "library") if len(parts) > 1 else "library")
    return LAYERS.index(name)


def test_the_graph_is_read_at_all():
    """A reader that found nothing would pass the tests below: it must see known edges of each kind."""
    edges, _ = _graph()
    assert len(edges) > 40
    assert "lmcourse.distributed" in edges["lmcourse.train"]
    assert "lmcourse.grading.classify" in edges["lmcourse.grading.grade"]
    assert "lmcourse.grading.ingest" in edges["lmcourse.grading.shard"]               # under TYPE_CHECKING only
    assert "lmcourse.bpe" in edges["lmcourse.marking.bpe"]                           # import_module("...") only


def test_dependencies_go_one_way():
    edges, _ = _graph()
    upward = {(a, b) for a, found in edges.items() for b in found if layer(b) > layer(a)}
    unexplained = sorted(upward - set(UPWARD))
    assert not unexplained, "imports from a higher layer (" + " <- ".join(LAYERS) + "):\n" + "\n".join(
        f"  {a} ({LAYERS[layer(a)]}) imports {b} ({LAYERS[layer(b)]})" for a, b in unexplained)
    assert not set(UPWARD) - upward, f"no longer imported, take them off UPWARD: {sorted(set(UPWARD) - upward)}"


def test_no_import_cycles_in_the_package():
    cycles = _cycles(_graph()[0])
    assert not cycles, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_name():
    private = _graph()[1]
    assert not private, "private names imported across modules:\n" + "\n".join(
        f"  {m} imports {name} from {src}" for m, src, name in private)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def test_the_record_mime_type_is_one_value():
    """The kernel writes a record under one MIME type and the sandbox's runner (a script that imports
    nothing of lmcourse, so it keeps a copy) keeps outputs of that type past the output cap."""
    from lmcourse.grading import sandbox_runner
    from lmcourse.marking.kernel import MIME

    assert sandbox_runner.RECORD_MIME == MIME


def test_the_pass_line_has_one_home():
    """What a test cell prints when its visible part passed is written once (marking.kernel.PASS_LINE):
    Gradescope's results read it there."""
    from lmcourse.marking.kernel import PASS_LINE

    found = [path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py")
             if PASS_LINE in path.read_text(encoding="utf-8")]
    assert found == ["lmcourse/marking/kernel.py"], found
