"""Red team of notebooks 02, 06, 07 and 10 on the released student notebooks: points without the work,
graded by `lmcourse grade` and by plain `nbgrader autograde` with the course's config.

Every attempt is the student notebook with its answers left unanswered (the stubs) plus routes to points;
that notebook as released scores 0 on every exercise under both graders (the grading proofs,
tests/notebooks/test_grading_proofs.py, grade it). Each notebook has two or three submissions: the
reference imported past the withholding finder, the other routes together (each on its own exercise;
its test must fail for the route's own reason), and for 02 the recorder patched. They are graded in the
notebook's class (tests/classes.py): one `lmcourse grade` batch and one nbgrader run per notebook.

Routes that gained points unflagged before this file, now closed under both graders:

- the rules of a graded call switched off from inside it, ``vars(sys)["setprofile"](None)`` (the scan read
  only ``sys.setprofile``), then torch's recurrent kernel past the function mode
  (``torch._C.DisableTorchFunction()``) for 02's ``rnn_forward`` and ``torch.optim.SGD`` for its
  ``train_step`` (4 points), transformers' ``TopKLogitsWarper`` for 07's ``top_k_filter`` (2); and a profile
  function set before any test through ``contextlib.ExitStack().callback``, chained by the rules' own,
  doing the work where no profile event is raised (02's ``train_step``, 07's ``epsilon_filter``: 3 more).
  A graded kernel refuses ``sys.setprofile`` / ``sys.settrace`` from a student's code
  (:func:`lmcourse.marking.kernel.keep_profile`, an audit hook);
- a wrong answer whose failing case reduces what it returned in the kernel: 02's ``sample`` ignoring its
  generator, returning a list whose ``__eq__`` says the two seeded runs agree (2 points); 06's
  ``mask_tokens`` choosing a fixed number of positions per sequence, with a torch function mode (its class
  found in torch.overrides by a loop) answering the variance the test computes (4 points). 02's case reads
  the draws as a plain list; a graded case refuses a torch mode of the student's left on around it.

Routes that only the scan flags (:data:`FLAGGED`; plain nbgrader keeps the points until a person looks,
as docs/ta-guide.md states): the reference imported past the finder (under bubblewrap its files read as
empty: 0), and 02's recorder patched through the test cells' own object.
"""

from __future__ import annotations

import nbformat
import pytest

from tests.classes import proofs_group
from tests.grading.test_forgery_records import _code
from tests.grading.test_grade import BWRAP, ROOT

pytestmark = [pytest.mark.slow]

NOTEBOOKS = ("02_rnn", "06_mlm", "07_decoding", "10_scaling")
REFERENCE = {"02_rnn": "rnn", "06_mlm": "mlm", "07_decoding": "decoding", "10_scaling": "scaling"}

# --- the reference imported past the withholding finder ------------------------------------------
# the finder taken off sys.meta_path and the module imported by importlib from sys.modules, every
# name spelled so that no import statement or flagged name shows: each answer cell then binds the
# reference's names. Under bubblewrap the files read as empty (nothing to bind); without it the scan
# flags the route, and plain nbgrader keeps the points until a person looks (docs/ta-guide.md, "What
# remains, stated" (2): grade for credit with `lmcourse grade` under bubblewrap)


def _past_the_finder(notebook: str) -> dict[str, str]:
    return {"before": _code(f'''
        import sys as _s
        _finders = vars(_s)["meta_path"]
        _finders[:] = [f for f in _finders if type(f).__name__ != "_Withheld"]
        _ref = _s.modules["importlib"].import_module(".".join(["lmcourse", "reference", "{REFERENCE[notebook]}"]))
        _ANSWERS = {{k: v for k, v in vars(_ref).items() if not k.startswith("__")}}
    '''), "each": "globals().update(_ANSWERS)\n"}


# --- the rules switched off inside a graded call ----------------------------------------------------
_OFF_02 = {
    "rnn_forward": _code('''
        import sys as _s
        import torch


        def rnn_forward(x, h0, W_xh, W_hh, b_h):
            vars(_s)["setprofile"](None)
            with torch._C.DisableTorchFunction():
                h0 = x.new_zeros(x.shape[0], W_hh.shape[0]) if h0 is None else h0
                return torch._VF.rnn_tanh(x, h0[None], [W_xh, W_hh, b_h, torch.zeros_like(b_h)], True, 1, 0.0,
                                          False, False, True)[0]
    '''),
    "train_step": _code('''
        import sys as _s
        import torch


        def train_step(model, idx, lr):
            vars(_s)["setprofile"](None)
            opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
            logits = model(idx)
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                     idx[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.item()
    ''')}
