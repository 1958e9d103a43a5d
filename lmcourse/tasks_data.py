"""Labelled tasks made from the course's corpus, for notebook 11 (using a language model).

Two tasks, each with a fixed split and its labels' *verbalisers* (the text a language model would write
for a label) and a *template* (how an example is put as a prompt):

* **who speaks next** in *Othello*, among its four main speakers: the text before a speaker's heading, the
  label the name in that heading. The pretraining text holds this task: every speech follows its speaker's
  name, so "\\n\\nIAGO." after a passage is exactly what a character-level GPT learns to predict. *Othello*
  is a training play: the model has read these very scenes, which is what prompting relies on.
* **which genre** a passage is from (comedy, tragedy, history: the First Folio's three sections; *Pericles*,
  which the Folio left out, with the comedies). No text says "this is a comedy", so the pretraining text
  does not hold the task. Train on passages of the training plays, evaluate on the six held-out plays (one
  per genre in val and one per genre in test), so the split is by play.

Examples are ``(text, label index)`` pairs; the split is drawn once with a seeded generator.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, replace

__all__ = ["GENRES", "LabelledTask", "genre_task", "speaker_task"]

# The First Folio's sections (Pericles, not in the Folio, with the comedies); the poems have no genre here.
GENRES = {
    **dict.fromkeys(("alls_well_that_ends_well", "as_you_like_it", "comedy_of_errors", "loves_labours_lost",
                     "measure_for_measure", "merchant_of_venice", "merry_wives_of_windsor", "midsummer_nights_dream",
                     "much_ado_about_nothing", "pericles", "taming_of_the_shrew", "tempest", "twelfth_night",
                     "two_gentlemen_of_verona", "winters_tale"), "comedy"),
    **dict.fromkeys(("antony_and_cleopatra", "coriolanus", "cymbeline", "hamlet", "julius_caesar", "lear", "macbeth",
                     "othello", "romeo_and_juliet", "timon_of_athens", "tragedy_of_titus_andronicus",
                     "troilus_and_cressida"), "tragedy"),
    **dict.fromkeys(("henry_iv_part_1", "henry_iv_part_2", "henry_v", "henry_vi_part_1", "henry_vi_part_2",
                     "henry_vi_part_3", "henry_viii", "john", "richard_ii", "richard_iii"), "history"),
}


@dataclass(frozen=True)
class LabelledTask:
    name: str
    labels: tuple[str, ...]            # the classes, in the order of their indices
    verbalisers: tuple[str, ...]       # what a language model writes for each label, after the prompt
    template: str                      # the prompt of an example: template.format(text=...)
    content_free: str                  # the text of the content-free input used for calibration
    train: tuple[tuple[str, int], ...]
    val: tuple[tuple[str, int], ...]
    test: tuple[tuple[str, int], ...]

    def limited(self, n_test: int) -> LabelledTask:
        """The same task with its first ``n_test`` test examples only (what an experiment scores)."""
        return replace(self, test=self.test[:n_test])

    def prompt(self, text: str) -> str:
        return self.template.format(text=text)

    def majority(self) -> tuple[str, float]:
        """The most frequent label of the training set and the test accuracy of always answering it."""
        top = Counter(y for _, y in self.train).most_common(1)[0][0]
        return self.labels[top], sum(y == top for _, y in self.test) / max(1, len(self.test))

    def describe(self) -> str:
        label, acc = self.majority()
        counts = Counter(y for _, y in self.train)
        shares = ", ".join(f"{self.labels[k]} {counts[k]}" for k in range(len(self.labels)))
        return (f"{self.name}: {len(self.train)} train / {len(self.val)} val / {len(self.test)} test examples "
                f"(train: {shares}); majority class '{label}': {acc:.1%} of the test set")


_HEADING = re.compile(r"\n\n([A-Z][A-Z .'-]+)\.\n")


def speaker_task(documents: dict[str, str], context_chars: int, play: str = "othello",
                 speakers: tuple[str, ...] = ("OTHELLO", "IAGO", "DESDEMONA", "CASSIO"), seed: int = 0,
                 fractions: tuple[float, float] = (0.6, 0.2)) -> LabelledTask:
    """Who speaks next: the ``context_chars`` characters before each heading of one of ``speakers`` in ``play``
    (ending with the blank line before it), labelled by the speaker; split 60 / 20 / 20 at random (``seed``)."""
    text = documents[play]
    examples = []
    for m in _HEADING.finditer(text):
        name = m.group(1)
        start = m.start() + 2                               # the heading's first character
        if name in speakers and start >= context_chars:
            examples.append((text[start - context_chars:start], speakers.index(name)))
    random.Random(seed).shuffle(examples)
    a = int(len(examples) * fractions[0])
    b = a + int(len(examples) * fractions[1])
    return LabelledTask("who speaks next", speakers, tuple(f"{s}." for s in speakers), "{text}", "\n\n",
                        tuple(examples[:a]), tuple(examples[a:b]), tuple(examples[b:]))


def _passages(text: str, n: int, chars: int, rng: random.Random) -> list[str]:
    """``n`` passages of ``chars`` characters, each starting at a line's start, drawn without repeats."""
    starts = [m.end() for m in re.finditer(r"\n", text[:len(text) - chars])]
    return [text[s:s + chars] for s in rng.sample(starts, min(n, len(starts)))]


def genre_task(documents: dict[str, str], splits: dict[str, list[str]], passage_chars: int, per_play: int,
               seed: int = 0) -> LabelledTask:
    """Which genre: ``per_play`` passages of ``passage_chars`` characters from every play with a genre; the
    train set from the corpus' training plays, val and test from its val and test plays."""
    labels = ("comedy", "tragedy", "history")
    rng = random.Random(seed)
    parts = {}
    for split in ("train", "val", "test"):
        rows = [(p, labels.index(GENRES[play])) for play in splits[split] if play in GENRES
                for p in _passages(documents[play], per_play, passage_chars, rng)]
        rng.shuffle(rows)
        parts[split] = tuple(rows)
    return LabelledTask("which genre", labels, ("comedy", "tragedy", "history"), "{text}\nGenre: ", "",
                        parts["train"], parts["val"], parts["test"])
