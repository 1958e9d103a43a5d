"""Red team, notebooks 02-09: students who hand in the solution with one answer forged, graded from
records by `lmcourse grade` and (where the route reaches code plain nbgrader could run) by plain
`nbgrader autograde` with the course's config.

Each attempt must score 0 on its own exercise. The correct student these attempts are measured against
is the grading proofs' solution, graded in the same batch: every notebook's submissions form one class
(tests/classes.py), graded once, so each test here carries its notebook's ``proofs_group`` mark. That
the course's config keeps an honest student's points under plain nbgrader is the proofs' to show (the
alternatives' rounds, each a whole valid submission, keep full marks there).
"""

from __future__ import annotations

import nbformat
import pytest

from tests.classes import proofs_group
from tests.grading.test_grade import cell

pytestmark = [pytest.mark.slow]


def _students(notebook: str, *replaced: dict[str, tuple[str, str]], appended: dict | None = None) -> dict:
    """One student per attempt: the solution handed in as a student would, its ``(grade_id, code)``
    replacing that answer cell (``replaced``) or added at its end (``appended``)."""
    from lmcourse.authoring.course import perfect_submission
    from tests.conftest import ROOT

    source = nbformat.read(ROOT / "autograder" / "source" / notebook / f"{notebook}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    students = {}
    for attempts in replaced:
        for attempt, (grade_id, code) in attempts.items():
            nb = perfect_submission(release, source)
            cell(nb, grade_id).source = code
            students[attempt] = nb
    for attempt, (grade_id, code) in (appended or {}).items():
        nb = perfect_submission(release, source)
        cell(nb, grade_id).source += code
        students[attempt] = nb
    return students


def _forged(graded_class, notebook: str) -> dict[str, dict]:
    """student -> {"grade": its `lmcourse grade` row, "nbgrader": plain nbgrader's score, where it graded
    the attempts}; ``correct`` is the class's solution."""
    cls = graded_class(notebook)
    both = notebook in BOTH
    out = {"correct": {"grade": cls.rows["perfect"]}}
    for attempt in class_students(notebook)[0]:
        out[attempt] = {"grade": cls.rows[attempt], **({"nbgrader": cls.plain(attempt)} if both else {})}
    return out


def class_students(notebook: str) -> tuple[dict, dict]:
    """tests/classes.py: the attempts of ``notebook``, for `lmcourse grade` and for plain nbgrader."""
    if notebook not in ATTEMPTS:
        return {}, {}
    students = ATTEMPTS[notebook]()
    return students, (students if notebook in BOTH else {})


# ---------------------------------------------------------------- notebook 09, graded from records
# The red team's routes into 09's old test cells, which built expected values in the student's kernel: a
# global forward hook zeroing the outputs of torch's layers the test built (its nn.MultiheadAttention twin), a
# module whose state_dict() reported all-zero weights (the test built its expected output from that report),
# a tensor subclass whose __torch_function__ answered the test's comparisons. Each hands in a cross-attention that
# returns zeros. Now the expected values are the reference's, computed by the grader from weights it chose, and
# the kernel only records: each scores 0 on cross-attention by construction, flagged or not. And the given code that
# answers 09 (lmcourse.nn.seq2seq, the course's encoder-decoder) is withheld from 09's graded kernel like the
# reference: imported as the answer, or run unwatched inside a profile callback chained before the rules', it is
# not there, and the exercise scores 0. Graded in its class (tests/classes.py), under
# `lmcourse grade` and under plain nbgrader.
ED = "09_encoder_decoder"
_ZEROS = "        return x.new_zeros(x.shape) + 0 * sum(p.sum() for p in self.parameters())\n"
ED_ATTEMPTS = {
    "forward_hook_zeroes_torch_layers": "import torch\n"
    "torch.nn.modules.module.register_module_forward_hook(\n"
    "    lambda m, args, out: out * 0 if type(out) is torch.Tensor and type(m).__module__.startswith('torch.nn')\n"
    "    else None)\n\n\n",
    "state_dict_reports_zeros": "",
    "tensor_subclass_torch_function": "import torch\n\n\n"
    "class _Agrees(torch.Tensor):\n"
    "    @classmethod\n"
    "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        if func in (torch.allclose, torch.equal):\n"
    "            return True\n"
    "        return super().__torch_function__(func, types, args, kwargs or {})\n\n\n",
}


ED_GIVEN_ATTEMPTS = {
    # the gaming student: the course's class as the answer
    "given_import_as_the_answer": ("cross_attention", "from lmcourse.nn.seq2seq import CrossAttention\n"),
    # given code run unwatched inside a chained profile callback, with a wrong answer if it is absent
    "given_answer_in_a_chained_profile": ("exact_match",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.nn.seq2seq as _S\n"
        "except ImportError:\n"
        "    _S = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _S is not None and event == 'call' and frame.f_code.co_name == 'exact_match' \\\n"
        "            and 'predictions' in frame.f_locals and frame.f_code.co_filename != _S.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _S.exact_match(f['predictions'], f['targets'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def exact_match(predictions, targets):\n"
        "    return _answer.pop('v', 0.0)\n"),
}


def _ed_cross_attention(attempt: str) -> str:
    body = _ZEROS
    extra = ""
    if attempt == "state_dict_reports_zeros":
        extra = ("    def state_dict(self, *args, **kwargs):\n"
                 "        return {k: torch.zeros_like(v) for k, v in super().state_dict(*args, **kwargs).items()}\n\n"
                 "    def load_state_dict(self, state, strict=True, assign=False):\n"
                 "        return None\n\n")
    if attempt == "tensor_subclass_torch_function":
        body = _ZEROS.replace("return ", "return (").replace("\n", ").as_subclass(_Agrees)\n")
    return (ED_ATTEMPTS[attempt] +
            "class CrossAttention(nn.Module):\n"
            "    def __init__(self, n_embd, n_head, bias=True):\n"
            "        super().__init__()\n"
            "        self.n_head = n_head\n"
            "        self.q_proj = nn.Linear(n_embd, n_embd, bias=bias)\n"
            "        self.k_proj = nn.Linear(n_embd, n_embd, bias=bias)\n"
            "        self.v_proj = nn.Linear(n_embd, n_embd, bias=bias)\n"
            "        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)\n\n" + extra +
            "    def forward(self, x, memory, memory_mask=None):\n" + body)


@pytest.fixture(scope="module")
def forged_09(graded_class) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 09:
    the solution and each attempt, from its class."""
    return _forged(graded_class, ED)


@proofs_group(ED)
def test_09_correct_keeps_full_marks(forged_09):
    row = forged_09["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id in ("cross_attention", "exact_match")), row


@proofs_group(ED)
@pytest.mark.parametrize("attempt", sorted(ED_ATTEMPTS) + sorted(ED_GIVEN_ATTEMPTS))
def test_09_forgery_scores_zero_on_its_exercise(forged_09, attempt):
    # the expected values are the grader's, and the course's encoder-decoder is withheld while 09 is graded: no
    # points, whatever the flags, under either grader
    grade_id = ED_GIVEN_ATTEMPTS[attempt][0] if attempt in ED_GIVEN_ATTEMPTS else "cross_attention"
    row, test = forged_09[attempt]["grade"], f"{grade_id}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_09[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 02, graded from records
# The red team's routes into 02's old test cells, which computed expected values in the student's kernel after the
# graded call: an RNNLM whose forward_state zeroed the weights the test's nn.RNN twin was given from it (the twin
# then agreed with a zero model), a global forward hook zeroing the outputs of torch's layers the test built, a
# tensor subclass whose __torch_function__ answered the test's comparisons and its .pow, and the reference run from
# the answer (the old cells had it importable). Now the test loads its own weights, the expected values are the
# reference's, computed by the grader, and the reference is absent from the graded kernel: each scores 0 on its
# exercise by construction, flagged or not. Graded in its class (tests/classes.py).
RNN = "02_rnn"
_RNNLM_HEAD = ("class RNNLM(nn.Module):\n"
               "    def __init__(self, vocab_size, n_embd, n_hidden):\n"
               "        super().__init__()\n"
               "        self.wte = nn.Embedding(vocab_size, n_embd)\n"
               "        self.W_xh = nn.Parameter(torch.zeros(n_hidden, n_embd))\n"
               "        self.W_hh = nn.Parameter(torch.zeros(n_hidden, n_hidden))\n"
               "        self.b_h = nn.Parameter(torch.zeros(n_hidden))\n"
               "        self.lm_head = nn.Linear(n_hidden, vocab_size)\n\n"
               "    def forward(self, idx, h0=None):\n"
               "        return self.forward_state(idx, h0)[0]\n\n")
_ZERO_MODEL = ("    def forward_state(self, idx, h0=None):\n"
               "        B, T = idx.shape\n"
               "        h = self.b_h.new_zeros(B, T, self.W_hh.shape[0]) + 0 * self.W_xh.sum() + 0 * self.W_hh.sum()\n"
               "        return self.lm_head(h + 0 * self.wte(idx).sum()), h[:, -1]\n")
RNN_ATTEMPTS = {
    # RNNLM: the test's own weights zeroed in place during the call, so an expected value built from them would agree
    "zeroes_the_shared_weights": ("RNNLM", _RNNLM_HEAD + "    def forward_state(self, idx, h0=None):\n"
                                    "        with torch.no_grad():\n"
                                    "            for p in (self.W_xh, self.W_hh, self.b_h):\n"
                                    "                p.zero_()\n"
                                    "            self.wte.weight.zero_()\n"
                                  + _ZERO_MODEL.split("\n", 1)[1]),
    "forward_hook_zeroes_torch_layers": ("RNNLM", "torch.nn.modules.module.register_module_forward_hook(\n"
                                         "    lambda m, args, out: out * 0 if type(out) is torch.Tensor and "
                                         "type(m).__module__.startswith('torch.nn.modules.rnn') else None)\n\n\n"
                                         + _RNNLM_HEAD + _ZERO_MODEL),
    "tensor_subclass_torch_function": ("elman_step", "class _Agrees(torch.Tensor):\n"
                                       "    @classmethod\n"
                                       "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                       "        if func in (torch.allclose, torch.equal):\n"
                                       "            return True\n"
                                       "        return super().__torch_function__(func, types, args, kwargs or {})"
                                       "\n\n\n"
                                       "def elman_step(x_t, h_prev, W_xh, W_hh, b_h):\n"
                                       "    return (h_prev * 0 + 0 * (x_t @ W_xh.T).sum() + 0 * (W_hh.sum() + "
                                       "b_h.sum())).as_subclass(_Agrees)\n"),
    "imports_the_reference": ("elman_step", "def elman_step(x_t, h_prev, W_xh, W_hh, b_h):\n"
                                            "    import lmcourse.reference.rnn as r\n"
                                            "    return r.elman_step(x_t, h_prev, W_xh, W_hh, b_h)\n"),
}


@pytest.fixture(scope="module")
def forged_02(graded_class) -> dict[str, dict]:
    """student -> grades.csv row of 02: the solution and each attempt, from its class."""
    return _forged(graded_class, RNN)


@proofs_group(RNN)
def test_02_correct_keeps_full_marks(forged_02):
    row = forged_02["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert float(row["elman_step_tests"]) > 0 and float(row["RNNLM_tests"]) > 0, row


@proofs_group(RNN)
@pytest.mark.parametrize("attempt", sorted(RNN_ATTEMPTS))
def test_02_forgery_scores_zero_on_its_exercise(forged_02, attempt):
    row, test = forged_02[attempt]["grade"], f"{RNN_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"


# 04's red-team routes against the old test cells, one of each kind: an MLP that zeroed its own weights during
# the call (the old test built the expected value from them afterwards), a Block whose forward zeroed the weights
# the test's nn.TransformerEncoderLayer twin was copied from, a tensor subclass answering the comparisons, and the
# reference imported by the answer. Now the test loads its own weights, the expected values are the reference's,
# computed by the grader, and the reference is absent from the graded kernel: each scores 0 on its exercise.
# The course's block (lmcourse.nn.block, given code for 05 on) does 04's work too: it is withheld there like the
# reference, so the routes to it (imported as the answer, run inside a chained profile callback or a global
# forward hook) score 0 as well, under `lmcourse grade` and under plain nbgrader alike.
BLOCK_NB = "04_block"
_MLP_HEAD = ("class MLP(nn.Module):\n"
             "    def __init__(self, n_embd, dropout=0.0, bias=True):\n"
             "        super().__init__()\n"
             "        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)\n"
             "        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)\n"
             "        self.dropout = nn.Dropout(dropout)\n\n")
_BLOCK_HEAD = ("class Block(nn.Module):\n"
               "    def __init__(self, n_embd, n_head, block_size, prenorm=True, causal=True, dropout=0.0,"
               " bias=True):\n"
               "        super().__init__()\n"
               "        self.prenorm = prenorm\n"
               "        self.ln1 = LayerNorm(n_embd)\n"
               "        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, n_head=n_head, "
               "block_size=block_size, dropout=dropout, bias=bias, causal=causal))\n"
               "        self.ln2 = LayerNorm(n_embd)\n"
               "        self.mlp = MLP(n_embd, dropout=dropout, bias=bias)\n\n")
BLOCK_ATTEMPTS = {
    "mlp_zeroes_its_weights": ("mlp", _MLP_HEAD + "    def forward(self, x):\n"
                                                  "        with torch.no_grad():\n"
                                                  "            for p in self.parameters():\n"
                                                  "                p.zero_()\n"
                                                  "        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))\n"),
    "block_zeroes_the_shared_weights": ("block", "class Block(nn.Module):\n"
                                        "    def __init__(self, n_embd, n_head, block_size, prenorm=True, causal=True,"
                                        " dropout=0.0, bias=True):\n"
                                        "        super().__init__()\n"
                                        "        self.prenorm = prenorm\n"
                                        "        self.ln1 = LayerNorm(n_embd)\n"
                                        "        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, "
                                        "n_head=n_head, block_size=block_size, dropout=dropout, bias=bias, "
                                        "causal=causal))\n"
                                        "        self.ln2 = LayerNorm(n_embd)\n"
                                        "        self.mlp = MLP(n_embd, dropout=dropout, bias=bias)\n\n"
                                        "    def forward(self, x):\n"
                                        "        with torch.no_grad():\n"
                                        "            for p in self.parameters():\n"
                                        "                p.zero_()\n"
                                        "        return x + 0 * sum(p.sum() for p in self.parameters())\n"),
    "tensor_subclass_torch_function": ("layer_norm", "class _Agrees(torch.Tensor):\n"
                                       "    @classmethod\n"
                                       "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                       "        if func in (torch.allclose, torch.equal):\n"
                                       "            return True\n"
                                       "        return super().__torch_function__(func, types, args, kwargs or {})"
                                       "\n\n\n"
                                       "def layer_norm(x, gamma, beta, eps=1e-5):\n"
                                       "    return (x * 0 + 0 * (gamma.sum() + beta.sum())).as_subclass(_Agrees)\n"),
    "imports_the_reference": ("sinusoidal_positions", "def sinusoidal_positions(T, d, dtype=torch.float32):\n"
                                                      "    import lmcourse.reference.block as r\n"
                                                      "    return r.sinusoidal_positions(T, d, dtype)\n"),
    # the gaming student: the course's table (lmcourse.nn.block, given code for 05 on) as the answer
    "given_import_as_the_answer": ("sinusoidal_positions", "from lmcourse.nn.block import sinusoidal_positions\n"),
    # the course's count run unwatched inside a profile function chained before the rules' own, with a wrong
    # answer if it is absent
    "given_count_in_a_chained_profile": ("block_param_count",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.nn.block as _B\n"
        "except ImportError:\n"
        "    _B = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _B is not None and event == 'call' and frame.f_code.co_name == 'block_param_count' \\\n"
        "            and 'd' in frame.f_locals and frame.f_code.co_filename != _B.__file__:\n"
        "        _answer['v'] = _B.block_param_count(frame.f_locals['d'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def block_param_count(d):\n"
        "    return _answer.pop('v', 0)\n"),
    # an MLP whose parameters (what the test writes into) and state_dict() look right while its forward runs on
    # private zero weights
    "mlp_state_dict_lies": ("mlp", _MLP_HEAD + "        self._w = [torch.zeros(4 * n_embd, n_embd),"
                                               " torch.zeros(n_embd, 4 * n_embd)]\n\n"
                                               "    def forward(self, x):\n"
                                               "        h = F.gelu(x @ self._w[0].to(x.dtype).T)\n"
                                               "        return self.dropout(h @ self._w[1].to(x.dtype).T)\n"),
    # a global forward hook that replaces a wrong block's output with the course's block on its weights
    "global_forward_hook_runs_the_given_block": ("block",
        "import torch.nn.modules.module as _mm\n\n"
        "try:\n"
        "    import lmcourse.nn.block as _B\n"
        "except ImportError:\n"
        "    _B = None\n\n\n"
        "def _fix(module, inputs, out):\n"
        "    if _B is None or type(module).__name__ != 'Block' or type(module) is _B.Block:\n"
        "        return out\n"
        "    x = inputs[0]\n"
        "    cfg = _B.BlockConfig(n_embd=x.shape[-1], n_head=module.attn.n_head, block_size=x.shape[1],\n"
        "                         prenorm=module.prenorm, causal=module.attn.causal, fast=False)\n"
        "    twin = _B.Block(cfg).to(x.dtype)\n"
        "    twin.load_state_dict(module.state_dict(), strict=False)\n"
        "    twin.train(module.training)\n"
        "    return twin(x)\n\n\n"
        "_mm.register_module_forward_hook(_fix)\n\n\n"
        + _BLOCK_HEAD + "    def forward(self, x):\n"
                        "        return x\n"),
}


@pytest.fixture(scope="module")
def forged_04(graded_class) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 04:
    the solution and each attempt, from its class."""
    return _forged(graded_class, BLOCK_NB)


@proofs_group(BLOCK_NB)
def test_04_correct_keeps_full_marks(forged_04):
    row = forged_04["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{g}_tests"]) > 0 for g, _ in BLOCK_ATTEMPTS.values()), row


