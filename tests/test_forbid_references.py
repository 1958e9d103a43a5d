"""`forbid_references`: a test cell's rules in one call (the references but its own stand-ins, the
modules of a library already imported, and a library imported inside the block)."""

import sys
import types

import pytest

from lmcourse.checks import CheckFailed
from lmcourse.marking.refusals import forbid_references


def _module(name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    exec("def ref(x):\n    return x + 1\ndef stand_in(x):\n    return x * 2\n", mod.__dict__)
    return mod


def test_references_are_refused_but_the_allowed_stand_ins():
    mod = _module("refs")
    with forbid_references(mod.ref, mod.stand_in, allowed=(mod.stand_in,), reason="yours, please"):
        assert mod.stand_in(3) == 6
    with pytest.raises(CheckFailed, match="your code called ref: yours, please"):
        with forbid_references(mod.ref, mod.stand_in, allowed=(mod.stand_in,), reason="yours, please"):
            mod.ref(1)
    # outside the block everything runs again
    assert mod.ref(1) == 2


def test_an_imported_module_is_refused_and_a_missing_one_is_skipped(monkeypatch):
    lib = _module("lib_for_test.generation")
    monkeypatch.setitem(sys.modules, "lib_for_test.generation", lib)
    with pytest.raises(CheckFailed, match="your code called"):
        with forbid_references(modules=("lib_for_test.generation", "not_imported.anywhere"), reason="r"):
            lib.ref(1)


def test_a_package_first_imported_inside_the_block_fails_on_exit(monkeypatch):
    monkeypatch.delitem(sys.modules, "pkg_for_test", raising=False)
    with pytest.raises(CheckFailed, match="your code imported pkg_for_test: no libraries"):
        with forbid_references(packages=("pkg_for_test",), reason="no libraries"):
            monkeypatch.setitem(sys.modules, "pkg_for_test", _module("pkg_for_test"))
    # imported before the block: nothing to say
    with forbid_references(packages=("pkg_for_test",), reason="no libraries"):
        pass


def test_a_packages_compiled_core_is_refused_however_it_was_built():
    """08 red team, finding E: tiktoken's Rust core (``tiktoken._tiktoken.CoreBPE``, imported at the top
    of the cell, its type claiming ``__module__ == "builtins"``) built before the block or inside it:
    its methods are the package's compiled code, refused like its Python code."""
    tk = pytest.importorskip("tiktoken._tiktoken")
    ranks = {b"a": 0, b"b": 1, b"ab": 2}
    before = tk.CoreBPE(ranks, {}, r"\w+")
    with pytest.raises(CheckFailed, match="your code called tiktoken's compiled CoreBPE.encode: mine"):
        with forbid_references(packages=("tiktoken",), reason="mine"):
            before.encode("ab", set())
    with pytest.raises(CheckFailed, match="tiktoken's compiled CoreBPE.encode_ordinary"):
        with forbid_references(packages=("tiktoken",)):
            tk.CoreBPE(ranks, {}, r"\w+").encode_ordinary("ab")
    with pytest.raises(CheckFailed, match="CoreBPE.encode_ordinary"):     # caught inside: fails on exit
        with forbid_references(packages=("tiktoken",)):
            try:
                before.encode_ordinary("ab")
            except CheckFailed:
                pass
    assert before.encode_ordinary("ab") == [2]              # outside the block it runs


def test_a_packages_own_types_count_not_what_it_imported(monkeypatch):
    """Only what the package defines: a builtin it re-exports (``str`` in its namespace) and a
    builtin method a Python class of the package inherits (``dict.keys``) are not its compiled code."""
    pkg = types.ModuleType("fakepkg")
    exec("class Out(dict):\n    pass\nText = str\n", pkg.__dict__)
    pkg.Out.__module__ = "fakepkg"
    monkeypatch.setitem(sys.modules, "fakepkg", pkg)
    out = pkg.Out(a=1)
    with forbid_references(packages=("fakepkg",)):
        assert list(out.keys()) == ["a"] and "ab".startswith("a") and {1: 2}.get(1) == 2
