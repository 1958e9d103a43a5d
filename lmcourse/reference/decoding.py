"""Notebook 07 (decoding): the reference answers of its exercises, in the notebook's signatures
(temperature, the top-k / top-p / epsilon filters, sampling and greedy choice, the generation loop,
beam search, the KV-cached forward pass and generation, the two questions' letters), and
``REFERENCE``, ``MODULES``, ``PACKAGES``: the code that does one of its exercises' work.

The grader computes expected values from these in its own process; the grading kernel of 07
cannot import this module (:mod:`lmcourse.marking`), and the stand-ins a later exercise's tests
use ("one mistake costs once": the reference ``sample_next`` in ``generate``, ``cached_forward``
in ``generate_cached``) are built from its source, so its imports are absolute.
:func:`generate_recompute` is what ``generate_cached`` is checked against: the same windows,
each recomputed by the model's full forward pass. Checked against transformers' logits
processors and beam search in the course's tests.

In the lectures' notation, a model scores every word ``w`` of the vocabulary after a prefix,
``s(w)`` (the logits), and ancestral sampling draws the next word from::

    p(x_i = w | x_1..x_{i-1}) = exp(s(w) / tau) / sum_w' exp(s(w') / tau)

Every filter takes logits ``(..., V)`` and returns logits of the same shape and dtype, with
``-inf`` where a word is removed, so filters compose (``top_p(top_k(temperature(s)))``), and none
ever removes every word: the most likely word is always kept.

No ``@torch.no_grad()`` decorators here: a decorator's wrapper shares one code object across every
function it decorates, so ``refusals.forbid_calls`` would forbid them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lmcourse.reference import nn_gpt_work
from lmcourse.runtime import same_device

__all__ = ["ANSWERS", "MODULES", "PACKAGES", "REFERENCE", "answer_q1", "answer_q2", "apply_temperature", "beam_search",
           "cached_forward", "epsilon_filter", "expected_top_p", "generate", "generate_cached", "generate_recompute",
           "gpt_forward_cached", "greedy_next", "sample_next", "top_k_filter", "top_p_filter"]

Filter = Callable[[Tensor], Tensor]


def apply_temperature(logits: Tensor, tau: float) -> Tensor:
    """``logits / tau``: tau < 1 sharpens the softmax, tau > 1 flattens it (tau > 0)."""
    if not tau > 0:
        raise ValueError(f"temperature tau={tau} must be positive")
    return logits / tau


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """Keep the ``k`` largest logits of each row (ties with the k-th kept too), ``-inf`` elsewhere."""
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    k = min(int(k), logits.size(-1))
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Keep the smallest set of most likely words whose probabilities sum to at least ``p``
    (nucleus sampling); the most likely word is always kept."""
    if not 0 < p <= 1:
        raise ValueError(f"p={p} must be in (0, 1]")
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (..., V)
    probs = torch.softmax(sorted_logits, dim=-1)
    before = torch.cumsum(probs, dim=-1) - probs  # mass of the words ranked above each word
    drop_sorted = before >= p  # the set already reached p without this word
    drop_sorted[..., 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def epsilon_filter(logits: Tensor, eps: float) -> Tensor:
    """Remove the words whose probability is below ``eps``; the most likely word is always kept."""
    probs = torch.softmax(logits, dim=-1)
    drop = probs < eps
    best = logits.argmax(dim=-1, keepdim=True)  # (..., 1)
    drop = drop.scatter(-1, best, False)
    return logits.masked_fill(drop, float("-inf"))


def sample_next(logits: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One id per row of ``logits`` ``(B, V)``, drawn from ``softmax(logits)`` with ``generator``: ``(B,)``."""
    probs = torch.softmax(logits, dim=-1)  # (B, V)
    if generator is not None and not same_device(generator.device, probs.device):
        # a generator draws only on its own device: the probabilities go there, the ids come back
        return torch.multinomial(probs.to(generator.device), 1, generator=generator).squeeze(-1).to(logits.device)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (B,)


def greedy_next(logits: Tensor) -> Tensor:
    """The most likely id of each row of ``logits`` ``(B, V)``: ``(B,)``."""
    return logits.argmax(dim=-1)


def _filtered(logits: Tensor, filters: Sequence[Filter]) -> Tensor:
    for f in filters:
        logits = f(logits)
    return logits


def generate(model: nn.Module, prompt: Tensor, max_new_tokens: int, filters: Sequence[Filter] = (),
             generator: torch.Generator | None = None) -> Tensor:
    """Ancestral sampling: ``prompt`` ``(B, T)`` followed by ``max_new_tokens`` ids, each drawn from
    the last position's logits after every filter in turn. The model sees the last ``block_size`` ids
    and is run on the whole window at every step (no cache). Returns ``(B, T + max_new_tokens)``."""
    with torch.no_grad():
        return _generate(model, prompt, max_new_tokens, filters, generator)


def _generate(model, prompt, max_new_tokens, filters, generator):
    block_size = model.config.block_size
    idx = prompt
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -block_size:])  # (B, T, V)
        nxt = sample_next(_filtered(logits[:, -1, :], filters), generator)  # (B,)
        idx = torch.cat([idx, nxt[:, None]], dim=1)
    return idx


def beam_search(model: nn.Module, prompt: Tensor, beam_size: int, max_new_tokens: int,
                length_penalty: float = 1.0, eos_id: int | None = None) -> list[tuple[Tensor, float]]:
    """Beam search from ``prompt`` (ids ``(T,)`` or ``(1, T)``).

    Keeps the ``beam_size`` best partial sequences by summed log-probability; at each step every
    live beam is extended by every word in one batched forward pass, and the ``beam_size`` best
    extensions are kept. An extension that ends in ``eos_id`` is finished: it leaves the beam (which
    narrows by one) and is never extended. After ``max_new_tokens`` steps the live beams are
    finished as they are. Finished hypotheses are ranked by ``score / n ** length_penalty``, ``n``
    the number of new ids (the eos included). Returns up to ``beam_size`` pairs
    ``(ids (T + n,), normalised score)``, best first.
    """
    with torch.no_grad():
        return _beam_search(model, prompt, beam_size, max_new_tokens, length_penalty, eos_id)


def _beam_search(model, prompt, beam_size, max_new_tokens, length_penalty, eos_id):
    if beam_size < 1:
        raise ValueError(f"beam_size={beam_size} must be at least 1")
    block_size = model.config.block_size
    beams = prompt.reshape(1, -1)  # (nb, T)
    scores = None  # (nb,) summed log-probabilities of the new ids
    finished: list[tuple[Tensor, float]] = []
    width = beam_size
    for step in range(max_new_tokens):
        logits, _ = model(beams[:, -block_size:])  # (nb, T, V): all beams in one batch
        logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)  # (nb, V)
        cand = logp if scores is None else scores[:, None] + logp  # (nb, V)
        V = cand.size(1)
        top, flat = torch.topk(cand.reshape(-1), min(width, cand.numel()))  # best extensions
        parent, word = flat // V, flat % V
        seqs = torch.cat([beams[parent], word[:, None].to(beams.dtype)], dim=1)  # (width, T + step + 1)
        n = step + 1
        if eos_id is not None:
            done = word == eos_id
            for s, sc in zip(seqs[done], top[done].tolist()):
                finished.append((s, sc / n ** length_penalty))
            width -= int(done.sum())
            seqs, top = seqs[~done], top[~done]
        beams, scores = seqs, top
        if width == 0:
            break
    else:
        n = max_new_tokens
        for s, sc in zip(beams, scores.tolist() if scores is not None else []):
            finished.append((s, sc / n ** length_penalty))
    if max_new_tokens == 0:
        return [(prompt.reshape(-1), 0.0)]
    finished.sort(key=lambda pair: -pair[1])
    return finished[:beam_size]


# --------------------------------------------------------------------------- the KV cache
def cached_forward(model: nn.Module, idx: Tensor, cache: list[tuple[Tensor, Tensor]] | None = None
                   ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
    """The reference GPT on new ids ``idx`` ``(B, T_new)`` that follow the positions whose keys and
    values are in ``cache`` (one ``(K, V)`` pair per block, each ``(B, n_head, T_past, hs)``; ``None``
    or ``[]`` when there is no past). Queries, keys and values are computed for the new positions
    only, at positions ``T_past .. T_past + T_new - 1``; each new query attends to every cached key
    and to the new keys up to its own position. Returns the logits ``(B, T_new, V)`` and the cache
    extended by the new keys and values (``T_past + T_new <= block_size``)."""
    with torch.no_grad():
        return _gpt_forward_cached(model, idx, cache)


gpt_forward_cached = cached_forward     # its name before notebook 07 named it


def _gpt_forward_cached(model, idx, cache):
    B, T = idx.shape
    past = cache[0][0].size(2) if cache else 0
    if past + T > model.config.block_size:
        raise ValueError(f"{past} cached + {T} new positions exceed block_size {model.config.block_size}")
    pos = torch.arange(past, past + T, device=idx.device)  # (T,): the new positions
    x = model.drop(model.wte(idx) + model.wpe(pos))  # (B, T, C)
    C = x.size(-1)
    new_cache = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        nh = attn.n_head
        q, k, v = attn.c_attn(block.ln1(x)).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, nh, C // nh).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, nh, C // nh).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, nh, C // nh).transpose(1, 2)  # (B, nh, T, hs)
        if past:
            k = torch.cat([cache[i][0], k], dim=2)  # (B, nh, past + T, hs)
            v = torch.cat([cache[i][1], v], dim=2)
        new_cache.append((k, v))
        if T == 1:
            mask = None  # the one new position may see everything before it
        else:  # query j (position past + j) sees keys 0 .. past + j
            mask = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril(diagonal=past)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + attn.resid_dropout(attn.c_proj(y))
        x = x + block.mlp(block.ln2(x))
    return model.lm_head(model.ln_f(x)), new_cache


def generate_cached(model: nn.Module, prompt: Tensor, max_new_tokens: int, filters: Sequence[Filter] = (),
                    generator: torch.Generator | None = None, return_logits: bool = False):
    """:func:`generate` with a KV cache: the window is run once, then each new id costs a forward
    pass over that id alone. The learned position vectors stop at ``block_size``, and every cached
    key depends on its absolute position, so when the cache is full it is rebuilt from the last
    ``block_size // 2`` ids (their positions restart at 0) and decoding goes on incrementally.
    With ``return_logits`` also returns the last-position logits of every step ``(B, n, V)``."""
    with torch.no_grad():
        return _generate_cached(model, prompt, max_new_tokens, filters, generator, return_logits)


def _generate_cached(model, prompt, max_new_tokens, filters, generator, return_logits):
    # cached_forward by its name: a test counts what it is fed
    block_size = model.config.block_size
    keep = max(1, block_size // 2)
    idx = prompt
    logits, cache = cached_forward(model, idx[:, -block_size:], None)
    steps = []
    for step in range(max_new_tokens):
        last = logits[:, -1, :]  # (B, V)
        steps.append(last)
        nxt = sample_next(_filtered(last, filters), generator)  # (B,)
        idx = torch.cat([idx, nxt[:, None]], dim=1)
        if step == max_new_tokens - 1:
            break
        if cache[0][0].size(2) == block_size:  # full: rebuild from the last `keep` ids
            logits, cache = cached_forward(model, idx[:, -keep:], None)
        else:
            logits, cache = cached_forward(model, nxt[:, None], cache)
    if return_logits:
        return idx, (torch.stack(steps, 1) if steps else logits[:, :0])
    return idx


def generate_recompute(model: nn.Module, prompt: Tensor, max_new_tokens: int, filters: Sequence[Filter] = (),
                       generator: torch.Generator | None = None, return_logits: bool = False):
    """The same windows as :func:`generate_cached` (so the same ids, given the same generator), each
    step recomputed from scratch by ``model(window)``: the baseline the cache is measured against."""
    with torch.no_grad():
        block_size = model.config.block_size
        keep = max(1, block_size // 2)
        idx = prompt
        start = max(0, idx.size(1) - block_size)
        steps = []
        for _ in range(max_new_tokens):
            if idx.size(1) - start > block_size:
                start = idx.size(1) - keep
            logits, _ = model(idx[:, start:])
            steps.append(logits[:, -1, :])
            nxt = sample_next(_filtered(logits[:, -1, :], filters), generator)
            idx = torch.cat([idx, nxt[:, None]], dim=1)
        if return_logits:
            return idx, (torch.stack(steps, 1) if steps else idx.new_zeros(idx.size(0), 0, 0).float())
        return idx


def expected_top_p(row: list[float], p: float) -> list[float]:
    """Plain Python: one row of logits after top-p filtering (the kept positions as they were,
    the others -inf); the old test cells' expected value, refused to an answer like the reference."""
    m = max(row)
    e = [math.exp(v - m) for v in row]
    probs = [v / sum(e) for v in e]
    order = sorted(range(len(row)), key=lambda i: -probs[i])
    kept, mass = [], 0.0
    for i in order:
        kept.append(i)
        mass += probs[i]
        if mass >= p:
            break
    return [row[i] if i in kept else float("-inf") for i in range(len(row))]


# ---------------------------------------------------------------- the questions
answer_q1 = "D"     # top-k keeps k words whatever the distribution's shape
answer_q2 = "A"     # one beam keeps the single best extension at each step: greedy


# 07's answers and what they run (lmcourse.decoding.REFERENCE, where this module is importable)
ANSWERS = (apply_temperature, top_k_filter, top_p_filter, epsilon_filter, sample_next, greedy_next, _filtered,
           generate, _generate, beam_search, _beam_search, cached_forward, _gpt_forward_cached,
           generate_cached, _generate_cached, generate_recompute)
# the decoding answers, 05's sampling loop (the same work) and the old cells' expected-value helper
REFERENCE = ANSWERS + tuple(f for f in nn_gpt_work() if "generate" in f.__name__) + (expected_top_p,)
# transformers' generation code does the same work: refused when imported, noticed when imported in a graded call
MODULES = ("transformers.generation.logits_process", "transformers.generation.utils")
PACKAGES = ("transformers",)
