"""Which notebooks are graded from records, and where each one's tests live."""

from __future__ import annotations

import importlib
import importlib.util

from .spec import Notebook

__all__ = ["TESTS", "load", "marked"]

# notebook -> the module of its tests (visible cases; the hidden ones are in the module it names)
TESTS = {"01_ngram": "lmcourse.marking.ngram", "08_bpe": "lmcourse.marking.bpe"}
TESTS["09_encoder_decoder"] = "lmcourse.marking.encoder_decoder"
TESTS["03_attention"] = "lmcourse.marking.attention"
TESTS["02_rnn"] = "lmcourse.marking.rnn"
TESTS["04_block"] = "lmcourse.marking.block"
TESTS["07_decoding"] = "lmcourse.marking.decoding"
TESTS["05_gpt"] = "lmcourse.marking.gpt"
TESTS["06_mlm"] = "lmcourse.marking.mlm"
TESTS["10_scaling"] = "lmcourse.marking.scaling"


def marked(notebook: str) -> bool:
    """True when the notebook's test cells record and the grader judges (:mod:`lmcourse.marking`)."""
    return notebook in TESTS


def load(notebook: str) -> Notebook:
    if notebook not in TESTS:
        raise KeyError(f"notebook {notebook!r} is not graded from records (known: {', '.join(TESTS)})")
    spec = importlib.import_module(TESTS[notebook]).NOTEBOOK
    # its hidden cases too, where installed: imported with the visible ones, so a graded kernel holds
    # them before the guard's snapshot (lmcourse.grading.preamble), not from the first test cell on
    if importlib.util.find_spec(spec.hidden) is not None:
        importlib.import_module(spec.hidden)
    return spec
