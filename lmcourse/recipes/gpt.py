"""Notebook 05's GPT on Shakespeare's characters: the profile's model sizes and nanoGPT's recipe
(AdamW with betas (0.9, 0.99) and weight decay 0.1, warm-up over 5 % of the steps, cosine to a tenth,
clipping at 1). ``lmcourse train gpt`` starts from the same recipe."""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import get_profile
from ..train import TrainConfig

NOTEBOOK = "05_gpt"   # the notebook whose master reads this recipe

__all__ = ["GPTRecipe", "recipe"]


@dataclass(frozen=True)
class GPTRecipe:
    profile: str  # "tiny" | "cpu" | "gpu"
    steps: int  # optimisation steps
    lr: float  # peak learning rate
    n_layer: int  # blocks
    n_head: int  # attention heads per block
    n_embd: int  # width of the residual stream
    block_size: int  # characters of context (the model's and the batches')
    dropout: float  # after the embeddings and in the blocks
    sample_chars: int  # characters the notebook samples after each part of the run

    def model_sizes(self) -> dict:
        """The GPT config's fields but the vocabulary: ``GPTConfig(vocab_size=V, **R.model_sizes())``."""
        return dict(block_size=self.block_size, n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                    dropout=self.dropout)

    def train_config(self, **overrides) -> TrainConfig:
        """The run's settings, ``overrides`` (seed, device, checkpoint, ...) on top."""
        return TrainConfig.from_profile(get_profile(self.profile), **{
            "steps": self.steps, "block_size": self.block_size, "lr": self.lr, "betas": (0.9, 0.99),
            "weight_decay": 0.1, "warmup_steps": max(1, self.steps // 20), "min_lr_ratio": 0.1,
            "grad_clip": 1.0, **overrides})


def recipe(profile: str) -> GPTRecipe:
    p = get_profile(profile)
    gpu = p.name == "gpu"
    return GPTRecipe(
        profile=p.name,
        # on a CPU, two thirds of the profile's steps keep the notebook within a few minutes
        steps=p.train_steps * 2 // 3 if p.name == "cpu" else p.train_steps,
        # a high peak suits a small model trained briefly (bench/bench_gpt.py); the gpu profile's larger
        # model takes nanoGPT's 1e-3, and its dropout
        lr=1e-3 if gpu else 5e-3, dropout=0.2 if gpu else 0.0,
        n_layer=p.n_layer, n_head=p.n_head, n_embd=p.n_embd, block_size=p.block_size,
        sample_chars=40 if p.name == "tiny" else 120)
