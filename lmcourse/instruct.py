"""Notebook 12's instruction data and experiment code: instructions made offline from the course's own material,
a GPT grown by the chat template's tokens, a supervised fine-tuning run through the course's training loop, and
the responses' evaluation.

Two kinds of instruction, each with a held-out split of instructions the fine-tuning never sees:

* **ISO dates** (notebook 09's generated task): ``"ISO: 3 Mar 1987"`` -> ``"1987-03-03"``; training and
  held-out instructions use disjoint dates (:func:`lmcourse.dates.split_dates`), so no held-out date was seen
  in any spelling;
* **continuing a line** of a training play: ``"Continue: But soft, what ligh"`` -> ``"t through yon"``; the
  held-out lines are not in the fine-tuning data, but the pretraining text holds them: only a pretrained model
  can know them.

The chat template, the labels and the generation are the notebook's own answers, passed in: nothing here does an
exercise's work.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

import torch
from torch import nn

from . import dates

__all__ = ["MONTHS", "continue_instructions", "date_instructions", "fit_sft", "fitting", "impossible_date_instructions",
           "is_iso_date", "respond", "with_chat_tokens"]

MONTHS = dates.MONTHS
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def date_instructions(split: str, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` pairs ``(instruction, response)`` from the dates of ``split`` ("train" or "test") of 09's task."""
    pairs = dates.make_pairs(dates.split_dates(seed)[split], n, seed=f"instruct-{seed}-{split}")
    return [(f"ISO: {source}", target) for source, target in pairs]


def continue_instructions(documents: dict[str, str], plays: Sequence[str], n_train: int, n_test: int,
                          prompt_chars: int, answer_chars: int, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Pairs ``("Continue: " + a line's first prompt_chars characters, its next answer_chars)`` from verse lines
    of ``plays``, each line used once: ``{"train": [...], "test": [...]}`` with no line in both."""
    lines = sorted({line.strip() for play in plays for line in documents[play].splitlines()
                    if len(line.strip()) >= prompt_chars + answer_chars and not line.strip().isupper()})
    random.Random(f"continue-{seed}").shuffle(lines)
    pairs = [(f"Continue: {t[:prompt_chars]}", t[prompt_chars:prompt_chars + answer_chars]) for t in lines]
    return {"train": pairs[:n_train], "test": pairs[n_train:n_train + n_test]}


def impossible_date_instructions(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` requests for dates that do not exist (30 or 31 February, 31 April, June, September or November,
    29 February of a year that is not a leap year), in spellings the date task uses: ``(instruction, why)``."""
    rng = random.Random(f"impossible-{seed}")
    out = []
    for _ in range(n):
        month, day = rng.choice([(2, 30), (2, 31), (4, 31), (6, 31), (9, 31), (11, 31), (2, 29)])
        year = rng.randrange(1950, 2050)
        while month == 2 and day == 29 and (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
            year = rng.randrange(1950, 2050)
        name = MONTHS[month - 1]
        spelled = rng.choice([f"{day} {name} {year}", f"{name} {day}, {year}", f"{day:02d}/{month:02d}/{year}",
                              f"{day} {name[:3]} {year}", f"{day:02d}.{month:02d}.{year}"])
        out.append((f"ISO: {spelled}", f"{name} has no day {day} in {year}"))
    return out


def fitting(chat, pairs: Sequence[tuple[str, str]], block_size: int) -> list[tuple[list[int], list[int]]]:
    """The pairs as ``(prompt_ids, response_ids)`` through the chat template, those whose prompt, response and end
    token fit a model of ``block_size`` (the inputs are one token shorter than the sequence)."""
    out = []
    for instruction, response in pairs:
        prompt, reply = chat.encode(chat.render(instruction)), chat.encode(response)
        if len(prompt) + len(reply) <= block_size:
            out.append((prompt, reply))
    return out


def is_iso_date(text: str) -> bool:
    """Whether ``text`` has the form of an ISO date, ``YYYY-MM-DD`` (a confident answer, right or not)."""
    return bool(_ISO.match(text.strip()))


def prefix_share(answer: str, reference: str) -> float:
    """The share of ``reference``'s characters that ``answer`` gets right from the start, up to its first
    mistake: a softer score than exact match, for a continuation that starts right and drifts."""
    n = 0
    for a, r in zip(answer, reference):
        if a != r:
            break
        n += 1
    return n / len(reference) if reference else float(answer == reference)


def with_chat_tokens(model: nn.Module, vocab_size: int) -> nn.Module:
    """A copy of the GPT ``model`` whose vocabulary grows to ``vocab_size``: the old rows of the (tied) token
    table kept, each new row the mean of the old ones (a neutral start for a token never seen)."""
    from .nn import GPT

    config = type(model.config)(**{**vars(model.config), "vocab_size": vocab_size})
    grown = GPT(config).to(next(model.parameters()).device)
    state = {k: v for k, v in model.state_dict().items()}
    old = state["wte.weight"]
    table = torch.cat([old, old.mean(0, keepdim=True).expand(vocab_size - old.shape[0], -1)])
    state["wte.weight"] = table
    if "lm_head.weight" in state:
        state["lm_head.weight"] = table
    grown.load_state_dict(state)
    return grown


def fit_sft(model: nn.Module, pairs: Sequence[tuple[list[int], list[int]]], make_batch: Callable, end_id: int,
            cfg, seed: int = 0):
    """Supervised fine-tuning through :func:`lmcourse.train.train`: each step a random batch of ``pairs``
    ``(prompt_ids, response_ids)`` made by ``make_batch(batch, end_id)`` (the notebook's ``sft_batch``), the
    loss the course's cross-entropy, which skips the ignore index. Returns the run's history."""
    from .train import train

    def batch_fn(data, batch_size, block_size, generator, device):
        pick = torch.randint(len(data), (batch_size,), generator=generator).tolist()
        idx, targets = make_batch([data[i] for i in pick], end_id)
        return idx.to(device), targets.to(device)

    torch.manual_seed(seed)
    return train(model, list(pairs), None, cfg, batch_fn=batch_fn)


def respond(generate: Callable, model: nn.Module, chat, instructions: Sequence[str], max_new_tokens: int) -> list[str]:
    """The model's greedy response to each instruction, through the notebook's ``generate_response``."""
    model.eval()
    out = []
    with torch.no_grad():
        for text in instructions:
            ids = generate(model, chat.encode(chat.render(text)), chat.end_id, max_new_tokens)
            out.append(chat.decode(ids))
    return out
