"""The lists of notebooks in the README and the TA's guide, written by `lmcourse build` from the masters.

Each notebook's row comes from its own master (the title of its first cell) and its file name (the
Colab / Kaggle buttons, :func:`lmcourse.commands.links.markdown_table`), so a notebook added to
``autograder/masters/`` appears in the README and in ``docs/ta-guide.md`` with nothing typed there.
Each block sits between two comment lines that name it; the rest of each document is hand-written and
never touched.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..commands.links import markdown_table, notebook_names
from ..commands.paths import repo_root

# "# 07 · Decoding: ..." (the master's first heading): the number, a separator, the title
_TITLE = re.compile(r"^# # (\d\d)\s*[·—-]\s*(.+?)\s*$", re.M)


class ReadmeError(RuntimeError):
    """The README lacks a table's comment lines, or a master its title."""


def _begin(table: str) -> str:
    return f"<!-- {table}: written by `lmcourse build` from autograder/masters/ (edit the masters, not this) -->"


_END = "<!-- end of the table `lmcourse build` writes -->"


def title(master: Path) -> str:
    """The title of ``master``'s first heading, without its number."""
    m = _TITLE.search(master.read_text(encoding="utf-8"))
    if m is None or m.group(1) != master.stem[:2]:
        raise ReadmeError(f"{master}: its first markdown cell should open with '# {master.stem[:2]} · <title>'")
    return m.group(2)


def notebooks_table(root: Path | None = None) -> str:
    folder = Path(root or repo_root()) / "autograder" / "masters"
    rows = ["| notebook | what you build |", "|---|---|"]
    rows += [f"| `{name}` | {title(folder / f'{name}.py')} |" for name in notebook_names(root)]
    return "\n".join(rows)


def graded_list(root: Path | None = None) -> str:
    """The numbers of the notebooks graded from records: every master's (each has its module in
    :mod:`lmcourse.marking`, ``tests/marking/test_readme_list.py``)."""
    return ", ".join(name[:2] for name in notebook_names(root)) + "."


# each document the build keeps up to date, by its path in the course: {block's name: what writes it}
DOCUMENTS = {
    "README.md": {"notebooks": notebooks_table, "buttons": lambda root: markdown_table(root=root)},
    "docs/ta-guide.md": {"graded notebooks": graded_list},
}


def tables(root: Path | None = None, document: str = "README.md") -> dict[str, str]:
    """{block's name: its markdown}, every block ``document`` holds."""
    return {name: write_block(root) for name, write_block in DOCUMENTS[document].items()}


def rendered(text: str, root: Path | None = None, document: str = "README.md") -> str:
    """``text`` (``document``'s) with each block between its comment lines written anew."""
    for name, table in tables(root, document).items():
        begin = _begin(name)
        start = text.find(begin)
        end = text.find(_END, start)
        if start < 0 or end < 0:
            raise ReadmeError(f"{document} lacks the comment lines around its {name} table: put\n  {begin}\n"
                              f"  {_END}\nwhere the table goes")
        text = text[:start] + begin + "\n" + table + "\n" + text[end:]
    return text


def write(root: Path | None = None) -> list[Path]:
    """Bring ``root``'s documents up to date (those it has: a fork may have dropped ``docs/``); the ones
    that changed."""
    changed = []
    for document in DOCUMENTS:
        path = Path(root or repo_root()) / document
        if not path.is_file():
            continue
        before = path.read_text(encoding="utf-8")
        after = rendered(before, root, document)
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(path)
    return changed
