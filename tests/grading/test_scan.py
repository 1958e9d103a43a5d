"""lmcourse.grading.scan: the routes around the grader, found in what the student wrote."""

import nbformat
import pytest

from lmcourse.grading.scan import scan_cells, scan_source
from tests.conftest import NOTEBOOKS, ROOT


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
    assert scan_source("import builtins\nbuiltins.eval('1')") == ["eval"]


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
    assert found == ["sys.modules", "tests read"], found
    assert scan_source("import sys as _s\nsys_args = _s.argv") == []


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_solution_is_flagged(notebook):
    """Every notebook's solution, handed in as a student would, names nothing the scan flags (a false
    flag on an honest submission costs a TA a look at every notebook of the class)."""
    from lmcourse.authoring.course import perfect_submission

    release = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    source = nbformat.read(ROOT / "autograder" / "source" / notebook / f"{notebook}.ipynb", as_version=4)
    assert scan_cells(perfect_submission(release, source)) == []


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
