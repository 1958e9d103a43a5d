"""Red team against grading from records (notebook 01): forged records, graded by `lmcourse grade`
and by plain `nbgrader autograde` with the course's config.

Every attempt hands in a wrong ``pad_sentence`` (the padding forgotten: its test is worth 1 point)
plus one trick meant to get that point back; the rest of the notebook is correct. Each attempt
must end at the baseline's score (the wrong notebook without a trick) or be flagged. They are graded
in 01's class (tests/classes.py): one ``lmcourse grade`` batch and one nbgrader run for all of them.

The trick that worked before this file: nbclient applies a display update (``update_display_data``,
or a display shown again with the same ``display_id``) to every earlier output with that id, in
any cell. A record given a display id while its own test ran could be rewritten by a later cell:
the test of ``count_ngrams`` brings the reference ``pad_sentence`` as a stand-in, and a
``count_ngrams`` that computes pad_sentence's cases with it rewrote pad_sentence's record (21/21,
unflagged, under both graders). Both runners now refuse a display update that writes or
overwrites a record (``lmcourse.grading.sandbox_runner.record_display_update``, used by the
runner and by ``lmcourse.marking.grader.RecordsStayPut``, the course config's Execute).
"""

from __future__ import annotations

import json
import textwrap

import nbformat
import pytest

from tests.classes import proofs_group
from tests.grading.test_forgery import WRONG
from tests.grading.test_grade import AUTO_MAX, ROOT, A, cell, perfect

pytestmark = [pytest.mark.slow]

MIME = "application/vnd.lmcourse.record+json"

# code run before any test (top of pad_sentence's cell): the names later tricks use
_PRELUDE = '''
import sys as _sys
_pub = get_ipython().display_pub
_orig = _pub.publish
_M = "application/vnd.lmcourse." + "record+json"      # split: the scan reads the whole text
'''

# inside count_ngrams's graded call, where pad_sentence is the reference stand-in: pad_sentence's
# cases computed with it, as the record its test would have written
_RECOMPUTE = '''
def _pad_record(ns):
    k, j = _sys.modules["lmcourse.marking.kernel"], _sys.modules["lmcourse.marking.judge"]
    spec = _sys.modules["lmcourse.marking.notebooks"].load("01_ngram")
    cases = spec.exercise("pad_sentence").cases + k.hidden_cases(spec, "pad_sentence")
    names = _sys.modules["lmcourse.marking.spec"].Names(dict(ns))
    return {"notebook": "01_ngram", "exercise": "pad_sentence", "cases": [j.observe(c.call, names) for c in cases]}
'''


def _code(*parts: str) -> str:
    return "\n".join(textwrap.dedent(p).strip() for p in parts) + "\n"


ATTEMPTS: dict[str, dict[str, str]] = {
    # the real record gets a display id; count_ngrams's call rewrites it with the stand-in's values
    "display_id_record_rewritten": {"before": _code(_PRELUDE, '''
        def _publish(data, metadata=None, **kw):
            if isinstance(data, dict) and _M in data and data[_M].get("exercise") == "pad_sentence":
                kw["transient"] = {"display_id": "pad"}
            return _orig(data, metadata, **kw)
        _pub.publish = _publish
    '''), "in_count_ngrams": _code(_RECOMPUTE, '''
        _orig({_M: _pad_record(globals()), "text/plain": "-"}, {}, transient={"display_id": "pad"}, update=True)
    ''')},
    # the real record is dropped and a plain-text placeholder with a display id left instead; the
    # later update turns the placeholder into a record
    "display_id_placeholder_becomes_record": {"before": _code(_PRELUDE, '''
        def _publish(data, metadata=None, **kw):
            if isinstance(data, dict) and _M in data and data[_M].get("exercise") == "pad_sentence":
                return _orig({"text/plain": "placeholder"}, {}, transient={"display_id": "pad"})
            return _orig(data, metadata, **kw)
        _pub.publish = _publish
    '''), "in_count_ngrams": _code(_RECOMPUTE, '''
        _orig({_M: _pad_record(globals()), "text/plain": "-"}, {}, transient={"display_id": "pad"}, update=True)
    ''')},
    # a second record in pad_sentence's own test cell (closed by construction: one record a cell)
    "extra_record_in_the_test_cell": {"before": _code(_PRELUDE, '''
        def _publish(data, metadata=None, **kw):
            if isinstance(data, dict) and _M in data and data[_M].get("exercise") == "pad_sentence":
                _orig({_M: dict(data[_M], cases=[]), "text/plain": "-"}, {})
            return _orig(data, metadata, **kw)
        _pub.publish = _publish
    ''')},
    # pad_sentence's record written early, in an answer cell (closed: only a test cell's outputs count)
    "record_in_an_answer_cell": {"before": _code(_PRELUDE, '''
        _orig({_M: {"notebook": "01_ngram", "exercise": "pad_sentence", "cases": []}, "text/plain": "-"}, {})
    ''')},
}

