"""Hidden cases that arrive with their own test cell (lmcourse.marking.hidden_source, grade_line): the
text the build writes into an exercise's hidden test gives the cases the grader judges with, and holds
nothing of another exercise; and no exercise is graded without hidden cases, nothing said."""

import ast
import importlib
import inspect
import json
import random
import sys

import pytest

from lmcourse.marking.grade_line import inline, strip
from lmcourse.marking.hidden_source import hidden_source, load_hidden, module_names, reached
from lmcourse.marking.judge import observe
from lmcourse.marking.kernel import MissingHiddenCases, hidden_cases
from lmcourse.marking.notebooks import TESTS, load
from lmcourse.marking.spec import Exercise, Names, Notebook

NB = load("01_ngram")


def _tree(spec: Notebook) -> ast.Module:
    return ast.parse(inspect.getsource(importlib.import_module(spec.hidden)))


def _table(tree: ast.Module) -> ast.Dict:
    (table,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "HIDDEN" for t in n.targets)]
    return table


def _entry(tree: ast.Module, name: str) -> ast.expr:
    table = _table(tree)
    return dict(zip((k.value for k in table.keys), table.values))[name]


def test_inline_writes_the_hidden_cases_and_the_stand_ins_and_strip_takes_them_away():
    cell = '# a comment\ntests.check("count_ngrams")\n### BEGIN HIDDEN TESTS\ntests.grade("count_ngrams")\n'
    done = inline(cell, NB)
    assert 'tests.grade("count_ngrams", standins=' in done and "def pad_sentence" in done
    assert ", hidden='" in done and "_SENTS = " in done
    assert strip(done) == cell
    alone = inline('tests.grade("pad_sentence")', NB)      # no stand-ins: its hidden cases only
    assert alone.startswith('tests.grade("pad_sentence", hidden=') and "standins=" not in alone
    assert strip(alone) == 'tests.grade("pad_sentence")'


def test_a_slice_holds_its_own_helpers_and_no_other_exercises():
    counts, pad = hidden_source(NB, "count_ngrams"), hidden_source(NB, "pad_sentence")
    assert "_SENTS" in counts and "_SKEW" not in counts and "_KN_CONTEXTS" not in counts
    assert "_SENTS" not in pad and "import random" not in pad
    generate = hidden_source(NB, "generate")
    assert "_FOUR_CHAIN" in generate and "_same_seed_twice" in generate and "import random" in generate
    assert "from lmcourse.marking.ngram import" in generate and "from ." not in generate   # made absolute


@pytest.mark.parametrize("name", sorted(TESTS))
def test_every_hidden_key_names_an_exercise_and_every_exercise_has_hidden_cases(name):
    spec = load(name)
    table = importlib.import_module(spec.hidden).HIDDEN
    exercises = [ex.name for ex in spec.exercises]
    assert not set(table) - set(exercises), f"{name}: HIDDEN keys that name no exercise: {set(table) - set(exercises)}"
    empty = [ex for ex in exercises if not table.get(ex)]
    assert not empty, f"{name}: exercises without hidden cases: {empty}"


@pytest.mark.parametrize("name", sorted(TESTS))
def test_each_slice_holds_its_exercise_alone(name):
    """No other exercise's HIDDEN key, and no module-level definition of the hidden module that the
    exercise's entry does not reach (another exercise's seeds, shapes, inputs, helpers)."""
    spec = load(name)
    tree = _tree(spec)
    defined = {n for n, nodes in module_names(tree).items()
               if not any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in nodes)}
    withheld = set(spec.withheld) | {m for m in TESTS.values()} - {TESTS[name]}
    for ex in spec.exercises:
        source = hidden_source(spec, ex.name)
        sliced = ast.parse(source)
        table = _table(sliced)
        assert [k.value for k in table.keys] == [ex.name], f"{name}, {ex.name}: {[k.value for k in table.keys]}"
        words = {n.id for n in ast.walk(sliced) if isinstance(n, ast.Name)} | {
            n.name for n in sliced.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        others = (defined - reached(tree, _entry(tree, ex.name))) & words
        assert not others, f"{name}, {ex.name}: the slice holds {sorted(others)}, which its cases do not reach"
        imported = {n.module for n in ast.walk(sliced) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(sliced) if isinstance(n, ast.Import) for a in n.names}
        bad = {m for m in imported if m in withheld or m.startswith("lmcourse.reference")}
        assert not bad, f"{name}, {ex.name}: the slice imports {bad}, which a graded kernel withholds"


@pytest.mark.parametrize("name", sorted(TESTS))
def test_each_slice_gives_the_cases_the_grader_judges_with(name):
    """Same count, same labels, and each case's call gives the same value on the reference, whether
    the case came from the hidden module (the grader's) or from the text in the test cell (the kernel's)."""
    spec = load(name)
    names = Names(vars(importlib.import_module(spec.reference)))
    for ex in spec.exercises:
        module_cases = hidden_cases(spec, ex.name)
        sliced = load_hidden(hidden_source(spec, ex.name), ex)
        assert [c.label for c in sliced] == [c.label for c in module_cases], f"{name}, {ex.name}"
        for mine, theirs in zip(sliced, module_cases):
            got, want = (_observed(c, names) for c in (mine, theirs))
            assert got == want, f"{name}, {ex.name}, {mine.label}: the slice's call gives another value"


def _observed(case, names) -> str:
    """The call's value as the record writes it, from one state of the global generators (a case may
    draw from them unseeded, where its comparison allows any draw)."""
    random.seed(0)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(0)
    return json.dumps(observe(case.call, names), sort_keys=True)


@pytest.mark.parametrize("name", sorted(TESTS))
def test_a_misspelt_hidden_key_fails_the_grading_of_every_exercise_loudly(name, monkeypatch):
    """The grader takes each exercise's hidden cases through hidden_cases: with one key of the notebook's
    HIDDEN misspelt, its exercise has none and the key names no exercise, and grading any exercise of
    the notebook raises (none is judged on its visible cases alone)."""
    spec = load(name)
    module = importlib.import_module(spec.hidden)
    first = spec.exercises[0].name
    table = {(k + "_typo" if k == first else k): v for k, v in module.HIDDEN.items()}
    monkeypatch.setattr(module, "HIDDEN", table)
    for ex in spec.exercises:
        with pytest.raises(MissingHiddenCases, match=rf"HIDDEN has cases for \['{first}_typo'\], which name no"):
            hidden_cases(spec, ex.name)


def test_missing_hidden_cases_fail_loudly():
    with pytest.raises(MissingHiddenCases, match="no cases for 'pad_sentense'"):
        hidden_cases(NB, "pad_sentense")
    gone = Notebook("01_ngram", reference=NB.reference, hidden="lmcourse.marking.no_such_hidden",
                    exercises=NB.exercises)
    with pytest.raises(MissingHiddenCases, match="do not import"):
        hidden_cases(gone, "pad_sentence")
    with pytest.raises(KeyError, match="no entry for 'pad_sentense'"):
        hidden_source(NB, "pad_sentense")
    with pytest.raises(LookupError, match="hold none for it"):
        load_hidden(hidden_source(NB, "count_ngrams"), Exercise("pad_sentence", ()))