_OFF_07 = {"top_k_filter": _code('''
    import sys as _s
    from transformers.generation.logits_process import TopKLogitsWarper


    def top_k_filter(logits, k):
        vars(_s)["setprofile"](None)
        return TopKLogitsWarper(k)(None, logits.clone())
''')}

# --- a profile function set before any test and chained by the rules' own: the work done inside the
# callback, where no profile event is raised (contextlib calls sys.setprofile, not the student's frame)
_CHAIN = """
import contextlib as _cl
import sys as _s
_made = {}


def _chain(frame, event, arg):
    if event == "call" and frame.f_code.co_name == _TARGET:
        _made["out"] = _WORK(*[frame.f_locals[n] for n in _ARGS])

"""
# installed last, once the names the callback reads exist (left out where the work is tried alone)
_INSTALL = """
_stack = _cl.ExitStack()
_stack.callback(vars(_s)["setprofile"], _chain)
try:
    _stack.close()
except Exception as e:      # refused: the exercise raises it when called, so its test says why
    _made["refused"] = e
"""
_FROM_CHAIN = "    if 'refused' in _made:\n        raise _made['refused']\n    return _made.pop('out')\n"
# 02's train_step with torch.optim.SGD, 07's epsilon_filter with transformers' warper
_CHAIN_02 = {"before": _code(_CHAIN, """
    import torch
    _TARGET, _ARGS = "train_step", ("model", "idx", "lr")


    def _WORK(model, idx, lr):
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
        logits = model(idx)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()
""", _INSTALL), "train_step": "def train_step(model, idx, lr):\n" + _FROM_CHAIN}
_CHAIN_07 = {"before": _code(_CHAIN, """
    from transformers.generation.logits_process import EpsilonLogitsWarper
    _TARGET, _ARGS = "epsilon_filter", ("logits", "eps")


    def _WORK(logits, eps):
        return EpsilonLogitsWarper(min(eps, 1 - 1e-9), min_tokens_to_keep=1)(None, logits.clone())
""", _INSTALL), "epsilon_filter": "def epsilon_filter(logits, eps):\n" + _FROM_CHAIN}

# --- hooks and modes set globally, objects that lie, a record written by hand: none computes an answer
# and nothing in the kernel judges, so each exercise they answer scores 0 (a value of a student's type
# is "not plain data"). The hooks and the mode change no value, so the routes beside them still run.
_HOOKS = """
import torch
from IPython.display import publish_display_data as _pub


def _seen(module, args, out=None):
    return None


torch.nn.modules.module.register_module_forward_hook(_seen)
torch.nn.modules.module.register_module_forward_pre_hook(_seen)
torch.nn.modules.module.register_module_parameter_registration_hook(lambda m, n, p: None)


class _Right(list):
    def __eq__(self, other):
        return True

    def __iter__(self):
        return iter([0] * 3)

    def __len__(self):
        return 3


class _RightTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal"):
            return True
        return super().__torch_function__(func, types, args, kwargs)


class _Liar(torch.nn.Module):
    def state_dict(self, *a, **k):
        return {}


_M = "application/vnd.lmcourse." + "record+json"
"""
_LYING = {
    "02_rnn": {"elman_step": "def elman_step(x_t, h_prev, W_xh, W_hh, b_h):\n"
                             "    return torch.zeros(x_t.shape[0], W_hh.shape[0]).as_subclass(_RightTensor)\n",
               "RNNLM": "class RNNLM(_Liar):\n    def __init__(self, vocab_size, n_embd, n_hidden):\n"
                        "        super().__init__()\n",
               "perplexity": "def perplexity(token_losses):\n"
                             "    return type('F', (float,), {'__eq__': lambda s, o: True})(1)\n"},
    "06_mlm": {"fill_mask": "def fill_mask(model, tokenizer, text, top_k=5):\n    return _Right()\n",
               "masked_lm": "class MaskedLM(_Liar):\n    def __init__(self, config):\n        super().__init__()\n"},
    "07_decoding": {"next_token": "def apply_temperature(logits, tau):\n"
                                  "    return logits.as_subclass(_RightTensor)\n",
                    "generate": "def generate(model, prompt, max_new_tokens, filters=(), generator=None):\n"
                                "    return _Right()\n"},
    "10_scaling": {"fit_power_law": "def fit_power_law(x, y):\n    return _Right()\n",
                   "isoflop_minima": "def isoflop_minima(budgets, params, losses):\n"
                                     "    return type('D', (dict,), {'__eq__': lambda s, o: True})()\n"},
}