# the reference's file run without `exec` and without naming lmcourse/reference in one string: without
# bubblewrap (`--sandbox none`, plain nbgrader) the file is readable and each took 21/21 unflagged
# before the scan named runpy/marshal/zipimport/pkgutil and sys.path. Flagged under `lmcourse grade`
# now; plain nbgrader has no scan (this stays open there: a sandbox is the fix, not a pattern)
READ_ATTEMPTS = {
    "reference_dir_on_sys_path": "import os, sys, lmcourse\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(lmcourse.__file__), 'reference'))\n"
        "import ngram as _r\npad_sentence = _r.pad_sentence\n",
    "reference_run_by_runpy": "import os, runpy, lmcourse\n"
        "_r = runpy.run_path(os.path.join(os.path.dirname(lmcourse.__file__), 'reference', 'ngram.py'))\n"
        "pad_sentence = _r['pad_sentence']\n",
}

# records written into the notebook's JSON before grading (closed: both graders run every cell
# from cleared outputs)
JSON_ATTEMPTS = ("prefilled_record",)

# pad_sentence's test cell moved below count_ngrams's, whose stand-ins bring the reference
# pad_sentence into the kernel: kept by the wrong count_ngrams, bound by a cell before the moved
# test (21/21 unflagged under `lmcourse grade` before the judge required the course's order)
ORDER_ATTEMPTS = ("test_cell_moved_below_a_later_test",)


def _forged(name: str) -> nbformat.NotebookNode:
    nb = perfect()
    attempt = ATTEMPTS.get(name, {})
    cell(nb, "pad_sentence").source = textwrap.dedent(attempt.get("before", "")).strip() + "\n\n" + \
        WRONG["pad_sentence"]
    if "in_count_ngrams" in attempt:
        c = cell(nb, "count_ngrams")
        trick = textwrap.dedent(attempt["in_count_ngrams"]).strip().split("\n")
        defs = "\n".join(line for line in trick if not line.startswith("_orig("))
        call = "\n".join(line for line in trick if line.startswith("_orig("))
        head = "def count_ngrams(sentences, n):\n"
        assert head in c.source
        c.source = ("_done = []\n" + defs + "\n\n" + c.source.replace(
            head, head + "    if not _done:\n        _done.append(1)\n" + textwrap.indent(call, "        ") + "\n", 1))
    if name in ORDER_ATTEMPTS:
        c, head = cell(nb, "count_ngrams"), "def count_ngrams(sentences, n):\n"
        keep = "    _kept.setdefault('pad', globals()['pad_sentence'])\n"
        c.source = "_kept = {}\n" + c.source.replace(head, head + keep, 1)
        test = cell(nb, "pad_sentence_tests")
        nb.cells.remove(test)
        at = nb.cells.index(cell(nb, "count_ngrams_tests")) + 1
        nb.cells[at:at] = [nbformat.v4.new_code_cell("pad_sentence = _kept['pad']"), test]
    if name in READ_ATTEMPTS:
        cell(nb, "pad_sentence").source = READ_ATTEMPTS[name]
    if name == "prefilled_record":
        # the record an honest pad_sentence would write, in the submitted notebook's test cell
        import importlib

        from lmcourse.marking.judge import observe
        from lmcourse.marking.kernel import hidden_cases
        from lmcourse.marking.notebooks import load
        from lmcourse.marking.spec import Names

        spec = load(A)
        cases = spec.exercise("pad_sentence").cases + hidden_cases(spec, "pad_sentence")
        names = Names(vars(importlib.import_module(spec.reference)))
        record = {"notebook": A, "exercise": "pad_sentence", "cases": [observe(c.call, names) for c in cases]}
        cell(nb, "pad_sentence_tests").outputs = [nbformat.v4.new_output(
            "display_data", data={MIME: json.loads(json.dumps(record)), "text/plain": "-"})]
    return nb


