""""How" decided by the judge from the answers' text (lmcourse.grading.how.refused_answers), where code in the
kernel cannot switch it off: every valid answer in the catalogues keeps its exercise, an answer that names what
its exercise refuses loses it, however the kernel's own rules were switched off first (the red team's routes)."""

from __future__ import annotations

import nbformat
import pytest

from lmcourse.authoring.course import perfect_submission
from lmcourse.authoring.mutants import alternative_rounds, load_alternatives, resolve, variants_path
from lmcourse.grading.how import refused_answers
from lmcourse.marking import notebooks
from lmcourse.marking.grader import judge_notebook
from tests.conftest import ROOT

MARKED = [n for n in sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))
          if notebooks.marked(n)]


def _perfect(notebook: str) -> nbformat.NotebookNode:
    source = nbformat.read(ROOT / "autograder" / "source" / notebook / f"{notebook}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return perfect_submission(release, source)


def _answer(nb, grade_id: str):
    return next(c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == grade_id)


@pytest.mark.parametrize("notebook", MARKED)
def test_the_solution_and_every_alternative_keep_their_exercises(notebook):
    nb = _perfect(notebook)
    assert refused_answers(nb, notebook) == {}
    master = ROOT / "autograder" / "masters" / f"{notebook}.py"
    for alternative in load_alternatives(variants_path(ROOT, notebook)):
        alternative = resolve(alternative, master)
        nb = _perfect(notebook)
        _answer(nb, alternative.target).source = alternative.source
        assert alternative.target not in refused_answers(nb, notebook), alternative.name


# the fifth red team's answers: each first switched the kernel's rules off by a spelling the scan did not name
# (a traceback's frame, gc's objects, a property on the Exercise class, Rules.__enter__ patched, torch's mode
# stack popped inside the call), then called torch's softmax; the text of the answer names it all the same
ROUTES_ANSWERS = {
    "plain": "def softmax(x, dim=-1):\n    return torch.softmax(x, dim=dim)\n",
    "functional alias": "import torch.nn.functional as _F\ndef softmax(x, dim=-1):\n    return _F.softmax(x, dim)\n",
    "through a helper called with it": "def softmax(x, dim=-1):\n    return _bare(torch.softmax, x, dim)\n",
    "tensor method": "def softmax(x, dim=-1):\n    return x.softmax(dim)\n",
}


@pytest.mark.parametrize("route", sorted(ROUTES_ANSWERS))
def test_an_answer_naming_a_refused_function_loses_its_exercise_in_the_judge(route, monkeypatch):
    from lmcourse.marking import grader
    from lmcourse.marking.judge import Outcome

    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = ROUTES_ANSWERS[route]
    assert set(refused_answers(nb, "03_attention")) == {"softmax"}
    # every record passes, as a kernel whose rules were switched off records it: the text decides
    monkeypatch.setattr(grader, "judge_cell",
                        lambda notebook, exercise, cell, deadline=None: Outcome(exercise, True, 3))
    outcomes = judge_notebook(nb, "03_attention")
    assert not outcomes["softmax_tests"].passed
    assert "torch" in outcomes["softmax_tests"].text() and "refuses" in outcomes["softmax_tests"].text()
    assert all(o.passed for gid, o in outcomes.items() if gid != "softmax_tests")
    assert _answer(nb, "softmax_tests").outputs[-1]["output_type"] == "error"


def test_a_helper_in_another_cell_is_followed_but_another_exercises_answer_is_not():
    """Refused code moved into a helper of the student's own cell runs inside the graded call all the same; the
    attention answer calls the student's softmax answer, which is judged on its own (one mistake costs once)."""
    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = "def softmax(x, dim=-1):\n    return _h(x, dim)\n"
    setup = next(i for i, c in enumerate(nb.cells) if (c.metadata.get("nbgrader") or {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell("_z = 1\n\ndef _h(x, d):\n    return _g(x, d)\n\n\n"
                                                          "def _g(x, d):\n    return torch.softmax(x, d)\n"))
    assert set(refused_answers(nb, "03_attention")) == {"softmax"}
    # a helper hidden in another exercise's answer cell (a question's, before the test) is followed too
    nb = _perfect("03_attention")
    _answer(nb, "scaled_dot_product_attention").source = (
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n    s = Q @ K.transpose(-2, -1) / Q.size(-1) ** 0.5\n"
        "    w = _h(s if mask is None else s + mask, -1)\n    return w @ V, w\n")
    _answer(nb, "q_mask").source += "\n\ndef _h(x, d):\n    return torch.softmax(x, d)\n"
    assert set(refused_answers(nb, "03_attention")) == {"scaled_dot_product_attention"}
    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = ROUTES_ANSWERS["plain"]
    assert "scaled_dot_product_attention" not in refused_answers(nb, "03_attention")


def test_an_attribute_of_ones_own_that_holds_the_word_is_not_a_tensor_method():
    nb = _perfect("03_attention")
    cell = _answer(nb, "softmax")
    cell.source = cell.source + "\n\nclass _Own:\n    softmax_scale = 2.0\n\n_unused = _Own().softmax_scale\n"
    assert refused_answers(nb, "03_attention") == {}


def _with_cells(notebook: str, answers: dict[str, str], before: list[str] = (), after_answer: dict | None = None):
    """The solution with ``answers`` in place, ``before`` cells after the set-up cell, and a cell right after an
    answer cell (before its test) for each ``after_answer`` entry."""
    nb = _perfect(notebook)
    for gid, text in answers.items():
        _answer(nb, gid).source = text
    setup = next(i for i, c in enumerate(nb.cells) if (c.metadata.get("nbgrader") or {}).get("grade_id") == "setup")
    for k, text in enumerate(before):
        nb.cells.insert(setup + 1 + k, nbformat.v4.new_code_cell(text))
    for gid, text in (after_answer or {}).items():
        where = next(i for i, c in enumerate(nb.cells) if (c.metadata.get("nbgrader") or {}).get("grade_id") == gid)
        nb.cells.insert(where + 1, nbformat.v4.new_code_cell(text))
    return nb


_SM = "def softmax(x, dim=-1):\n    return {}\n"
# the sixth red team's routes around the text check (each scored 7/20 with the kernel's rules switched off)
SIXTH_ROUND = {
    "getattr with a constant on a value": ({"softmax": _SM.format('getattr(x, "softmax")(dim)')}, [], None),
    "operator.methodcaller": (
        {"softmax": "import operator\n" + _SM.format('operator.methodcaller("softmax", dim)(x)')}, [], None),
    "a module's __dict__": (
        {"softmax": "import torch.nn.functional as F\n" + _SM.format('F.__dict__["softmax"](x, dim)')}, [], None),
    "an attribute of a namespace set in another cell": (
        {"softmax": _SM.format("_ns.f(x, dim)")},
        ["import types\n_ns = types.SimpleNamespace()\n_ns.f = torch.softmax\n"], None),
    "a default argument from a loop variable": (
        {"softmax": "def softmax(x, dim=-1, _f=_g):\n    return _f(x, dim)\n"},
        ["for _g in [torch.softmax]:\n    pass\n"], None),
    "a tuple assignment": ({"softmax": _SM.format("_h(x, dim)")}, ["_h, _unused = torch.softmax, 0\n"], None),
    "a decorator reading a dict filled in another cell": (
        {"softmax": "@_via\ndef softmax(x, dim=-1):\n    return x\n"},
        ["_box = {}\n", "_box[0] = torch.softmax\n", "def _via(f):\n    return lambda *a, **k: _box[0](*a, **k)\n"],
        None),
    "the answer's name rebound before its test": ({}, [], {"softmax": "softmax = torch.softmax\n"}),
}


@pytest.mark.parametrize("route", sorted(SIXTH_ROUND))
def test_routes_around_the_text_check_lose_the_exercise(route):
    answers, before, after = SIXTH_ROUND[route]
    assert "softmax" in refused_answers(_with_cells("03_attention", answers, before, after), "03_attention")


# valid answers the sixth red team found the text check zeroed: each keeps its exercise
SIXTH_ROUND_VALID = {
    "a class's own softmax method": ({"scaled_dot_product_attention": (
        "class _Att:\n    def softmax(self, s):\n        e = (s - s.amax(-1, keepdim=True)).exp()\n"
        "        return e / e.sum(-1, keepdim=True)\n\n    def __call__(self, Q, K, V, mask=None):\n"
        "        s = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))\n        if mask is not None:\n"
        "            s = s + mask\n        w = self.softmax(s)\n        return w @ V, w\n\n\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n    return _Att()(Q, K, V, mask)\n")}, []),
    "a helper rewritten by hand after a first try with torch": (
        {"softmax": _SM.format("_stable(x, dim)")},
        ["def _stable(x, dim):\n    return torch.softmax(x, dim)   # first try, to compare\n",
         "def _stable(x, dim):\n    e = (x - x.amax(dim, keepdim=True)).exp()\n"
         "    return e / e.sum(dim, keepdim=True)\n"]),
    "a global that a scratch cell computed with torch": (
        {"softmax": "def softmax(x, dim=-1):\n    e = (x - x.amax(dim, keepdim=True)).exp()\n"
                    "    return e / (e.sum(dim, keepdim=True) + 0 * EPS)\n"},
        ["EPS = 1e-12\n", "EPS = (torch.softmax(torch.zeros(2), -1) - 0.5).abs().max().item()  # scratch\n"]),
    "a helper named like a later given cell's function": (
        {"scaled_dot_product_attention": (
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n    if mask is None:\n"
            "        return fused_attention(Q, K, V)\n"
            "    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)) + mask\n"
            "    e = (s - s.amax(-1, keepdim=True)).exp()\n    w = e / e.sum(-1, keepdim=True)\n"
            "    return w @ V, w\n")},
        ["def fused_attention(Q, K, V):\n    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))\n"
         "    e = (s - s.amax(-1, keepdim=True)).exp()\n    w = e / e.sum(-1, keepdim=True)\n    return w @ V, w\n"]),
}


@pytest.mark.parametrize("answer", sorted(SIXTH_ROUND_VALID))
def test_valid_answers_the_text_check_once_zeroed_keep_their_exercises(answer):
    answers, before = SIXTH_ROUND_VALID[answer]
    assert refused_answers(_with_cells("03_attention", answers, before), "03_attention") == {}


_MINE = "def _mine(x, dim=-1):\n    return torch.softmax(x, dim)\n"
# the seventh red team's: the answer defined above its cell (the cell a comment), torch's function carried on a
# later exercise's answer name, a parameter named like the global elsewhere in the cell, a walrus and a
# function's `global` rebinding the answer's name before its test
SEVENTH_ROUND = {
    "the answer defined in a cell above": ({"softmax": "# done above\n"}, ["softmax = _mine\n"], None),
    "carried on a later answer's name": (
        {"softmax": _SM.format("MultiHeadAttention(x, dim)")}, ["MultiHeadAttention = torch.softmax\n"], None),
    "a parameter named like the global, elsewhere in the cell": (
        {"softmax": "def _unused(_g):\n    return _g\n\n\n" + _SM.format("_g(x, dim)")},
        ["_g = torch.softmax\n"], None),
    "a walrus before the test": ({}, [], {"softmax": "(softmax := _mine)\n"}),
    "a function's global, called before the test": (
        {}, ["def _set():\n    global softmax\n    softmax = _mine\n"], {"softmax": "_set()\n"}),
}


@pytest.mark.parametrize("route", sorted(SEVENTH_ROUND))
def test_the_seventh_rounds_routes_lose_the_exercise(route):
    answers, before, after = SEVENTH_ROUND[route]
    nb = _with_cells("03_attention", answers, [_MINE, *before], after)
    assert "softmax" in refused_answers(nb, "03_attention")


# valid answers the seventh red team found zeroed: a check against torch's softmax in a later cell, a comparison
# loop, a reference lambda under no_grad, torch's softmax imported after every test, a label in a print
SEVENTH_ROUND_VALID = {
    "allclose against the method in a later cell": (
        {}, [], {"softmax": "z = torch.randn(3)\nprint(torch.allclose(softmax(z), z.softmax(-1)))\n"}),
    "a comparison loop": ({}, ["import torch.nn.functional as F\n"], {"softmax": (
        "z = torch.randn(3)\nfor name, f in [('mine', softmax), ('torch', F.softmax)]:\n    print(name, f(z))\n")}),
    "a reference lambda under no_grad": ({}, ["import torch.nn.functional as F\n"], {"softmax": (
        "with torch.no_grad():\n    _ref = lambda z: F.softmax(z, -1)\n")}),
    "a label in a print": ({"softmax": "def softmax(x, dim=-1):\n    print('softmax', x.shape)\n"
                                       "    e = (x - x.amax(dim, keepdim=True)).exp()\n"
                                       "    return e / e.sum(dim, keepdim=True)\n"}, [], None),
}


@pytest.mark.parametrize("answer", sorted(SEVENTH_ROUND_VALID))
def test_the_seventh_rounds_valid_answers_keep_their_exercises(answer):
    answers, before, after = SEVENTH_ROUND_VALID[answer]
    nb = _with_cells("03_attention", answers, before, after)
    nb.cells.append(nbformat.v4.new_code_cell("from torch.nn.functional import softmax\n"))  # after every test
    assert refused_answers(nb, "03_attention") == {}


# the eighth red team: a softmax another public torch function computes, with no softmax in its name
EIGHTH_ROUND = {
    "the gradient of F.cross_entropy": "import torch.nn.functional as F\n" + _SM.format(
        "torch.autograd.grad(F.cross_entropy(x, x.argmax(-1), reduction='sum'), x)[0]"),
    "F.scaled_dot_product_attention with V the identity": "import torch.nn.functional as F\n" + _SM.format(
        "F.scaled_dot_product_attention(torch.ones(1, 1, 1), x[..., None], torch.eye(x.size(-1)), scale=1.0)"),
    "torch.distributions' normalised logits": _SM.format("torch.distributions.Categorical(logits=x).logits.exp()"),
    "nn.CrossEntropyLoss": "import torch.nn as nn\n" + _SM.format(
        "torch.autograd.grad(nn.CrossEntropyLoss()(x, y), x)[0]"),
}


@pytest.mark.parametrize("route", sorted(EIGHTH_ROUND))
def test_the_eighth_rounds_routes_lose_the_exercise(route):
    nb = _with_cells("03_attention", {"softmax": EIGHTH_ROUND[route]}, [], None)
    assert "softmax" in refused_answers(nb, "03_attention")


def test_a_softmax_through_logsumexp_keeps_its_exercise():
    """torch.logsumexp is a primitive the student composes (the eighth red team's valid answer)."""
    nb = _with_cells("03_attention", {"softmax": _SM.format("torch.exp(x - torch.logsumexp(x, dim, keepdim=True))")},
                     [], None)
    assert refused_answers(nb, "03_attention") == {}


# the ninth red team: a refused function looked up by a dotted string, a public subclass of a refused class
NINTH_ROUND = {
    ("03_attention", "softmax"): "import operator\n" + _SM.format(
        "operator.attrgetter('nn.functional.softmax')(torch)(x, dim)"),
}


def test_a_refused_function_looked_up_by_a_dotted_string_loses_the_exercise():
    nb = _with_cells("03_attention", {"softmax": NINTH_ROUND["03_attention", "softmax"]}, [], None)
    assert "softmax" in refused_answers(nb, "03_attention")


def test_a_public_subclass_of_a_refused_class_is_refused_by_its_bases():
    from lmcourse.grading.how import _exercise_list, check

    refused = _exercise_list("09_encoder_decoder", "cross_attention")
    source = ("import torch.ao.nn.quantizable as Q\n"
              "_mha = Q.MultiheadAttention(8, 2, batch_first=True)\n")
    hits, _ = check(source, refused)
    assert any("quantizable" in h for h in hits), hits


# the tenth red team: torch held in a variable (T = torch) is read as torch; a dict's key is data, not a lookup
TENTH_ROUND = {
    "torch held in a variable": "T = torch\n" + _SM.format("T.softmax(x, dim)"),
    "a module of torch held in a variable": "T = torch\nf = T.nn.functional\n" + _SM.format("f.softmax(x, dim)"),
}
TENTH_ROUND_VALID = {
    "a dict keyed by the word": "def softmax(x, dim=-1):\n    cache = {}\n"
                                "    e = (x - x.amax(dim, keepdim=True)).exp()\n"
                                "    cache['softmax'] = e / e.sum(dim, keepdim=True)\n    return cache['softmax']\n",
    "a key that holds the word": "def softmax(x, dim=-1):\n    stats = {'softmax_max': x.amax(dim, keepdim=True)}\n"
                                 "    e = (x - stats['softmax_max']).exp()\n    return e / e.sum(dim, keepdim=True)\n",
}


@pytest.mark.parametrize("route", sorted(TENTH_ROUND))
def test_the_tenth_rounds_aliases_lose_the_exercise(route):
    nb = _with_cells("03_attention", {"softmax": TENTH_ROUND[route]}, [], None)
    assert "softmax" in refused_answers(nb, "03_attention")


@pytest.mark.parametrize("answer", sorted(TENTH_ROUND_VALID))
def test_the_tenth_rounds_dict_keys_keep_the_exercise(answer):
    nb = _with_cells("03_attention", {"softmax": TENTH_ROUND_VALID[answer]}, [], None)
    assert refused_answers(nb, "03_attention") == {}


# the eleventh red team: a refused class made into an object in another cell and called by the answer; a refused
# object named by a whole dotted path in a string (walked by logging.config's resolve); and, the other way, a
# check against torch's own function at the end of an answer cell, which runs before the test and not in it
_STABLE = "(lambda e: e / e.sum(dim, keepdim=True))((x - x.amax(dim, keepdim=True)).exp())"
ELEVENTH_ROUND = {
    "an object of a refused class made in another cell": (
        {"softmax": _SM.format("_row_norm(x.transpose(dim, -1)).transpose(dim, -1)")},
        ["_row_norm = torch.nn.Softmax(dim=-1)"]),
    "a refused function named by a dotted path in a string": (
        {"softmax": "_f = _resolve('torch.nn.functional.softmax')\n" + _SM.format("_f(x, dim)")},
        ["import logging.config\n_resolve = logging.config.BaseConfigurator({}).resolve"]),
}
ELEVENTH_ROUND_VALID = {
    "a check against torch's softmax after the answer": _SM.format(_STABLE)
    + "\n_z = torch.randn(3, 5)\nassert torch.allclose(softmax(_z, -1), torch.softmax(_z, -1))\n",
    "a check against an nn.Softmax after the answer": _SM.format(_STABLE)
    + "\n_ref = torch.nn.Softmax(dim=-1)\nassert torch.allclose(softmax(torch.ones(2, 3)), _ref(torch.ones(2, 3)))\n",
}


@pytest.mark.parametrize("route", sorted(ELEVENTH_ROUND))
def test_the_eleventh_rounds_routes_lose_the_exercise(route):
    answers, before = ELEVENTH_ROUND[route]
    nb = _with_cells("03_attention", answers, before, None)
    assert "softmax" in refused_answers(nb, "03_attention")


@pytest.mark.parametrize("answer", sorted(ELEVENTH_ROUND_VALID))
def test_the_eleventh_rounds_self_checks_keep_the_exercise(answer):
    nb = _with_cells("03_attention", {"softmax": ELEVENTH_ROUND_VALID[answer]}, [], None)
    assert refused_answers(nb, "03_attention") == {}


# ---------------------------------------------------------------- answers the judge cannot read (a flag, not a zero)
# Every red team since the eleventh switched the kernel's rules off from a hidden text and delivered the answers as
# items of a value that text filled (``elman_step = _impl["elman_step"]``, ``_impl`` visibly ``{}``): the text check
# reads nothing refused there. unreadable_answers flags every such binding for a person; each route has an honest
# neighbour, which it does not flag.

_STEP = ("def my_step(x_t, h_prev, W_xh, W_hh, b_h):\n"
         "    return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)\n")
_SIG = "(x_t, h_prev, W_xh, W_hh, b_h)"
UNREADABLE_ROUTES = {
    "an item of a dict a hidden text filled": ({"elman_step": 'elman_step = _impl["elman_step"]\n'}, ["_impl = {}\n"]),
    "dict.get on it": ({"elman_step": 'elman_step = _impl.get("elman_step")\n'}, ["_impl = dict()\n"]),
    "an attribute of an empty namespace": (
        {"elman_step": "elman_step = _ns.elman_step\n"}, ["import types\n_ns = types.SimpleNamespace()\n"]),
    "getattr on it": (
        {"elman_step": 'elman_step = getattr(_ns, "elman_step")\n'}, ["import types\n_ns = types.SimpleNamespace()\n"]),
    "vars() read by a key no cell binds": ({"elman_step": 'elman_step = vars()["_e"]\n'}, []),
    "globals().get": ({"elman_step": 'elman_step = globals().get("_e")\n'}, []),
    "the module __main__": ({"elman_step": "import __main__\nelman_step = __main__._e\n"}, []),
    "a name itself such a binding": ({"elman_step": "elman_step = _f\n"}, ["_impl = {}\n", '_f = _impl["e"]\n']),
    "a name no cell binds": ({"elman_step": "elman_step = _hidden_step\n"}, []),
    "no cell binds the answer": ({"elman_step": "pass\n"}, []),
    "a library applied to such an item": (
        {"elman_step": 'elman_step = torch.compile(_impl["elman_step"])\n'}, ["_impl = {}\n"]),
    "functools.partial of such an item": (
        {"elman_step": 'import functools\nelman_step = functools.partial(_impl["e"])\n'}, ["_impl = {}\n"]),
    "a tuple assignment from such items": ({"elman_step": 'elman_step, _x = _impl["e"], 0\n'}, ["_impl = {}\n"]),
    "a loop over such items": ({"elman_step": "for elman_step in _impl.values():\n    break\n"}, ["_impl = {}\n"]),
    "a def that only forwards to such an item": (
        {"elman_step": 'def elman_step(*a, **k):\n    """One step."""\n    return _impl["elman_step"](*a, **k)\n'},
        ["_impl = {}\n"]),
    "a lambda that only forwards to such an item": (
        {"elman_step": 'elman_step = lambda *a, **k: _impl["e"](*a, **k)\n'}, ["_impl = {}\n"]),
    "a decorator read from such a value": (
        {"elman_step": f'@_impl["wrap"]\ndef elman_step{_SIG}:\n    return h_prev\n'}, ["_impl = {}\n"]),
    "a base class read from such a value": ({"RNNLM": 'class RNNLM(_impl["base"]):\n    pass\n'}, ["_impl = {}\n"]),
    "a function that only forwards to a name no cell binds": (
        {"elman_step": f"def elman_step{_SIG}:\n    return _cell{_SIG}\n"}, []),
    # the answer's own code, which uses a helper a hidden text bound (round 13's tokenizer and layer routes)
    "a helper no cell binds": (
        {"elman_step": f"def elman_step{_SIG}:\n    return _cell{_SIG}.clone()\n"}, []),
    "a case capture of such an item": (
        {"elman_step": 'match _impl["e"]:\n    case elman_step:\n        pass\n'}, ["_impl = {}\n"]),
    "a helper whose helper no cell binds": (
        {"elman_step": f"def elman_step{_SIG}:\n    return _h{_SIG} + 0\n"},
        [f"def _h{_SIG}:\n    return _cell{_SIG} * 1\n"]),
}
READABLE_NEIGHBOURS = {
    "an alias of one's own def": ({"elman_step": "elman_step = my_step\n"}, [_STEP]),
    "a call of one's own factory": (
        {"elman_step": "elman_step = make_step()\n"}, [_STEP, "def make_step():\n    return my_step\n"]),
    "functools.partial of one's own def": (
        {"elman_step": "import functools\nelman_step = functools.partial(my_step)\n"}, [_STEP]),
    "a library's decorator applied to one's own def": ({"elman_step": "elman_step = torch.no_grad()(my_step)\n"},
                                                        [_STEP]),
    "torch.compile of one's own def": ({"elman_step": "elman_step = torch.compile(my_step)\n"}, [_STEP]),
    "an instance of one's own class": (
        {"elman_step": "elman_step = _Step()\n"},
        [f"class _Step:\n    def __call__(self, {_SIG[1:-1]}):\n        return my_step{_SIG}\n", _STEP]),
    "an item of a dict filled with one's own functions": (
        {"elman_step": 'elman_step = _impls["step"]\n'}, [_STEP, '_impls = {"step": my_step}\n']),
    "an item stored into an empty dict": (
        {"elman_step": 'elman_step = _impls.get("step")\n'}, [_STEP, "_impls = {}\n", '_impls["step"] = my_step\n']),
    "an attribute of a namespace made of one's own def": (
        {"elman_step": "elman_step = _ns.step\n"},
        [_STEP, "import types\n_ns = types.SimpleNamespace(step=my_step)\n"]),
    "a def that forwards to an item of one's own dict": (
        {"elman_step": 'def elman_step(*a, **k):\n    return _impls["step"](*a, **k)\n'},
        [_STEP, '_impls = {"step": my_step}\n']),
    "a def that forwards to a helper": ({"elman_step": "def elman_step(*a):\n    return my_step(*a)\n"}, [_STEP]),
    "a lambda that forwards to a helper": ({"elman_step": "elman_step = lambda *a: my_step(*a)\n"}, [_STEP]),
    "globals() read by a key a cell binds": ({"elman_step": 'elman_step = globals()["my_step"]\n'}, [_STEP]),
    "the answer rebound through a library": (
        {"elman_step": f"import functools\n\n\ndef elman_step{_SIG}:\n    return my_step{_SIG}\n\n\n"
                       "elman_step = functools.wraps(elman_step)(functools.partial(elman_step))\n"}, [_STEP]),
    # the fifteenth red team's valid rewrites: a match statement's capture binds its subject
    "a case capture of one's own def": ({"elman_step": "match my_step:\n    case elman_step:\n        pass\n"},
                                        [_STEP]),
    "a class with a library base and decorator": (
        {"RNNLM": "import dataclasses\n\n\n@dataclasses.dataclass(eq=False)\nclass RNNLM(nn.Module):\n    pass\n"}, []),
}


@pytest.mark.parametrize("route", sorted(UNREADABLE_ROUTES))
def test_an_answer_the_judge_cannot_read_is_found(route):
    from lmcourse.grading.unreadable import unreadable_answers

    answers, before = UNREADABLE_ROUTES[route]
    nb = _with_cells("02_rnn", answers, before)
    found = unreadable_answers(nb, "02_rnn")
    assert set(found) == set(answers), found
    assert refused_answers(nb, "02_rnn") == {}       # the text check reads nothing refused: only this finds it


@pytest.mark.parametrize("answer", sorted(READABLE_NEIGHBOURS))
def test_an_answer_the_judge_can_read_is_not_found(answer):
    from lmcourse.grading.unreadable import unreadable_answers

    answers, before = READABLE_NEIGHBOURS[answer]
    assert unreadable_answers(_with_cells("02_rnn", answers, before), "02_rnn") == {}


def test_a_library_function_as_the_answer_is_the_refused_names_checks_alone():
    from lmcourse.grading.unreadable import unreadable_answers

    nb = _with_cells("02_rnn", {"elman_step": "elman_step = torch.rnn_tanh_cell\n"})
    assert unreadable_answers(nb, "02_rnn") == {} and set(refused_answers(nb, "02_rnn")) == {"elman_step"}


def test_a_quiz_answer_is_data_not_code():
    from lmcourse.grading.unreadable import unreadable_answers

    nb = _with_cells("02_rnn", {"q1": 'answer_q1 = _impl["q1"]\n'}, ["_impl = {}\n"])
    assert unreadable_answers(nb, "02_rnn") == {}


def _submissions(notebook: str):
    """The solution with the catalogue's alternatives in place, as whole submissions: the alternatives one red-team
    student wrote (their name's last parenthesis) together, since one may use a helper another cell defines."""
    master = ROOT / "autograder" / "masters" / f"{notebook}.py"
    by_author: dict[str, list] = {}
    for k, alt in enumerate(load_alternatives(variants_path(ROOT, notebook))):
        author = alt.name.rsplit("(", 1)[-1] if alt.name.endswith(")") else str(k)
        by_author.setdefault(author, []).append(resolve(alt, master))
    for alternatives in by_author.values():
        for round_ in alternative_rounds(alternatives):
            nb = _perfect(notebook)
            for alt in round_.values():
                _answer(nb, alt.target).source = alt.source
            yield [alt.name for alt in round_.values()], nb


@pytest.mark.parametrize("notebook", MARKED)
def test_no_answer_of_the_solution_or_an_alternative_is_found_unreadable(notebook):
    from lmcourse.grading.unreadable import unreadable_answers

    assert unreadable_answers(_perfect(notebook), notebook) == {}
    for names, nb in _submissions(notebook):
        assert unreadable_answers(nb, notebook) == {}, names


def test_an_unreadable_answer_is_flagged_under_both_graders_and_keeps_its_points(monkeypatch, caplog):
    """Plain nbgrader (JudgeRecords: a warning, the gradebook flag) and ``lmcourse grade`` (the result's flag and
    detail) flag an answer that scored from code no cell shows; the score is the same as without it."""
    import logging
    from types import SimpleNamespace

    from lmcourse.grading import grade, scan
    from lmcourse.grading.result import Result
    from lmcourse.marking import grader
    from lmcourse.marking.judge import Outcome

    # every record passes, as a kernel whose rules were switched off records it
    monkeypatch.setattr(grader, "judge_cell",
                        lambda notebook, exercise, cell, deadline=None: Outcome(exercise, True, 3))
    monkeypatch.setattr(grade.trusted, "check", lambda assignment: None)
    routed = _with_cells("02_rnn", {"elman_step": 'elman_step = _impl["elman_step"]\n'}, ["_impl = {}\n"])
    honest = _perfect("02_rnn")

    def lmcourse_grade(nb):
        tests = {(c.metadata.get("nbgrader") or {}).get("grade_id"): None for c in nb.cells
                 if (c.metadata.get("nbgrader") or {}).get("grade")}
        res = Result("s", "02_rnn", "graded", tests=tests)
        grade._score(nb, SimpleNamespace(assignment="02_rnn"), res)
        return res

    flagged, clean = lmcourse_grade(routed), lmcourse_grade(honest)
    assert flagged.score == clean.score > 0 and flagged.tests["elman_step_tests"] == clean.tests["elman_step_tests"]
    assert scan.FLAG in flagged.flags and "cannot read: elman_step" in flagged.detail and "_impl" in flagged.detail
    assert clean.flags == [] and clean.detail == ""
    # the judge's finding only for an answer that scored: a failed one needs no flag
    failed = {"elman_step_tests": Outcome("elman_step", False, 0, None, "wrong")}
    assert grader.unreadable_findings(routed, "02_rnn", failed) == []

    for nb, expected in ((_with_cells("02_rnn", {"elman_step": 'elman_step = _impl["elman_step"]\n'}, ["_impl = {}\n"]),
                          True), (_perfect("02_rnn"), False)):
        caplog.clear()
        judge = grader.JudgeRecords(log=logging.getLogger("judge-records"))
        monkeypatch.setattr(judge, "_release", lambda nbgrader: None)
        with caplog.at_level(logging.WARNING, logger="judge-records"):
            judge.preprocess(nb, {"nbgrader": {"notebook": "02_rnn", "assignment": "02_rnn", "student": "s"}})
        assert ("cannot read: elman_step" in caplog.text) == expected, caplog.text
        assert _answer(nb, "elman_step_tests").outputs[-1]["output_type"] == "stream"    # the points stand
