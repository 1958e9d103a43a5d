""":class:`CheckFailed`, the error a failed check shows in a notebook (the message first, then the
notebook's own lines that led to it), and comparison helpers whose failure messages teach.

The test cells' verdicts are not made here: an exercise's cases are judged by
:mod:`lmcourse.marking.judge`, at home in the kernel and by the grader outside it; the kernel shows
a failing case as a CheckFailed, and the graded call's refusals (:mod:`lmcourse.marking.refusals`)
raise one. The helpers below (``check_equal``, ``check_distribution``, ...) are for the course's
own probes and tests. A message should say *what* is wrong and *why it probably is*, e.g.

    check_distribution(dist, name="p(. | cows eat)",
                       hint="did you divide by the count of the context?")
    -> probabilities in p(. | cows eat) sum to 0.8333, not 1 — did you divide by the count ...

Every helper raises :class:`CheckFailed` (an ``AssertionError``). Values are read by exact type
into plain Python numbers, strings and containers first (:func:`_plain`: a subclass or an object
whose ``__eq__`` / ``__float__`` lies is never asked anything; a tensor subclass is refused; tensors
are read with torch's function modes off), so nothing a student wrote runs while a helper decides.
"""

from __future__ import annotations

import contextlib
import linecache
import math
import os
import sys
import sysconfig
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Mapping
from typing import Any

__all__ = ["CheckFailed", "call_checked", "check", "check_choice", "check_close", "check_dist_close",
           "check_distribution", "check_equal", "check_shape", "check_tensor_close", "check_type"]


