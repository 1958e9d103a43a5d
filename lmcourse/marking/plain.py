"""Values as plain data: what a graded call returned, written in the kernel, read by the grader.

:func:`encode` runs in the student's kernel, on what the student's code returned. It reads values
by exact type only (containers through the builtins' own C methods, tensors through torch's), so
no method of the student's runs while a record is taken, and writes a JSON tree. Anything it does
not know — a student's class, a subclass of a builtin that could lie — becomes
:class:`NotPlain` with its type named: the grader scores it 0 and says why.

:func:`decode` runs wherever the verdict is made (the grader's process, or the kernel at home)
and rebuilds ordinary Python values, torch tensors included, from that tree.
"""

from __future__ import annotations

import base64
import sys
import time
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any

__all__ = ["NotPlain", "Raised", "decode", "encode", "raised"]

_type_name = type.__dict__["__name__"].__get__      # a metaclass cannot lie about it
_MAPPINGS = {dict: "dict", Counter: "Counter", OrderedDict: "OrderedDict", defaultdict: "defaultdict"}
_MAX_DEPTH = 40


@dataclass(frozen=True)
class NotPlain:
    """A value of a type that is not read: ``what`` names it ("a MyList (a subclass of list)")."""
    what: str


@dataclass(frozen=True)
class Raised:
    """The graded call raised: the exception's type name and message, nothing of the object."""
    ename: str
    message: str

    @property
    def unanswered(self) -> bool:
        """The notebook's stub (``raise NotImplementedError()``) is still in place."""
        return self.ename == "NotImplementedError"


def _describe(t: type) -> str:
    mro = type.__dict__["__mro__"].__get__(t)
    known = next((b for b in mro[1:] if b is not object and (
        b.__module__ in ("builtins", "collections", "numpy") or b.__module__.startswith("torch"))), None)
    name = _type_name(t)
    return f"a {name} (a subclass of {_type_name(known)})" if known is not None else f"a {name} object"


def encode(x: Any, depth: int = 0) -> Any:
    """``x`` as a JSON tree, read by exact type; see the module's docstring."""
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        return x if -2**53 < x < 2**53 else {"int": int.__repr__(x)}
    if t is float:
        return {"float": float.hex(x)}
    if depth > _MAX_DEPTH:
        return {"not_plain": "a structure nested too deeply"}
    if t is list or t is tuple:
        items = list.__iter__(x) if t is list else tuple.__iter__(x)
        return {"list" if t is list else "tuple": [encode(v, depth + 1) for v in items]}
    if t in _MAPPINGS:
        return {"map": _MAPPINGS[t], "items": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(x)]}
    if t is set or t is frozenset:
        items = set.__iter__(x) if t is set else frozenset.__iter__(x)
        return {"set": [encode(v, depth + 1) for v in items]}
    if t is bytes:
        return {"bytes": base64.b64encode(x).decode()}
    tensor = _encode_torch(x, t)
    if tensor is not None:
        return tensor
    np = sys.modules.get("numpy")
    if np is not None:
        if t is np.ndarray:
            return {"ndarray": {"dtype": str(x.dtype), "shape": list(x.shape),
                                "data": base64.b64encode(np.ascontiguousarray(x).tobytes()).decode()}}
        # by identity: `t in (...)` would ask a student's metaclass __eq__
        if any(t is s for s in (np.float64, np.float32, np.float16)):
            return {"float": float.hex(float(x.item()))}
        if any(t is s for s in (np.int64, np.int32, np.int16, np.int8, np.uint8)):
            return encode(int(x.item()), depth)
        if t is np.bool_:
            return bool(x.item())
    return {"not_plain": _describe(t)}


def _encode_torch(x: Any, t: type) -> dict | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if t is torch.dtype:
        return {"dtype": str(x)}
    if t is torch.device:
        return {"device": str(x)}
    if t is torch.Size:
        return {"size": [int(v) for v in tuple.__iter__(x)]}
    if t is not torch.Tensor and t is not torch.nn.Parameter:
        return None
    with torch._C.DisableTorchFunction():          # a student's torch function mode reads nothing here
        base = torch._C.TensorBase
        device = str(base.__dict__["device"].__get__(x))
        dtype = base.__dict__["dtype"].__get__(x)
        shape = [int(v) for v in base.size(x)]
        out = {"dtype": str(dtype), "shape": shape, "device": device,
               "requires_grad": bool(base.__dict__["requires_grad"].__get__(x))}
        if device == "meta":
            return {"tensor": out}
        values = base.contiguous(base.cpu(base.detach(x)))
        if dtype is torch.bfloat16:                   # numpy has no bfloat16: its bits, as int16
            values = base.view(values, torch.int16)
        out["data"] = base64.b64encode(base.numpy(values).tobytes()).decode()
        return {"tensor": out}