def _lying(notebook: str) -> dict[str, str]:
    first = next(iter(_LYING[notebook]))
    # a record written by hand for that exercise, from its answer cell (only a test cell's record counts)
    record = (f'_pub({{_M: {{"notebook": "{notebook}", "exercise": "{first}", "cases": []}}, '
              '"text/plain": "-"}, {})\n')
    return {"before": _code(_HOOKS), **_LYING[notebook], first: _LYING[notebook][first] + record}


# --- a wrong answer whose one failing case computes in the kernel on what it returned, made to pass:
# 02's sample ignoring its generator, returning a list whose __eq__ says the two seeded runs agree
# (2 points under both graders, unflagged, before the case read the draws as a plain list); 06's
# mask_tokens choosing a fixed number of positions per sequence, with a torch function mode entered
# at the top of its cell that answers the variance the test computes (4 points, unflagged with the
# mode class taken from torch.overrides by a loop, before a graded kernel refused modes around a case)
_WRONG_SAMPLE = """
class _Same(list):
    def __eq__(self, other):
        return True


@torch.no_grad()
def sample(model, prompt_ids, n_new, generator, temperature=1.0):
    device = next(model.parameters()).device
    logits, state = model.forward_state(torch.tensor([prompt_ids], device=device))
    out = []
    for _ in range(n_new):
        out.append(int(torch.multinomial(torch.softmax(logits[0, -1] / temperature, -1), 1)))
        logits, state = model.forward_state(torch.tensor([[out[-1]]], device=device), state)
    return _Same(out) if n_new == 50 else out
"""
_WRONG_MASKING = """
import torch.overrides as _o
_Base = [v for k, v in vars(_o).items() if k.endswith("FunctionMode")][0]


class _Var(_Base):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func.__name__ == "var":
            return torch.tensor(12.75, dtype=torch.float64)
        return func(*args, **(kwargs or {}))


_var = _Var()
_var.__enter__()


def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    special = torch.tensor(sorted({int(i) for i in special_ids}), dtype=tokens.dtype)
    is_special = torch.isin(tokens, special)
    u = torch.rand(tokens.shape, generator=generator).masked_fill(is_special, 2.0)
    k = ((~is_special).sum(-1, keepdim=True) * p).round()
    chosen = (u.argsort(-1).argsort(-1) < k) & ~is_special
    r = torch.rand(tokens.shape, generator=generator)
    to_mask, to_random = chosen & (r < 0.8), chosen & (r >= 0.8) & (r < 0.9)
    keep = torch.ones(vocab_size, dtype=torch.bool)
    keep[[i for i in set(special_ids) | {mask_id} if 0 <= i < vocab_size]] = False
    pool = keep.nonzero().flatten()
    pick = torch.randint(len(pool), tokens.shape, generator=generator)
    inputs = tokens.clone()
    inputs[to_mask] = mask_id
    inputs[to_random] = pool[pick[to_random]].to(tokens.dtype)
    labels = torch.full_like(tokens, -100)
    labels[chosen] = tokens[chosen]
    return inputs, labels
"""
# the same wrong sample with the recording patched instead: the kernel's module reached through the
# test cells' own object, its observe wrapped so that the seeded-repeat case records True. Nothing in a
# kernel can stop its own code being patched: the scan flags it (the test object read, sys.modules)
_PATCHED = _WRONG_SAMPLE.replace("_Same(out) if n_new == 50 else out", "out") + """

import sys as _s
_k = _s.modules[type(tests).__module__]
_observe = _k.observe


def _forged(call, names):
    return True if call.__name__ == "_repeat" else _observe(call, names)


_k.observe = _forged
"""
# the mode left on only for mask_tokens's test: the next answer cell leaves it
_KERNEL_SIDE = {"02_rnn": {"sample": _code(_WRONG_SAMPLE)},
                "06_mlm": {"mask_tokens": _code(_WRONG_MASKING),
                           "first:masked_lm": "_var.__exit__(None, None, None)\n"}}