class CheckFailed(AssertionError):
    """A check in a test cell failed; the message says what to look at."""

    def _render_traceback_(self) -> list[str]:
        """What IPython (JupyterLab, nbclient, nbgrader) shows for a failed check: the message
        first, then the lines of the notebook's own code that led to it, without this module's
        frames. It never raises (IPython would then print no error output) and decides nothing:
        the error output is there whatever it returns, and nbgrader scores by that output."""
        head = f"\x1b[31m{_type_name(type(self))}\x1b[0m"
        try:
            head += f": {BaseException.__str__(self)}"
            return [head, *_where(self.__traceback__), *_cause(self)]
        except BaseException:  # noqa: BLE001 (a broken environment: the message alone)
            return [head]


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LIBRARY = tuple({os.path.dirname(os.__file__) + os.sep, _HERE,        # the standard library, lmcourse,
                  *(sysconfig.get_paths()[k] + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib"))})
_getline = linecache.getline


def _where(tb) -> list[str]:
    """One line per frame of the notebook's own code (cells, the student's modules) in ``tb``,
    outermost first: ``Cell In[5], line 3: check_equal(...)``; library frames are left out."""
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    out = []
    while tb is not None:
        filename, lineno = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        tb = tb.tb_next
        if type(filename) is not str or filename.startswith(_LIBRARY) or filename.startswith("<frozen "):
            continue
        label = None
        name_of = getattr(getattr(ip, "compile", None), "format_code_name", None)   # IPython >= 8
        if name_of is not None:
            named = name_of(filename)
            label = f"{named[0]} {named[1]}" if named else None
        line = _getline(filename, lineno).strip()
        out.append(f"    {label or 'File ' + filename}, line {lineno}" + (f": {line}" if line else ""))
    return out


def _cause(exc: BaseException) -> list[str]:
    """The traceback of the error that :func:`call_checked` turned into this failure (where in
    the student's code it was raised), as IPython shows it."""
    cause = exc.__cause__
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if cause is None or getattr(ip, "InteractiveTB", None) is None:
        return []
    return ["", "The error came from here:",
            *ip.InteractiveTB.structured_traceback(type(cause), cause, cause.__traceback__)]


def _fail(msg: str, hint: str | None) -> None:
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    raise CheckFailed(msg + (f" — {hint}" if hint else ""))


_FMT_ITEMS = 8          # a container in a message shows its first items and how many there are


def _fmt(x: Any, depth: int = 0) -> str:
    t = type(x)
    if t is float:
        return f"{x:.6g}"
    if t is _Opaque:
        return f"<a {_type_name(type(x.obj))} object>"
    if (t is str or t is bytes) and len(x) > 80:
        return repr(x[:77]) + "…"
    if t is int and int.bit_length(x) > 256:     # repr of a huge int is long, or refused (over 4300 digits)
        return f"<an int of {int.bit_length(x)} bits>"
    if t in _PLAIN_TYPES:
        return repr(x)
    # plain containers (exact types, iterated through the builtins' own methods) show their items
    if depth < 3 and t in (list, tuple, set, frozenset, dict):
        if t is dict:
            items = [f"{_fmt(k, depth + 1)}: {_fmt(v, depth + 1)}" for k, v in list(dict.items(x))[:_FMT_ITEMS]]
            n = dict.__len__(x)
        else:
            seq = list(list.__iter__(x) if t is list else tuple.__iter__(x) if t is tuple else
                       set.__iter__(x) if t is set else frozenset.__iter__(x))
            items, n = [_fmt(v, depth + 1) for v in seq[:_FMT_ITEMS]], len(seq)
        more = f", … ({n} items)" if n > _FMT_ITEMS else ""
        body = ", ".join(items) + more
        if t is list:
            return f"[{body}]"
        if t is tuple:
            return f"({body}{',' if n == 1 else ''})"
        if t is dict:
            return "{" + body + "}"
        return ("{" + body + "}") if n else f"{_type_name(t)}()"
    torch = sys.modules.get("torch")
    if torch is not None and type(x) in (torch.dtype, torch.device):
        return repr(x)                # torch's own C repr: these types cannot be subclassed
    return f"<a {_type_name(type(x))} object>"      # never the student's own __repr__


_type_name = type.__dict__["__name__"].__get__      # a metaclass cannot lie about it


def _a(t: type) -> str:
    """A type's name with its article: "a list", "an int", "an ndarray"."""
    name = _type_name(t)
    return ("an " if name[:1].lower() in "aeio" or name.startswith("nd") else "a ") + name


class _Opaque:
    """A value of a type the helpers do not read (a student's class, a subclass that could lie):
    equal only to itself."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Opaque and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


_PLAIN_TYPES = (str, int, float, bool, type(None), bytes, complex)
_MAPPINGS = (dict, Counter, OrderedDict, defaultdict)


def _numpy_scalar(x: Any):
    np = sys.modules.get("numpy")
    if np is not None and type(x) in (np.float64, np.float32, np.float16, np.int64, np.int32,
                                      np.int16, np.int8, np.uint8, np.bool_):
        return x.item()          # numpy's C scalar types cannot be patched
    return None


def _plain(x: Any, depth: int = 0) -> Any:
    """``x`` as plain Python values, read by exact type (containers through their C methods),
    or an :class:`_Opaque` stand-in: no code of the student's runs here."""
    t = type(x)
    if t in _PLAIN_TYPES:
        return x
    if depth > 50:
        return _Opaque(x)
    if t is list or t is tuple:
        return t(_plain(v, depth + 1) for v in (list.__iter__(x) if t is list else tuple.__iter__(x)))
    if t in _MAPPINGS:
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in dict.items(x)}
    # a subclass of a builtin is read through the builtin's own C methods: its overrides
    # (__eq__, __iter__, __float__, ...) are never called
    mro = type.__dict__["__mro__"].__get__(t)
    if dict in mro:
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in dict.items(x)}
    if list in mro:
        return [_plain(v, depth + 1) for v in list.__iter__(x)]
    if tuple in mro:
        return tuple(_plain(v, depth + 1) for v in tuple.__iter__(x))
    if bool in mro:
        return bool(int.__index__(x))
    if str in mro:
        return str.__str__(x)
    if float in mro:
        return float.__float__(x)
    if int in mro:
        return int.__index__(x)
    if t is set or t is frozenset:
        return t(_plain(v, depth + 1) for v in (set.__iter__(x) if t is set else frozenset.__iter__(x)))
    torch = sys.modules.get("torch")
    if torch is not None and t is torch.Size:
        return tuple(_plain(v, depth + 1) for v in tuple.__iter__(x))
    if torch is not None and t is torch.dtype:
        return x                  # torch's dtypes are singletons: compared by identity
    if torch is not None and t is torch.device:
        return x                  # compared by torch's C __eq__ (the type cannot be subclassed)
    scalar = _numpy_scalar(x)
    if scalar is not None:
        return scalar
    return _Opaque(x)


def check(condition: bool, message: str) -> None:
    """Plain assertion with a teaching message (works under ``python -O`` too)."""
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    value = _plain(condition)
    if type(value) is _Opaque:
        torch = _tensor(condition)
        if torch is not None and torch._C.TensorBase.numel(condition) == 1:
            with _raw(torch):
                value = bool(torch._C.TensorBase.item(condition))
        else:       # an object of the student's decides nothing
            raise CheckFailed(message + f" (the condition is {_fmt(condition)}, not True or False)")
    if not value:
        raise CheckFailed(message)


def check_type(value: Any, types: type | tuple[type, ...], name: str, hint: str | None = None) -> None:
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    if not issubclass(type(value), types):       # the real type, not what __class__ claims
        want = _type_name(types) if isinstance(types, type) else " or ".join(_type_name(t) for t in types)
        _fail(f"{name} should be a {want}, but it is {_a(type(value))}", hint)


def check_choice(answer: Any, letters: str, name: str, correct: str | None = None) -> None:
    """A multiple-choice answer: one of ``letters`` (``"ABCD"``), in either case, spaces around it
    ignored; with ``correct`` (the hidden test) also that letter. The answer is read as the str it
    holds (never through a subclass's own ``strip``/``upper``/``__eq__``), and a wrong letter is
    never told the right one: feedback pages go to students who may still have an extension."""
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    quoted = [f'"{c}"' for c in letters]
    options = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    if not issubclass(type(answer), str):
        _fail(f"{name} should be a str, one letter ({options}), but it is of type {_type_name(type(answer))}",
              f'write {name} = "{letters[0]}" (with the quotes)')
    text = str.upper(str.strip(_plain(answer)))
    if len(text) != 1 or text not in letters:
        # "b)", "B.", "(c)", "answer: D": the one letter of the options it holds, in the fix
        held = {c for c in text if c in letters and c.isalpha()} if len(text) <= 20 else set()
        letter = held.pop() if len(held) == 1 else letters[0]
        _fail(f"{name} should be one letter, {options}; got {_fmt(_plain(answer))}",
              f'write just the letter in quotes, e.g. {name} = "{letter}"')
    if correct is not None and text != correct:
        _fail(f"{name} = {_fmt(text)} is not the right choice", "re-read the question and the section above it")


def check_equal(actual: Any, expected: Any, name: str, hint: str | None = None) -> None:
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    if type(actual) is not type(expected) and not (_is_number(actual) and _is_number(expected)):
        if not (issubclass(type(actual), dict) and issubclass(type(expected), dict)):
            if not (issubclass(type(actual), (list, tuple)) and issubclass(type(expected), (list, tuple))):
                _fail(f"{name} should be {_a(type(expected))} equal to {_fmt(_plain(expected))}, "
                      f"got {_a(type(actual))}: {_fmt(_plain(actual))}", hint)
    actual, expected = _plain(actual), _plain(expected)   # compared as plain values from here on
    if type(actual) in (list, tuple) and type(expected) in (list, tuple):
        actual_l, expected_l = list(actual), list(expected)
        if actual_l != expected_l:
            if len(actual_l) != len(expected_l):
                _fail(f"{name} has {len(actual_l)} items, expected {len(expected_l)}: "
                      f"got {_fmt(actual)}, expected {_fmt(expected)}", hint)
            i = next(i for i, (a, e) in enumerate(zip(actual_l, expected_l)) if a != e)
            _fail(f"{name} differs at position {i}: got {_fmt(actual_l[i])}, expected {_fmt(expected_l[i])} "
                  f"(whole value {_fmt(actual)})", hint)
        return
    if type(actual) is dict and type(expected) is dict:
        _same_keys(actual, expected, name, hint)
        for k in expected:
            if actual[k] != expected[k] or type(actual[k]) is _Opaque:
                _fail(f"{name}[{_fmt(k)}] is {_fmt(actual[k])}, expected {_fmt(expected[k])}", hint)
        return
    if actual != expected or (type(actual) is _Opaque and type(expected) is not _Opaque):
        _fail(f"{name} is {_fmt(actual)}, expected {_fmt(expected)}", hint)


def _is_number(x: Any) -> bool:
    t = type(x)
    if t is bool:
        return False
    if issubclass(t, (int, float)) and not issubclass(t, bool):
        return True        # read through int / float's own methods by _plain
    return _numpy_scalar(x) is not None and type(_numpy_scalar(x)) is not bool


def check_close(actual: Any, expected: float, name: str, rel: float = 1e-9, abs_: float = 1e-12,
                hint: str | None = None) -> None:
    """A single number, compared with an explicit tolerance; infinities must match exactly."""
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    if not _is_number(actual):
        torch = _tensor(actual)
        if torch is not None:       # a tensor where a float is wanted: its shape, and what to call
            with _raw(torch):
                shape, numel = tuple(torch._C.TensorBase.size(actual)), torch._C.TensorBase.numel(actual)
            if numel == 1:
                _fail(f"{name} should be a number (a Python float), got a one-element Tensor of shape "
                      f"{_fmt(shape)}: return its .item()", hint)
            _fail(f"{name} should be a number (a Python float), got a Tensor of shape {_fmt(shape)}", hint)
        _fail(f"{name} should be a number, got {_type_name(type(actual))}: {_fmt(_plain(actual))}", hint)
    if not _is_number(expected):
        _fail(f"{name}: the expected value is a {_type_name(type(expected))}, not a number", hint)
    a, e = float(_plain(actual)), float(_plain(expected))
    if math.isnan(a):
        _fail(f"{name} is nan, expected {_fmt(e)}", hint)
    if math.isinf(e) or math.isinf(a):
        if a != e:
            _fail(f"{name} is {_fmt(a)}, expected {_fmt(e)}", hint)
        return
    if not math.isclose(a, e, rel_tol=rel, abs_tol=abs_):
        _fail(f"{name} is {_fmt(a)}, expected {_fmt(e)} (off by {a - e:+.3g})", hint)


def _same_keys(actual: dict, expected: dict, name: str, hint: str | None) -> None:
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"is missing {len(missing)} key(s), e.g. {_fmt(missing[0])}")
        if extra:
            parts.append(f"has {len(extra)} unexpected key(s), e.g. {_fmt(extra[0])}")
        _fail(f"{name} " + " and ".join(parts), hint)


