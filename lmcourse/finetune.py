"""Notebook 11's experiment code: labelled examples as padded batches, zero-shot label scores through a scoring
function, a small fine-tuning loop for a classifier, accuracy, and the learning curve's plot.

The scoring function, the classifier and what trains are the notebook's own answers, passed in: nothing here
does an exercise's work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["accuracy", "encode_examples", "fit_classifier", "label_logprobs", "plot_curves"]


def encode_examples(tok, texts: Sequence[str], device=None, pad_id: int = 0) -> tuple[Tensor, Tensor]:
    """``(idx, mask)``: the texts' ids right-padded with ``pad_id`` ``(N, T)``, and True where a real token is."""
    ids = [tok.encode(t) for t in texts]
    T = max(len(i) for i in ids)
    idx = torch.full((len(ids), T), pad_id, dtype=torch.long)
    mask = torch.zeros(len(ids), T, dtype=torch.bool)
    for row, i in enumerate(ids):
        idx[row, :len(i)] = torch.tensor(i)
        mask[row, :len(i)] = True
    return idx.to(device), mask.to(device)


def label_logprobs(score: Callable, model: nn.Module, tok, task, texts: Sequence[str], batch_size: int = 64) -> Tensor:
    """``(N, K)``: ``score(model, prompts, continuations)`` for every text and every label's verbaliser."""
    verbal = [tok.encode(v) for v in task.verbalisers]
    rows = []
    with torch.no_grad():
        for i in range(0, len(texts), batch_size):
            prompts = [tok.encode(task.prompt(t)) for t in texts[i:i + batch_size]]
            pairs = [(p, v) for p in prompts for v in verbal]
            out = score(model, [p for p, _ in pairs], [v for _, v in pairs])
            rows.append(out.detach().cpu().reshape(len(prompts), len(verbal)))
    return torch.cat(rows)


def accuracy(logits: Tensor, labels: Sequence[int]) -> float:
    return float((logits.argmax(-1).cpu() == torch.as_tensor(list(labels))).double().mean())


def fit_classifier(model: nn.Module, idx: Tensor, mask: Tensor, labels: Sequence[int], steps: int, lr: float,
                   batch_size: int, seed: int = 0) -> float:
    """AdamW on the parameters that require grad, cross-entropy on random batches; returns the wall time in
    seconds. The model ends in eval mode."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.as_tensor(list(labels), device=idx.device)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    model.train()
    start = time.perf_counter()
    for _ in range(steps):
        pick = torch.randint(len(y), (min(batch_size, len(y)),), generator=gen).to(idx.device)
        loss = F.cross_entropy(model(idx[pick], mask[pick]), y[pick])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    return time.perf_counter() - start


def predict(model: nn.Module, idx: Tensor, mask: Tensor, batch_size: int = 256) -> Tensor:
    with torch.no_grad():
        return torch.cat([model(idx[i:i + batch_size], mask[i:i + batch_size]).float().cpu()
                          for i in range(0, len(idx), batch_size)])


def plot_curves(curves: dict[str, list[tuple[int, float]]], baseline: float, title: str, ax=None):
    """Accuracy against the number of labelled examples, one line per setting, the majority class dashed."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(8, 4.5))[1]
    for label, points in curves.items():
        ax.plot([n for n, _ in points], [a for _, a in points], marker="o", label=label)
    ax.axhline(baseline, color="grey", linestyle="--", label=f"majority class ({baseline:.0%})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("labelled training examples")
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax
