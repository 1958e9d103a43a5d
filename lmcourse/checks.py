"""Comparisons for notebook test cells, whose failure messages teach.

A test cell should say *what* is wrong and *why it probably is*, e.g.

    check_distribution(dist, name="p(. | cows eat)",
                       hint="did you divide by the count of the context?")
    -> probabilities in p(. | cows eat) sum to 0.8333, not 1 — did you divide by the count ...

Every helper raises :class:`CheckFailed` (an ``AssertionError``), so nbgrader counts a
failed check as a failed test. They use only ``math`` and plain Python for the core
comparisons, so a student who replaces ``numpy.allclose`` cannot make them pass.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any


class CheckFailed(AssertionError):
    """A check in a test cell failed; the message says what to look at."""


def _fail(msg: str, hint: str | None) -> None:
    raise CheckFailed(msg + (f" — {hint}" if hint else ""))


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)


def check(condition: bool, message: str) -> None:
    """Plain assertion with a teaching message (works under ``python -O`` too)."""
    if not condition:
        raise CheckFailed(message)


def check_type(value: Any, types: type | tuple[type, ...], name: str, hint: str | None = None) -> None:
    if not isinstance(value, types):
        want = types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
        _fail(f"{name} should be a {want}, but it is a {type(value).__name__}", hint)


def check_equal(actual: Any, expected: Any, name: str, hint: str | None = None) -> None:
    if type(actual) is not type(expected) and not (_is_number(actual) and _is_number(expected)):
        if not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
            if not (isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple))):
                _fail(f"{name} should be a {type(expected).__name__} equal to {_fmt(expected)}, "
                      f"got a {type(actual).__name__}: {_fmt(actual)}", hint)
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        actual_l, expected_l = list(actual), list(expected)
        if actual_l != expected_l:
            if len(actual_l) != len(expected_l):
                _fail(f"{name} has {len(actual_l)} items, expected {len(expected_l)}: "
                      f"got {_fmt(actual)}, expected {_fmt(expected)}", hint)
            i = next(i for i, (a, e) in enumerate(zip(actual_l, expected_l)) if a != e)
            _fail(f"{name} differs at position {i}: got {_fmt(actual_l[i])}, expected {_fmt(expected_l[i])} "
                  f"(whole value {_fmt(actual)})", hint)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        check_same_keys(actual, expected, name, hint)
        for k in expected:
            if actual[k] != expected[k]:
                _fail(f"{name}[{_fmt(k)}] is {_fmt(actual[k])}, expected {_fmt(expected[k])}", hint)
        return
    if actual != expected:
        _fail(f"{name} is {_fmt(actual)}, expected {_fmt(expected)}", hint)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or type(x).__name__ in (
        "float64", "float32", "int64", "int32")


def check_close(actual: Any, expected: float, name: str, rel: float = 1e-9, abs_: float = 1e-12,
                hint: str | None = None) -> None:
    """A single number, compared with an explicit tolerance; infinities must match exactly."""
    if not _is_number(actual):
        _fail(f"{name} should be a number, got {type(actual).__name__}: {_fmt(actual)}", hint)
    a, e = float(actual), float(expected)
    if math.isnan(a):
        _fail(f"{name} is nan, expected {_fmt(e)}", hint)
    if math.isinf(e) or math.isinf(a):
        if a != e:
            _fail(f"{name} is {_fmt(a)}, expected {_fmt(e)}", hint)
        return
    if not math.isclose(a, e, rel_tol=rel, abs_tol=abs_):
        _fail(f"{name} is {_fmt(a)}, expected {_fmt(e)} (off by {a - e:+.3g})", hint)


def check_same_keys(actual: Mapping, expected: Mapping, name: str, hint: str | None = None) -> None:
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"is missing {len(missing)} key(s), e.g. {_fmt(missing[0])}")
        if extra:
            parts.append(f"has {len(extra)} unexpected key(s), e.g. {_fmt(extra[0])}")
        _fail(f"{name} " + " and ".join(parts), hint)


def check_distribution(dist: Mapping, name: str, tol: float = 1e-9, hint: str | None = None) -> None:
    """A dict of probabilities: non-negative, finite, summing to 1."""
    check_type(dist, Mapping, name)
    if not dist:
        _fail(f"{name} is empty; a distribution needs at least one outcome", hint)
    for k, p in dist.items():
        if not _is_number(p) or math.isnan(float(p)) or float(p) < 0:
            _fail(f"{name}[{_fmt(k)}] = {_fmt(p)} is not a probability", hint)
    total = math.fsum(float(p) for p in dist.values())
    if abs(total - 1.0) > tol:
        _fail(f"probabilities in {name} sum to {total:.4g}, not 1", hint)


def check_dist_close(actual: Mapping, expected: Mapping, name: str, tol: float = 1e-9,
                     hint: str | None = None) -> None:
    """Two distributions over the same outcomes, entry by entry."""
    check_type(actual, Mapping, name)
    check_same_keys(actual, expected, name, hint)
    for k, e in expected.items():
        check_close(actual[k], e, f"{name}[{_fmt(k)}]", rel=tol, abs_=tol, hint=hint)


@contextlib.contextmanager
def forbid(owner: Any, attr: str, reason: str = "a graded answer must be your own code"):
    """Within the block, calling ``owner.attr`` raises — used by hidden tests to make sure a
    graded function does not just call the course's reference implementation."""
    original = getattr(owner, attr)
    label = f"{getattr(owner, '__name__', type(owner).__name__)}.{attr}"

    def _blocked(*args, **kwargs):
        raise CheckFailed(f"your code called {label}: {reason}")

    setattr(owner, attr, _blocked)
    try:
        yield
    finally:
        setattr(owner, attr, original)