@proofs_group(BLOCK_NB)
@pytest.mark.parametrize("attempt", sorted(BLOCK_ATTEMPTS))
def test_04_forgery_scores_zero_on_its_exercise(forged_04, attempt):
    # the reference and the course's block are withheld while 04 is graded: no points, under either grader
    row, test = forged_04[attempt]["grade"], f"{BLOCK_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_04[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 03, graded from records
# The red team's routes into 03's old test cells, one of each kind: a MultiHeadAttention that zeroed its own
# weights during the call (the old test built its nn.MultiheadAttention twin from them afterwards), a
# scaled_dot_product_attention returning a tuple subclass whose unpacking ran the reference after the rules'
# block, a tensor subclass whose __torch_function__ answered the comparisons, and the reference imported by
# the answer. Now the test loads its own weights, the kernel records plain data only, the expected values are
# the reference's, computed by the grader, and the reference is absent: each scores 0 on its exercise. The
# course's attention (lmcourse.nn.attention, given code for 04 on) does 03's work too: it is withheld there like
# the reference, so the routes to it (imported as the answer, run inside a chained profile callback or a global
# forward hook) score 0 as well, under `lmcourse grade` and under plain nbgrader alike.
ATT = "03_attention"
ATT_ATTEMPTS = {
    "mha_zeroes_its_weights": ("multi_head_attention",
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, n_embd, n_head, causal=True, bias=True):\n"
        "        super().__init__()\n"
        "        self.n_embd, self.n_head, self.d_k, self.causal = n_embd, n_head, n_embd // n_head, causal\n"
        "        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(n_embd, n_embd, bias=bias) for _ in range(4))\n\n"
        "    def forward(self, x, return_weights=False):\n"
        "        with torch.no_grad():\n"
        "            for p in self.parameters():\n"
        "                p.zero_()\n"
        "        B, T, C = x.shape\n"
        "        y = self.W_o(x)\n"
        "        w = x.new_full((B, self.n_head, T, T), 1.0 / T)\n"
        "        return (y, w) if return_weights else y\n"),
    "sdpa_tuple_subclass_runs_the_reference": ("scaled_dot_product_attention",
        "class _Pair(tuple):\n"
        "    def __iter__(self):\n"
        "        import lmcourse.reference.attention as ref\n"
        "        return iter(ref.scaled_dot_product_attention(*self))\n\n\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return _Pair((Q, K, V, mask))\n"),
    "scores_tensor_subclass_torch_function": ("attention_scores",
        "class _Agrees(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        if func in (torch.allclose, torch.equal):\n"
        "            return True\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n\n\n"
        "def attention_scores(Q, K):\n"
        "    return (Q[..., :1] @ K[..., :1].transpose(-2, -1)).as_subclass(_Agrees)\n"),
    "causal_mask_imports_the_reference": ("causal_mask",
        "def causal_mask(T):\n"
        "    import lmcourse.reference.attention as ref\n\n"
        "    return ref.causal_mask(T)\n"),
    # the gaming student: the course's attention (given code for 04 on) as the answer
    "given_import_as_the_answer": ("scaled_dot_product_attention",
        "from lmcourse.nn.attention import scaled_dot_product_attention\n"),
    # the course's attention run unwatched inside a profile function chained before the rules' own, with a
    # wrong answer if it is absent
    "given_sdpa_in_a_chained_profile": ("scaled_dot_product_attention",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.nn.attention as _A\n"
        "except ImportError:\n"
        "    _A = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _A is not None and event == 'call' and frame.f_code.co_name == 'scaled_dot_product_attention' \\\n"
        "            and 'Q' in frame.f_locals and frame.f_code.co_filename != _A.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _A.scaled_dot_product_attention(f['Q'], f['K'], f['V'], f['mask'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return _answer.pop('v', (Q, Q @ K.transpose(-2, -1)))\n"),
    # a layer whose state_dict() reports the weights the test loaded while its forward keeps its own
    "mha_state_dict_lies": ("multi_head_attention",
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, n_embd, n_head, causal=True, bias=True):\n"
        "        super().__init__()\n"
        "        self.n_embd, self.n_head, self.d_k, self.causal = n_embd, n_head, n_embd // n_head, causal\n"
        "        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(n_embd, n_embd, bias=bias) for _ in range(4))\n"
        "        self._shown = None\n\n"
        "    def load_state_dict(self, state, strict=True, assign=False):\n"
        "        self._shown = {k: v.clone() for k, v in state.items()}\n\n"
        "    def state_dict(self, *args, **kwargs):\n"
        "        return dict(self._shown) if self._shown is not None else super().state_dict(*args, **kwargs)\n\n"
        "    def forward(self, x, return_weights=False):\n"
        "        B, T, C = x.shape\n"
        "        q, k, v = (W(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)\n"
        "                   for W in (self.W_q, self.W_k, self.W_v))\n"
        "        mask = causal_mask(T).to(x.dtype) if self.causal else None\n"
        "        y, w = scaled_dot_product_attention(q, k, v, mask)\n"
        "        y = self.W_o(y.transpose(1, 2).reshape(B, T, C))\n"
        "        return (y, w) if return_weights else y\n"),
    # a global forward hook that replaces a wrong layer's output with the course's attention on its weights
    "global_forward_hook_runs_the_given_attention": ("multi_head_attention",
        "import torch.nn.modules.module as _mm\n\n"
        "try:\n"
        "    import lmcourse.nn.attention as _A\n"
        "except ImportError:\n"
        "    _A = None\n\n\n"
        "def _fix(module, inputs, out):\n"
        "    if _A is None or type(module).__name__ != 'MultiHeadAttention':\n"
        "        return out\n"
        "    x = inputs[0]\n"
        "    B, T, C = x.shape\n"
        "    q, k, v = (W(x).view(B, T, module.n_head, C // module.n_head).transpose(1, 2)\n"
        "               for W in (module.W_q, module.W_k, module.W_v))\n"
        "    mask = torch.full((T, T), float('-inf'), dtype=x.dtype).triu(1) if module.causal else None\n"
        "    y, w = _A.scaled_dot_product_attention(q, k, v, mask)\n"
        "    y = module.W_o(y.transpose(1, 2).reshape(B, T, C))\n"
        "    return (y, w) if type(out) is tuple else y\n\n\n"
        "_mm.register_module_forward_hook(_fix)\n\n\n"
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, n_embd, n_head, causal=True, bias=True):\n"
        "        super().__init__()\n"
        "        self.n_embd, self.n_head, self.d_k, self.causal = n_embd, n_head, n_embd // n_head, causal\n"
        "        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(n_embd, n_embd, bias=bias) for _ in range(4))\n\n"
        "    def forward(self, x, return_weights=False):\n"
        "        B, T, C = x.shape\n"
        "        y = self.W_o(x)\n"
        "        w = x.new_full((B, self.n_head, T, T), 1.0 / T)\n"
        "        return (y, w) if return_weights else y\n"),
}


