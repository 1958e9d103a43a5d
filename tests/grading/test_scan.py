"""lmcourse.grading.scan: the routes around the grader, found in what the student wrote."""

import nbformat
import pytest

from lmcourse.grading.scan import scan_cells, scan_source
from tests.conftest import ROOT


def test_honest_code_is_not_flagged():
    honest = '''
import math
from collections import Counter

def count_ngrams(sentences, n):
    counts = Counter()
    for words in sentences:
        padded = pad_sentence(words, n)
        counts.update(tuple(padded[i:i + n]) for i in range(len(padded) - n + 1))
    return counts
'''
    assert scan_source(honest) == []
    assert scan_source("%timeit f()") == []          # a magic is not Python: nothing to read
    assert scan_source("model.eval()\nx = P.eval_batches") == []     # a torch module's eval mode is not eval()
    assert scan_source("import builtins\nbuiltins.eval('1')") == ["beyond the course's list: import builtins", "eval"]


def test_each_route_is_named():
    cases = {
        "src = open('/x/lmcourse/reference/ngram.py').read()\nexec(src)": ["the text 'lmcourse/reference'", "exec"],
        "import inspect, lmcourse.ngram\nexec(inspect.getsource(lmcourse.ngram))": ["import inspect", "exec",
                                                                                 "getsource"],
        "from lmcourse.reference.ngram import count_ngrams": ["from lmcourse.reference.ngram import"],
        "tests = None": ["tests rebound"],
        "import contextlib, sys\ncontextlib.ExitStack().callback(sys.setprofile, f)": ["setprofile"],
        "from IPython.display import publish_display_data\npublish_display_data({})": ["publish_display_data"],
        "d = {'application/vnd.lmcourse.record+json': {}}": ["the text 'vnd.lmcourse.record'"],
        "import torch\ntorch.nn.modules.module.register_module_forward_hook(h)": ["register_module_forward_hook"],
        "import tiktoken": ["import tiktoken"],
        "x = logging.currentframe().f_back": ["f_back", "currentframe"],
    }
    for source, wanted in cases.items():
        found = scan_source(source)
        for w in wanted:
            assert any(f.startswith(w) for f in found), (source, found)


def test_only_the_students_cells_are_read():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import inspect"),                          # a cell the student added
        nbformat.v4.new_code_cell("exec('1')"),                               # an answer cell
        nbformat.v4.new_code_cell("import importlib"),                        # a locked cell: the course's
        nbformat.v4.new_code_cell("eval('1')"),                               # the grader's injected cell
    ])
    nb.cells[1].metadata["nbgrader"] = {"solution": True, "grade_id": "a"}
    nb.cells[2].metadata["nbgrader"] = {"locked": True, "grade_id": "setup"}
    nb.cells[3].metadata["lmcourse-guard"] = {}
    assert scan_cells(nb, skip_tag="lmcourse-guard") == ["import inspect", "exec"]


def test_names_written_as_strings_are_named():
    """A module's namespace read as a dict names nothing the scan reads as a name: the strings are
    (the red team of 02 and 07 switched the rules off with ``vars(_s)["setprofile"](None)``)."""
    cases = {
        "import sys as _s\nvars(_s)['setprofile'](None)": ["the text 'setprofile'"],
        "import sys\nvars(sys)['meta_path'].pop(0)": ["vars(sys)", "the text 'meta_path'"],
        "import sys\nf = sys.__dict__['settrace']": ["sys.__dict__", "the text 'settrace'"],
        "import sys\nil = sys.modules['importlib']": ["the text 'importlib'"],
        "import sys\nm = sys.modules['lmcourse.marking.kernel']": ["the text 'lmcourse.marking.kernel'"],
        "import torch\nwith torch._C.DisableTorchFunction():\n    pass": ["DisableTorchFunction"],
    }
    for source, wanted in cases.items():
        found = scan_source(source)
        for w in wanted:
            assert w in found, (source, found)


def test_ordinary_strings_are_not_names():
    for source in ("mode = 'eval'", "x = {'path': p}", "note = 'inspection of the losses'",
                   "model.eval()", "key = 'compile'",
                   # a folder that shares a module's name (08 caches its merges under data/tokenizers/)
                   "p = data_dir() / 'tokenizers' / 'x.json'", "q = os.path.join(d, 'inspect')"):
        assert scan_source(source) == [], source


def test_a_torch_mode_is_named_however_it_is_imported():
    """The red team of 06 answered the test's own variance with a torch function mode: its class,
    imported under another name, and its ``__torch_function__`` are named."""
    source = ("from torch.overrides import TorchFunctionMode as M\n\n\nclass X(M):\n"
              "    def __torch_function__(self, func, types, args=(), kwargs=None):\n        return func(*args)\n")
    assert scan_source(source) == ["TorchFunctionMode", "__torch_function__"]
    assert scan_source("from torch.utils._python_dispatch import TorchDispatchMode as D") == ["TorchDispatchMode"]


def test_the_marking_code_reached_without_its_name_is_named():
    """The red team of 02 patched the kernel's recorder through the test cells' own object:
    ``sys.modules[type(tests).__module__].observe = ...``, sys imported under another name."""
    found = scan_source("import sys as _s\n_k = _s.modules[type(tests).__module__]\n_k.observe = f\n")
    assert found == ["test machinery: _k.observe written", "sys.modules",
                     "beyond the course's list: type(tests).__module__", "tests read"], found
    assert scan_source("import sys as _s\nsys_args = _s.argv") == []


def test_one_parse_at_a_time(monkeypatch):
    """`lmcourse grade -j N` scans in N threads; CPython 3.11's ast module keeps one recursion-depth count
    per interpreter, so two parses at once can raise SystemError (a crashed grading, seen under load and
    not reproducible on demand): each parse holds the scan's lock."""
    import ast

    from lmcourse.grading import scan

    held, parse = [], ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: held.append(scan._PARSING.locked()) or parse(*a, **k))
    assert scan.scan_source("import sys\nsys.setprofile(None)\n") == ["setprofile"]
    assert held == [True] and not scan._PARSING.locked()
    calls = []

    def mismatched_once(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=30, after=23)")
        return parse(*a, **k)

    monkeypatch.setattr(ast, "parse", mismatched_once)
    assert scan.scan_source("exec('1')\n") == ["exec"] and len(calls) == 2
    monkeypatch.setattr(ast, "parse", lambda *a, **k: (_ for _ in ()).throw(SystemError("another")))
    with pytest.raises(SystemError, match="another"):
        scan.scan_source("x = 1\n")


# ---------------------------------------------------------------------------------------------------
# Every cell a student wrote is read, as IPython runs it; each finding with an example and a near miss
# ---------------------------------------------------------------------------------------------------

def _nb(*cells, **metadata) -> nbformat.NotebookNode:
    """A notebook of code cells (a (cell_type, source) pair for another type); ``metadata[i]``: cell i's."""
    nb = nbformat.v4.new_notebook()
    for i, c in enumerate(cells):
        kind, source = c if isinstance(c, tuple) else ("code", c)
        cell = {"code": nbformat.v4.new_code_cell, "raw": nbformat.v4.new_raw_cell,
                "markdown": nbformat.v4.new_markdown_cell}[kind](source)
        cell.metadata.update(metadata.get(f"c{i}", {}))
        nb.cells.append(cell)
    return nb


