"""The README's tables of notebooks and the TA guide's list are built from the masters
(lmcourse.authoring.readme): a new master appears there with nothing typed in either, and a stale
table fails here."""

import shutil

import pytest

from lmcourse.authoring import readme
from tests.conftest import NOTEBOOKS, ROOT


def test_the_readme_holds_the_tables_lmcourse_build_writes():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.rendered(text) == text, "README.md's tables of notebooks are stale: run `lmcourse build`"
    for name in NOTEBOOKS:
        assert f"| `{name}` | " in text and f"notebooks/{name}.ipynb" in text and f"solutions/{name}.ipynb" in text


@pytest.fixture
def course(tmp_path):
    (tmp_path / "autograder").mkdir()
    shutil.copytree(ROOT / "autograder" / "masters", tmp_path / "autograder" / "masters")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "ta-guide.md", tmp_path / "docs" / "ta-guide.md")
    return tmp_path


def test_a_new_master_gets_its_rows_and_nothing_else_changes(course):
    (course / "autograder" / "masters" / "13_moe.py").write_text(
        "# %% [markdown]\n# # 13 · Mixture of experts: a router and its load balance\n#\n# Prose.\n", encoding="utf-8")
    before = (course / "README.md").read_text(encoding="utf-8")
    guide = (course / "docs" / "ta-guide.md").read_text(encoding="utf-8")
    assert readme.write(course) == [course / "README.md", course / "docs" / "ta-guide.md"]
    after = (course / "README.md").read_text(encoding="utf-8")
    assert "| `13_moe` | Mixture of experts: a router and its load balance |" in after
    assert "notebooks/13_moe.ipynb" in after and "solutions/13_moe.ipynb" in after
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(added) == 2 and all("13_moe" in line for line in added), added
    guide_after = (course / "docs" / "ta-guide.md").read_text(encoding="utf-8")
    changed = [line for line in guide_after.splitlines() if line not in guide.splitlines()]
    assert changed == ["01, 02, 03, 04, 05, 06, 07, 08, 09, 10, 11, 12, 13."], changed
    assert readme.write(course) == []                   # written once, then nothing to do


def test_a_master_without_its_title_is_named(course):
    (course / "autograder" / "masters" / "13_moe.py").write_text("# %% [markdown]\n# Prose first.\n", encoding="utf-8")
    with pytest.raises(readme.ReadmeError, match="13_moe.py: its first markdown cell should open with '# 13 · "):
        readme.write(course)


def test_a_readme_without_the_comment_lines_says_where_they_go(course):
    text = (course / "README.md").read_text(encoding="utf-8")
    (course / "README.md").write_text(text.replace(readme._END, ""), encoding="utf-8")
    with pytest.raises(readme.ReadmeError, match="lacks the comment lines around its notebooks table"):
        readme.write(course)
    assert (course / "README.md").read_text(encoding="utf-8") == text.replace(readme._END, "")   # nothing lost
