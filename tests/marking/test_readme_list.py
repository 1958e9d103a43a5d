"""The TA manual (docs/ta-guide.md) says which notebooks are graded from records: the list `lmcourse build`
writes from the masters, and every master is graded so, by its own module."""

from lmcourse.authoring import readme
from lmcourse.marking.notebooks import TESTS
from tests.conftest import ROOT


def test_the_ta_guide_names_the_notebooks_graded_from_records():
    text = (ROOT / "docs" / "ta-guide.md").read_text(encoding="utf-8")
    assert readme.rendered(text, document="docs/ta-guide.md") == text, \
        "docs/ta-guide.md's list of notebooks graded from records is stale: run `lmcourse build`"
    listed = text.split(readme._begin("graded notebooks"))[1].split(readme._END)[0]
    assert listed.strip() == ", ".join(sorted(name[:2] for name in TESTS)) + "."


def test_every_master_is_graded_from_records_by_its_own_module():
    """The registry is read from lmcourse/marking's files: each master has one, named by its topic, whose
    NOTEBOOK is that notebook."""
    from lmcourse.marking.notebooks import load

    masters = sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))
    assert sorted(TESTS) == masters
    for name in masters:
        assert TESTS[name] == f"lmcourse.marking.{name[3:]}" and load(name).name == name