# --- Tensors ----------------------------------------------------------------------------------
# The verdicts below are reached in plain Python on numbers read out of the tensors, so a
# notebook that rebinds torch.allclose cannot make them pass.


def check_shape(actual: Any, expected: tuple, name: str, hint: str | None = None) -> None:
    """A tensor (anything with ``.shape``) of exactly the expected shape."""
    shape = getattr(actual, "shape", None)
    if shape is None:
        _fail(f"{name} should be a tensor of shape {tuple(expected)}, but it is a {type(actual).__name__}", hint)
    if tuple(shape) != tuple(expected):
        _fail(f"{name} has shape {tuple(shape)}, expected {tuple(expected)}", hint)


def check_tensor_close(actual: Any, expected: Any, name: str, atol: float = 1e-8, rtol: float = 1e-5,
                       hint: str | None = None) -> None:
    """Same shape, and ``|actual - expected| <= atol + rtol * |expected|`` entry by entry.

    On failure the message gives the worst entry (its index, both values), and says so when
    the values are nan or the shapes differ.
    """
    import torch

    if not isinstance(actual, torch.Tensor):
        _fail(f"{name} should be a torch.Tensor, but it is a {type(actual).__name__}", hint)
    expected = torch.as_tensor(expected)
    check_shape(actual, tuple(expected.shape), name, hint)
    if actual.numel() == 0:
        return
    a = [float(v) for v in actual.detach().to("cpu", torch.float64).reshape(-1).tolist()]
    e = [float(v) for v in expected.detach().to("cpu", torch.float64).reshape(-1).tolist()]
    worst, worst_i = -1.0, 0
    for i, (x, y) in enumerate(zip(a, e)):
        if math.isnan(x) != math.isnan(y):
            _fail(f"{name} has nan at flat index {i} (got {_fmt(x)}, expected {_fmt(y)})", hint)
        if math.isnan(x) or x == y:
            continue
        excess = abs(x - y) - (atol + rtol * abs(y)) if math.isfinite(x - y) else math.inf
        if excess > worst:
            worst, worst_i = excess, i
    if worst > 0:
        idx = _unravel(worst_i, tuple(actual.shape))
        diff = max((abs(x - y) for x, y in zip(a, e) if not math.isnan(x)), default=0.0)
        _fail(f"{name} differs from the expected values: at index {idx} got {_fmt(a[worst_i])}, "
              f"expected {_fmt(e[worst_i])} (largest difference {diff:.3g}; tolerance atol={atol:g}, "
              f"rtol={rtol:g})", hint)


def _unravel(flat: int, shape: tuple) -> tuple:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return tuple(reversed(idx))


def call_checked(fn, *args, name: str | None = None, hint: str | None = None, **kwargs):
    """Call ``fn(*args, **kwargs)``; an exception becomes a :class:`CheckFailed` naming the call.

    ``NotImplementedError`` (an unanswered cell) passes through unchanged.
    """
    label = name or f"{getattr(fn, '__name__', 'the function')}(...)"
    try:
        return fn(*args, **kwargs)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as exc:
        raise CheckFailed(f"{label} raised {type(exc).__name__}: {exc}" + (f" — {hint}" if hint else "")) from exc


