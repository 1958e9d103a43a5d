"""lmcourse.marking.plain: what a graded call returned, as plain data, read without its methods."""

import json
import math
from collections import Counter, OrderedDict, defaultdict

import numpy as np
import pytest
import torch

from lmcourse.marking.plain import NotPlain, Raised, decode, encode, raised


def roundtrip(x):
    return decode(json.loads(json.dumps(encode(x))))


@pytest.mark.parametrize("value", [
    None, True, 3, -2**70, 0.1, -0.0, math.inf, "text", b"\x00\xff",
    [1, [2, (3, "x")]], (1,), {"a": 1.5}, {("a", "b"): 2}, {1, 2}, frozenset({"x"}),
])
def test_builtin_values_come_back_equal_and_of_the_same_type(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value) or (type(value) is frozenset and back == set(value))


def test_nan_comes_back_as_nan():
    assert math.isnan(roundtrip(float("nan")))


def test_the_standard_mappings_are_read_and_counter_stays_a_counter():
    back = roundtrip(Counter({("a",): 2, ("b",): 1}))
    assert type(back) is Counter and back == Counter({("a",): 2, ("b",): 1})
    assert roundtrip(OrderedDict(b=1, a=2)) == {"b": 1, "a": 2}
    assert roundtrip(defaultdict(int, x=1)) == {"x": 1}


def test_tensors_come_back_with_values_dtype_and_shape():
    for t in [torch.arange(6, dtype=torch.float32).view(2, 3), torch.tensor([1, 2], dtype=torch.int64),
              torch.tensor([0.5, -1.25], dtype=torch.bfloat16), torch.zeros(0, 4)]:
        back = roundtrip(t)
        assert type(back) is torch.Tensor and back.dtype == t.dtype and back.shape == t.shape
        assert torch.equal(back, t)


def test_a_meta_tensor_keeps_its_device_shape_and_dtype():
    back = roundtrip(torch.empty(2, 3, device="meta", dtype=torch.float16))
    assert back.device.type == "meta" and back.shape == (2, 3) and back.dtype == torch.float16


def test_a_tensor_that_needs_grad_is_recorded_detached_with_the_flag():
    w = torch.ones(2, requires_grad=True)
    assert encode(w * 2)["tensor"]["requires_grad"] is True
    assert not roundtrip(w * 2).requires_grad     # a value to compare, not a graph


def test_torch_scalars_types_and_numpy():
    assert roundtrip(torch.float32) is torch.float32
    assert roundtrip(torch.device("meta")) == torch.device("meta")
    assert roundtrip(torch.Size([2, 3])) == torch.Size([2, 3])
    assert roundtrip(np.float64(0.25)) == 0.25 and roundtrip(np.int32(7)) == 7
    assert np.array_equal(roundtrip(np.arange(4.0).reshape(2, 2)), np.arange(4.0).reshape(2, 2))


class Liar(list):
    def __eq__(self, other):
        return True

    def __iter__(self):
        raise AssertionError("the student's __iter__ ran")


class SneakyTensor(torch.Tensor):
    pass


class Mine:
    pass


@pytest.mark.parametrize("value, named", [
    (Liar([1]), "Liar (a subclass of list)"), (Mine(), "Mine object"),
    (torch.ones(2).as_subclass(SneakyTensor), "SneakyTensor (a subclass of"),
    ([1, Liar()], "Liar"), ({"k": Mine()}, "Mine"),
])
def test_anything_else_is_not_plain_data_and_none_of_its_code_runs(value, named):
    tree = json.loads(json.dumps(encode(value)))
    found = [x for x in _walk(decode(tree)) if type(x) is NotPlain]
    assert found and named in found[0].what


def test_a_class_that_compares_equal_to_every_type_is_not_taken_for_one():
    class Meta(type):
        def __eq__(cls, other):
            return True

        __hash__ = type.__hash__

    class Counts(dict, metaclass=Meta):
        def item(self):
            raise AssertionError("a method of the value ran")

    assert "Counts (a subclass of dict)" in decode(encode(Counts())).what


def _walk(x):
    yield x
    if isinstance(x, (list, tuple, set)):
        for v in x:
            yield from _walk(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _walk(v)


def test_an_error_is_recorded_by_type_name_and_message_only():
    class Weird(ValueError):
        def __str__(self):
            raise AssertionError("the student's __str__ ran")

    got = decode(raised(Weird("bad input", 3)))
    assert got == Raised("Weird", "bad input; <int>")
    assert decode(raised(NotImplementedError())).unanswered


def test_a_record_with_an_unknown_tag_is_refused():
    with pytest.raises(ValueError, match="unknown record tag"):
        decode({"code": "print(1)"})


def test_a_record_that_reads_too_slowly_stops_at_the_deadline():
    """Keys built to collide (ints equal modulo 2**61 - 1 hash alike) make a set quadratic to read: the judge's
    deadline stops it with TooSlow, a ValueError (the record is then damaged, scored 0)."""
    import time

    from lmcourse.marking.plain import TooSlow, decode

    colliding = {"set": [{"int": str((2**61 - 1) * (i + 1))} for i in range(20_000)]}
    start = time.monotonic()
    with pytest.raises(TooSlow):
        decode(colliding, deadline=time.monotonic() + 0.2)
    assert time.monotonic() - start < 5
    assert decode({"set": [1, 2]}, deadline=time.monotonic() + 5) == {1, 2}


@pytest.mark.parametrize("kind", ["set", "dict", "OrderedDict"])
def test_keys_built_to_share_one_hash_are_refused_before_anything_is_built(kind):
    """Colliding keys are refused in one pass, whatever the deadline: an OrderedDict built from a dict of them
    re-inserts every key after the last deadline check, and the comparisons after reading would build sets of
    them again. A few keys that share a hash, as honest ones may, still read."""
    import time

    from lmcourse.marking.plain import TooSlow, decode

    keys = [{"int": str((2**61 - 1) * (i + 1))} for i in range(5_000)]
    tree = {"set": keys} if kind == "set" else {"map": kind, "items": [[k, 0] for k in keys]}
    start = time.monotonic()
    with pytest.raises(TooSlow, match="share one hash"):
        decode(tree)
    assert time.monotonic() - start < 2
    few = {"map": kind, "items": [[-1, "a"], [-2, "b"]]} if kind != "set" else {"set": [-1, -2]}
    assert len(decode(few)) == 2          # hash(-1) == hash(-2)


def test_a_raw_integer_the_record_never_writes_is_refused():
    from lmcourse.marking.plain import decode, encode

    assert decode(encode(2**60)) == 2**60          # written as text, read back
    with pytest.raises(ValueError, match="out of the range"):
        decode(2**60)
