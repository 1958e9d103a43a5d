"""The sampling loop of notebook 05's GPT, given from notebook 06 on: ``generate`` draws each next
id from the model's distribution at the last position.

It has a module of its own, apart from the model (:mod:`lmcourse.nn.gpt`), because it answers
sampling exercises: 02's ``sample`` (through a model that wraps the RNN), 05's ``generate`` and
07's ``generate`` (through a model that filters the logits). Those notebooks' graded kernels
withhold this module, while 07 keeps the GPT it decodes from.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..runtime import same_device

__all__ = ["generate"]


def generate(model: nn.Module, idx: Tensor, max_new_tokens: int, temperature: float = 1.0,
             generator: torch.Generator | None = None) -> Tensor:
    """Append ``max_new_tokens`` sampled ids to ``idx`` ``(B, T)``: at each step the model sees
    the last ``block_size`` ids, and the next id is drawn from ``softmax(logits / temperature)``
    at the last position with ``generator``. Returns ``(B, T + max_new_tokens)``."""
    with torch.no_grad():
        return _generate(model, idx, max_new_tokens, temperature, generator)


def _generate(model: nn.Module, idx: Tensor, max_new_tokens: int, temperature: float,
              generator: torch.Generator | None) -> Tensor:
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be positive")
    block_size = model.config.block_size
    for _ in range(max_new_tokens):
        context = idx[:, -block_size:]  # (B, <= block_size)
        logits, _ = model(context)  # (B, T, V)
        probs = torch.softmax(logits[:, -1, :].float() / temperature, dim=-1)  # (B, V)
        if generator is not None and not same_device(generator.device, probs.device):
            # a generator draws only on its own device: the probabilities go there, the ids come back
            nxt = torch.multinomial(probs.to(generator.device), 1, generator=generator).to(idx.device)
        else:
            nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
        idx = torch.cat([idx, nxt], dim=1)
    return idx
