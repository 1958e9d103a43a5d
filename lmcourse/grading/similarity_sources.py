"""The texts ``lmcourse grade similarity`` compares (:mod:`.similarity`).

- each student's code: the answer cells (the release's solution cells, by grade id) and the code
  cells the student added or changed, read with the grader's own readers (:func:`.ingest.find_submissions`
  for a folder, nbgrader's ``submitted/`` or an LMS zip; :func:`.prepare.repair_submission` checks each notebook
  against the release; a graded ``OUT`` gives its ``autograded/`` copies);
- the boilerplate every student has: the student release's unlocked code cells (``notebooks/NN.ipynb``:
  the stubs, ``# YOUR CODE HERE``, ``raise NotImplementedError(...)``);
- the solution: the source notebook's answer cells with nbgrader's markers removed;
- the course's reference code: ``lmcourse/reference/<topic>.py`` and the files of what its ``REFERENCE``
  names;
- the run-time route: an answer that reads a reference's source while it runs (``exec(inspect.getsource(f))``)
  carries no copied text, so its text is searched for what reads source (:func:`runtime_source`), and for
  an import of a tokenizer library (tiktoken, ``tokenizers``, sentencepiece).
"""

from __future__ import annotations

import importlib
import inspect
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .ingest import IngestError, find_submissions
from .prepare import repair_submission, strip_injected

# nbgrader's solution markers in the source notebook (grading does not import the author's tools,
# which a student release leaves out)
_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


class SimilarityError(Exception):
    """The input as a whole cannot be compared (no such folder, no readable submission, ...)."""


@dataclass
class Document:
    """Code to compare, in named parts (a student's cells; one part for a solution or a file)."""
    label: str                      # "alice", "solution", "lmcourse/nn/attention.py"
    kind: str                       # "student", "solution" or "reference"
    cells: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        # the headers are comments: the detector drops them, the report shows where a match is
        return "\n\n".join(f"# ---- {name}\n{src}" for name, src in self.cells.items())


@dataclass
class Unreadable:
    """A submission that could not be compared, and why (shown in the CSV, never a score)."""
    student: str
    why: str


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _norm(src: str) -> str:
    return "\n".join(line.rstrip() for line in src.strip().splitlines())


def _free(cell) -> bool:
    """A code cell a student may write in: an answer cell or one nbgrader does not lock."""
    m = _meta(cell)
    return cell.cell_type == "code" and (m.get("solution") or not (m.get("locked") or m.get("grade")))


def release_of(root: Path, assignment: str) -> nbformat.NotebookNode:
    path = Path(root) / "notebooks" / f"{assignment}.ipynb"
    if not path.is_file():
        raise SimilarityError(f"no student release {path} (is the assignment name right?)")
    return nbformat.read(path, as_version=4)


def boilerplate(release: nbformat.NotebookNode) -> list[str]:
    """What every student is handed in the cells they may edit: the stubs and the free cells."""
    return [c.source for c in release.cells if _free(c) and c.source.strip()]


