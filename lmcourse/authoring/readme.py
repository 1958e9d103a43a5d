"""The README's two tables of notebooks, written by `lmcourse build` from the masters.

Each notebook's row comes from its own master (the title of its first cell) and its file name (the
Colab / Kaggle buttons, :func:`lmcourse.commands.links.markdown_table`), so a notebook added to
``autograder/masters/`` appears in the README with nothing typed there. Each table sits between
two comment lines that name it; the rest of the README is hand-written and never touched.
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


def tables(root: Path | None = None) -> dict[str, str]:
    """{table's name: its markdown}, every table the README holds."""
    return {"notebooks": notebooks_table(root), "buttons": markdown_table(root=root)}


def rendered(text: str, root: Path | None = None) -> str:
    """``text`` (a README) with each table between its comment lines written anew."""
    for name, table in tables(root).items():
        begin = _begin(name)
        start = text.find(begin)
        end = text.find(_END, start)
        if start < 0 or end < 0:
            raise ReadmeError(f"README.md lacks the comment lines around its {name} table: put\n  {begin}\n"
                              f"  {_END}\nwhere the table goes")
        text = text[:start] + begin + "\n" + table + "\n" + text[end:]
    return text


def write(root: Path | None = None) -> bool:
    """Bring ``root``'s README.md up to date; whether it changed."""
    path = Path(root or repo_root()) / "README.md"
    before = path.read_text(encoding="utf-8")
    after = rendered(before, root)
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before
