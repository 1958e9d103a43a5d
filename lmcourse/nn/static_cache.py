"""A static (preallocated) KV cache for the course's GPT, and generation with it.

Notebook 07's cache (``cached_forward``) grows: each step concatenates one position to every block's
keys and values, so each step allocates, and the tensors' shapes change from step to step. Here the
keys and values of every block live in two tensors allocated once, ``(n_layer, B, n_head, block_size,
hs)``; a step writes its position in place and attends over all ``block_size`` slots, the ones not yet
written (or left from before a rebuild) masked out. Every step then has the same shapes and the same
memory, which is what lets the one-token step be captured once and replayed as a CUDA graph
(``torch.compile(mode="reduce-overhead")``): on a GPU, a small model's step is launch-bound, dozens of
tiny kernels each costing more to launch from Python than to run.

:class:`StaticDecoder` generates the same ids as :func:`lmcourse.reference.decoding.generate_cached`
(the same windows, the same rebuild when the cache is full, the same draws from the same generator);
``tests/test_static_cache.py`` holds it to that on the CPU, greedy and sampled. Masked slots add exact
zeros to the softmax, so the logits agree with the growing cache's to the rounding of a longer sum.

Withheld while notebooks 05 and 07 are graded (its forward is a GPT forward pass, and a KV cache).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

__all__ = ["StaticKVCache", "StaticDecoder", "static_forward", "generate_static"]

Filter = Callable[[Tensor], Tensor]


class StaticKVCache:
    """Every block's keys and values, ``(n_layer, B, n_head, block_size, hs)`` each, allocated once."""

    def __init__(self, model: nn.Module, batch_size: int, device: torch.device | str | None = None,
                 dtype: torch.dtype | None = None) -> None:
        c = model.config
        weight = model.wte.weight
        shape = (c.n_layer, batch_size, c.n_head, c.block_size, c.n_embd // c.n_head)
        self.keys = torch.zeros(shape, device=device or weight.device, dtype=dtype or weight.dtype)
        self.values = torch.zeros_like(self.keys)


def static_forward(model: nn.Module, idx: Tensor, start: Tensor, cache: StaticKVCache) -> Tensor:
    """Logits ``(B, T, V)`` of the ids ``idx`` ``(B, T)`` at positions ``start .. start + T - 1``
    (``start``: a long tensor of shape ``(1,)`` on the device, so that a captured step reads it rather
    than baking it in), their keys and values written into ``cache`` in place. Each new position attends
    to every slot up to its own: the cached ones and the new ones before it. No gradients are kept."""
    B, T = idx.shape
    with torch.no_grad():
        pos = start + torch.arange(T, device=idx.device)  # (T,)
        x = model.drop(model.wte(idx) + model.wpe(pos))  # (B, T, C)
        C = x.size(-1)
        slots = torch.arange(cache.keys.size(3), device=idx.device)  # (block_size,)
        hidden = slots[None, :] > pos[:, None]  # (T, block_size): later slots, and stale ones after a rebuild
        for i, block in enumerate(model.blocks):
            attn = block.attn
            nh = attn.n_head
            q, k, v = attn.c_attn(block.ln1(x)).split(C, dim=2)
            q = q.view(B, T, nh, C // nh).transpose(1, 2)  # (B, nh, T, hs)
            cache.keys[i].index_copy_(2, pos, k.view(B, T, nh, C // nh).transpose(1, 2))
            cache.values[i].index_copy_(2, pos, v.view(B, T, nh, C // nh).transpose(1, 2))
            att = q @ cache.keys[i].transpose(-2, -1) / math.sqrt(C // nh)  # (B, nh, T, block_size)
            att = torch.softmax(att.masked_fill(hidden, float("-inf")), dim=-1)
            y = (att @ cache.values[i]).transpose(1, 2).contiguous().view(B, T, C)
            x = x + attn.c_proj(y)
            x = x + block.mlp(block.ln2(x))
        return model.lm_head(model.ln_f(x))  # (B, T, V)


def _draw(logits: Tensor, generator: torch.Generator | None) -> Tensor:
    """One id per row from ``softmax(logits)``, as 07's ``sample_next`` draws it (the same generator
    calls, so the same ids)."""
    probs = torch.softmax(logits, dim=-1)
    if generator is not None and torch.device(generator.device).type != probs.device.type:
        return torch.multinomial(probs.to(generator.device), 1, generator=generator).squeeze(-1).to(logits.device)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (B,)


class StaticDecoder:
    """Generation with a :class:`StaticKVCache` for one model and batch size, the cache allocated once.

    ``compile_mode`` compiles the one-token step with ``torch.compile`` in that mode once, on the first
    call: ``"reduce-overhead"`` replays it as a CUDA graph (on a CUDA GPU; elsewhere it is the plain
    compile). ``""``: the step runs eagerly. The prompt's window and a rebuild run eagerly either way
    (their length varies; they are one step in ``block_size // 2``)."""

    def __init__(self, model: nn.Module, batch_size: int = 1, compile_mode: str = "") -> None:
        self.model, self.batch_size, self.compile_mode = model, batch_size, compile_mode
        self.cache = StaticKVCache(model, batch_size)
        self.start = torch.zeros(1, dtype=torch.long, device=self.cache.keys.device)
        self.step = self._one_token
        if compile_mode:
            torch._dynamo.mark_static_address(self.cache.keys)  # written in place: one address for the graph
            torch._dynamo.mark_static_address(self.cache.values)
            self.step = torch.compile(self._one_token, mode=compile_mode, fullgraph=True)

    def _one_token(self, ids: Tensor, start: Tensor) -> Tensor:
        return static_forward(self.model, ids, start, self.cache)[:, -1, :]  # (B, V)

    def generate(self, prompt: Tensor, max_new_tokens: int, filters: Sequence[Filter] = (),
                 generator: torch.Generator | None = None) -> Tensor:
        """``prompt`` ``(B, T)`` followed by ``max_new_tokens`` ids: ``generate_cached``'s windows and draws."""
        if prompt.size(0) != self.batch_size:
            raise ValueError(f"this decoder's cache holds {self.batch_size} row(s); the prompt has {prompt.size(0)}")
        block_size = self.model.config.block_size
        keep = max(1, block_size // 2)
        graphs = self.compile_mode == "reduce-overhead"
        with torch.no_grad():
            idx = prompt
            window = idx[:, -block_size:]
            self.start.zero_()
            logits = static_forward(self.model, window, self.start, self.cache)[:, -1, :]
            filled = window.size(1)
            for step in range(max_new_tokens):
                last = logits
                for f in filters:
                    last = f(last)
                nxt = _draw(last, generator)  # (B,)
                idx = torch.cat([idx, nxt[:, None]], dim=1)
                if step == max_new_tokens - 1:
                    break
                if filled == block_size:  # full: rebuild from the last `keep` ids, positions from 0
                    self.start.zero_()
                    logits = static_forward(self.model, idx[:, -keep:], self.start, self.cache)[:, -1, :]
                    filled = keep
                    continue
                self.start.fill_(filled)  # the new id's position, written on the device: no host sync
                if graphs:  # a new replay may reuse the last one's output memory, read by now
                    torch.compiler.cudagraph_mark_step_begin()
                logits = self.step(nxt[:, None], self.start)
                filled += 1
        return idx


def generate_static(model: nn.Module, prompt: Tensor, max_new_tokens: int, filters: Sequence[Filter] = (),
                    generator: torch.Generator | None = None, compile_mode: str = "") -> Tensor:
    """One generation with a fresh :class:`StaticDecoder` (build one and call it again to reuse its cache
    and its compiled step)."""
    return StaticDecoder(model, prompt.size(0), compile_mode).generate(prompt, max_new_tokens, filters, generator)
