"""No notebook prints the course's own DeprecationWarning: every name a master imports from the course
(``from lmcourse.x import name``, or spelled ``lmcourse.x.name`` in a cell) is read where it lives
now, not through an old home that warns (``lmcourse.moved``)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import warnings

import pytest

from tests.conftest import ROOT

MASTERS = sorted((ROOT / "autograder" / "masters").glob("*.py"))


def course_names(source: str) -> set[tuple[str, str]]:
    """(module, name) for each name a master's code takes from a ``lmcourse`` module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lmcourse":
            found.update((node.module, alias.name) for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "lmcourse" and len(chain) >= 2:
                chain.reverse()
                found.add((".".join(["lmcourse", *chain[:-1]]), chain[-1]))
    return found


def warnings_of(module: str, name: str) -> list[str]:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return []  # an attribute chain that is not a module path (lmcourse.runtime.X.y): nothing to read
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        is_submodule = "__path__" in vars(mod) and importlib.util.find_spec(f"{module}.{name}") is not None
        if not is_submodule:
            getattr(mod, name, None)
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def test_the_rule_sees_a_moved_name():
    assert ("lmcourse.ngram", "build_kn_tables") in course_names("from lmcourse.ngram import build_kn_tables\n")
    assert ("lmcourse.ngram", "kneser_ney_prob") in course_names("lmcourse.ngram.kneser_ney_prob(t)\n")
    assert warnings_of("lmcourse.ngram", "build_kn_tables"), "the old home no longer warns: pick another example"


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.stem)
def test_a_master_reads_no_name_through_an_old_home(master):
    warned = {f"{m}.{n}": w for m, n in sorted(course_names(master.read_text(encoding="utf-8")))
              for w in warnings_of(m, n)}
    assert not warned, f"{master.name} would print the course's own DeprecationWarning: {warned}"