# (finding, code that shows it, code alike that does not)
FINDINGS = [
    # a cell that does not parse, once IPython has made its magics Python
    ("does not parse: ", "def f(:\n    pass", "%timeit f()\nx?\n>>> y = 1"),
    # shell escapes, and magics that run another language or a file
    ("shell: %%bash", "%%bash\nls ..", "%%time\nx = 1"),
    ("shell: %%script python3", "%%script python3\nprint(1)", "%%capture out\nprint(1)"),
    ("shell: system", "!ls", "%matplotlib inline"),
    ("shell: getoutput", "files = !ls", "files = ls()"),
    ("shell: %pip install tiktoken", "%pip install tiktoken", "%load_ext autoreload\n%autoreload 2"),
    ("magic: %run helper.py", "%run helper.py", "%config InlineBackend.figure_format = 'svg'"),
    ("magic: %load x.py", "%load x.py", "%whos"),
    ("magic: %%writefile m.py", "%%writefile m.py\nx = 1", "%%html\n<b>hi</b>"),
    ("a process: subprocess", "%%time\nimport subprocess", "%%time\nimport json"),     # a magic's Python is read
    # detached or extra processes
    ("a process: subprocess.Popen", "import subprocess as sp\nsp.Popen(['sleep', '9'])",
     "import json as sp\nsp.dumps(1)"),
    ("a process: os.fork", "import os\nif os.fork() == 0:\n    pass", "import os\nos.getpid()"),
    ("a process: os.forkpty", "from os import forkpty\nforkpty()", "from os import getcwd"),
    ("a process: os.spawnv", "import os as o\no.spawnv(o.P_NOWAIT, p, [p])", "import os as o\no.sep"),
    ("a process: os.execv", "import os\nos.execv(p, [p])", "import os\nos.environ.get('X')"),
    ("a process: os.system", "import os\nos.system('sleep 9 &')", "import platform\nplatform.system()"),
    ("a process: os.popen", "import os\nos.popen('id')", "import os\nos.path.join('a', 'b')"),
    ("a process: os.setsid", "import os\nos.setsid()", "import os\nos.getpid()"),
    ("a process: multiprocessing", "import multiprocessing\nmultiprocessing.Process(target=f).start()",
     "import time"),
    ("a process: pty", "import pty\npty.spawn('sh')", "import pathlib"),
    ("a process: start_new_session=", "run(cmd, start_new_session=True)", "run(cmd, new_session=True)"),
    ("a process: 'nohup' in shell text", "!nohup sleep 600 &", "note = 'no hope'"),
    ("a process: 'setsid' in shell text", "cmd = 'setsid python -m w'", "cmd = 'python -m w'"),
    ("a process: 'disown' in shell text", "%%bash\nsleep 600 & disown", "word = 'disowned'"),
    # code loaded from files
    ("code loading: imp", "import imp\nm = imp.load_source('m', p)", "import math"),
    ("code loading: load_source", "m = importer.load_source('m', p)", "m = load_text(p)"),
    ("code loading: importlib.util.spec_from_file_location",
     "from importlib.util import spec_from_file_location", "from functools import partial"),
    ("code loading: module_from_spec", "m = util.module_from_spec(spec)", "m = util.module_for(spec)"),
    ("code loading: SourceFileLoader", "SourceFileLoader('m', p).load_module()", "FileReader('m', p)"),
    ("code loading: SourcelessFileLoader", "SourcelessFileLoader('m', p)", "SourceReader('m', p)"),
    ("code loading: exec(open(p).read())", "exec(open(p).read())", "text = open(p).read()"),
    ("code loading: a code file 'helper.py'", "open('helper.py', 'w').write(src)\nimport helper",
     "open('helper.txt', 'w').write(src)"),
    ("sys.path", "import sys\nsys.path.insert(0, '.')", "import sys\nsys.argv"),
    ("code loading: read_text and compile", "code = compile(Path(p).read_text(), p, 'exec')",
     "text = Path(p).read_text()"),
    ("import runpy", "import runpy\nrunpy.run_path(p)", "import random"),
    # writes to the course's test machinery
    ("test machinery: object.__setattr__(exercise, 'rules', None)",
     "object.__setattr__(exercise, 'rules', None)",
     "class P:\n    def __post_init__(self):\n        object.__setattr__(self, 'value', 1)"),
    ("test machinery: ex.rules written", "ex.rules = None", "ex.rules_seen = None"),
    ("test machinery: Exam.grade written",
     "from lmcourse.marking import Exam\nExam.grade = lambda self, name: None", "Exam.grade = lambda self, name: None"),
    ("test machinery: ex.check written", "for ex in tests.exam.exercises:\n    ex.check = print",
     "for ex in exams:\n    ex.check = print"),
    ("test machinery: vars(tests)['exam'] written", "vars(tests)['exam'] = None", "model.w = None"),
    ("test machinery: setattr(tests, 'exam', None)", "setattr(tests, 'exam', None)", "setattr(model, 'exam', None)"),
    ("test machinery: lmcourse.marking.ngram", "import lmcourse.marking\nlmcourse.marking.ngram.EXERCISES.clear()",
     "import lmcourse.data\nlmcourse.data.load_shakespeare()"),
    # the executed cells' text read, or the cells' execution hooked
    ("cells read or hooked: In", "src = In[3]", "src = x_in[3]"),
    ("cells read or hooked: _ih", "src = _ih[-1]", "for _ in range(3):\n    pass"),
    ("cells read or hooked: Out", "y = Out[2]", "y = out[2]"),
    ("cells read or hooked: _i7", "src = _i7", "src = i7"),
    ("cells read or hooked: history_manager", "h = get_ipython().history_manager", "h = history"),
    ("cells read or hooked: get_ipython().events.register",
     "get_ipython().events.register('pre_run_cell', f)", "model.register_buffer('m', t)"),
    ("cells read or hooked: input_transformers_cleanup", "ip = get_ipython()\nip.input_transformers_cleanup.append(f)",
     "ip = get_ipython()\nip.display_formatter"),
    ("cells read or hooked: ast_transformers", "get_ipython().ast_transformers.append(t)", "transforms.append(t)"),
    ("cells read or hooked: run_cell", "get_ipython().run_cell = hook", "run_cells = hook"),
    ("cells read or hooked: displayhook", "import sys\nsys.displayhook = f", "import sys\nsys.stdout.flush()"),
    # paths outside the submission
    ("outside the submission: '/etc/passwd'", "open('/etc/passwd')", "open('data/passwd')"),
    ("outside the submission: '/tmp/x'", "!cat x >/tmp/x", "html = '<b>x</b> </s>'"),
    ("outside the submission: '../../source/01/01.ipynb'", "open('../../source/01/01.ipynb')", "x = a / b"),
    ("outside the submission: the text 'gradebook'", "db = 'gradebook.db'", "db = 'grades.db'"),
    ("outside the submission: the text 'submitted'", "d = Path('submitted')", "d = Path('submission')"),
    ("outside the submission: the text 'autograded'", "d = 'autograded'", "d = 'graded'"),
    ("outside the submission: the text 'source/'", "d = 'source/01_ngram'", "d = 'sources'"),
    ("outside the submission: the text 'release/'", "d = 'release/01_ngram'", "d = 'released'"),
    ("outside the submission: the text 'templates'", "d = data_dir() / 'templates'",
     "d = data_dir() / 'tinyshakespeare'"),
    ("outside the submission: the text 'nbgrader'", "import json\njson.load(open('nbgrader_config.json'))",
     "import json\njson.load(open('config.json'))"),
    ("outside the submission: the text '.ipynb'", "nb = json.load(open('01_ngram.ipynb'))",
     "nb = json.load(open('01.json'))"),
    ("outside the submission: __file__", "import lmcourse\nroot = lmcourse.__file__",
     "import lmcourse\nlmcourse.setup()"),
    ("outside the submission: '~/x'", "open('~/x')", "open('x~')"),
    ("outside the submission: 'C:\\\\grades'", "open('C:\\\\grades')", "t = 'ratio 3:1'"),
    ("outside the submission: os.chdir", "import os\nos.chdir(d)", "import os\nos.getcwd()"),
    ("outside the submission: '..'", "%cd ..", "print('wait..')"),
]