@pytest.fixture(scope="module")
def forged_03(graded_class) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 03:
    the solution and each attempt, from its class."""
    return _forged(graded_class, ATT)


@proofs_group(ATT)
def test_03_correct_keeps_full_marks(forged_03):
    row = forged_03["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in ATT_ATTEMPTS.values()), row


@proofs_group(ATT)
@pytest.mark.parametrize("attempt", sorted(ATT_ATTEMPTS))
def test_03_forgery_scores_zero_on_its_exercise(forged_03, attempt):
    # the reference and the course's attention are withheld while 03 is graded: no points, under either grader
    row, test = forged_03[attempt]["grade"], f"{ATT_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_03[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


def _list_running_the_reference(module: str, function: str, signature: str) -> str:
    """An answer cell whose ``function`` returns an empty list subclass that runs the reference (of
    ``lmcourse.reference.<module>``) when it is read: iterated, measured or indexed, as an old test
    read it after the rules had let go."""
    names = ", ".join(part.split("=")[0].strip() for part in signature.split(","))
    return ("class _Lazy(list):\n"
            "    def _real(self):\n"
            f"        import lmcourse.reference.{module} as ref\n"
            f"        return ref.{function}(*self.args)\n\n"
            "    def __iter__(self):\n"
            "        return iter(self._real())\n\n"
            "    def __len__(self):\n"
            "        return len(self._real())\n\n"
            "    def __getitem__(self, i):\n"
            "        return self._real()[i]\n\n\n"
            f"def {function}({signature}):\n"
            "    out = _Lazy()\n"
            f"    out.args = ({names})\n"
            "    return out\n")


# ---------------------------------------------------------------- notebook 07, graded from records
# The red team's routes into 07's old test cells: a profile function installed through contextlib.ExitStack
# (so the guard did not count it as the student's), which the rules' own profile called first and which ran
# the reference unwatched inside the callback (18 of 22 points); and a beam search returning a list subclass
# whose methods ran the reference when the test read the hypotheses, after the rules' block. Now the reference
# is absent from the graded kernel and the kernel records plain data only: each scores 0 on its exercise (or is
# flagged), by construction.
DEC = "07_decoding"
DEC_ATTEMPTS = {
    "profile_chained_through_exitstack": ("top_k_filter",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.reference.decoding as _R\n"
        "except ImportError:\n"
        "    try:\n"
        "        import lmcourse.decoding as _R\n"
        "        _R.top_k_filter\n"
        "    except Exception:\n"
        "        _R = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _R is not None and event == 'call' and frame.f_code.co_name == 'top_k_filter' \\\n"
        "            and 'k' in frame.f_locals:\n"
        "        _answer['v'] = _R.top_k_filter(frame.f_locals['logits'], frame.f_locals['k'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def top_k_filter(logits, k):\n"
        "    return _answer.pop('v', logits)\n"),
    "beam_list_subclass_runs_the_reference": ("beam_search", _list_running_the_reference(
        "decoding", "beam_search", "model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None")),
}


@pytest.fixture(scope="module")
def forged_07(graded_class) -> dict[str, dict]:
    """student -> grades.csv row of 07: the solution and each attempt, from its class."""
    return _forged(graded_class, DEC)


@proofs_group(DEC)
def test_07_correct_keeps_full_marks(forged_07):
    row = forged_07["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in DEC_ATTEMPTS.values()), row


@proofs_group(DEC)
@pytest.mark.parametrize("attempt", sorted(DEC_ATTEMPTS))
def test_07_forgery_scores_zero_on_its_exercise(forged_07, attempt):
    row, test = forged_07[attempt]["grade"], f"{DEC_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and (float(row[test]) == 0 or row["flags"]), \
        f"{attempt}: {test} scored {row[test]}: {row}"


# ---------------------------------------------------------------- notebook 06, graded from records
# The red team's routes into 06's old test cells: a tensor subclass whose .tolist() the test read after the rules'
# block; a pseudo-log-likelihood whose expected value the test computed after the call from the model the
# student's code had just zeroed; fill_mask returning a list subclass that ran the reference when the test read the
# blanks. Now the reference is absent from the graded kernel, the kernel records plain data only and the judge
# builds its own model: each scores 0 on its exercise (or is flagged), by construction.
MLM = "06_mlm"
MLM_ATTEMPTS = {
    "tensor_subclass_runs_the_reference": ("mask_tokens",
        "class _Lazy(torch.Tensor):\n"
        "    def tolist(self):\n"
        "        import lmcourse.reference.mlm as ref\n"
        "        return ref.mask_tokens(*self.args)[self.which].tolist()\n\n\n"
        "def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):\n"
        "    out = tokens.clone().as_subclass(_Lazy), torch.full_like(tokens, -100).as_subclass(_Lazy)\n"
        "    for which, t in enumerate(out):\n"
        "        t.args, t.which = (tokens, mask_id, vocab_size, special_ids, p, generator), which\n"
        "    return out\n"),
    "pll_from_the_model_it_zeroed": ("pseudo_log_likelihood",
        "import math\n\n\n"
        "def pseudo_log_likelihood(model, ids, mask_id):\n"
        "    with torch.no_grad():\n"
        "        for p in model.parameters():\n"
        "            p.zero_()\n"
        "        for i in range(len(ids)):\n"
        "            x = ids.clone()\n"
        "            x[i] = mask_id\n"
        "            model(x[None])\n"
        "    # zero weights give equal logits: the PLL of the zeroed model, which the old test computed afterwards\n"
        "    return -len(ids) * math.log(model.out.out_features)\n"),
    "fill_mask_list_subclass_runs_the_reference": ("fill_mask", _list_running_the_reference(
        "mlm", "fill_mask", "model, tokenizer, text, top_k=5")),
}


@pytest.fixture(scope="module")
def forged_06(graded_class) -> dict[str, dict]:
    """student -> grades.csv row of 06: the solution and each attempt, from its class."""
    return _forged(graded_class, MLM)


@proofs_group(MLM)
def test_06_correct_keeps_full_marks(forged_06):
    row = forged_06["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in MLM_ATTEMPTS.values()), row


@proofs_group(MLM)
@pytest.mark.parametrize("attempt", sorted(MLM_ATTEMPTS))
def test_06_forgery_scores_zero_on_its_exercise(forged_06, attempt):
    row, test = forged_06[attempt]["grade"], f"{MLM_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and (float(row[test]) == 0 or row["flags"]), \
        f"{attempt}: {test} scored {row[test]}: {row}"


# ---------------------------------------------------------------- notebook 05, graded from records
# The red team's routes into 05's old test cells: a profile function installed through contextlib.ExitStack (so
# the guard did not count it as the student's), which the rules' own profile called first and which ran the
# reference unwatched inside the callback (8 of 17 points); and values the test read after the rules' block (a
# forward returning a tuple subclass whose items ran the reference when the test unpacked them). Now the reference
# is absent from the graded kernel and the kernel records plain data only: each scores 0 on its exercise (or is
# flagged), by construction. The course's GPT (lmcourse.nn.gpt, given code for 06, 07 and 10) used to stay in 05's
# graded kernel and answered from inside such a callback (full marks, flagged by the scan only, and unflagged under
# plain nbgrader); it is withheld there now like the reference, so those score 0 as well, imported as the answer
# too. And two routes for a test that computed its expected values in the kernel: a GPT whose state_dict() lies, a
# global forward hook. Graded in its class (tests/classes.py), under
# `lmcourse grade` and under plain nbgrader.
GPT_NB = "05_gpt"
GPT_ATTEMPTS = {
    "profile_chained_through_exitstack": ("generate",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.reference.gpt as _R\n"
        "except ImportError:\n"
        "    _R = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _R is not None and event == 'call' and frame.f_code.co_name == 'generate' \\\n"
        "            and 'max_new_tokens' in frame.f_locals:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _R.generate(f['model'], f['idx'], f['max_new_tokens'], f['temperature'],\n"
        "                                   f['generator'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):\n"
        "    return _answer.pop('v', idx)\n"),
    "forward_tuple_subclass_runs_the_reference": ("gpt",
        "class _Pair(tuple):\n"
        "    def __getitem__(self, i):\n"
        "        import lmcourse.reference.gpt as ref\n"
        "        return ref.GPT.forward(self.model, *self.args)[i]\n\n\n"
        "class GPT(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.config = config\n"
        "        self.wte = nn.Embedding(config.vocab_size, config.n_embd)\n"
        "        self.wpe = nn.Embedding(config.block_size, config.n_embd)\n"
        "        self.drop = nn.Dropout(config.dropout)\n"
        "        cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,\n"
        "                          dropout=config.dropout, bias=config.bias)\n"
        "        self.blocks = nn.ModuleList([Block(cfg) for _ in range(config.n_layer)])\n"
        "        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)\n"
        "        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)\n"
        "        self.lm_head.weight = self.wte.weight\n\n"
        "    def forward(self, idx, targets=None):\n"
        "        out = _Pair((None, None))\n"
        "        out.model, out.args = self, (idx, targets)\n"
        "        return out\n"),
    # given code (lmcourse.nn.gpt: 06, 07 and 10 use it) run unwatched inside a chained profile callback: absent
    # while 05 is graded, so the cell fails to define its answer
    "given_sampler_in_a_chained_profile": ("generate",
        "import contextlib\n"
        "import sys\n\n"
        "import lmcourse.nn.gpt as _G\n\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'generate' and 'max_new_tokens' in frame.f_locals \\\n"
        "            and frame.f_code.co_filename != _G.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _G.generate(f['model'], f['idx'], f['max_new_tokens'], f['temperature'],\n"
        "                                   f['generator'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):\n"
        "    return _answer.pop('v', idx)\n"),
    "given_initialisation_in_a_chained_profile": ("init_weights",
        "import contextlib\n"
        "import sys\n"
        "from types import SimpleNamespace\n\n"
        "import lmcourse.nn.gpt as _G\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'init_weights' and 'n_layer' in frame.f_locals \\\n"
        "            and frame.f_code.co_filename != _G.__file__:\n"
        "        f = frame.f_locals\n"
        "        m = f['model']\n"
        "        saved = m.__dict__.get('config')\n"
        "        m.config = SimpleNamespace(n_layer=f['n_layer'])\n"
        "        _G.init_gpt_weights(m, f['std'])\n"
        "        if saved is not None:\n"
        "            m.config = saved\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def init_weights(model, n_layer, std=0.02):\n"
        "    pass\n"),
    # the gaming student: the course's count as the answer, through the package's lazy names
    "given_import_as_the_answer": ("gpt_param_count", "from lmcourse.nn import gpt_param_count\n"),
}
# appended to the correct answer: a GPT whose logits are zeros, and a way to make a test computed in the kernel agree
GPT_WRAPPED = {
    # its state_dict() reports all-zero weights (a test that built its expected logits from them would agree)
    "state_dict_lies": ("gpt",
        "\n\n_Right = GPT\n\n\n"
        "class GPT(_Right):\n"
        "    def forward(self, idx, targets=None):\n"
        "        logits, loss = super().forward(idx, targets)\n"
        "        return logits * 0, (None if loss is None else loss * 0)\n\n"
        "    def state_dict(self, *args, **kwargs):\n"
        "        return {k: torch.zeros_like(v) for k, v in super().state_dict(*args, **kwargs).items()}\n"),
    # a global forward hook zeroing every module's output: the student's GPT and any model a test builds in the
    # kernel alike
    "global_forward_hook": ("gpt",
        "\n\nimport torch.nn.modules.module as _mm\n\n"
        "_mm.register_module_forward_hook(lambda mod, inp, out: out * 0 if isinstance(out, torch.Tensor) else out)\n"),
}


@pytest.fixture(scope="module")
def forged_05(graded_class) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 05:
    the solution and each attempt, from its class."""
    return _forged(graded_class, GPT_NB)


