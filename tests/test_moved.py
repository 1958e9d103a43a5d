"""Old homes of the notebooks' answers still answer, with a warning naming the new home."""

import importlib

import pytest

OLD_HOMES = {"lmcourse.ngram": ("pad_sentence", "lmcourse.reference.ngram"),
             "lmcourse.decoding": ("sample_next", "lmcourse.reference.decoding"),
             "lmcourse.nn.mlm": ("fill_mask", "lmcourse.reference.mlm")}


@pytest.mark.parametrize("old", sorted(OLD_HOMES))
def test_a_moved_name_is_read_through_with_a_deprecation_warning(old):
    name, new = OLD_HOMES[old]
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError, match=f"module '{old}' has no attribute 'no_such_name'"):
        _ = importlib.import_module(old).no_such_name


def test_reference_names_the_answers_or_nothing_where_they_are_withheld():
    import subprocess
    import sys

    assert importlib.import_module("lmcourse.decoding").REFERENCE
    code = ("from lmcourse.marking.kernel import withhold; from lmcourse.marking.notebooks import load; "
            "withhold(load('06_mlm')); import lmcourse.nn.mlm as m; print(repr(m.REFERENCE))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "()"