def _as_dict(value: Any, name: str, hint: str | None) -> dict:
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    if not issubclass(type(value), dict):
        _fail(f"{name} should be a dict, but it is {_a(type(value))}", hint)
    return _plain(value)


def check_distribution(dist: Mapping, name: str, tol: float = 1e-9, hint: str | None = None) -> None:
    """A dict of probabilities: non-negative, finite, summing to 1."""
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    dist = _as_dict(dist, name, None)
    if not dist:
        _fail(f"{name} is empty; a distribution needs at least one outcome", hint)
    for k, p in dist.items():
        if type(p) not in (int, float) or type(p) is bool or math.isnan(p) or p < 0:
            _fail(f"{name}[{_fmt(k)}] = {_fmt(p)} is not a probability", hint)
    total = math.fsum(float(p) for p in dist.values())
    if abs(total - 1.0) > tol:
        _fail(f"probabilities in {name} sum to {total:.4g}, not 1", hint)


def check_dist_close(actual: Mapping, expected: Mapping, name: str, tol: float = 1e-9,
                     hint: str | None = None) -> None:
    """Two distributions over the same outcomes, entry by entry."""
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    actual, expected = _as_dict(actual, name, None), _as_dict(expected, name, None)
    _same_keys(actual, expected, name, hint)
    for k, e in expected.items():
        check_close(actual[k], e, f"{name}[{_fmt(k)}]", rel=tol, abs_=tol, hint=hint)


