"""Where the course lives on the web, kept in one place: the repository and the pinned ref.

The build writes both into every notebook (its "Open in Colab / Kaggle" links and its first cell,
which installs the course from ``REPOSITORY`` at ``REF`` on a fresh Colab or Kaggle runtime),
and ``lmcourse links`` prints the links, the README's badges and a JupyterHub's nbgitpuller link.
A fork or a class's own release (``lmcourse release``, pushed to its own repository) changes
these two lines and rebuilds.
"""

from __future__ import annotations

import argparse
import re
import sys
from urllib.parse import quote, urlencode

from .. import __version__

REPOSITORY = "https://github.com/lmcourse/lmcourse"  # the public repository students open and install
REF = f"v{__version__}"  # the tag pushed with each release: notebooks and package from the same commit
HUB_BRANCH = "main"  # nbgitpuller follows a branch (it merges updates into students' copies), not a tag

COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
KAGGLE_BADGE = "https://kaggle.com/static/images/open-in-kaggle.svg"


def github_name(repository: str = REPOSITORY) -> str:
    """``owner/name`` of a GitHub repository URL (Colab and Kaggle open notebooks from GitHub)."""
    m = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?", repository)
    if not m:
        raise ValueError(f"{repository!r} is not a GitHub repository URL (https://github.com/OWNER/NAME): "
                         "Colab and Kaggle open notebooks from GitHub")
    return m.group(1)


def blob_url(path: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    return f"https://github.com/{github_name(repository)}/blob/{ref}/{path}"


def colab_url(path: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """Opens ``path`` (e.g. ``notebooks/01_ngram.ipynb``) of the repository at ``ref`` in Colab."""
    return f"https://colab.research.google.com/github/{github_name(repository)}/blob/{ref}/{path}"


def kaggle_url(path: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """Opens it in a new Kaggle notebook (Kaggle asks the student to sign in first)."""
    return f"https://kaggle.com/kernels/welcome?src={blob_url(path, repository, ref)}"


def nbgitpuller_url(hub: str, path: str, repository: str = REPOSITORY, branch: str = HUB_BRANCH) -> str:
    """A JupyterHub link that clones (first click) or updates (later clicks) the repository into the
    student's home folder with nbgitpuller, then opens ``path`` in JupyterLab. The hub needs the
    ``nbgitpuller`` package installed; the folder is named after the repository."""
    folder = repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    query = urlencode({"repo": repository, "urlpath": f"lab/tree/{folder}/{path}", "branch": branch}, quote_via=quote)
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def badges(path: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """The markdown of the two buttons, for a notebook's title cell and the README."""
    return (f"[![Open In Colab]({COLAB_BADGE})]({colab_url(path, repository, ref)}) "
            f"[![Open In Kaggle]({KAGGLE_BADGE})]({kaggle_url(path, repository, ref)})")


def markdown_table(repository: str = REPOSITORY, ref: str = REF, root=None) -> str:
    """The README's table of buttons: each notebook's student notebook and solution."""
    rows = ["| notebook | student notebook | solution |", "|---|---|---|"]
    rows += [f"| {n} | {badges(f'notebooks/{n}.ipynb', repository, ref)} | "
             f"{badges(f'solutions/{n}.ipynb', repository, ref)} |" for n in notebook_names(root)]
    return "\n".join(rows)


def notebook_names(root=None) -> list[str]:
    from .paths import repo_root

    return [p.stem for p in sorted((root or repo_root()).joinpath("autograder", "masters").glob("[0-9][0-9]_*.py"))]


def main(argv: list[str] | None = None, prog: str = "lmcourse links") -> int:
    p = argparse.ArgumentParser(prog=prog, description="The course's Open in Colab / Kaggle links, the README's "
                                "badges and a JupyterHub's nbgitpuller links, from lmcourse/commands/links.py.")
    p.add_argument("--repository", default=REPOSITORY, help=f"a GitHub repository URL (default {REPOSITORY})")
    p.add_argument("--ref", default=REF, help=f"tag, branch or commit for Colab and Kaggle (default {REF})")
    p.add_argument("--hub", default=None, metavar="URL",
                   help="a JupyterHub with nbgitpuller, e.g. https://hub.example.edu: print its links too")
    p.add_argument("--branch", default=HUB_BRANCH, help=f"the branch nbgitpuller follows (default {HUB_BRANCH})")
    p.add_argument("--solutions", action="store_true", help="links to solutions/ (self-learners) instead of notebooks/")
    p.add_argument("--markdown", action="store_true", help="print the README's table of buttons (markdown)")
    a = p.parse_args(argv)
    folder = "solutions" if a.solutions else "notebooks"
    try:
        github_name(a.repository)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if a.markdown:
        print(markdown_table(a.repository, a.ref))
        return 0
    print(f"# {a.repository} at {a.ref} ({folder}/)")
    for name in notebook_names():
        path = f"{folder}/{name}.ipynb"
        print(f"{name}\n  colab   {colab_url(path, a.repository, a.ref)}")
        print(f"  kaggle  {kaggle_url(path, a.repository, a.ref)}")
        if a.hub:
            print(f"  hub     {nbgitpuller_url(a.hub, path, a.repository, a.branch)}")
    if not a.hub:
        print("# a JupyterHub with nbgitpuller: lmcourse links --hub https://your.hub.example")
    return 0


if __name__ == "__main__":
    sys.exit(main())
