"""lmcourse.marking.standins: a stand-in's code, written into the hidden test that uses it
(tests/marking/test_hidden_source.py), never brings in an exercise graded at or after that one."""

import pytest

from lmcourse.marking.notebooks import load
from lmcourse.marking.spec import Exercise, Notebook
from lmcourse.marking.standins import load_standins, standin_source

NB = load("01_ngram")


def test_the_source_compiles_to_working_functions_apart_from_the_reference_module():
    fns = load_standins(standin_source(NB, "count_ngrams"), NB.exercise("count_ngrams"))
    assert fns["pad_sentence"](["a"], 3) == ["<s>", "<s>", "a", "</s>"]
    assert fns["pad_sentence"].__module__ != "lmcourse.reference.ngram"


def test_a_stand_in_of_a_later_exercise_is_refused():
    bad = Notebook("01_ngram", reference=NB.reference, hidden=NB.hidden,
                   exercises=(Exercise("pad_sentence", (), standins=("count_ngrams",)),
                              Exercise("count_ngrams", ())))
    with pytest.raises(ValueError, match="graded at or after it"):
        standin_source(bad, "pad_sentence")


def test_a_stand_in_brings_the_reference_functions_it_calls():
    nb = Notebook("01_ngram", reference=NB.reference, hidden=NB.hidden,
                  exercises=(Exercise("pad_sentence", ()), Exercise("count_ngrams", ()),
                             Exercise("later", (), standins=("count_ngrams",))))
    src = standin_source(nb, "later")
    assert "def count_ngrams" in src and "def pad_sentence" in src