def student_cells(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> dict[str, str]:
    """{cell name: code} of what a student wrote: the answer cells by grade id, then the code cells
    with no grade id that are not the release's own (added or edited), as ``cell N``."""
    answers = {_meta(c)["grade_id"] for c in release.cells if _meta(c).get("solution") and c.cell_type == "code"}
    given = {_norm(c.source) for c in release.cells if c.cell_type == "code"}
    out: dict[str, str] = {}
    for i, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        gid = _meta(cell).get("grade_id")
        if gid in answers:
            out[gid] = cell.source
        elif gid is None and _norm(cell.source) not in given:
            out[f"cell {i}"] = cell.source
    return out


MAX_BYTES = 50 * 2**20      # as `lmcourse grade` (grade.MAX_NOTEBOOK_BYTES): a notebook past it is not read


def _read(student: str, path: Path, release) -> Document | Unreadable:
    try:
        if path.stat().st_size > MAX_BYTES:
            return Unreadable(student, f"{path.name} is larger than {MAX_BYTES // 2**20} MB")
        raw = path.read_bytes()
    except OSError as exc:
        return Unreadable(student, f"cannot read {path.name} ({exc.strerror})")
    p = repair_submission(raw, release)        # the grader's checks: invalid-notebook, wrong-assignment
    if p.nb is None:
        return Unreadable(student, f"{p.status}: {p.detail}")
    return Document(student, "student", student_cells(strip_injected(p.nb), release))


def students(src: Path, assignment: str, release, unpack_dir: Path) -> tuple[list[Document], list[Unreadable]]:
    """The class's code, from what ``lmcourse grade`` reads (folder, ``submitted/``, LMS zip; zips are
    unpacked into ``unpack_dir``) or from a graded ``OUT`` (its ``autograded/`` copies, one per
    student ``lmcourse grade`` ran: named as in its ``grades.csv``)."""
    src = Path(src)
    if not src.exists():
        raise SimilarityError(f"{src}: no such folder or file")
    if graded_out(src):
        copies = src / "autograded"
        found = sorted(copies.glob("*.ipynb")) if copies.is_dir() else []
        if not found:
            raise SimilarityError(f"{src}: a graded folder with no autograded/ notebooks to compare")
        pairs = [(p.stem, p) for p in found]
    else:
        try:
            subs = find_submissions(src, assignment, unpack_dir)
        except IngestError as exc:
            raise SimilarityError(str(exc)) from exc
        pairs = [(s.student, s.path) for s in subs]
    docs: list[Document] = []
    bad: list[Unreadable] = []
    for student, path in pairs:
        got = _read(student, path, release) if path is not None else Unreadable(student, "no notebook")
        (docs if isinstance(got, Document) else bad).append(got)
    return docs, bad


def graded_out(folder: Path) -> bool:
    """A folder ``lmcourse grade --out`` wrote (its ``grades.csv``), not a folder of submissions."""
    return Path(folder).is_dir() and (Path(folder) / "grades.csv").is_file()


def solution(root: Path, assignment: str) -> Document:
    """The answer cells of the source notebook (the master's), nbgrader's markers removed."""
    path = Path(root) / "autograder" / "source" / assignment / f"{assignment}.ipynb"
    if not path.is_file():
        raise SimilarityError(f"no source notebook {path} (is the assignment name right?)")
    nb = nbformat.read(path, as_version=4)
    cells = {_meta(c)["grade_id"]: "\n".join(ln for ln in c.source.split("\n") if not _MARKER.match(ln))
             for c in nb.cells if c.cell_type == "code" and _meta(c).get("solution")}
    return Document("solution", "solution", cells)


def reference_files(assignment: str, root: Path) -> list[Path]:
    """``lmcourse/reference/<topic>.py`` (``01_ngram`` -> ``ngram``) and the file of each thing its
    ``REFERENCE`` names (a function, a class or a module) inside the ``lmcourse`` package, each once."""
    topic = assignment.split("_", 1)[1] if re.match(r"^\d+_", assignment) else assignment
    try:
        module = importlib.import_module(f"lmcourse.reference.{topic}")
    except ModuleNotFoundError:
        return []
    files = [Path(module.__file__)]
    for obj in getattr(module, "REFERENCE", ()):
        try:
            files.append(Path(inspect.getsourcefile(obj)))
        except TypeError:     # a built-in has no source file: nothing a student could copy from us
            continue
    package = Path(module.__file__).resolve().parents[1]      # lmcourse/: the course's own code only,
    seen: list[Path] = []                                      # not torch's that a REFERENCE also names
    for f in files:
        if package in f.resolve().parents and f.resolve() not in [s.resolve() for s in seen]:
            seen.append(f)
    return seen


def references(assignment: str, root: Path) -> list[Document]:
    docs = []
    for f in reference_files(assignment, root):
        try:
            label = f.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            label = f.name
        docs.append(Document(label, "reference", {label: f.read_text(encoding="utf-8")}))
    return docs


# What reads source code while it runs: inspect's source readers, linecache, a module's file or
# spec or loader, pkgutil's package data, and a string naming a .py file (open("lmcourse/ngram.py")).
# Names an honest answer to these exercises has no use for (`get_data` alone would be: a helper's name).
_READERS = {"getsource", "getsourcelines", "getsourcefile", "findsource", "getfile", "getlines",
            "linecache", "__file__", "__spec__", "__loader__", "find_spec", "get_source", "pkgutil"}
_RESOURCES = re.compile(r"importlib\s*\.\s*resources|from\s+importlib\s+import\s+resources")
_PY_FILE = re.compile(r"\.py\b")
# Libraries that tokenize for you (notebook 08's rules refuse them inside a graded call): an answer
# cell that imports one is worth a look whatever the tests said
_TOKENIZERS = ("tiktoken", "tiktoken_ext", "tokenizers", "sentencepiece")
_TOKENIZER_STRING = re.compile(r"^[rRbBuU]*['\"]{1,3}(" + "|".join(_TOKENIZERS) + r")([.'\"]|$)")
TOKENIZER_IMPORTED = "a tokenizer library imported"


def _imports_tokenizer(tokens: list) -> list[int]:
    """Rows of ``import tiktoken`` / ``from tokenizers import ...`` / ``import x, sentencepiece`` and
    of a string naming one (``importlib.import_module("tiktoken")``, ``__import__("tokenizers.models")``);
    not ``from lmcourse import tokenizers`` (a name inside a package) nor a variable ``tokenizers``."""
    rows = []
    statement: str | None = None     # "import", "from", or "names" (after a from-statement's import)
    previous = ""
    for tok in tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.NL) or tok.string == ";":
            statement = None
        elif tok.type == tokenize.NAME and tok.string == "import":
            statement = "names" if statement == "from" else "import"
        elif tok.type == tokenize.NAME and tok.string == "from" and statement is None:
            statement = "from"
        elif tok.type == tokenize.NAME and tok.string in _TOKENIZERS and (
                (statement == "import" and previous in ("import", ","))
                or (statement == "from" and previous == "from")):
            rows.append(tok.start[0])          # the head of a module path
        elif tok.type == tokenize.STRING and _TOKENIZER_STRING.match(tok.string):
            rows.append(tok.start[0])
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok.string
    return rows


