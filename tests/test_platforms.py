"""Every laptop (Apple MPS has no float64; Windows has no torch.compile), by construction:
float64 comparisons happen on the CPU, never on the model's device."""

import ast
import math
import re

import torch

from lmcourse import checks
from tests.conftest import ROOT

F64 = {"float64", "double"}


def _is_f64(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in F64 and isinstance(node.value, ast.Name) \
        and node.value.id == "torch"


def _float64_off_cpu(source: str) -> list[str]:
    """Calls that make or move a float64 tensor and name a device other than the CPU literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        makes_f64 = any(_is_f64(a) for a in node.args) or any(
            k.arg == "dtype" and _is_f64(k.value) for k in node.keywords)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "double":
            makes_f64 = True
        if not makes_f64:
            continue
        places = [k.value for k in node.keywords if k.arg == "device"] + [
            a for a in node.args if not _is_f64(a) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "to" and not isinstance(a, ast.Call)]
        for place in places:
            if not (isinstance(place, ast.Constant) and place.value == "cpu"):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:120]}")
    return found


def _test_cells(master: str) -> list[tuple[str, str]]:
    cells, header, body = [], None, []
    for line in master.splitlines():
        if line.startswith("# %%"):
            if header and re.search(r"\btests=", header):
                cells.append((header, "\n".join(body)))
            header, body = line, []
        else:
            body.append(line)
    if header and re.search(r"\btests=", header):
        cells.append((header, "\n".join(body)))
    return cells


def test_checks_compare_in_float64_on_the_cpu():
    source = (ROOT / "lmcourse" / "checks.py").read_text()
    assert _float64_off_cpu(source) == []
    assert '"cpu", torch.float64' in source  # check_tensor_close reads both sides on the CPU in float64


def test_no_test_cell_puts_float64_on_the_models_device():
    offenders = []
    for path in sorted((ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py")):
        for header, body in _test_cells(path.read_text()):
            try:
                bad = _float64_off_cpu(body)
            except SyntaxError:
                continue
            offenders += [f"{path.name} {header}: {b}" for b in bad]
    assert offenders == [], "float64 off the CPU fails on Apple MPS:\n" + "\n".join(offenders)


def test_the_scan_finds_what_it_looks_for():
    assert _float64_off_cpu("torch.zeros(3, dtype=torch.float64, device=rt.device)")
    assert _float64_off_cpu("x.to(rt.device, torch.float64)")
    assert _float64_off_cpu("x.to(device).double()") == []  # converted where it is, then the check moves it
    assert _float64_off_cpu("torch.zeros(3, dtype=torch.float64)") == []
    assert _float64_off_cpu("x.to('cpu', torch.float64)") == []


def test_float32_results_pass_a_float64_reference_within_the_default_tolerance():
    """A model computing in float32 (MPS, or a GPU) against a float64 reference, compared by the
    default check_tensor_close tolerance."""
    x = torch.linspace(-4, 4, 257, dtype=torch.float64)
    ref = torch.softmax(x, 0)
    checks.check_tensor_close(torch.softmax(x.float(), 0), ref, "softmax in float32")
    assert math.isclose(float(torch.softmax(x.float(), 0).sum()), 1.0, rel_tol=1e-6)


def test_torch_compile_is_refused_with_a_reason_on_windows(monkeypatch):
    from lmcourse import runtime

    monkeypatch.setattr("sys.platform", "win32")
    ok, why = runtime.compile_support()
    assert not ok and "Windows" in why


def test_training_asked_to_compile_where_it_cannot_runs_uncompiled_and_says_so(monkeypatch, capsys):
    from lmcourse import runtime, train

    monkeypatch.setattr(runtime, "compile_support", lambda: (False, "torch.compile is not set up here"))
    monkeypatch.setattr(torch, "compile", lambda *a, **k: (_ for _ in ()).throw(AssertionError("compiled")))
    torch.manual_seed(0)
    model = torch.nn.Embedding(5, 5)              # a bigram model: logits for the next token
    tokens = torch.randint(0, 5, (200,))
    cfg = train.TrainConfig(steps=3, batch_size=2, block_size=4, eval_batches=0, device="cpu",
                            compile=True, progress=False, warmup_steps=0)
    hist = train.train(model, tokens, None, cfg)
    assert "torch.compile is not set up here; training without torch.compile" in capsys.readouterr().out
    assert len(hist.train_loss) >= 1