STUDENTS = ["baseline", *ATTEMPTS, *JSON_ATTEMPTS, *ORDER_ATTEMPTS, *READ_ATTEMPTS]


def class_students(notebook: str) -> tuple[dict, dict]:
    """tests/classes.py: this file's students of ``notebook``, for both graders."""
    if notebook == A:
        students = {s: _forged(s) for s in STUDENTS}
    elif notebook in GIVEN_SAMPLERS:
        students = {"given_sampler": _given_sampler(notebook)}
    else:
        students = {}
    return students, students


@pytest.fixture(scope="module")
def graded(graded_class) -> dict[str, dict[str, float | str]]:
    """student -> {"grade": lmcourse grade's row, "nbgrader": plain nbgrader's score}."""
    cls = graded_class(A)
    return {s: {"grade": cls.rows[s], "nbgrader": cls.plain(s)} for s in STUDENTS}


@proofs_group(A)
def test_baseline_loses_the_point(graded):
    row, plain = graded["baseline"]["grade"], graded["baseline"]["nbgrader"]
    assert row["flags"] == "" and float(row["score"]) == AUTO_MAX - 1, row
    assert plain.failed_tests == ["pad_sentence_tests"], plain


@proofs_group(A)
@pytest.mark.parametrize("attempt", sorted(ATTEMPTS) + list(JSON_ATTEMPTS) + list(ORDER_ATTEMPTS))
def test_forged_record_gains_nothing(graded, attempt):
    """Flagged, or exactly the baseline's score: pad_sentence's point lost, nothing else (the trick's
    code ran without breaking count_ngrams)."""
    row, base = graded[attempt]["grade"], graded["baseline"]["grade"]
    flagged = "source-scan" in row["flags"].split(";")
    assert flagged or float(row["score"]) == float(base["score"]), (attempt, row)
    assert float(row["pad_sentence_tests"]) == 0, row
    plain = graded[attempt]["nbgrader"]
    assert "pad_sentence_tests" in plain.failed_tests, plain
    # a flagged trick may break more than its own cell (the display-id tricks run the test machinery in the
    # kernel, which now has no hidden module: count_ngrams' record holds that error); it never gains
    assert plain.failed_tests == ["pad_sentence_tests"] or (flagged and plain.score < float(base["score"])), plain


@proofs_group(A)
@pytest.mark.parametrize("attempt", sorted(READ_ATTEMPTS))
def test_reference_file_run_is_flagged(graded, attempt):
    """Without bubblewrap the copy scores (nothing in the kernel can tell it from the student's own
    code); the scan flags it for a person, in `lmcourse grade`'s flags and, under plain nbgrader with
    the course's config, as formgrader's flag on the submission."""
    row = graded[attempt]["grade"]
    assert "source-scan" in row["flags"].split(";"), row
    assert graded[attempt]["nbgrader"].flagged, graded[attempt]["nbgrader"]


@proofs_group(A)
def test_plain_nbgrader_flags_nothing_honest(graded):
    assert not graded["baseline"]["nbgrader"].flagged


@pytest.mark.parametrize("source", [
    "from sys import path\npath.insert(0, '/x')\nimport ngram\n",
    "import sys\nsys.path_hooks.append(lambda p: None)\n",
    "import marshal, types\ncode = marshal.loads(b'')\n",
    "import zipimport\n",
    "from pkgutil import get_data\n",
])
def test_scan_names_the_other_ways_to_run_a_file(source):
    from lmcourse.grading.scan import scan_source

    assert scan_source(source), source