# --- Tensors ----------------------------------------------------------------------------------
# The verdicts below are reached in plain Python on numbers read out of the tensors, so a
# notebook that rebinds torch.allclose cannot make them pass.


def _genuine_torch():
    """The imported torch, if it is torch: its ``TensorBase`` is a static C type, which nothing
    written in Python can imitate (a module put in ``sys.modules`` by a student is refused)."""
    torch = sys.modules.get("torch")
    if type(torch) is not type(sys):
        return None
    c = vars(torch).get("_C")
    base = vars(c).get("TensorBase") if type(c) is type(sys) else None
    if base is None or type(base).__flags__ & (1 << 9) or base.__flags__ & (1 << 9):  # HEAPTYPE
        return None
    return torch


def _tensor(x: Any):
    """torch if ``x`` is exactly a torch tensor (or parameter): a subclass could lie about its
    values. Values are then read by ``TensorBase``'s own C methods with torch's function and
    dispatch modes off."""
    torch = _genuine_torch()
    if torch is not None and type(x) in (torch.Tensor, torch.nn.Parameter) and \
            torch._C.TensorBase in type.__dict__["__mro__"].__get__(type(x)):
        return torch
    return None


@contextlib.contextmanager
def _raw(torch):
    with torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
        yield


def check_shape(actual: Any, expected: tuple, name: str, hint: str | None = None) -> None:
    """A tensor (a numpy array or a torch tensor, exactly) of exactly the expected shape."""
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    torch, np = _tensor(actual), sys.modules.get("numpy")
    if torch is not None:
        with _raw(torch):
            shape = tuple(torch._C.TensorBase.size(actual))
    elif np is not None and type(actual) is np.ndarray:
        shape = actual.shape
    else:
        _fail(f"{name} should be a tensor of shape {tuple(expected)}, but it is {_a(type(actual))}", hint)
    shape, want = _plain(tuple(shape)), _plain(tuple(expected))
    if shape != want:
        _fail(f"{name} has shape {shape}, expected {want}", hint)


