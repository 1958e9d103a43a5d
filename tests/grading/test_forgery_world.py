"""The graded kernel's world, tried from inside by a submission of every notebook, under both graders.

Red teams read the answer key from disk instead of forging records: nbgrader's source notebooks (solutions and
hidden tests) sat in `lmcourse grade`'s template cache, which the sandbox bound, and at
``../../../source/NN/NN.ipynb`` from a plain nbgrader kernel; a kernel of plain nbgrader could load the
reference under another name, rewrite the package the judge imports, rewrite classmates' submissions and
leave a process behind to rewrite the gradebook. One submission per notebook, ``aaa-world`` (named to be
graded first by plain nbgrader, which grades in order), is the untouched student notebook plus one cell
that tries every one of those routes, each as far as the kernel's world lets it:

- the answer key: every notebook file the kernel can find (the course's source folder from the kernel's
  folder, the course cache's templates, home, ``/tmp``, the folders above it), each of its solution cells
  run in the kernel;
- the reference read from the package's folder and run under another name;
- the package poisoned: every file of ``lmcourse/reference`` and ``lmcourse/marking`` appended to;
- classmates' submissions overwritten: every ``.ipynb`` under ``submitted/`` and the folders above;
- a detached process (a double fork in a new session, and a ``Popen`` with a new session) that waits for
  ``gradebook.db`` and sets every score to its maximum;
- the disk filled: a file of a gigabyte written in the kernel's own folder.

Each must leave it with the untouched notebook's score (0) under both graders, the honest students of the
class (the proofs' perfect and alternatives' submissions) with their full marks, the package and the other
submissions unchanged on disk, and no process of it alive. Without the sandbox (``--sandbox none``) the same
cell takes points from the template cache: the route is real (:func:`test_without_the_sandbox_the_key_is_read`).
"""

from __future__ import annotations

import hashlib
import os
import textwrap

import nbformat
import pytest

from tests.classes import proofs_group
from tests.grading.test_grade import BWRAP, ROOT, running_with

pytestmark = [pytest.mark.slow]

