"""Each notebook's reference code, one module per notebook, named after the notebook's topic
(``reference/gpt.py`` for ``05_gpt``).

A module's ``REFERENCE`` tuple names every course function or class that does one of the
notebook's exercises, whichever module it lives in (05's holds 07's generation loops and
``lmcourse.nn.mlm.init_mlm_weights`` too: another notebook's answer is a back door into this
one). The notebook's cases refuse it while the student's code runs (:mod:`lmcourse.marking`),
so a graded answer that runs any of it is refused.

This file stays in every graded kernel's package; the modules beside it are withheld from their
own notebook's kernel and later ones.
"""

from __future__ import annotations

import importlib

__all__ = ["GPT_WORK", "SEQ2SEQ_WORK", "nn_gpt_work", "nn_seq2seq_work"]

# what the given code (the GPT that 06, 07 and 10 are given, and its sampling loop) has that does
# notebook 05's work, by module and name. GPTConfig is left out on purpose: a dataclass's generated
# __repr__ shares its code with every other dataclass's, so refusing it would refuse printing any.
GPT_WORK = {"lmcourse.nn.gpt": ("GPT", "init_gpt_weights", "_init_gpt_weights", "gpt_param_count"),
            "lmcourse.nn.sampling": ("generate", "_generate")}
# what the given encoder-decoder has that does notebook 09's work
SEQ2SEQ_WORK = {"lmcourse.nn.seq2seq": (
    "padding_mask", "attention_mask", "_attend", "_merge", "MaskedSelfAttention", "CrossAttention", "EncoderBlock",
    "DecoderBlock", "EncoderDecoder", "init_seq2seq_weights", "greedy_decode", "_greedy_decode", "DecoderLM",
    "beam_decode", "exact_match")}


def _given(work: dict[str, tuple[str, ...]]) -> tuple:
    """What ``work`` names, from the modules a kernel has (a notebook that does that work itself
    withholds them while it is graded: nothing of them to refuse there)."""
    found = []
    for module, names in work.items():
        try:
            given = importlib.import_module(module)
        except ImportError:
            continue
        found.extend(getattr(given, name) for name in names)
    return tuple(found)


def nn_gpt_work() -> tuple:
    """What :data:`GPT_WORK` names, where the kernel has it."""
    return _given(GPT_WORK)


def nn_seq2seq_work() -> tuple:
    """What :data:`SEQ2SEQ_WORK` names, where the kernel has it."""
    return _given(SEQ2SEQ_WORK)