def check_tensor_close(actual: Any, expected: Any, name: str, atol: float = 1e-8, rtol: float = 1e-5,
                       hint: str | None = None) -> None:
    """Same shape, and ``|actual - expected| <= atol + rtol * |expected|`` entry by entry.

    On failure the message gives the worst entry (its index, both values), and says so when
    the values are nan or the shapes differ.
    """
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    import torch

    if _tensor(actual) is None:
        _fail(f"{name} should be a torch.Tensor, but it is {_a(type(actual))}", hint)
    if _tensor(expected) is None:
        expected = torch.as_tensor(_plain(expected) if type(expected) in (list, tuple) else expected)
        if _tensor(expected) is None:
            _fail(f"{name}: the expected value is a {_type_name(type(expected))}, not a tensor", hint)
    base = torch._C.TensorBase
    with _raw(torch):      # values read by torch itself, no mode in between
        shape_e = tuple(base.size(expected))
        check_shape(actual, shape_e, name, hint)
        if base.numel(actual) == 0:
            return
        a = _plain(base.tolist(base.reshape(base.to(base.detach(actual), "cpu", torch.float64), (-1,))))
        e = _plain(base.tolist(base.reshape(base.to(base.detach(expected), "cpu", torch.float64), (-1,))))
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
    __tracebackhide__ = True  # IPython leaves this frame out of a failing check's traceback
    label = name or f"{getattr(fn, '__name__', 'the function')}(...)"
    try:
        return fn(*args, **kwargs)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as exc:
        raise CheckFailed(f"{label} raised {type(exc).__name__}: {exc}" + (f" — {hint}" if hint else "")) from exc