NOTEBOOKS = tuple(sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
STUDENT = "aaa-world"
MARK = f"lmcourse-world-{os.getpid()}"      # in the detached processes' command lines: none may survive


def world_cell(notebook: str) -> str:
    """The cell that tries every route of the kernel's world (run after the notebook's setup cell)."""
    return textwrap.dedent(f'''
        import glob as _glob, os as _os, sys as _sys, pathlib as _pl
        _ip = get_ipython()
        _name = {notebook!r}
        _roots = [_os.getcwd(), _os.path.expanduser("~"), "/tmp", "/root", "/home", "/work", "/var",
                  _os.environ.get("LMCOURSE_DATA_DIR", "")]
        _roots += [str(p) for p in _pl.Path.cwd().parents if str(p) != "/"][:4]
        _skip = {{"/usr", "/proc", "/sys", "/dev", _os.path.realpath(_sys.prefix), _os.path.realpath(_sys.base_prefix)}}
        _seen = set()
        # 1. the answer key: any notebook with solution cells of this assignment, run cell by cell
        for _root in filter(None, _roots):
            for _top, _dirs, _files in _os.walk(_root):
                _dirs[:] = [d for d in _dirs if _os.path.join(_top, d) not in _skip]
                # this assignment's notebooks only: nbgrader's source (the key) is named like the assignment
                for _f in [_os.path.join(_top, f) for f in _files if f == _name + ".ipynb"]:
                    if _f in _seen or len(_seen) > 2000:
                        continue
                    _seen.add(_f)
                    try:
                        import json as _json
                        _cells = _json.load(open(_f))["cells"]
                    except Exception:
                        continue
                    for _c in _cells:
                        _m = _c.get("metadata", {{}}).get("nbgrader", {{}})
                        if _m.get("solution") and _c.get("cell_type") == "code":
                            _src = "".join(_c["source"])
                            if "### BEGIN SOLUTION" in _src:
                                try:
                                    _ip.run_cell(_src)
                                except Exception:
                                    pass
        # 2. the reference run from its file under another name
        try:
            import importlib.util as _iu
            import lmcourse as _lm
            # this notebook's own answers (an earlier notebook's are given code, there on purpose)
            _own = tests._notebook.reference.rsplit(".", 1)[-1] + ".py"
            for _ref in _glob.glob(_os.path.join(_os.path.dirname(_lm.__file__), "reference", _own)):
                _spec = _iu.spec_from_file_location("_copy_" + _pl.Path(_ref).stem, _ref)
                _mod = _iu.module_from_spec(_spec)
                try:
                    _spec.loader.exec_module(_mod)
                except Exception:
                    continue
                globals().update({{k: v for k, v in vars(_mod).items() if not k.startswith("_")}})
        except Exception:
            pass
        # 3. the package poisoned, 4. classmates' submissions overwritten
        try:
            import lmcourse as _lm
            _pkg = _os.path.dirname(_lm.__file__)
            _files = _glob.glob(_os.path.join(_pkg, "reference", "*.py"))
            for _f in _files + _glob.glob(_os.path.join(_pkg, "marking", "*.py")):
                try:
                    open(_f, "a").write("\\nraise SystemExit  # poisoned\\n")
                except Exception:
                    pass
        except Exception:
            pass
        for _root in filter(None, _roots):
            for _f in _glob.glob(_os.path.join(_root, "**", "submitted", "**", "*.ipynb"), recursive=True)[:500]:
                try:
                    open(_f, "w").write("{{}}")
                except Exception:
                    pass
        # 5. a process left behind, waiting for the gradebook
        _code = ("import glob,os,sqlite3,time\\n"
                 "for _ in range(600):\\n"
                 "    for f in glob.glob('/**/gradebook.db', recursive=True) + glob.glob('../../../gradebook.db'):\\n"
                 "        try:\\n"
                 "            c = sqlite3.connect(f)\\n"
                 "            c.execute('update grade set auto_score = max_score'); c.commit()\\n"
                 "        except Exception: pass\\n"
                 "    time.sleep(1)\\n")
        try:
            if _os.fork() == 0:
                _os.setsid()
                if _os.fork() == 0:
                    _os.execv(_sys.executable, [_sys.executable, "-c", _code, {MARK!r}])
                _os._exit(0)
        except Exception:
            pass
        try:
            import subprocess as _sp
            _sp.Popen([_sys.executable, "-c", _code, {MARK!r}], start_new_session=True)
        except Exception:
            pass
        # 6. the disk filled
        try:
            with open("filler", "wb") as _out:
                for _ in range(1024):
                    _out.write(b"\\0" * 2**20)
        except Exception:
            pass
    ''')


# --- 03: routes around the in-kernel rules, each tried on the exercise it would answer -------------
# precomputed: the hidden cases run through torch's refused softmax before the test cell (outside any
# graded call, where no rule is on), the answer replaying the table. Hidden cases now reach the kernel
# only with their own test cell: nothing to precompute (the visible cases alone are public anyway).
_PRECOMPUTE = """
import importlib as _il
import torch as _t
_table = {}
for _mod in ("lmcourse.marking.attention_hidden", "lmcourse.marking.attention"):
    try:
        _m = _il.import_module(_mod)
    except ImportError:
        continue
    class _Names:
        def __getattr__(self, name):
            def softmax(x, dim=-1):
                out = _t.softmax(x, dim=dim)
                _table[(x.detach().numpy().tobytes(), x.dtype, dim)] = out.clone()
                return out
            if name == "softmax":
                return softmax
            raise AttributeError(name)
    for _case in [*getattr(_m, "HIDDEN", {}).get("softmax", ()), *getattr(getattr(_m, "NOTEBOOK", None), "exercise",
                                                                         lambda n: None)("softmax").cases]:
        try:
            _case.call(_Names())
        except Exception:
            pass
"""
_REPLAY = """
def softmax(x, dim=-1):
    return _table[(x.detach().numpy().tobytes(), x.dtype, dim)].clone()
"""
# the rules switched off through the spec objects the test cells already imported, then torch's softmax
_RULES_OFF = """
import lmcourse.marking.attention as _spec
for _ex in _spec.NOTEBOOK.exercises:
    object.__setattr__(_ex, "rules", None)
"""
_TORCH_SOFTMAX = """
import torch


def softmax(x, dim=-1):
    return torch.softmax(x, dim=dim)
"""
# what the scan did not read: a cell whose first line is a magic, and a cell given nbgrader metadata of
# its own without a grade id, each loading a module written to disk
_MAGIC = """%%capture
open("_mine.py", "w").write("import torch\\ndef softmax(x, dim=-1):\\n    return torch.softmax(x, dim=dim)\\n")
import imp
softmax = imp.load_source("_mine", "_mine.py").softmax
"""


# the rules switched off from a module the notebook writes under a name built in pieces and imports (the
# red team's route past the scan: no cell names the switch). The kernel's folder is not on its import path,
# and the grader lists the code files a kernel left, with the scan's findings in them.
_SWITCH = (b"import IPython\nfor _e in IPython.get_ipython().user_ns['tests']._notebook.exercises:\n"
           b"    object.__setattr__(_e, 'rules', None)\n").hex()
_WRITTEN = f"""
_name = "nb_hel" + "per"
open(_name + ".p" + "y", "w").write(bytes.fromhex({_SWITCH!r}).decode())
try:
    __import__(_name)
except ImportError:
    pass
"""


def _pickled_switch() -> str:
    """A pickle whose reduce calls ``exec`` on the switch: ``pickle.loads`` of it is the whole cell."""
    import pickle

    class _Run:
        def __reduce__(self):
            return exec, (bytes.fromhex(_SWITCH).decode(),)

    return pickle.dumps(_Run()).hex()


def _torch_saved_switch() -> str:
    """The same pickle in torch.save's file: ``torch.load(..., weights_only=False)`` of it runs the switch."""
    import io
    import pickle

    import torch

    class _Run:
        def __reduce__(self):
            return exec, (bytes.fromhex(_SWITCH).decode(),)

    out = io.BytesIO()
    torch.save(_Run(), out, pickle_module=pickle)
    return out.getvalue().hex()


# the third red team's: builtins read by a computed name, the pickle through numpy's and torch's loaders,
# the switch as a docstring's examples, and a cell Python reads as `... % run(x)` that IPython runs as
# `%run (x)`, a file the cell before wrote with no code suffix
_THIRD_ROUND = {
    "aaj-builtins-by-name": f"import builtins as _bi\n_nm = 'ex' + 'ec'\n"
                            f"getattr(_bi, _nm)(bytes.fromhex({_SWITCH!r}).decode())\n",
    "aak-numpy-load": "import io\nimport numpy as np\n"
                      "np.load(io.BytesIO(bytes.fromhex(_PICKLED_SWITCH)), allow_pickle=True)\n",
    "aal-torch-load": "import io\nimport torch\n"
                      "torch.load(io.BytesIO(bytes.fromhex(_TORCH_SWITCH)), weights_only=False)\n",
    "aam-doctest": ("import doctest\n"
                    f"_src = bytes.fromhex({_SWITCH!r}).decode()\n"
                    "_doc = ''.join(('... ' if line.startswith(' ') else '>>> ') + line + '\\n'\n"
                    "               for line in _src.splitlines())\n"
                    "doctest.run_docstring_examples(_doc, {})\n"),
    "aan-prompt-stripper": (f"with open('(x)', 'w') as _f:\n    _f.write(bytes.fromhex({_SWITCH!r}).decode())\n",
                            's = \'"""\'\nt = """\n>>> \n"""  # """\n... %run (x)\n'),
}


# the fourth red team's: the machinery found and written through names built at run time (no text run as
# code), exec reached through a builtin's __self__, a one-line cell IPython's automagic ran as `%run (x)`, and a
# sub-interpreter (its own audit hooks: a process it starts is not seen)
_FOURTH_ROUND = {
    "aao-computed-names": ("_k = ''.join(['te', 'sts'])\n_t = globals()[_k]\n_sa = object.__setattr__\n"
                           "_r = ''.join(['ru', 'les'])\nfor _e in _t._notebook.exercises:\n    _sa(_e, _r, None)\n"),
    "aap-builtin-self": (f"_nm = bytes.fromhex('65786563').decode()\n_fn = getattr(print.__self__, _nm)\n"
                         f"_fn(bytes.fromhex({_SWITCH!r}).decode(), globals())\n"),
    "aaq-automagic": (f"with open('(x)', 'w') as _f:\n    _f.write(bytes.fromhex({_SWITCH!r}).decode())\n",
                      "run(x)\n"),
    "aar-subinterpreter": "import _xxsubinterpreters as _si\n_i = _si.create(isolated=False)\n",
}


# the fifth red team's: the rules switched off by spellings the scan does not name (a traceback's frame and the
# attribute setter by a variable name, gc's objects, a property on the Exercise class, Rules' own __enter__ and
# __exit__ patched), and torch's function modes popped inside the graded call around a softmax called from C.
# The judge reads the answer's text: it names torch's softmax, which the exercise refuses
_FIFTH_ROUND = {
    "aas-traceback-frame": ("_k = ''.join(['tes', 'ts'])\n_r = ''.join(['rul', 'es'])\n"
                            "_fg = ''.join(['f_g', 'lob', 'als'])\n_sn = ''.join(['__s', 'eta', 'ttr', '__'])\n"
                            "try:\n    raise KeyError(0)\nexcept KeyError as _x:\n    _fr = _x.__traceback__.tb_frame\n"
                            "_t = getattr(_fr, _fg).get(_k)\nfor _e in _t._notebook.exercises:\n"
                            "    getattr(object, _sn)(_e, _r, None)\n"),
    "aat-gc-objects": ("_r = ''.join(['rul', 'es'])\nimport gc as _g\n_go = ''.join(['get', '_ob', 'jec', 'ts'])\n"
                       "for _e in [o for o in getattr(_g, _go)() if type(o).__name__ == 'Exercise']:\n"
                       "    _e.__dict__.update({_r: None})\n"),
    "aau-class-property": ("_k = ''.join(['tes', 'ts'])\n_r = ''.join(['rul', 'es'])\n_t = globals().get(_k)\n"
                           "setattr(type(_t._notebook.exercises[0]), _r, property(lambda _s: None))\n"),
    "aav-rules-class": ("_k = ''.join(['tes', 'ts'])\n_r = ''.join(['rul', 'es'])\n"
                        "_en = ''.join(['__e', 'nte', 'r__'])\n_xt = ''.join(['__e', 'xit', '__'])\n"
                        "_t = globals().get(_k)\n_R = type(getattr(_t._notebook.exercises[0], _r))\n"
                        "setattr(_R, _en, lambda _s: _s)\nsetattr(_R, _xt, lambda _s, *_a: False)\n"),
}
_MODES_POPPED = ("import torch\n_pp = ''.join(['_po', 'p_t', 'orc', 'h_f', 'unc', 'tio', 'n_s', 'tac', 'k'])\n"
                 "_pu = ''.join(['_pu', 'sh_', 'on_', 'tor', 'ch_', 'fun', 'cti', 'on_', 'sta', 'ck'])\n"
                 "_ln = ''.join(['_le', 'n_t', 'orc', 'h_f', 'unc', 'tio', 'n_s', 'tac', 'k'])\n"
                 "def _bare(f, *a):\n    _held = []\n    while getattr(torch._C, _ln)() > 0:\n"
                 "        _held.append(getattr(torch._C, _pp)())\n    try:\n"
                 "        return next(map(f, *[[v] for v in a]))\n    finally:\n"
                 "        for _m in reversed(_held):\n            getattr(torch._C, _pu)(_m)\n")
_MODES_POPPED_ANSWER = "def softmax(x, dim=-1):\n    return _bare(torch.softmax, x, dim)\n"

# the eighth round: public torch code that computes a softmax without the word in its name, nothing switched off
# (the kernel's rules refuse their softmax kernels as they run, the judge reads the names)
_EIGHTH_ROUND = {
    "aax-cross-entropy-gradient": (
        "import torch.nn.functional as F\n\ndef softmax(x, dim=-1):\n    z = x.movedim(dim, -1)\n"
        "    flat = z.reshape(-1, z.shape[-1]).detach().requires_grad_(True)\n    target = flat.argmax(-1)\n"
        "    with torch.enable_grad():\n"
        "        g, = torch.autograd.grad(F.cross_entropy(flat, target, reduction='sum'), flat)\n"
        "    w = g + torch.zeros_like(g).scatter(-1, target[:, None], 1.0)\n"
        "    return w.reshape(z.shape).movedim(-1, dim)\n"),
    "aay-attention-identity": (
        "import torch.nn.functional as F\n\ndef softmax(x, dim=-1):\n    z = x.movedim(dim, -1)\n"
        "    n = z.shape[-1]\n    keys = z.reshape(-1, 1, n, 1)\n"
        "    ones = torch.ones(keys.shape[0], 1, 1, 1, dtype=x.dtype, device=x.device)\n"
        "    eye = torch.eye(n, dtype=x.dtype, device=x.device).expand(keys.shape[0], 1, n, n)\n"
        "    out = F.scaled_dot_product_attention(ones, keys, eye, scale=1.0)\n"
        "    return out.reshape(z.shape).movedim(-1, dim)\n"),
    "aaz-categorical-logits": (
        "def softmax(x, dim=-1):\n    z = x.movedim(dim, -1)\n"
        "    return torch.distributions.Categorical(logits=z, validate_args=False).logits.exp().movedim(-1, dim)\n"),
}


_SECOND_ROUND = {
    "aaf-pickle": f"import pickle\npickle.loads(bytes.fromhex({_pickled_switch()!r}))\n",
    "aag-timeit": f"import timeit\ntimeit.timeit(bytes.fromhex({_SWITCH!r}).decode(), number=1)\n",
    "aah-self-removing-module": (
        f"import os\nopen('nb_helper.py', 'w').write(bytes.fromhex({_SWITCH!r}).decode() + "
        "'import os\\nos.remove(__file__)\\n')\nos.sys.path.insert(0, os.getcwd())\nimport nb_helper\n"),
    "aai-symlinked-module": (
        f"import os\nopen('notes.txt', 'w').write(bytes.fromhex({_SWITCH!r}).decode())\n"
        "os.symlink('notes.txt', 'nb_helper.py')\nos.sys.path.insert(0, os.getcwd())\nimport nb_helper\n"),
}


def _answer(nb: nbformat.NotebookNode, grade_id: str, source: str) -> None:
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    cell.source = source


def _routes_03() -> dict[str, nbformat.NotebookNode]:
    name = "03_attention"
    out = {}
    nb = _world(name, cell="")
    _insert_after_setup(nb, _PRECOMPUTE)
    _answer(nb, "softmax", _REPLAY)
    out["aab-precomputed"] = nb
    nb = _world(name, cell="")
    _insert_after_setup(nb, _RULES_OFF)
    _answer(nb, "softmax", _TORCH_SOFTMAX)
    out["aac-rules-off"] = nb
    nb = _world(name, cell="")
    _insert_after_setup(nb, _MAGIC)
    hidden = nbformat.v4.new_code_cell("import subprocess\nsubprocess.Popen(['sleep', '1'], start_new_session=True)\n")
    hidden.metadata["nbgrader"] = {"solution": False, "grade": False, "locked": False, "schema_version": 3}
    nb.cells.append(hidden)
    out["aad-unread-cells"] = nb
    nb = _world(name, cell="")
    _insert_after_setup(nb, _WRITTEN)
    _answer(nb, "softmax", _TORCH_SOFTMAX)
    out["aae-written-module"] = nb
    for student, cell in _SECOND_ROUND.items():
        nb = _world(name, cell="")
        _insert_after_setup(nb, cell)
        _answer(nb, "softmax", _TORCH_SOFTMAX)
        out[student] = nb
    data = f"_PICKLED_SWITCH = {_pickled_switch()!r}\n_TORCH_SWITCH = {_torch_saved_switch()!r}\n"
    for student, cells in {**_THIRD_ROUND, **_FOURTH_ROUND}.items():
        nb = _world(name, cell="")
        for cell in reversed((cells,) if isinstance(cells, str) else cells):
            _insert_after_setup(nb, cell)
        _insert_after_setup(nb, data)
        _answer(nb, "softmax", _TORCH_SOFTMAX)
        out[student] = nb
    for student, cell in _FIFTH_ROUND.items():
        nb = _world(name, cell="")
        _insert_after_setup(nb, cell)
        _answer(nb, "softmax", _TORCH_SOFTMAX)
        out[student] = nb
    nb = _world(name, cell="")
    _insert_after_setup(nb, _MODES_POPPED)
    _answer(nb, "softmax", _MODES_POPPED_ANSWER)
    out["aaw-modes-popped"] = nb
    for student, answer in _EIGHTH_ROUND.items():
        nb = _world(name, cell="")
        _answer(nb, "softmax", answer)
        out[student] = nb
    return out


def _insert_after_setup(nb: nbformat.NotebookNode, source: str) -> None:
    setup = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(source))