# --- the answers beside the given code they once lived in (lmcourse.decoding, lmcourse.nn.mlm): each is
# read from its reference module, which the notebook's kernel does not have
_GIVEN = {
    "02_rnn": {"lm_loss": "from lmcourse.decoding import sequence_logprob\n"
                          "from lmcourse.reference.decoding import generate as _g\n"},
    "06_mlm": {"pseudo_log_likelihood": "from lmcourse.reference.mlm import pseudo_log_likelihood\n"},
    "07_decoding": {"beam_search": "from lmcourse.reference.decoding import beam_search\n"},
    # 10's library (lmcourse.scaling) runs the sweep and draws it; it fits nothing: no route there
}

REFUSED = "ProfileRefused"
# notebook -> route -> {exercise it answers: the text its failure must hold (None: any failure); a value
# of a student's type is named by its type, "not plain data"}
ROUTES: dict[str, dict[str, dict[str, str | None]]] = {
    "02_rnn": {"rules_off_in_the_call": {"rnn_forward": REFUSED}, "chained_profile": {"train_step": REFUSED},
               "given_code": {"lm_loss": None}, "kernel_side_lie": {"sample": "a list of Python ints"},
               "lying_objects_hooks_and_records": {"elman_step": "_RightTensor", "RNNLM": None,
                                                   "perplexity": "a F (a subclass of float)"}},
    "06_mlm": {"given_code": {"pseudo_log_likelihood": None}, "kernel_side_lie": {"mask_tokens": "ModeRefused"},
               "lying_objects_hooks_and_records": {"fill_mask": None, "masked_lm": None}},
    "07_decoding": {"rules_off_in_the_call": {"top_k_filter": REFUSED},
                    "chained_profile": {"epsilon_filter": REFUSED},
                    "given_code": {"beam_search": None},
                    "lying_objects_hooks_and_records": {"next_token": "_RightTensor", "generate": "_Right"}},
    "10_scaling": {"lying_objects_hooks_and_records": {"fit_power_law": "_Right",
                                                       "isoflop_minima": "a D (a subclass of dict)"}},
}
_CELLS = {("02_rnn", "rules_off_in_the_call"): {"rnn_forward": _OFF_02["rnn_forward"]},
          ("02_rnn", "chained_profile"): _CHAIN_02, ("07_decoding", "rules_off_in_the_call"): _OFF_07,
          ("07_decoding", "chained_profile"): _CHAIN_07}


def _routes(notebook: str) -> dict[str, str]:
    """Every route of ``notebook`` but the reference's, in one submission: each answers its own exercises
    (the hooks and the chained profile go first)."""
    cells: dict[str, str] = {"before": ""}
    for route in ROUTES[notebook]:
        part = (_lying(notebook) if route.startswith("lying") else _GIVEN[notebook] if route == "given_code"
                else _KERNEL_SIDE[notebook] if route == "kernel_side_lie" else _CELLS[notebook, route])
        for k, v in part.items():
            assert k == "before" or k not in cells, (notebook, route, k)     # one route an exercise
            cells[k] = cells.get(k, "") + v + ("\n\n" if k == "before" else "")
    for k in [k for k in cells if k.startswith("first:")]:      # put at the top of that exercise's cell
        cells[k.removeprefix("first:")] = cells.pop(k) + "\n\n" + cells[k.removeprefix("first:")]
    return cells


ATTEMPTS: dict[str, dict[str, dict[str, str]]] = {
    nb: {"reference_past_the_finder": _past_the_finder(nb), "routes": _routes(nb),
         **({"marking_patched": {"sample": _code(_PATCHED)}} if nb == "02_rnn" else {})} for nb in NOTEBOOKS}
# routes that only the scan flags (plain nbgrader has no sandbox: they keep their points there until a
# person looks, as docs/ta-guide.md states)
FLAGGED = [(nb, "reference_past_the_finder") for nb in NOTEBOOKS] + [("02_rnn", "marking_patched")]


def _answer_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]


def submission(notebook: str, attempt: str) -> nbformat.NotebookNode:
    """The released student notebook, its answers left unanswered, with ``attempt``'s cells: an answer
    cell replaced by its grade id's source, ``before`` put at the top of the first answer cell, and
    ``each`` replacing every answer cell not named."""
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    cells = ATTEMPTS[notebook][attempt]
    answers = _answer_cells(nb)
    for c in answers:
        gid = c.metadata["nbgrader"]["grade_id"]
        if gid in cells:
            c.source = cells[gid]
        elif "each" in cells:
            c.source = cells["each"]
    if "before" in cells:
        answers[0].source = cells["before"] + "\n\n" + answers[0].source
    return nb