@pytest.mark.parametrize("wanted, flagged, honest", FINDINGS, ids=[f[0] for f in FINDINGS])
def test_each_finding_names_what_it_saw(wanted, flagged, honest):
    found = scan_cells(_nb(flagged))
    assert any(f.startswith(wanted) for f in found), found
    assert scan_cells(_nb(honest)) == [], honest


def test_ordinary_paths_and_texts_are_not_places():
    honest = '''
def fmt(a, b):
    """Paths in a docstring are prose: see /usr/share/dict, ../notes and the nbgrader docs."""
    return f"{a}/{b} tokens/s, </s> at 01/02/2024", "%d/%m/%Y", "..."
'''
    assert scan_source(honest) == []


def test_a_magics_name_computed_in_the_code_is_a_finding():
    assert scan_source("get_ipython().run_line_magic(name, 'x')")[0].startswith("magic: ")
    assert scan_source("get_ipython().run_line_magic('matplotlib', 'inline')") == []


def test_a_cell_with_nbgrader_metadata_but_no_grade_id_is_read_and_named():
    """A student's cell marked locked (or a duplicated grade id, whose metadata nbgrader empties) was
    skipped as if it were the course's; it is read, and its metadata is a finding."""
    nb = _nb("import subprocess", "exec('1')", c0={"nbgrader": {"locked": True}},
             c1={"nbgrader": {}})
    assert scan_cells(nb) == ["nbgrader metadata without a grade_id", "a process: subprocess", "exec"]
    assert scan_cells(_nb("x = 1", c0={"nbgrader": {"locked": True, "grade_id": "setup"}})) == []


def test_a_locked_course_cell_is_not_read_but_teaches_the_names():
    """The setup cell imports for the student's cells: a name it binds is resolved in theirs."""
    nb = _nb("import subprocess as sp\nimport lmcourse.marking as M", "sp.run(['id'])\nM.ngram.EXERCISES[0].check = f",
             c0={"nbgrader": {"locked": True, "grade_id": "setup"}})
    found = scan_cells(nb)
    assert "a process: subprocess.run" in found and "test machinery: M.ngram.EXERCISES[0].check written" in found, found
    assert not any("import" in f for f in found), found


def test_raw_cells_are_read_and_markdown_is_not():
    assert scan_cells(_nb(("raw", "import subprocess"))) == ["a process: subprocess"]
    assert scan_cells(_nb(("raw", "Any text (a raw cell need not be Python"))) == []
    assert scan_cells(_nb(("markdown", "`import subprocess` is how one would"))) == []


def test_a_cell_the_release_gave_unchanged_is_the_courses():
    """An unlocked cell of the course's own (05's ladder reads 01's answers from the reference) left as
    the release gave it is the course's; the same text in a cell the student wrote is read."""
    given = "from lmcourse.reference.ngram import build_kn_tables"
    release = _nb(given)
    assert scan_cells(_nb(given), given=release) == []
    assert scan_cells(_nb(given + "\nimport os\nos.fork()"), given=release) != []
    assert scan_cells(_nb(given)) == ["from lmcourse.reference.ngram import",
                                      "test machinery: lmcourse.reference.ngram",
                                      "test machinery: lmcourse.reference.ngram.build_kn_tables"]


# ---------------------------------------------------------------------------------------------------
# No false alarm on the course's own code, written where a student writes
# ---------------------------------------------------------------------------------------------------

SOLUTIONS = sorted(p.stem for p in (ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))

# unlocked cells the course gives that name what a student's code must not; graded as the release gave
# them they are the course's (scan_cells' given), rewritten by a student they are read like any other
GIVEN_CELLS_FLAGGED = {
    "05_gpt": ["from lmcourse.reference.ngram import", "test machinery: lmcourse.reference.ngram",
               "test machinery: lmcourse.reference.ngram.build_kn_tables",
               "test machinery: lmcourse.reference.ngram.kneser_ney_prob"],
    "10_scaling": ["outside the submission: __file__"],
}


def _solution_as_handed_in(notebook: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """The solution notebook with the release's cell metadata: every answer as the solution writes it,
    every other unlocked cell as the course wrote it; and the release."""
    release = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    nb = nbformat.read(ROOT / "solutions" / f"{notebook}.ipynb", as_version=4)
    assert [c.cell_type for c in nb.cells] == [c.cell_type for c in release.cells]
    for cell, ref in zip(nb.cells, release.cells):
        if "nbgrader" in ref.metadata:
            cell.metadata["nbgrader"] = ref.metadata["nbgrader"]
    return nb, release


@pytest.mark.parametrize("notebook", SOLUTIONS)
def test_no_cell_of_a_solution_is_flagged(notebook):
    """Every cell of the solution a student could write (answers, and the course's unlocked cells as
    if the student had typed them) names nothing the scan flags, beyond the given cells listed above;
    graded with the release, nothing at all (a false flag costs a TA a look at every notebook of the
    class)."""
    nb, release = _solution_as_handed_in(notebook)
    assert scan_cells(nb) == GIVEN_CELLS_FLAGGED.get(notebook, [])
    assert scan_cells(nb, given=release) == []


@pytest.mark.parametrize("notebook", SOLUTIONS)
def test_no_alternative_is_flagged(notebook):
    """The alternatives catalogue (valid solutions written another way), each in its answer cell of the
    solution as handed in, names nothing the scan flags."""
    from lmcourse.authoring.mutants import load_alternatives, variants_path

    path = variants_path(ROOT, notebook)
    if not path.exists():
        pytest.skip(f"{notebook} has no catalogue")
    nb, release = _solution_as_handed_in(notebook)
    flagged = {}
    for alt in load_alternatives(path):
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == alt.target)
        kept, cell.source = cell.source, alt.source
        found = scan_cells(nb, given=release)
        cell.source = kept
        if found:
            flagged[alt.name] = found
    assert flagged == {}


