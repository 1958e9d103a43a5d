"""A student's release holds no hidden case of any notebook graded from records."""

from lmcourse.authoring.release import release
from lmcourse.marking.notebooks import TESTS
from tests.conftest import ROOT


def test_the_release_leaves_out_every_hidden_case_module(tmp_path):
    release(ROOT, tmp_path / "course")
    marking = tmp_path / "course" / "lmcourse" / "marking"
    assert (marking / "kernel.py").is_file()            # the recording side ships (the notebooks need it)
    assert not list(marking.glob("*_hidden.py")), sorted(p.name for p in marking.glob("*_hidden.py"))
    for module in TESTS.values():
        assert (ROOT / (module.replace(".", "/") + "_hidden.py")).is_file()   # they exist: left out, not absent