# 07's generate from a copy of lmcourse.nn.sampling's loop (given beside the GPT 07 uses) in a new
# code object, past the rules' refusal of the original: it passes every case, in a graded kernel too
# (nothing in a kernel can tell the copy from the student's own code). The scan names how the copy is made.
CODE_COPY = '''
import types
import lmcourse.nn.sampling as G
_code = getattr(G._generate, "__co" + "de__").replace(co_filename="<cell>", co_firstlineno=1)
_loop = types.FunctionType(_code, vars(G))
'''


@pytest.mark.parametrize("source, wanted", [
    (CODE_COPY, "getattr with a computed or hidden name"),
    (CODE_COPY, "a code object rebuilt (co_ fields)"),
    (CODE_COPY, "FunctionType"),
    ("f = getattr(g, '__closure__')", "getattr with a computed or hidden name"),
    ("f = getattr(g, f'__{name}__')", "getattr with a computed or hidden name"),
])
def test_scan_names_a_code_copy(source, wanted):
    from lmcourse.grading.scan import scan_source

    assert wanted in scan_source(source), scan_source(source)


def test_scan_leaves_ordinary_getattr_alone():
    from lmcourse.grading.scan import scan_source

    assert scan_source("sizes = [getattr(r, count) for r in rows]\nw = getattr(m, 'weight')") == []


# The course's samplers of later notebooks answer an earlier notebook's sampling exercise through a
# model that wraps the test's: 02's sample with lmcourse.nn.sampling.generate over a model that gives
# forward_state's logits (18/18 under both graders, unflagged), 07's generate with 05's reference
# generate over a model that applies the filters (22/22; flagged by the scan under `lmcourse grade`,
# not under plain nbgrader). Both notebooks withhold those modules now: the exercise scores 0.
_WHOLE = '''
import types
import torch
from lmcourse.nn.sampling import generate as given_generate


class Whole(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
        self.config = types.SimpleNamespace(block_size=10**9)

    def forward(self, idx, targets=None):
        return self.m.forward_state(idx)[0], None


def sample(model, prompt_ids, n_new, generator, temperature=1.0):
    out = given_generate(Whole(model), torch.tensor([prompt_ids]), n_new, temperature, generator)
    return out[0, len(prompt_ids):].tolist()
'''
_FILTERED = '''
import torch
from lmcourse.reference.gpt import generate as course_generate


class Filtered(torch.nn.Module):
    def __init__(self, m, filters):
        super().__init__()
        self.m, self.filters, self.config = m, filters, m.config

    def forward(self, idx, targets=None):
        logits, _ = self.m(idx)
        last = logits[:, -1, :]
        for f in self.filters:
            last = f(last)
        return torch.cat([logits[:, :-1], last[:, None]], 1), None


def generate(model, prompt, max_new_tokens, filters=(), generator=None):
    return course_generate(Filtered(model, filters), prompt, max_new_tokens, 1.0, generator)
'''
GIVEN_SAMPLERS = {"02_rnn": ("sample", _WHOLE), "07_decoding": ("generate", _FILTERED)}


def _given_sampler(name: str) -> nbformat.NotebookNode:
    from lmcourse.authoring.course import perfect_submission

    exercise, source = GIVEN_SAMPLERS[name]
    nb = perfect_submission(nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4),
                            nbformat.read(ROOT / "autograder" / "source" / name / f"{name}.ipynb", as_version=4))
    next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == exercise).source = source
    return nb


@pytest.mark.parametrize("name", [pytest.param(n, marks=proofs_group(n)) for n in sorted(GIVEN_SAMPLERS)])
def test_a_later_notebooks_sampler_answers_nothing(graded_class, name):
    exercise = GIVEN_SAMPLERS[name][0]
    cls = graded_class(name)
    row = cls.rows["given_sampler"]
    assert float(row[f"{exercise}_tests"]) == 0, row
    assert cls.plain("given_sampler").failed_tests == [f"{exercise}_tests"]