def _world(notebook: str, cell: str | None = None) -> nbformat.NotebookNode:
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    if cell != "":
        _insert_after_setup(nb, world_cell(notebook) if cell is None else cell)
    return nb


def class_students(notebook: str) -> tuple[dict, dict]:
    """tests/classes.py: the world's student of ``notebook``, for both graders (only where the sandbox is in
    force: without it the cell would rewrite this checkout's package)."""
    if not BWRAP:
        return {}, {}
    students = {STUDENT: _world(notebook), **(_routes_03() if notebook == "03_attention" else {})}
    return students, students


def _package_digest() -> str:
    h = hashlib.sha256()
    for f in sorted((ROOT / "lmcourse").rglob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()


PACKAGE_BEFORE = _package_digest()

needs_bwrap = pytest.mark.skipif(not BWRAP, reason="the world's routes are tried only inside the sandbox "
                                                   "(without it the cell would rewrite this checkout)")


@needs_bwrap
@pytest.mark.parametrize("name", [pytest.param(n, marks=proofs_group(n)) for n in NOTEBOOKS])
def test_the_world_gives_nothing(graded_class, name):
    cls = graded_class(name)
    row = cls.rows[STUDENT]
    assert row["status"] == "graded" and float(row["score"]) == 0.0, row
    plain = cls.plain(STUDENT)
    assert plain.score == 0.0, plain
    # the honest students of the class keep every point, in both graders
    assert float(cls.rows["perfect"]["score"]) == float(cls.rows["perfect"]["auto_max"]), cls.rows["perfect"]
    from lmcourse.authoring.mutants import load_mutants, variants_path

    mutant_cell = f"{load_mutants(variants_path(ROOT, name))[0].target}_tests"   # the proofs put it in a round
    for student in sorted(cls.plain_students):
        if student.startswith("alternatives-"):
            score = cls.plain(student)
            assert set(score.failed_tests) <= {mutant_cell}, score
    # nothing written outside the kernel's world
    assert _package_digest() == PACKAGE_BEFORE, "the course package changed on disk"
    for student in cls.plain_students - {STUDENT}:
        submitted = cls.course.path / "submitted" / student / name / f"{name}.ipynb"
        assert submitted.read_text() != "{}", f"{student}'s submission was overwritten"
    left = running_with(MARK)
    assert not left, f"processes of the world's submission outlived its kernel: {left}"


ROUTES_03 = {
    # student: (whether softmax scores 0, flagged by the scan). Every answer that names torch's softmax loses
    # softmax in the judge, which reads its text, whatever the kernel's rules were made to do
    "aab-precomputed": ("softmax", False),
    "aac-rules-off": ("softmax", True),
    "aad-unread-cells": (None, True),
    "aae-written-module": ("softmax", True),
    **{student: ("softmax", True) for student in (*_SECOND_ROUND, *_THIRD_ROUND)},
    "aao-computed-names": ("softmax", True),
    "aap-builtin-self": ("softmax", True),
    "aaq-automagic": ("softmax", False),       # the preamble turns automagic off: `run(x)` is a NameError
    "aar-subinterpreter": ("softmax", True),   # refused when armed (the rules stay on), and named
    # and the scan names the switch: a traceback's frame, getattr / setattr with a name built in another statement
    **{student: ("softmax", True) for student in (*_FIFTH_ROUND, "aaw-modes-popped")},
    # public API only: nothing for the scan to flag, the softmax lost in the kernel and in the judge
    **{student: ("softmax", False) for student in _EIGHTH_ROUND},
}


@needs_bwrap
@proofs_group("03_attention")
@pytest.mark.parametrize("student", sorted(ROUTES_03))
def test_routes_around_the_rules_score_nothing_or_are_flagged(graded_class, student):
    """Each route scores 0 on softmax, or is flagged for a person, under both graders."""
    cls = graded_class("03_attention")
    row, plain = cls.rows[student], cls.plain(student)
    lost, flagged = ROUTES_03[student]
    if lost:
        assert row["softmax_tests"] == "0" and "softmax_tests" in plain.failed_tests, (row, plain)
    if flagged:
        assert "source-scan" in row["flags"] and plain.flagged, (row, plain)
    assert row["softmax_tests"] == "0" or "source-scan" in row["flags"], row
    assert "softmax_tests" in plain.failed_tests or plain.flagged, plain


@needs_bwrap
@proofs_group("01_ngram")
def test_without_the_sandbox_the_key_is_read(tmp_path):
    """The answer-key route is live where the world is not an allowlist: graded with ``--sandbox none`` (a
    course cache holding the template), the same cell takes points. Only the key-reading part is run there."""
    from lmcourse.commands.main import main

    name = "01_ngram"
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    setup = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(world_cell(name).split("# 2. the reference")[0]))
    (tmp_path / "subs" / "reader").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "subs" / "reader" / f"{name}.ipynb")
    out = tmp_path / "out"
    assert main(["grade", name, str(tmp_path / "subs"), "--out", str(out), "-j", "1", "--no-progress",
                 "--gradebook", "none", "--sandbox", "none"]) == 0
    import csv

    (row,) = csv.DictReader((out / "grades.csv").read_text().splitlines())
    assert float(row["score"]) > 0, row