@contextlib.contextmanager
def forbid_torch_functions(*name_substrings: str, reason: str = "a graded answer must be your own code"):
    """Within the block, calling any torch function whose ``__name__`` contains one of
    ``name_substrings`` raises :class:`CheckFailed`, however it is reached: ``torch.X``,
    ``torch._VF.X``, ``torch._C._VariableFunctions.X``, ``torch.ops.aten.X`` or an ``nn`` module
    that calls it (e.g. ``forbid_torch_functions("rnn_tanh")`` blocks ``nn.RNN``). A
    :class:`torch.overrides.TorchFunctionMode`, so rebinding names cannot get around it."""
    from torch.overrides import TorchFunctionMode

    class _Forbid(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if any(s in name for s in name_substrings):
                raise CheckFailed(f"your code called torch.{name}: {reason}")
            return func(*args, **(kwargs or {}))

    with _Forbid():
        yield


def _code_objects(target: Any, found: dict, label: str) -> None:
    """Every code object that running ``target`` may execute: a function's own code and the
    functions nested in it; for a class, every function in its own body (not its bases');
    for a module, every function and class defined in it."""
    import types

    if isinstance(target, types.ModuleType):
        for name, obj in vars(target).items():
            if getattr(obj, "__module__", None) == target.__name__:
                _code_objects(obj, found, f"{target.__name__}.{name}")
        return
    if isinstance(target, type):
        for name, obj in vars(target).items():
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            elif isinstance(obj, property):
                for f in (obj.fget, obj.fset, obj.fdel):
                    if f is not None:
                        _code_objects(f, found, f"{label}.{name}")
                continue
            if isinstance(obj, (types.FunctionType, type)):
                _code_objects(obj, found, f"{label}.{name}")
        return
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if isinstance(code, types.CodeType):
        stack = [code]
        while stack:
            c = stack.pop()
            found.setdefault(c, label)
            stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    elif callable(target):  # a builtin (C) function: recognised by identity when it is called
        found.setdefault(target, label)


@contextlib.contextmanager
def forbid_calls(*targets: Any, reason: str = "a graded answer must be your own code"):
    """Within the block, running the code of any target raises :class:`CheckFailed`, however the
    code was reached: the original name, an alias (``from m import f as g``), a reference saved
    before the block, a subclass, an instance made earlier. A target is a function, a class
    (every function in its body) or a module (every function and class defined in it).

    It watches what runs (a ``sys.setprofile`` hook on code objects), not names, so rebinding
    cannot get around it. A call is also remembered, and the block raises on exit if the student
    code caught the first error and carried on.
    """
    import sys

    codes: dict = {}
    for t in targets:
        _code_objects(t, codes, getattr(t, "__qualname__", getattr(t, "__name__", repr(t))))
    seen: list[str] = []
    previous = sys.getprofile()

    def _profile(frame, event, arg):
        if event == "call":
            label = codes.get(frame.f_code)
        elif event == "c_call":
            label = codes.get(arg) if _hashable(arg) else None
        else:
            label = None
        if previous is not None:
            previous(frame, event, arg)
        if label is not None:
            seen.append(label)
            raise CheckFailed(f"your code called {label}: {reason}")

    sys.setprofile(_profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    if seen:
        raise CheckFailed(f"your code called {seen[0]}: {reason}")


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


@contextlib.contextmanager
def substitute(namespace: dict, **objects: Any):
    """Within the block, ``namespace[name]`` is ``objects[name]``; afterwards every name is bound
    as before (or unbound again). A test cell runs a student's function with the reference
    versions of the earlier graded functions it calls (``substitute(globals(), pad_sentence=ref)``)
    so that a slip in an earlier exercise costs its own points only."""
    missing = object()
    saved = {name: namespace.get(name, missing) for name in objects}
    namespace.update(objects)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = old


@contextlib.contextmanager
def own_code(*torch_names: str, calls: tuple = (), reason: str = "a graded answer must be your own code"):
    """The rules of a graded answer, enforced by what runs. Within the block:

    * no torch function whose name contains one of ``torch_names`` runs, however it is reached
      (:func:`forbid_torch_functions`; e.g. ``own_code("softmax")`` blocks ``torch.softmax``,
      ``x.softmax``, ``F.softmax``, ``nn.Softmax``, ``x.log_softmax(d).exp()``, ``torch._softmax``,
      ``torch.special.softmax``), and a call to such a function straight from Python is noticed
      even with torch's function modes switched off (``torch._C.DisableTorchFunction``);
    * none of the code of ``calls`` runs (:func:`forbid_calls`: the course's reference held under
      any name).
    """
    import sys

    seen: list[str] = []
    previous = None

    def _profile(frame, event, arg):
        if previous is not None:
            previous(frame, event, arg)
        if event == "c_call" and any(s in getattr(arg, "__name__", "") for s in torch_names):
            owner = getattr(arg, "__self__", None)
            where = [getattr(arg, "__module__", None), type(owner).__module__,
                     getattr(owner, "__module__", None), getattr(owner, "__name__", None)]
            if any(isinstance(w, str) and w.startswith("torch") for w in where):
                seen.append(arg.__name__)
        elif event == "call" and frame.f_code.co_name == "__call__":  # torch.ops.aten.X.default(...)
            op = frame.f_locals.get("self")
            name = getattr(op, "__name__", "")
            if type(op).__module__ == "torch._ops" and isinstance(name, str) and any(s in name for s in torch_names):
                seen.append(name)

    with forbid_torch_functions(*torch_names, reason=reason), forbid_calls(*calls, reason=reason):
        previous = sys.getprofile()
        sys.setprofile(_profile if torch_names else previous)
        try:
            yield
        finally:
            sys.setprofile(previous)
    if seen:
        raise CheckFailed(f"your code called torch.{seen[0]}: {reason}")