# the issue's red-team routes as a student would write them, each with what must be named
RED_TEAM = {
    "the answer key read from the grader's templates and run as cells": ('''
import json
from pathlib import Path
nb = json.loads(Path(data_dir(), "templates", "01_ngram", "01_ngram.ipynb").read_text())
for c in nb["cells"]:
    if c["metadata"].get("nbgrader", {}).get("solution"):
        get_ipython().run_cell("".join(c["source"]))
''', ["outside the submission: the text 'templates'", "cells read or hooked: run_cell"]),
    "the source notebook reached from the kernel's folder": (
        'nb = open("../../../source/01_ngram/01_ngram.ipynb").read()',
        ["outside the submission: '../../../source/01_ngram/01_ngram.ipynb'"]),
    "the reference loaded under another name": ('''
import imp, os, lmcourse
ref = imp.load_source("r", os.path.join(os.path.dirname(lmcourse.__file__), "reference", "ngram.py"))
''', ["code loading: imp", "code loading: load_source", "outside the submission: __file__"]),
    "the reference written as a module and imported": ('''
from pathlib import Path
Path("r2.py").write_text(text)
import r2
''', ["code loading: a code file 'r2.py'"]),
    "a detached process that waits for the gradebook": ('''
import subprocess, sys
subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
''', ["a process: subprocess", "a process: start_new_session="]),
    "a detached shell": ("!nohup python3 w.py > /dev/null 2>&1 &",
                         ["shell: system", "a process: 'nohup' in shell text"]),
    "the hidden cases precomputed": ("import lmcourse.marking.attention_hidden as H\ncases = H.CASES",
                                     ["import lmcourse.marking.attention_hidden"]),
    "the how-rules switched off": ('''
for exercise in lmcourse.marking.attention.EXERCISES:
    object.__setattr__(exercise, "rules", None)
''', ["test machinery: lmcourse.marking.attention.EXERCISES",
      "test machinery: object.__setattr__(exercise, 'rules', None)"]),
}


@pytest.mark.parametrize("route", sorted(RED_TEAM))
def test_the_issues_routes_are_named(route):
    source, wanted = RED_TEAM[route]
    nb = _nb("import lmcourse\nimport lmcourse.marking\ntests = lmcourse.marking.Exam('03_attention', globals())",
             source, c0={"nbgrader": {"locked": True, "grade_id": "setup"}})
    found = scan_cells(nb)
    assert [w for w in wanted if w not in found] == [], found


@pytest.mark.parametrize("source, finding", [
    ("import pickle\nobj = pickle.loads(bytes.fromhex('80'))\n", "code loading"),
    ("import timeit\ntimeit.timeit(bytes.fromhex('70').decode(), number=1)\n", "code loading"),
    ("import os\nos.sys.path.insert(0, os.getcwd())\n", "sys.path"),
])
def test_the_second_red_teams_routes_are_named(source, finding):
    """Code run from text without exec (a pickle's reduce, a timed statement) and the path reached through
    another module's sys: the second red team's routes past the scan."""
    assert any(finding in f for f in scan_source(source)), scan_source(source)


@pytest.mark.parametrize("flagged, honest", [
    ("import builtins as b\nn = 'ex' + 'ec'\ngetattr(b, n)('x = 1')\n", "n = 'ex' + 'ec'\nprint(n)\n"),
    ("n = 'exec'\ngetattr(__builtins__, n)('x = 1')\n", "getattr(model, name)\n"),
    ("import io\nimport numpy as np\nnp.load(io.BytesIO(b), allow_pickle=True)\n", "import numpy as np\nnp.load(f)\n"),
    ("import torch\ntorch.load(f, weights_only=False)\n", "import torch\ntorch.load(f, weights_only=True)\n"),
    ("import doctest\ndoctest.run_docstring_examples(doc, {})\n", "doc = '>>> 1 + 1'\n"),
    ("import cProfile\ncProfile.run(text)\n", "import time\ntime.perf_counter()\n"),
    ("s = '\"\"\"'\nt = \"\"\"\n>>> \n\"\"\"  # \"\"\"\n... %run (x)\n", "s = '\"\"\"'\nt = ...\n"),
])
def test_the_third_red_teams_routes_are_named(flagged, honest):
    """Code run by helpers the tables missed (a builtin read by a computed name, pickles through numpy's and
    torch's loaders, a docstring's examples, a profiler), and a cell Python reads as `... % run(x)` while
    IPython's prompt stripper runs `%run (x)`: the scan reads what IPython runs, and a cell read two ways is a
    finding itself. The honest neighbour of each is not."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    ("_k = ''.join(['te', 'sts'])\n_t = globals()[_k]\n", "_t = scores['tests']\n"),
    ("_sa = object.__setattr__\n_sa(e, r, None)\n",
     "class P:\n    def __post_init__(self):\n        object.__setattr__(self, 'value', 1)\n"),
    ("_fn = getattr(print.__self__, name)\n", "print('x')\n"),
    ("import _xxsubinterpreters as si\nsi.create()\n", "import time\n"),
])
def test_the_fourth_red_teams_routes_are_named(flagged, honest):
    """The machinery reached by names built at run time, the attribute setter held in a variable, the builtins
    module through a builtin's __self__, and a sub-interpreter (its own audit hooks): each named; the honest
    neighbour (a setter called where it is named, a constant key) is not."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    # a traceback's frame, then its globals by a name built in another statement
    ("try:\n    raise KeyError(0)\nexcept KeyError as _x:\n    _fr = _x.__traceback__.tb_frame\n",
     "try:\n    raise KeyError(0)\nexcept KeyError as exc:\n    print(exc)\n"),
    ("_sn = ''.join(['__s', 'eta', 'ttr', '__'])\ngetattr(object, _sn)(e, 'rules', None)\n",
     "name = 'weight'\ngetattr(layer, name)\n"),
    # gc's objects by a built name; a property set on a class by a built name; Rules' methods patched
    ("import gc as _g\n_go = ''.join(['get', '_ob', 'jec', 'ts'])\n_all = getattr(_g, _go)()\n",
     "import gc\ngc.collect()\n"),
    ("_r = 'ru' + 'les'\nsetattr(type(e), _r, property(lambda s: None))\n",
     "for name in ('a', 'b'):\n    setattr(cfg, name, 1)\n"),
    ("_en = bytes.fromhex('5f5f656e7465725f5f').decode()\nsetattr(R, _en, lambda s: s)\n",
     "setattr(model, 'head', head)\n"),
])
def test_the_sixth_red_teams_switch_offs_are_named(flagged, honest):
    """The kernel's rules switched off by a frame from a traceback and by getattr / setattr with a name a
    variable holds, built in another statement (a join, a sum of strings, a decoded hex): each named; the honest
    neighbour (a loop's own names, a plain variable, gc.collect) is not."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    ("import os\n_R = next(m.Rules for m in list(os.sys.modules.values()) if 'x' in m.__dict__)\n",
     "import os\nos.path.join('a', 'b')\n"),
    ("R.__enter__ = lambda s: s\n", "r.enter = 1\n"),
    ("import builtins\nbuiltins._sm = torch.softmax\n", "import math\nprint(math.fsum([1]))\n"),
    ("f = getattr(x, 'xamtfos'[::-1])\n", "f = getattr(x, 'softmax_scale')\n"),
])
def test_the_seventh_red_teams_switch_offs_are_named(flagged, honest):
    """The rules' class reached through another module's sys.modules and its __enter__ rewritten; a name put
    among the builtins (every cell finds it, no cell binds it); an attribute name reversed in place."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


