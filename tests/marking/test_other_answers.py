"""A graded kernel has no other notebook's answers either, but those its own cells run (``uses``):
one notebook's answer can do part of another's work (05's sampler drives 02's RNN)."""

import subprocess
import sys

import pytest


def _graded(notebook: str, body: str) -> subprocess.CompletedProcess:
    code = ("from lmcourse.marking.kernel import Exam\n"
            "import os\n"
            "os.environ['NBGRADER_EXECUTION'] = 'autograde'\n"
            f"Exam({notebook!r}, {{}})\n" + body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize("notebook, other", [("02_rnn", "lmcourse.reference.gpt"),
                                             ("07_decoding", "lmcourse.reference.gpt"),
                                             ("03_attention", "lmcourse.reference.scaling"),
                                             ("10_scaling", "lmcourse.reference.ngram")])
def test_another_notebooks_answers_are_refused(notebook, other):
    done = _graded(notebook, f"import {other}\n")
    assert done.returncode != 0 and f"{other} is not available while notebook {notebook} is graded" in done.stderr, \
        done.stderr[-800:]


def test_the_answers_a_notebook_uses_stay():
    """05's ladder counts 01's n-grams (its own cell, not an exercise)."""
    done = _graded("05_gpt",
                   "from lmcourse.reference.ngram import kneser_ney_prob\nprint(kneser_ney_prob.__module__)\n")
    assert done.returncode == 0 and "lmcourse.reference.ngram" in done.stdout, done.stderr[-800:]