class TooSlow(ValueError):
    """A record that takes longer to read than the judge gives one (keys built to collide in a set or a dict
    make reading it quadratic)."""


# Distinct keys of one set or map that may share a hash: honest values share one now and then (hash(-1) ==
# hash(-2)); keys built to share one make every set and dict the judge builds from them quadratic.
_SHARED_HASH = 64


def _refuse_collisions(keys: list) -> None:
    """Refuse, in one pass and before any set or dict is built, keys built to share a hash."""
    counts = Counter(hash(k) for k in keys)
    if counts and max(counts.values()) > _SHARED_HASH:
        raise TooSlow("the record's keys were built to share one hash (a record no test writes)")


def decode(tree: Any, deadline: float | None = None) -> Any:
    """The Python value :func:`encode` wrote. Tensors come back on the CPU (a meta tensor stays on
    meta); a case that checks the device records ``out.device`` beside the values. ``deadline``: a
    ``time.monotonic()`` past which reading stops with :class:`TooSlow`."""
    if deadline is not None and time.monotonic() > deadline:
        raise TooSlow("the record took too long to read (keys that collide in a set or a dict?)")
    if tree is None or type(tree) in (bool, str):
        return tree
    if type(tree) is int:       # encode writes larger ones as text: a huge raw one is built to be slow
        if not -2**53 < tree < 2**53:
            raise ValueError("an integer out of the range the record writes as a number")
        return tree
    if type(tree) is list:      # never written by encode at the top of a value
        raise ValueError("a bare JSON list is not a record")
    if "map" in tree:
        kind = {"dict": dict, "Counter": Counter, "OrderedDict": OrderedDict, "defaultdict": dict}[tree["map"]]
        keys = [_key(decode(k, deadline)) for k, _ in tree["items"]]
        _refuse_collisions(keys)
        # Counter(pairs) would count the pairs
        return kind(dict(zip(keys, (decode(v, deadline) for _, v in tree["items"]))))
    (key, value), = tree.items()
    if key == "float":
        return float.fromhex(value)
    if key == "int":
        return int(value)
    if key == "list":
        return [decode(v, deadline) for v in value]
    if key == "tuple":
        return tuple(decode(v, deadline) for v in value)
    if key == "set":
        keys = [_key(decode(v, deadline)) for v in value]
        _refuse_collisions(keys)
        return set(keys)
    if key == "bytes":
        return base64.b64decode(value)
    if key == "not_plain":
        return NotPlain(value)
    if key == "raised":
        return Raised(value["ename"], value["message"])
    if key in ("dtype", "device", "size", "tensor"):
        return _decode_torch(key, value)
    if key == "ndarray":
        import numpy as np

        return np.frombuffer(base64.b64decode(value["data"]), dtype=value["dtype"]).reshape(value["shape"]).copy()
    raise ValueError(f"unknown record tag {key!r}")


def _key(v: Any) -> Any:
    return tuple(_key(x) for x in v) if type(v) is list else v


def _decode_torch(key: str, value: Any) -> Any:
    import torch

    if key == "dtype":
        return getattr(torch, value.removeprefix("torch."))
    if key == "device":
        return torch.device(value)
    if key == "size":
        return torch.Size(value)
    dtype = getattr(torch, value["dtype"].removeprefix("torch."))
    if "data" not in value:     # a meta tensor: shape, dtype and device only
        return torch.empty(value["shape"], dtype=dtype, device="meta")
    raw = bytearray(base64.b64decode(value["data"]))
    if dtype is torch.bfloat16:
        t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16) if raw else torch.empty(0, dtype=dtype)
    else:
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
    return t.reshape(value["shape"]).clone()


def raised(exc: BaseException) -> dict:
    """The record of a call that raised ``exc``: its type's name and message, read without its
    methods (a student's exception class cannot run code here)."""
    name = _type_name(type(exc))
    try:
        args = BaseException.__dict__["args"].__get__(exc)
        message = "; ".join(a if type(a) is str else f"<{_type_name(type(a))}>" for a in tuple.__iter__(args))
    except Exception:           # an exception whose args cannot be read still gets a record
        message = ""
    return {"raised": {"ename": name, "message": message[:2000]}}