# the course's list: what no route above names, a valid answer has no use for
_IMPORTED = "import torch\nimport lmcourse\nimport matplotlib.pyplot as plt\n"
BEYOND_THE_LIST = [
    ("import threading\nthreading.Thread(target=f).start()", "import threading"),
    ("import weakref\nweakref.finalize(obj, f)", "import weakref"),
    ("import scipy.special\np = scipy.special.softmax(x)", "import scipy.special"),
    ("import torch\ny = torch.ops.aten.softmax(x, -1, False)", "torch.ops.aten.softmax"),
    ("import torch\nf = torch._C._nn.gelu", "torch._C"),
    ("from torch.nn.functional import _in_projection", "from torch.nn.functional import"),
    ("import torch\nop = 'soft' 'max'\ny = getattr(torch, op)(x, -1)", "getattr(torch, op)"),
    ("import torch\nname = pick()\ny = getattr(torch, name)(x, -1)", "getattr(torch, name)"),
    ("k = x.__class__.__mro__[-1]", "x.__class__"),
    ("g = f.__globals__", "f.__globals__"),
    ("class Lie:\n    def __instancecheck__(self, other):\n        return True", "def __instancecheck__"),
    ("X = type('X', (object,), {})", "type('X', (object,), {})"),
    ("import numpy as np\nlib = np.ctypeslib", "numpy.ctypeslib"),
    ("import sys\nn = sys.getrefcount(x)", "sys.getrefcount"),
    ("import os\nos.kill(2, 19)", "os.kill"),
    ("from .helper import f", "from .helper import"),
    ("ns = globals()", "globals"),
    ("v = getattr(model, '_parameters')", "getattr(model, '_parameters')"),
    # the ninth red team: the rules switched off and torch's functions reached with listed modules only
    *((_IMPORTED + source, named) for source, named in [
        ("import operator\nex = operator.attrgetter('marking.notebooks.load')(lmcourse)('02_rnn')",
         "operator.attrgetter"),
        ("from operator import attrgetter\nf = attrgetter('nn.functional.softmax')(torch)", "from operator import"),
        ("import operator\nf = operator.methodcaller('softmax', -1)", "operator.methodcaller"),
        ("class _C:\n    def clear(self):\n        object.__setattr__(self, 'rules', None)\n", "object.__setattr__"),
        ("m = getattr(lmcourse, 'marking')", "getattr(lmcourse, 'marking')"),
        ("m = vars(lmcourse)['marking']", "vars(lmcourse)"),
        ("import functools\nm = functools.reduce(getattr, ['marking', 'notebooks'], lmcourse)",
         "functools.reduce(getattr"),
        ("c = getattr(torch, '_C')", "getattr(torch, '_C')"),
        # the tenth red team: the test object taken from the cell's namespace, a private attribute read, a field
        # written through vars, an __init__ of one's own run unbound on the course's exercise
        ("_kit = vars()['tests']", "vars()"),
        ("ex = kit._notebook.exercises", "kit._notebook"),
        ("vars(ex)['rules'] = None", "vars(ex)"),
        ("class _W:\n    def __init__(self):\n        object.__setattr__(self, 'rules', None)\n",
         "object.__setattr__")]),
]
WITHIN_THE_LIST = [
    "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self._cache = None\n",
    "best = max(counts, key=counts.__getitem__)",
    "import torch\nprint(torch.__version__)",
    "if getattr(module, 'bias', None) is not None:\n    pass",
    "import os\np = os.path.join('a', 'b')\nn = os.cpu_count()",
    "import gc\nimport torch\ngc.collect()\ntorch.cuda.empty_cache()",
    "import regex\nfrom dataclasses import dataclass, field\nimport matplotlib.pyplot as plt",
    "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass C:\n    x: int\n"
    "    def __post_init__(self):\n        object.__setattr__(self, 'x', abs(self.x))\n",
    "import sys\nprint('x', file=sys.stderr)\nsys.stdout.flush()",
    "from __future__ import annotations\nfrom typing import Iterable",
    "text = open('notes.txt').read()",
    "class P:\n    __slots__ = ('a',)\n    def __eq__(self, other):\n        return self.a == other.a\n",
    # the ninth red team's honest cells
    *(_IMPORTED + source for source in [
        "for epoch in range(3):\n    print(f'\\rdone {epoch + 1}/3', end='')\n",
        "plt.xlabel('steps /1000')\nprint(f'step {i}/100')",
        "class Run:\n    def __repr__(self):\n        return f'{self.__class__.__name__}(lr={self.lr})'\n",
        "import logging\nlog = logging.getLogger('train')\nlog.info('x')",
        "import pandas as pd\nimport glob\nimport tempfile",
        "import time\nfrom tqdm.auto import tqdm\nfor _ in tqdm(range(3)):\n    time.sleep(0)",
        "fig.savefig('loss.png')\nfrom pathlib import Path\nPath('out').mkdir(exist_ok=True)",
        "import operator\npairs = sorted(counts.items(), key=operator.itemgetter(1))",
        "w = getattr(module, 'weight', None)\nb = getattr(torch, 'float32')",
        "class Cache:\n    _size = 3\n    def _key(self, x):\n        return x\n\n"
        "c = Cache()\nc._store = {}\nprint(c._size, c._key(1), c._store)",
        "T = torch\nx = T.zeros(3)"]),
]


@pytest.mark.parametrize("source, named", BEYOND_THE_LIST, ids=[b[1] for b in BEYOND_THE_LIST])
def test_what_is_beyond_the_courses_list_is_named(source, named):
    """A route nobody has named yet still needs a module, a special attribute, a library's private name or a
    namespace that no valid answer uses: each is a flag for a person."""
    found = scan_source(source)
    assert any(f.startswith("beyond the course's list") and named in f for f in found), found


@pytest.mark.parametrize("source", WITHIN_THE_LIST)
def test_what_valid_answers_use_is_within_the_list(source):
    assert scan_source(source) == [], source


def test_a_partly_listed_module_gives_only_its_listed_names():
    assert scan_source("from IPython.display import display, Markdown\ndisplay(Markdown('**x**'))") == []
    assert scan_source("import IPython\nip = IPython.get_ipython()") == ["beyond the course's list: import IPython"]
    assert scan_source("from IPython.display import update_display") == [
        "beyond the course's list: from IPython.display import"]
    assert scan_source("import os\nos.write(1, b'x')") == ["beyond the course's list: os.write"]