def runtime_source(code: str) -> list[str]:
    """Where ``code`` reads source at run time, e.g. ``["line 3: inspect.getsource"]``: names of
    source readers outside comments, and strings that name one or a ``.py`` file (which catches
    ``getattr(inspect, "getsource")``); and where it imports a tokenizer library (tiktoken,
    ``tokenizers``, sentencepiece: ``"line 1: a tokenizer library imported: import tiktoken"``),
    whose compiled core an answer could call where the rules do not see it. Text assembled at run
    time (``"get" + "source"``) is not seen: this is a static look, and the graded call's own
    confinement (:mod:`lmcourse.marking.confine`) is what stops such a read from scoring."""
    found: list[str] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = None
    if tokens is None:      # code that does not tokenize: its lines, comments cut at '#'
        for n, line in enumerate(code.splitlines(), 1):
            words = set(re.findall(r"[A-Za-z_]\w*", line.split("#", 1)[0]))
            text = line.split("#", 1)[0]
            hits = sorted(words & _READERS) + (["a .py file"] if _PY_FILE.search(text) else []) + (
                ["importlib.resources"] if _RESOURCES.search(text) else []) + (
                [TOKENIZER_IMPORTED] if re.search(r"\b(import|from)\b", text) and words & set(_TOKENIZERS) else [])
            found += [f"line {n}: {h}" for h in hits]
        return found
    lines = code.splitlines()
    for row in _imports_tokenizer(tokens):
        found.append(f"line {row}: {TOKENIZER_IMPORTED}: {lines[row - 1].strip() if row - 1 < len(lines) else ''}")
    for tok in tokens:
        row = tok.start[0]
        context = lines[row - 1].strip() if row - 1 < len(lines) else tok.string
        if tok.type == tokenize.NAME and tok.string in _READERS:
            found.append(f"line {row}: {context}")
        elif tok.type == tokenize.STRING and (_PY_FILE.search(tok.string)
                                               or set(re.findall(r"\w+", tok.string)) & _READERS):
            found.append(f"line {row}: {context}")
        elif tok.type == tokenize.NAME and tok.string == "resources" and _RESOURCES.search(context):
            found.append(f"line {row}: {context}")
    return list(dict.fromkeys(found))       # a line once, however many readers it names
