import math

import numpy as np
import pytest

from lmcourse import checks
from lmcourse.checks import CheckFailed, check_equal


def test_distribution_message_names_the_sum_and_the_hint():
    with pytest.raises(CheckFailed, match=r"sum to 0.8333, not 1 — normalise"):
        checks.check_distribution({"a": 0.5, "b": 1 / 3}, "p", hint="normalise")


def test_close_handles_infinities_and_nan():
    checks.check_close(math.inf, math.inf, "x")
    with pytest.raises(CheckFailed, match="is nan"):
        checks.check_close(float("nan"), 1.0, "x")
    with pytest.raises(CheckFailed, match="off by"):
        checks.check_close(1.1, 1.0, "x")


def test_equal_points_at_the_first_difference():
    with pytest.raises(CheckFailed, match="differs at position 1"):
        checks.check_equal([1, 2, 3], [1, 5, 3], "xs")
    with pytest.raises(CheckFailed, match="missing 1 key"):
        checks.check_equal({"a": 1}, {"a": 1, "b": 2}, "d")


def test_equal_names_torch_dtypes_and_devices():
    torch = pytest.importorskip("torch")
    with pytest.raises(CheckFailed, match=r"is torch.float32, expected torch.float64"):
        checks.check_equal(torch.float32, torch.float64, "the dtype")
    with pytest.raises(CheckFailed, match=r"device\(type='meta'\), expected device\(type='cpu'\)"):
        checks.check_equal(torch.device("meta"), torch.device("cpu"), "the device")
    checks.check_equal(torch.device("cpu"), torch.device("cpu"), "the device")


def test_checks_do_not_depend_on_numpy_comparisons(monkeypatch):
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "isclose", lambda *a, **k: True)
    with pytest.raises(CheckFailed):
        checks.check_close(2.0, 1.0, "x")


def test_forbid_torch_functions_blocks_every_route_and_restores():
    torch = pytest.importorskip("torch")
    nn = torch.nn
    x, h = torch.randn(2, 3), torch.randn(2, 4)
    W_xh, W_hh, b = torch.randn(4, 3), torch.randn(4, 4), torch.randn(4)
    routes = {
        "torch.rnn_tanh_cell": lambda: torch.rnn_tanh_cell(x, h, W_xh, W_hh, b),
        "_VariableFunctions": lambda: torch._C._VariableFunctions.rnn_tanh_cell(x, h, W_xh, W_hh, b),
        "torch.ops.aten": lambda: torch.ops.aten.rnn_tanh_cell(x, h, W_xh, W_hh, b),
        "torch.rnn_tanh": lambda: torch.rnn_tanh(x[None], h[None], [W_xh, W_hh, b, b], True, 1, 0.0,
                                                 False, False, False),
        "nn.RNNCell": lambda: nn.RNNCell(3, 4)(x, h),
        "nn.RNN": lambda: nn.RNN(3, 4, batch_first=True)(x[None]),
        "nn.LSTM": lambda: nn.LSTM(3, 4)(x[None]),
        "nn.GRUCell": lambda: nn.GRUCell(3, 4)(x),
    }
    from lmcourse.marking.refusals import forbid_torch_functions

    with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason="do it yourself"):
        for route, call in routes.items():
            with pytest.raises(CheckFailed, match=r"your code called torch\.\w+") as info:
                call()
            assert str(info.value).endswith(": do it yourself"), route
        torch.tanh(x @ W_xh.T + h @ W_hh.T + b)  # plain tensor code still runs
    assert torch.rnn_tanh_cell(x, h, W_xh, W_hh, b).shape == (2, 4)  # and nothing is blocked after


def test_messages_show_plain_containers_not_placeholders():
    # a student comparing lists must see the lists (a placeholder hid what differed)
    with pytest.raises(CheckFailed) as err:
        check_equal(["<s>", "cows"], ["<s>", "<s>", "cows", "</s>"], "pad_sentence(['cows'], 3)")
    assert "got ['<s>', 'cows'], expected ['<s>', '<s>', 'cows', '</s>']" in str(err.value)
    with pytest.raises(CheckFailed) as err:
        check_equal(list(range(30)), list(range(31)), "ids")
    assert "… (30 items)" in str(err.value) and "… (31 items)" in str(err.value)

    class Sneaky(list):
        def __repr__(self):
            raise RuntimeError("student code ran while a message was written")

    with pytest.raises(CheckFailed) as err:   # read through list's own methods, never the subclass's
        check_equal(Sneaky([1]), [2], "x")
    assert "RuntimeError" not in str(err.value)


# ---- what a student sees: a failed check rendered by IPython (a real kernel, as in JupyterLab)

_RENDER_CELLS = [
    "from lmcourse.checks import CheckFailed, call_checked, check_equal",
    "def f(x):\n    return x + 1\n\ncheck_equal(f(1), 3, 'f(1)', hint='add one')",
    "def g(x):\n    return {}[x]\n\ncall_checked(g, 3, hint='look it up')",
    # the student breaks what the renderer reads: the message still comes, with an error output
    "import linecache\nlinecache.getlines = lambda *a, **k: 1 / 0\ncheck_equal(1, 2, 'one')",
    # or empties the renderer: nbgrader still sees the error output and gives no points
    "CheckFailed._render_traceback_ = lambda self: []\ncheck_equal(1, 2, 'one')",
]


@pytest.fixture(scope="module")
def rendered():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in _RENDER_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, cell in enumerate(nb.cells[1:], 1):
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"t{i}", "points": 1, "solution": False,
                                     "locked": True, "schema_version": 3}
    import tempfile

    from lmcourse.notebook_runner import ipc_kernel_config

    with tempfile.TemporaryDirectory() as sockets:
        NotebookClient(nb, timeout=60, allow_errors=True, config=ipc_kernel_config(sockets)).execute()
    return nb.cells