@pytest.mark.parametrize("flagged, honest", [
    # the rules cleared through a function whose parameter is merely named self
    ("def _quiet(self):\n    vars(self)['rules'] = None\n",
     "class A:\n    def state(self):\n        return vars(self)\n"),
    # a module handed on as a value: a default, an argument, a class attribute, an item
    ("import torch\ndef f(x, _m=torch):\n    return _m.rnn_tanh_cell(x)\n",
     "import torch\ndef f(x):\n    return torch.tanh(x)\n"),
    ("import lmcourse\n_spec(lmcourse, '02_rnn')\n", "import lmcourse\nlmcourse.setup()\n"),
    ("import lmcourse\nclass C:\n    here = lmcourse\n", "import torch\nT = torch\nT.zeros(1)\n"),
    ("import torch\nmods = (torch, torch.nn)\n", "import torch\nx = getattr(torch, 'float32')\n"),
    # what turns a string into an object: a configurator's resolve, a format field, a type hint evaluated
    ("import logging.config\nr = logging.config.BaseConfigurator({}).resolve\n",
     "import logging\nlog = logging.getLogger('train')\n"),
    ("import string\nstring.Formatter().get_field(f, [x], {})\n", "s = '{:.3f}'.format(x)\n"),
    ("import typing\ntyping.get_type_hints(f)\n", "import typing\nT = typing.Optional[int]\n"),
    # a dotted path in a string that the list would flag as code
    ("p = 'lmcourse.marking.rnn'\n", "p = 'torch.float32'\n"),
    ("p = 'tiktoken._educational'\n", "p = 'model.pt'\n"),
    ("p = '{0.__class__.__base__}'\n", "p = '{0.shape}'\n"),
    # a name built in place, passed to setattr, is hidden; a loop over names written out is not
    ("n = f'c_{x}'\nsetattr(m, n, 1)\n", "n = f'c_{x}'\nfor n in ('c_attn', 'c_proj'):\n    setattr(m, n, 1)\n"),
])
def test_the_eleventh_red_teams_routes_are_named(flagged, honest):
    """A module passed on as a value, vars(self) outside a class's method, strings resolved into objects by a
    listed library (logging.config, string.Formatter, typing), and dotted paths in strings that name what the
    list would flag in code. The honest neighbour of each is not."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    # a string run as code by a listed library: a benchmark's statement, a backend module loaded by name
    ("import torch.utils.benchmark as tb\ntb.Timer(stmt=s).timeit(1)\n", "import time\nt = time.perf_counter()\n"),
    ("from matplotlib.backends.registry import backend_registry\nbackend_registry.load_backend_module(n)\n",
     "import matplotlib.pyplot as plt\nplt.show()\n"),
    ("s = '\\nimport lmcourse as L\\nL.marking.rules.x = 1\\n'\n", "s = 'loss {:.3f} at step {}'\n"),
    ("s = 'exec(_notes)'\n", "s = 'print(x)'\n"),
    # a string annotation that is code: singledispatch's register evaluates it
    ("import functools\ndef g(x: 'exec(_notes)'):\n    return x\nfunctools.singledispatch(str).register(g)\n",
     "import torch\ndef g(x: 'torch.Tensor', n: 'list[int] | None' = None) -> 'torch.Tensor':\n    return x\n"),
    # pickles loaded by other spellings
    ("import numpy as np\nnp.load(f, None, True)\n", "import numpy as np\nnp.load(f)\n"),
    ("import numpy as np\nnp.load(f, **{'allow_pickle': True})\n", "import numpy as np\nnp.load(f, mmap_mode='r')\n"),
    ("import os\nos.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'\n", "import os\nh = os.environ.get('HOME')\n"),
    ("import pandas as pd\npd.io.pickles.read_pickle(f)\n", "import pandas as pd\npd.read_csv(f)\n"),
])
def test_the_twelfth_red_teams_routes_are_named(flagged, honest):
    """Code in strings that a listed library runs (a benchmark's statement, a string annotation evaluated by
    singledispatch, a backend module loaded by name) and pickles loaded by other spellings. The honest
    neighbour of each is not."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("honest", [
    "import torch\ndef f(x):\n    fn = torch.nn.functional\n    return fn.relu(x)\n",
    "import numpy as np\nimport torch\ndef f(x):\n    xp = torch if torch.is_tensor(x) else np\n"
    "    return x.sum() if xp is torch else xp.sum(x)\n",
    "import random\ndef f(rng=random):\n    return rng.random()\n",
    "print('wrote test.txt and token.txt')\n",
    "TARGETS = ('c_attn', 'c_proj')\nn = f'{x}'\nfor n in TARGETS:\n    setattr(m, n, getattr(m, n))\n",
])
def test_valid_answers_the_twelfth_red_team_wrote_are_not_flagged(honest):
    """An alias of a module in a function, a module chosen and compared, random as a default, file names
    that start with a module's name, a loop over a tuple of names written out in another statement."""
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    ("import torch\ntorch.distributed.init_process_group()\n", "import torch\ntorch.utils.data.DataLoader(x)\n"),
    ("import numpy as np\nnp.f2py.compile(s)\n", "import numpy as np\nnp.testing.assert_allclose(a, b)\n"),
    ("import numpy as np\nnp.testing.rundocs(f)\n", "import numpy as np\nnp.linalg.norm(a)\n"),
    ("from tqdm.contrib.concurrent import process_map\n", "from tqdm.auto import tqdm\n"),
    ("import matplotlib.testing\n", "import matplotlib.ticker as mt\n"),
])
def test_the_large_libraries_are_listed_by_submodule(flagged, honest):
    """torch, numpy, matplotlib and tqdm are listed by the submodules an answer has a use for; the others
    hold servers, compilers, string runners and process pools (one of which ran a string past the scan)."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    # a module that a listed library imported, read through it
    ("import torch\n_load = torch.importlib.import_module\n", "import torch\nF = torch.nn.functional\n"),
    ("import pathlib\npathlib.os.system(c)\n", "import pathlib\npathlib.Path('x').exists()\n"),
    # exec reached as a method of a module a function handed back; a course helper that imported anything
    ("import lmcourse\nlmcourse.runtime.given(name).exec(text)\n", "model.eval()\n"),
    # a datapipe's pickle handler; singledispatch, which evaluates annotations held in variables
    ("from torch.utils.data.datapipes.utils.decoder import basichandlers\n",
     "from torch.utils.data import DataLoader\n"),
    ("import functools\nf = functools.singledispatch(g)\n", "import functools\nf = functools.lru_cache(g)\n"),
    # the environment: what torch's loader or the grader reads, not a library's setting
    ("import os\nos.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'\n",
     "import os\nos.environ['TOKENIZERS_PARALLELISM'] = 'false'\n"),
    ("import os\nos.environ[k] = v\n", "import os\nos.environ.setdefault('OMP_NUM_THREADS', '1')\n"),
    # a text that is code reaching the course, not a snippet kept as data or a type's name
    ("s = 'import lmcourse as L\\nL.marking'\n", "s = 'import math\\nprint(math.pi)'\n"),
    ("s = 'exec(t)'\n", "s = 'torch.Tensor'\n"),
])
def test_the_thirteenth_red_teams_routes_are_named(flagged, honest):
    """Modules a listed library imported, read through it (torch.importlib); exec as a method of whatever a
    function handed back; a datapipe's pickle handler; singledispatch; and, the other way, settings of the
    environment, snippets of code kept as data, numpy's stride tricks and Literal annotations stay unflagged."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("honest", [
    "import numpy as np\nw = np.lib.stride_tricks.sliding_window_view(a, 3)\n",
    "from typing import Literal\ndef f(x: \"Literal['greedy', 'sample']\"):\n    return x\n",
    "import torch\nwith torch.profiler.profile() as p:\n    pass\n",
    "from mpl_toolkits.mplot3d import Axes3D\n",
])
def test_valid_answers_the_thirteenth_red_team_wrote_are_not_flagged(honest):
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged", [
    "import torch\ntorch.builtins.exec(t)\n",                       # builtins, as torch imported it
    "import torch\ntorch.cuda.memory.pickle.loads(b)\n",           # pickle, as torch.cuda.memory imported it
    "import torch\ntorch.fft.torch.utils.benchmark.Timer(s)\n",    # torch itself, reached again through fft
    "import matplotlib\nmatplotlib.subprocess.run(x)\n",
    "import torch\ntorch.load(f, pickle_module=p)\n",
])
def test_modules_carried_under_a_listed_name_are_read_as_themselves(flagged):
    """The thirteenth red team: a listed module holds the modules it imported as plain attributes; a path
    through one is read as the module it reaches."""
    assert scan_source(flagged), flagged