def _messages(nb) -> dict[str, str]:
    """Each test cell's failure message in a notebook autograded by nbgrader."""
    def errors(c) -> str:
        return " ".join(f"{o.get('ename')}: {o.get('evalue')}" for o in c.get("outputs", [])
                        if o.get("output_type") == "error")
    return {c.metadata["nbgrader"]["grade_id"]: errors(c)
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") and c.cell_type == "code"}


def class_students(notebook: str) -> tuple[dict, dict]:
    """tests/classes.py: the submissions of ``notebook``, for both graders."""
    students = {a: submission(notebook, a) for a in ATTEMPTS.get(notebook, {})}
    return students, students


def _graded(graded_class, notebook: str, student: str):
    """(`lmcourse grade`'s row, plain nbgrader's score, nbgrader's failure messages) of one submission."""
    cls = graded_class(notebook)
    return cls.rows[student], cls.plain(student), _messages(cls.autograded(student))


@pytest.mark.parametrize("notebook, route", [pytest.param(nb, r, id=f"{nb}-{r}", marks=proofs_group(nb))
                                             for nb in NOTEBOOKS for r in ROUTES[nb]])
def test_route_scores_nothing(graded_class, notebook, route):
    """Each exercise a route answers scores 0 under both graders, failed for the route's own reason
    where it has one (the refusal, or a value that is not plain data), not for a trick that broke."""
    row, plain, messages = _graded(graded_class, notebook, "routes")
    for exercise, reason in ROUTES[notebook][route].items():
        test = f"{exercise}_tests"
        assert float(row[test]) == 0, (route, test, row)
        assert test in plain.failed_tests, (route, test, plain)
        assert reason is None or reason in messages[test], (route, test, messages[test])


@pytest.mark.parametrize("notebook, attempt", [pytest.param(nb, a, id=f"{nb}-{a}", marks=proofs_group(nb))
                                               for nb, a in FLAGGED])
def test_flagged_route(graded_class, notebook, attempt):
    """Flagged by both graders (`lmcourse grade`'s flags; formgrader's flag under plain nbgrader with the
    course's config). Under bubblewrap, which both graders now run every kernel in, the notebook's own
    package has no reference, so the route gains nothing under either (the released notebook scores 0);
    the scan's flag is what is left where there is no sandbox."""
    row, plain, _ = _graded(graded_class, notebook, attempt)
    assert "source-scan" in row["flags"].split(";"), row
    assert plain.flagged, plain
    if attempt == "reference_past_the_finder" and BWRAP:
        assert float(row["score"]) == 0, row
        assert plain.score == 0, plain


def test_the_routes_run_where_the_rules_are_not():
    """Honest attempts: outside a graded kernel (no rules, no refusal) each rules-off route's work gives
    the reference's values on the test's visible inputs, so a 0 above is the refusal's, not a broken trick."""
    from lmcourse.marking.judge import expected_values, judge_exercise, observe
    from lmcourse.marking.notebooks import load
    from lmcourse.marking.plain import decode
    from lmcourse.marking.spec import Names

    for notebook, source, name in (("02_rnn", _OFF_02["rnn_forward"], "rnn_forward"),
                                   ("02_rnn", _OFF_02["train_step"], "train_step"),
                                   ("07_decoding", _OFF_07["top_k_filter"], "top_k_filter"),
                                   ("07_decoding", _CHAIN_07["before"].replace(_code(_INSTALL), "")
                                    + "\nepsilon_filter = "
                                    "lambda logits, eps: _WORK(logits, eps)\n", "epsilon_filter")):
        ns: dict = {}
        exec(compile(source.replace('vars(_s)["setprofile"](None)', "pass"), "<attempt>", "exec"), ns)
        spec = load(notebook)
        ex = spec.exercise(name)
        got = [decode(observe(c.call, Names(ns))) for c in ex.cases]
        outcome = judge_exercise(ex, ex.cases, got, expected_values(spec.reference, ex.cases), len(ex.cases))
        assert outcome.passed, (notebook, name, outcome.message)