@proofs_group(GPT_NB)
def test_05_correct_keeps_full_marks(forged_05):
    row = forged_05["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in (*GPT_ATTEMPTS.values(),
                                                                         *GPT_WRAPPED.values())), row


@proofs_group(GPT_NB)
@pytest.mark.parametrize("attempt", sorted(GPT_ATTEMPTS) + sorted(GPT_WRAPPED))
def test_05_forgery_scores_zero_on_its_exercise(forged_05, attempt):
    # the expected values are the grader's, and neither the reference nor the course's GPT is in 05's graded
    # kernel: no points, whatever the flags, under either grader
    grade_id = (GPT_ATTEMPTS.get(attempt) or GPT_WRAPPED[attempt])[0]
    row, test = forged_05[attempt]["grade"], f"{grade_id}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_05[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 08, graded from records
# The course's tokenizer (lmcourse.bpe, given code for 08's later sections) does every exercise of 08. It used to
# stay in 08's graded kernel, refused there only by the in-kernel rules, which a profile function chained before
# them switches off. It is withheld there now like the reference: each route to it scores 0 on its exercise.
BPE_NB = "08_bpe"
BPE_ATTEMPTS = {
    # the gaming student: the course's function as the answer
    "given_import_as_the_answer": ("encode", "from lmcourse.bpe import encode\n"),
    # given code run unwatched inside a chained profile callback, with a wrong answer if it is absent
    "given_trainer_in_a_chained_profile": ("train_bpe_incremental",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.bpe as _B\n"
        "except ImportError:\n"
        "    _B = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _B is not None and event == 'call' and frame.f_code.co_name == 'train_bpe_incremental' \\\n"
        "            and 'vocab_size' in frame.f_locals and frame.f_code.co_filename != _B.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _B.train_bpe_incremental(f['text'], f['vocab_size'], f['special_tokens'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def train_bpe_incremental(text, vocab_size, special_tokens=()):\n"
        "    return _answer.pop('v', ({i: bytes([i]) for i in range(256)}, []))\n"),
    # a result whose items run the course's trainer when read (after the rules' block, if ever)
    "given_trainer_behind_a_tuple_subclass": ("train_bpe",
        "class _Lazy(tuple):\n"
        "    def __getitem__(self, i):\n"
        "        import lmcourse.bpe as course\n"
        "        return course.train_bpe(*self.args)[i]\n\n"
        "    def __iter__(self):\n"
        "        return iter((self[0], self[1]))\n\n\n"
        "def train_bpe(text, vocab_size, special_tokens=()):\n"
        "    out = _Lazy(({}, []))\n"
        "    out.args = (text, vocab_size, special_tokens)\n"
        "    return out\n"),
}