@pytest.mark.parametrize("flagged, honest", [
    # numpy's test helpers that run a text: only the assertions of numpy.testing and torch.testing are listed
    ("import numpy as np\nnp.testing.measure(t)\n", "import numpy as np\nnp.testing.assert_array_equal(a, b)\n"),
    ("from numpy.testing import runstring\nrunstring(t, {})\n", "from numpy.testing import assert_allclose\n"),
    ("import torch\ntorch.testing.FileCheck()\n", "import torch\ntorch.testing.assert_close(a, b)\n"),
    # a function or class a listed module imported by name from a module the list leaves out
    ("import torch.utils.checkpoint as c\nc.get_type_hints(f)\n",
     "import torch.utils.checkpoint as c\ny = c.checkpoint(f, x, use_reentrant=False)\n"),
    ("import pathlib\npathlib.attrgetter(n)(x)\n", "import pathlib\np = pathlib.Path('x')\n"),
    ("from torch.utils.checkpoint import ForwardRef\n", "from torch.nn.functional import softplus\n"),
    ("import matplotlib\nmatplotlib.Parameter\n", "import matplotlib.pyplot as plt\nplt.cycler(color=['r'])\n"),
])
def test_the_fourteenth_red_teams_routes_are_named(flagged, honest):
    """numpy.testing.measure and runstring run a text; torch.utils.checkpoint.get_type_hints is typing's and
    pathlib.attrgetter operator's, imported there by name. Each is read at its home. The honest neighbour of
    each (torch.save and torch.load, whose home is torch.serialization, among them) is not flagged."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("honest", [
    'import torch\ndef f(x: "torch.Tensor | None", ps: "list[torch.nn.Parameter]") -> "torch.Tensor":\n'
    '    return x\n',
    'import torch\nh_t = torch.zeros(2, 3)\nassert h_t.shape == (2, 3), "h_t.shape = (B, H)"\n',
    'import matplotlib.pyplot as plt\nplt.plot([1], label="torch.tanh(x)")\n',
    'HINT = "p.grad = None"\n',
    'import os\nos.environ.setdefault("TORCH_HOME", "cache")\n',
    'import torch\ntorch.save({"w": torch.ones(1)}, "w.pt")\nw = torch.load("w.pt")\n',
])
def test_valid_answers_the_fourteenth_red_team_wrote_are_not_flagged(honest):
    """String type hints, an assertion's message and a plot label that quote code, a cache's folder."""
    assert scan_source(honest) == [], (honest, scan_source(honest))


# Listed public functions and classes whose own code runs, compiles or imports a text, read and found harmless:
# each takes no text from its caller to run (a regular expression is compiled, not run; a module is imported
# by a fixed name; a class's repr is evaluated), or is read by a rule of its own (np.load's allow_pickle).
_RUNNERS_REVIEWED = {
    "numpy.fromregex": "compiles a regular expression",
    "numpy.rec.fromrecords": "pickles only in its docstring's example",
    "regex.Regex": "compiles a regular expression",
    "numpy.load": "unpickles only with allow_pickle=True, a finding of its own",
    "torch.load": "unpickles code only with weights_only=False or a pickle_module, findings of their own",
    "torch.serialization.load": "the same function as torch.load",
    "torch.autocast": "evaluates no text of the caller's",
    "torch.compile": "compiles the caller's function, not a text",
    "torch.cond": "compiles the caller's functions, not a text",
    "torch.inference_mode": "evaluates no text of the caller's",
    "torch.nn.Module": "Module.compile and Module.eval take no text",
    "torch.nn.MultiheadAttention": "calls self.eval-like methods only",
    "torch.nn.SyncBatchNorm": "calls self.eval-like methods only",
    "torch.nn.TransformerEncoderLayer": "calls self.eval-like methods only",
    "torch.nn.functional.interpolate": "imports a fixed module",
    "torch.nn.functional.pad": "imports a fixed module",
    "torch.nn.functional.max_pool3d_with_indices": "imports a fixed module",
    "torch.nn.functional.linear_cross_entropy": "compiles the function, not a text",
    "torch.utils.checkpoint.TorchDispatchMode": "compiles no text of the caller's",
    "functools.namedtuple": "evaluates code made from field names it has checked are identifiers",
    "collections.namedtuple": "the same function as functools' namedtuple",
    "re.Scanner": "compiles regular expressions",
    "re.compile": "compiles a regular expression",
    "re.template": "compiles a regular expression",
    "string.Template": "compiles a regular expression",
    "textwrap.TextWrapper": "compiles regular expressions",
    "csv.Sniffer": "compiles regular expressions",
    "logging.PercentStyle": "compiles a regular expression",
    "logging.StrFormatStyle": "compiles a regular expression",
    "warnings.filterwarnings": "compiles a regular expression",
    "pprint.isreadable": "evaluates nothing the caller gives",
    "matplotlib.RcParams": "compiles regular expressions",
    "matplotlib.pyplot.figure": "imports a backend by the configured name (matplotlib.use is a finding)",
    "datetime.date": "unpickles nothing the caller gives",
    "datetime.datetime": "unpickles nothing the caller gives",
    "datetime.time": "unpickles nothing the caller gives",
}


def _listed_runners():
    """Every public function and class the course's list allows whose own source calls a code runner."""
    import importlib
    import inspect
    import re
    import types

    from lmcourse.grading import scan

    runs = re.compile(r"(?<![\w.])(exec|eval|compile|__import__)\s*\(|\b(import_module|run_path|run_module|"
                      r"pickle\.loads?|rundocs|runstring)\s*\(")
    roots = sorted(m for m in scan._LISTED_MODULES if m not in ("lmcourse", "__future__")) + [
        f"{top}.{sub}" for top, subs in scan._LISTED_SUBMODULES.items() for sub in subs] + list(scan._PARTLY_LISTED)
    found, seen = {}, set()
    for root in roots:
        try:
            module = importlib.import_module(root)
        except Exception:       # a listed module this machine lacks (regex) or cannot import: nothing to read
            continue
        for name in dir(module):
            dotted = f"{root}.{name}"
            if name.startswith("_") or not scan._listed(dotted):
                continue
            try:
                obj = getattr(module, name)
                if isinstance(obj, types.ModuleType) or id(obj) in seen or not callable(obj):
                    continue
                seen.add(id(obj))
                source = inspect.getsource(obj)
            except Exception:   # a C function, a value: no Python source to read
                continue
            if runs.search(source):
                found[dotted] = sorted({m.group(1) or m.group(2) for m in runs.finditer(source)})
    return found