def _error(cell):
    import re

    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert len(errors) == 1, cell.outputs
    return errors[0], [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in "\n".join(errors[0].traceback).split("\n")]


@pytest.mark.slow   # a kernel: a notebook execution
def test_a_failed_check_shows_its_message_first_and_no_checks_frame(rendered):
    err, lines = _error(rendered[1])
    assert (err.ename, err.evalue) == ("CheckFailed", "f(1) is 2, expected 3 — add one")
    assert lines[0] == "CheckFailed: f(1) is 2, expected 3 — add one", lines
    assert lines[1] == "    Cell In[2], line 4: check_equal(f(1), 3, 'f(1)', hint='add one')", lines
    assert len(lines) == 2, lines
    assert not any("checks.py" in line for line in lines)


@pytest.mark.slow   # a kernel: a notebook execution
def test_a_failed_call_shows_the_message_then_where_the_student_code_raised(rendered):
    _, lines = _error(rendered[2])
    assert lines[0] == "CheckFailed: g(...) raised KeyError: 3 — look it up", lines
    assert lines[1].startswith("    Cell In[3], line 4: call_checked(g, 3"), lines
    text = "\n".join(lines)
    assert "Cell In[3], line 2, in g(x)" in text and "return {}[x]" in text, text
    assert "checks.py" not in text


@pytest.mark.slow   # a kernel: a notebook execution
def test_a_broken_renderer_cannot_hide_a_failure(rendered):
    from nbgrader.utils import determine_grade

    _, lines = _error(rendered[3])
    assert lines == ["CheckFailed: one is 1, expected 2"], lines        # the message alone
    err, lines = _error(rendered[4])                                       # an empty traceback ...
    assert err.ename == "CheckFailed" and err.traceback == []
    for cell in rendered[1:]:                                              # ... is still an error
        assert determine_grade(cell) == (0, 1)


def test_check_choice_reads_the_letter_and_never_gives_the_answer_away():
    from lmcourse.checks import check_choice

    check_choice(" b ", "ABCD", "answer_q1", correct="B")        # case and spaces are the student's
    check_choice("C", "ABCD", "answer_q1")                        # the visible part: any offered letter
    with pytest.raises(CheckFailed, match="not the right choice") as err:
        check_choice("A", "ABCD", "answer_q1", correct="B")
    assert "'B'" not in str(err.value) and '"B"' not in str(err.value), err.value
    for bad, says in [("E", "one letter"), ("AB", "one letter"), ("", "one letter"), (2, "should be a str")]:
        with pytest.raises(CheckFailed, match=says):
            check_choice(bad, "ABCD", "answer_q1")

    from lmcourse.authoring.mutants import forged_choice

    forged = {}   # the catalogues' forged answer: "A", with a strip() equal to every letter
    exec(forged_choice("answer_q1", "A").source, forged)
    assert forged["answer_q1"].strip().upper() == "B"   # it passes a naive comparison ...
    with pytest.raises(CheckFailed, match="not the right choice"):   # ... not check_choice: the "A" it holds
        check_choice(forged["answer_q1"], "ABCD", "answer_q1", correct="B")


def test_a_tensor_where_a_number_is_wanted_says_item_and_shape():
    torch = pytest.importorskip("torch")
    with pytest.raises(CheckFailed, match=r"got a one-element Tensor of shape \(\): return its \.item\(\) — h"):
        checks.check_close(torch.tensor(0.5), 0.5, "p", hint="h")
    with pytest.raises(CheckFailed, match=r"got a Tensor of shape \(3,\)$"):
        checks.check_close(torch.zeros(3), 0.5, "p")


def test_a_message_stays_short_for_long_bytes_and_huge_ints():
    # repr of an int over 4300 digits raises ValueError: the check must still fail as a CheckFailed
    for value in ([b"x" * 10**6], 10**5000, [10**5000] * 20, {10**5000: b"y" * 10**6}):
        with pytest.raises(CheckFailed) as err:
            check_equal(value, [1], "v")
        assert len(str(err.value)) < 1500, len(str(err.value))


def test_a_letter_answer_written_with_punctuation_is_told_the_fix_with_its_own_letter():
    for written, letter in [("b)", "B"), ("B.", "B"), ("(c)", "C"), ("option B", "B"), ("AB", "A")]:
        fix = rf'got .* — write just the letter in quotes, e.g. answer_q1 = "{letter}"$'
        with pytest.raises(CheckFailed, match=fix):
            checks.check_choice(written, "ABCD", "answer_q1", correct="D")
    for written in ["b", "  B  ", "".join(["B"]), "\tb\n"]:     # a valid answer, written any way, passes
        checks.check_choice(written, "ABCD", "answer_q1", correct="B")


def test_a_type_in_a_message_has_its_article():
    with pytest.raises(CheckFailed, match=r"got an int: 3$"):
        check_equal(3, [1], "v")
    with pytest.raises(CheckFailed, match=r"but it is an ndarray$"):
        checks.check_type(np.zeros(2), list, "x")
    with pytest.raises(CheckFailed, match=r"but it is a tuple$"):
        checks.check_type((1,), list, "x")


def test_all_names_what_the_module_defines():
    import inspect

    defined = {n for n, v in vars(checks).items() if not n.startswith("_") and getattr(v, "__module__", None)
               == checks.__name__ and (inspect.isfunction(v) or inspect.isclass(v))}
    assert defined == set(checks.__all__)
