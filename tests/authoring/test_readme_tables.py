"""The README's tables of notebooks are built from the masters (lmcourse.authoring.readme): a new
master appears there with nothing typed in the README, and a stale table fails here."""

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
    return tmp_path


def test_a_new_master_gets_its_rows_and_nothing_else_changes(course):
    (course / "autograder" / "masters" / "11_moe.py").write_text(
        "# %% [markdown]\n# # 11 · Mixture of experts: a router and its load balance\n#\n# Prose.\n", encoding="utf-8")
    before = (course / "README.md").read_text(encoding="utf-8")
    assert readme.write(course) is True
    after = (course / "README.md").read_text(encoding="utf-8")
    assert "| `11_moe` | Mixture of experts: a router and its load balance |" in after
    assert "notebooks/11_moe.ipynb" in after and "solutions/11_moe.ipynb" in after
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(added) == 2 and all("11_moe" in line for line in added), added
    assert readme.write(course) is False                   # written once, then nothing to do


def test_a_master_without_its_title_is_named(course):
    (course / "autograder" / "masters" / "11_moe.py").write_text("# %% [markdown]\n# Prose first.\n", encoding="utf-8")
    with pytest.raises(readme.ReadmeError, match="11_moe.py: its first markdown cell should open with '# 11 · "):
        readme.write(course)


def test_a_readme_without_the_comment_lines_says_where_they_go(course):
    text = (course / "README.md").read_text(encoding="utf-8")
    (course / "README.md").write_text(text.replace(readme._END, ""), encoding="utf-8")
    with pytest.raises(readme.ReadmeError, match="lacks the comment lines around its notebooks table"):
        readme.write(course)
    assert (course / "README.md").read_text(encoding="utf-8") == text.replace(readme._END, "")   # nothing lost