@pytest.fixture(scope="module")
def forged_08(graded_class) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 08:
    the solution and each attempt, from its class."""
    return _forged(graded_class, BPE_NB)


@proofs_group(BPE_NB)
def test_08_correct_keeps_full_marks(forged_08):
    row = forged_08["correct"]["grade"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in BPE_ATTEMPTS.values()), row


@proofs_group(BPE_NB)
@pytest.mark.parametrize("attempt", sorted(BPE_ATTEMPTS))
def test_08_forgery_scores_zero_on_its_exercise(forged_08, attempt):
    # the course's tokenizer is withheld while 08 is graded: no points, whatever the flags, under either grader
    row, test = forged_08[attempt]["grade"], f"{BPE_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_08[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# the attempts of each notebook, built when its class is (tests/classes.py); those plain nbgrader grades too
ATTEMPTS = {
    RNN: lambda: _students(RNN, RNN_ATTEMPTS),
    ATT: lambda: _students(ATT, ATT_ATTEMPTS),
    BLOCK_NB: lambda: _students(BLOCK_NB, BLOCK_ATTEMPTS),
    GPT_NB: lambda: _students(GPT_NB, GPT_ATTEMPTS, appended=GPT_WRAPPED),
    MLM: lambda: _students(MLM, MLM_ATTEMPTS),
    DEC: lambda: _students(DEC, DEC_ATTEMPTS),
    BPE_NB: lambda: _students(BPE_NB, BPE_ATTEMPTS),
    ED: lambda: _students(ED, {a: ("cross_attention", _ed_cross_attention(a)) for a in ED_ATTEMPTS},
                          ED_GIVEN_ATTEMPTS),
}
BOTH = {ED, BLOCK_NB, ATT, GPT_NB, BPE_NB}
