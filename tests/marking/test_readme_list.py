"""The TA manual (docs/ta-guide.md) says which notebooks are graded from records: the registry's list, no other."""

import re

from lmcourse.marking.notebooks import TESTS
from tests.conftest import ROOT


def test_the_readme_names_the_notebooks_graded_from_records():
    text = (ROOT / "docs" / "ta-guide.md").read_text(encoding="utf-8")
    m = re.search(r"\*\*Grades decided outside the student's kernel\*\* \(notebooks: ([0-9, ]+)\)", text)
    assert m, "docs/ta-guide.md: the paragraph 'Grades decided outside the student's kernel (notebooks: ...)' " \
        "is missing"
    assert [n.strip() for n in m.group(1).split(",")] == sorted(name[:2] for name in TESTS)


def test_every_master_is_graded_from_records_by_its_own_module():
    """The registry is read from lmcourse/marking's files: each master has one, named by its topic, whose
    NOTEBOOK is that notebook."""
    from lmcourse.marking.notebooks import load

    masters = sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))
    assert sorted(TESTS) == masters
    for name in masters:
        assert TESTS[name] == f"lmcourse.marking.{name[3:]}" and load(name).name == name
