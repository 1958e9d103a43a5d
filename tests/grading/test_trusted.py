"""The grader judges with the package it started with (lmcourse.grading.trusted)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from lmcourse.grading import trusted


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A course module of this process loaded from a file of the test's own (the package is never touched)."""
    path = tmp_path / "probe.py"
    path.write_text("ANSWER = 1\n")
    spec = importlib.util.spec_from_file_location("lmcourse._trusted_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "lmcourse._trusted_probe", module)
    monkeypatch.setattr(trusted, "_LOADED", {})
    return path


def test_the_judges_modules_are_imported_before_any_kernel(probe):
    t = trusted.load("01_ngram")
    names = {name for name, _ in t.modules}
    assert {"lmcourse.marking.ngram", "lmcourse.marking.ngram_hidden", "lmcourse.reference.ngram"} <= names
    assert str(probe) in t.files
    trusted.check("01_ngram")           # nothing changed: no error


def test_a_changed_file_stops_the_judgement(probe):
    trusted.load("01_ngram")
    probe.write_text("ANSWER = 2  # written by a kernel\n")
    with pytest.raises(trusted.PackageChanged, match="changed while grading"):
        trusted.check("01_ngram")


def test_a_replaced_module_stops_the_judgement(probe, monkeypatch):
    trusted.load("01_ngram")
    monkeypatch.setitem(sys.modules, "lmcourse.reference.ngram", type(sys)("lmcourse.reference.ngram"))
    with pytest.raises(trusted.PackageChanged, match="lmcourse.reference.ngram"):
        trusted.check("01_ngram")
