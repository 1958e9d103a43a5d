"""`lmcourse links`: Open in Colab / Kaggle links and a JupyterHub's nbgitpuller links, all made
from the one repository URL and ref in lmcourse/commands/links.py; the README's table is their output."""

from urllib.parse import parse_qs, urlsplit

import pytest

from lmcourse import __version__
from lmcourse.commands import links
from lmcourse.commands import main as cli
from tests.conftest import NOTEBOOKS, ROOT

PATH = "notebooks/01_ngram.ipynb"


def test_the_repository_and_ref_are_kept_in_one_place():
    assert links.REF == f"v{__version__}"
    assert links.github_name() == links.REPOSITORY.removeprefix("https://github.com/")
    for path in (ROOT / "lmcourse").rglob("*.py"):   # nowhere else spells the URL out
        if path.name != "links.py":
            assert links.REPOSITORY not in path.read_text(encoding="utf-8"), path


def test_colab_and_kaggle_open_the_file_at_the_ref():
    repo, ref = "https://github.com/someone/lm-course.git", "v9.9"
    assert links.colab_url(PATH, repo, ref) == \
        "https://colab.research.google.com/github/someone/lm-course/blob/v9.9/notebooks/01_ngram.ipynb"
    assert links.kaggle_url(PATH, repo, ref) == ("https://kaggle.com/kernels/welcome?src="
                                                 "https://github.com/someone/lm-course/blob/v9.9/notebooks/01_ngram.ipynb")
    badges = links.badges(PATH, repo, ref)
    assert f"]({links.colab_url(PATH, repo, ref)})" in badges and f"]({links.kaggle_url(PATH, repo, ref)})" in badges
    with pytest.raises(ValueError, match="not a GitHub repository URL"):
        links.colab_url(PATH, "https://gitlab.com/a/b")


def test_the_nbgitpuller_link_clones_the_branch_and_opens_the_notebook_in_lab():
    url = links.nbgitpuller_url("https://hub.example.edu/", PATH, "https://github.com/someone/lm-course", "spring")
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.edu", "/hub/user-redirect/git-pull")
    assert parse_qs(parts.query) == {"repo": ["https://github.com/someone/lm-course"], "branch": ["spring"],
                                     "urlpath": ["lab/tree/lm-course/notebooks/01_ngram.ipynb"]}


def test_lmcourse_links_prints_every_notebook(capsys):
    assert cli.main(["links", "--hub", "https://hub.example.edu"]) == 0
    out = capsys.readouterr().out
    for name in NOTEBOOKS:
        path = f"notebooks/{name}.ipynb"
        assert f"  colab   {links.colab_url(path)}\n" in out and f"  kaggle  {links.kaggle_url(path)}\n" in out
        assert f"  hub     {links.nbgitpuller_url('https://hub.example.edu', path)}\n" in out
    assert cli.main(["links", "--solutions", "--ref", "abc123"]) == 0
    assert links.colab_url("solutions/05_gpt.ipynb", ref="abc123") in capsys.readouterr().out
    assert cli.main(["links", "--repository", "https://example.org/x"]) == 2
    assert "not a GitHub repository URL" in capsys.readouterr().err


def test_the_readme_table_is_what_lmcourse_links_prints(capsys):
    assert cli.main(["links", "--markdown"]) == 0
    table = capsys.readouterr().out.strip()
    assert len(table.splitlines()) == 2 + len(NOTEBOOKS)
    assert table in (ROOT / "README.md").read_text(encoding="utf-8"), \
        "README.md's table of Colab / Kaggle buttons is stale: run `lmcourse build`"
