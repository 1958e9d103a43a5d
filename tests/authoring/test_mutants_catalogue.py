"""The mutant and alternative catalogues load against today's masters: every patch still finds the
text it replaces, names are unique, and each entry replaces an answer cell the master has. A
patch whose text the master no longer holds stops the load, naming the catalogue, the mutant and
the text (no kernel is started here: this is the fast check that runs on every change)."""

import textwrap

import pytest

from lmcourse.authoring.mutants import (
    Alternative,
    Mutant,
    PatchError,
    answer_cell,
    apply_patch,
    load_alternatives,
    load_mutants,
    patch,
    variants_path,
)
from tests.conftest import NOTEBOOKS, ROOT


def _answer_ids(master) -> set[str]:
    return {line.split('solution="', 1)[1].split('"', 1)[0]
            for line in master.read_text().splitlines() if line.startswith("# %%") and 'solution="' in line}


@pytest.mark.parametrize("kind", ["mutants", "alternatives"])
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_catalogue_loads_against_the_master(name, kind):
    master = ROOT / "autograder" / "masters" / f"{name}.py"
    load = load_mutants if kind == "mutants" else load_alternatives
    entries = load(variants_path(ROOT, name))  # raises if a patch no longer fits
    assert len(entries) >= (12 if kind == "mutants" else 8), f"{name}: only {len(entries)} {kind}"
    names = [e.name for e in entries]
    assert len(set(names)) == len(names), f"{name}: repeated {kind} names"
    missing = {e.target for e in entries} - _answer_ids(master)
    assert not missing, f"{name}: {kind} target answer cells the master lacks: {sorted(missing)}"
    for e in entries:
        assert isinstance(e.source, str) and e.source.strip(), f"{name}: {e.name!r} has no source"
        compile(e.source, e.name, "exec")  # a patch that leaves broken Python is caught here, not in a kernel


def test_most_mutants_are_patches():
    """The point of the patch form: most mutants are made from the master's own text."""
    import ast

    patched = total = 0
    for name in NOTEBOOKS:
        tree = ast.parse(variants_path(ROOT, name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Mutant" and len(node.args) == 3:
                total += 1
                src = node.args[2]
                patched += isinstance(src, ast.Call) and getattr(src.func, "id", None) == "patch"
    assert total and patched / total >= 0.75, f"only {patched} of {total} mutants are patches"


MASTER = '''# %% [markdown]
# A toy master.

# %% solution="f"
def f(x):
    """Add one, twice."""
    ### BEGIN SOLUTION
    y = x + 1
    if y > 0:
        y = y + 1
        y = y * 1
    return y
    ### END SOLUTION


# %% solution="Net"
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        ### BEGIN SOLUTION
        return x * self.n
        ### END SOLUTION
'''


@pytest.fixture
def course(tmp_path):
    (tmp_path / "masters").mkdir()
    (tmp_path / "variants").mkdir()
    (tmp_path / "masters" / "09_toy.py").write_text(MASTER)
    return tmp_path


def _catalogue(course, body: str):
    path = course / "variants" / "09_toy.py"
    path.write_text("from lmcourse.authoring.mutants import Mutant, patch\n\nMUTANTS = [\n"
                    + textwrap.indent(textwrap.dedent(body), "    ") + "]\n")
    return path


def test_the_answer_cell_is_the_solution_without_markers(course):
    cell = answer_cell(course / "masters" / "09_toy.py", "f")
    assert cell.startswith("def f(x):\n") and "### " not in cell and cell.endswith("return y")


def test_a_patch_replaces_its_text_keeping_the_indentation(course):
    cell = answer_cell(course / "masters" / "09_toy.py", "f")
    out = apply_patch(cell, patch(("y = y + 1\ny = y * 1", "y = y - 1\nfor _ in range(2):\n    y = y * 1")))
    assert "    if y > 0:\n        y = y - 1\n        for _ in range(2):\n            y = y * 1\n    return y" in out
    assert apply_patch(cell, patch(("x + 1", "x + 2"))).count("y = x + 2") == 1
    deleted = apply_patch(cell, patch(("y = y * 1", "")))
    assert "y * 1" not in deleted and "        y = y + 1\n    return y" in deleted  # the whole line goes


def test_a_patch_on_a_class_keeps_only_the_changed_methods(course):
    cell = answer_cell(course / "masters" / "09_toy.py", "Net")
    out = apply_patch(cell, patch(("return x * self.n", "return x + self.n"), subclass="Net"))
    assert out.startswith("class Net(Net):") and "def forward(self, x):" in out and "__init__" not in out
    init = apply_patch(cell, patch(("self.n = n", "self.n = -n"), subclass="Net"))
    assert "nn.Module.__init__(self)" in init and "super().__init__()" not in init and "forward" not in init


def test_a_patch_whose_text_is_gone_names_the_catalogue_the_mutant_and_the_text(course):
    path = _catalogue(course, '''
        Mutant("adds two", "f", patch(("y = x + 1", "y = x + 2"))),
        Mutant("stale copy", "f", patch(("y = x + 100", "y = x"))),
    ''')
    with pytest.raises(PatchError) as err:
        load_mutants(path)
    msg = str(err.value)
    assert "variants/09_toy.py MUTANTS" in msg and "'stale copy'" in msg
    assert "y = x + 100" in msg and "found 0 times" in msg


def test_a_patch_must_match_exactly_once(course):
    path = _catalogue(course, '''
        Mutant("ambiguous", "f", patch(("y = y", "y = 0"))),
    ''')
    with pytest.raises(PatchError, match=r"'ambiguous'.*found 2 times"):
        load_mutants(path)


def test_a_target_the_master_lacks_is_named(course):
    path = _catalogue(course, '''
        Mutant("wrong cell", "g", patch(("y", "z"))),
    ''')
    with pytest.raises(PatchError, match=r"'wrong cell'.*no answer cell solution='g'"):
        load_mutants(path)


def test_a_patched_mutant_is_built_from_the_master_as_it_is_now(course):
    path = _catalogue(course, '''
        Mutant("adds two", "f", patch(("y = x + 1", "y = x + 2"))),
    ''')
    assert "y = x + 2" in load_mutants(path)[0].source
    master = course / "masters" / "09_toy.py"
    master.write_text(MASTER.replace("return y\n", "return int(y)\n", 1))
    assert "return int(y)" in load_mutants(path)[0].source  # an edited master is read again


def test_mutant_and_alternative_are_one_record():
    assert Mutant is Alternative