def test_every_listed_function_that_runs_a_text_has_been_read():
    """The fourteenth red team found numpy.testing.measure, a listed function that runs a text, by reading the
    list's libraries for code runners. This reads them the same way: each listed function or class whose own
    source runs, compiles or imports a text must be off the list or reviewed above, so a new version of a
    library that adds one fails here before a submission uses it."""
    found = _listed_runners()
    unread = {name: calls for name, calls in found.items() if name not in _RUNNERS_REVIEWED}
    assert not unread, f"listed functions that run a text, unreviewed (unlist them or review them): {unread}"
    assert "numpy.testing.measure" not in found and "numpy.testing.runstring" not in found


def _encoded_routes():
    import base64

    hidden = "import lmcourse as L\nL.marking.refusals.watch = quiet\n"
    return [f"_notes = bytes.fromhex({hidden.encode().hex()!r}).decode()\n",
            f"_notes = {base64.b64encode(hidden.encode()).decode()!r}\n",
            f"_notes = {base64.b32encode(hidden.encode()).decode()!r}\n",
            f"_notes = {hidden.encode()!r}.decode()\n"]


@pytest.mark.parametrize("flagged", _encoded_routes())
def test_code_kept_encoded_is_named(flagged):
    """Every route of rounds twelve to fourteen handed a runner a text kept as hex: the text, once decoded
    (hex, base64, base32, a bytes literal), is Python that imports and sets, and that is a flag."""
    assert any("code in a" in f for f in scan_source(flagged)), (flagged, scan_source(flagged))


@pytest.mark.parametrize("honest", [
    "digest = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'\n",
    "tip = 'SGVsbG8gd29ybGQsIHRoaXMgaXMgYSBzZW50ZW5jZSBvZiBwcm9zZQ=='\n",
    "raw = b'hello world'\nodd = b'\\xff\\x00'\nword = 'abcdefghijklmnopqrstuvwxyzabcdefghij'\n",
])
def test_hashes_keys_and_bytes_are_not_encoded_code(honest):
    assert scan_source(honest) == [], (honest, scan_source(honest))


def _hex_in_pieces():
    hidden = b"import lmcourse as L\nL.marking.refusals.watch = quiet\n".hex()
    parts = [hidden[i:i + 20] for i in range(0, len(hidden), 20)]
    return [f"_notes = {parts!r}\n", "_notes = " + " + ".join(map(repr, parts)) + "\n",
            f"_notes = {' '.join(parts)!r}\n"]


@pytest.mark.parametrize("flagged, honest", [
    # matplotlib imports a backend module by name: a file the cell wrote, run as it is imported
    ("import matplotlib.pyplot as plt\nplt.switch_backend(name)\n",
     "import matplotlib.pyplot as plt\nplt.close('all')\n"),
    ("backend = 'module://' + name\n", "url = 'https://example.org/corpus.txt'\n"),
    # an encoded text kept in pieces shorter than one encoding needs, or with spaces in it
    *[(route, "words = ['the', 'cat', 'sat', 'on', 'the', 'mat', 'and', 'then', 'it', 'slept', 'well']\n")
      for route in _hex_in_pieces()],
])
def test_the_fifteenth_red_teams_routes_are_named(flagged, honest):
    """matplotlib's switch_backend imports a module by name; an encoded text split into pieces (a list, a sum,
    spaces) is joined before it is read. The honest neighbour of each is not flagged."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    # torch's weights-only loader calls whatever its safe-globals list holds
    ("import torch\ntorch.serialization.add_safe_globals([f])\n",
     "import torch\nsd = torch.load('w.pt', map_location='cpu')\n"),
    ("from torch.serialization import safe_globals\n", "from torch.serialization import load, save\n"),
    # a loader told to unpickle code by ** or by position
    ("import torch\ntorch.load(p, **{'weights_only': False})\n", "import torch\ntorch.load(p, 'cpu')\n"),
    ("import torch\ntorch.load(p, None, pk)\n", "import torch\ntorch.save(m.state_dict(), 'w.pt')\n"),
    ("import types\nf = types.FunctionType(c, g)\n", "from types import SimpleNamespace\nns = SimpleNamespace(a=1)\n"),
])
def test_the_fifteenth_red_teams_loader_routes_are_named(flagged, honest):
    """torch's safe-globals lists and a loader told by ** or by position to unpickle are findings; torch.save,
    torch.load and types.SimpleNamespace are listed, a method read as ``obj.__call__`` too."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))
    assert scan_source("class TopK:\n    def __call__(self, x):\n        return x\nf = TopK().__call__\n") == []


@pytest.mark.parametrize("flagged, honest", [
    (f"_notes = bytes({list(b'import lmcourse as L' + bytes([10]) + b'L.marking.refusals.watch = q')!r}).decode()\n",
     "ids = [72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 33, 33, 33, 33, 33]\n"),
    (f"_notes = ''.join(map(chr, {[ord(c) for c in 'import os; os.system(c)']!r}))\n",
     "ids = [256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271]\n"),
])
def test_code_kept_as_character_codes_is_named(flagged, honest):
    """The sixteenth red team kept its module's text as a list of integers: one that decodes to code is a finding;
    token ids and bytes of prose are not."""
    assert any("character codes" in f for f in scan_source(flagged)), scan_source(flagged)
    assert scan_source(honest) == [], (honest, scan_source(honest))


@pytest.mark.parametrize("flagged, honest", [
    # a module's special names imported by name: its builtins (exec by a computed key), its loader (set_data)
    ("from tempfile import __builtins__ as _shelf\n_shelf['ex' + 'ec'](t)\n", "from tempfile import mkdtemp\n"),
    ("from torch import __loader__ as _w\n_w.set_data(p, b)\n", "from torch import __version__\n"),
])
def test_the_seventeenth_red_teams_routes_are_named(flagged, honest):
    """`from X import __builtins__` reached exec with no name of it written; `from torch import __loader__`
    wrote a module through the import system's set_data. The honest neighbour of each is not flagged."""
    assert scan_source(flagged), flagged
    assert scan_source(honest) == [], (honest, scan_source(honest))
