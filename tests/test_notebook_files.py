"""A notebook's own files (DEVELOPERS.md, "Adding a notebook"); its README rows are built from its master."""

import ast

import pytest

from tests.conftest import NOTEBOOKS, ROOT


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_has_its_own_files_and_a_readme_row(name):
    topic = name.split("_", 1)[1]
    wanted = [f"autograder/masters/{name}.py", f"autograder/variants/{name}.py", f"lmcourse/reference/{topic}.py",
              f"lmcourse/marking/{topic}.py", f"lmcourse/marking/{topic}_hidden.py", f"tests/reference/test_{topic}.py"]
    missing = [w for w in wanted if not (ROOT / w).is_file()]
    assert not missing, f"{name} lacks {missing} (DEVELOPERS.md, 'Adding a notebook')"
    assert f"| `{name}`" in (ROOT / "README.md").read_text(), f"README.md has no row for {name}: run `lmcourse build`"


def _top_level_definitions(name):
    """{body's AST dump: (master, definition's name)} of the master's top-level functions and classes."""
    tree = ast.parse((ROOT / "autograder" / "masters" / f"{name}.py").read_text(encoding="utf-8"))
    return {ast.dump(ast.Module(body=node.body, type_ignores=[])): (name, node.name) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_no_master_carries_its_own_rules_or_another_masters_helper():
    """An exercise's rules and the shared probes live in the package (the exercise's ``rules=`` in
    its lmcourse.marking module, lmcourse.reference): a master defines no ``_rules`` of its own, and no
    function or class body appears in two masters (a copied helper drifts)."""
    seen, copied = {}, []
    for name in NOTEBOOKS:
        for body, where in _top_level_definitions(name).items():
            assert where[1] != "_rules", f"{name} defines _rules: state them as its exercise's rules="
            if body in seen:
                copied.append((seen[body], where))
            seen.setdefault(body, where)
    assert len(seen) > 50, "the masters' definitions were not read"
    assert not copied, "the same definition in two masters (move it to lmcourse.reference):\n" + "\n".join(
        f"  {a[0]}.{a[1]} = {b[0]}.{b[1]}" for a, b in copied)
