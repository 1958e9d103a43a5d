"""Notebook 02's character RNN and LSTM on Shakespeare (Adam's default recipe with clipping at 0.5, the
profile's sizes); notebook 05's ladder trains both again the same way."""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import get_profile
from ..train import TrainConfig

NOTEBOOK = "02_rnn"   # the notebook whose master reads this recipe

__all__ = ["RNNRecipe", "recipe"]


@dataclass(frozen=True)
class RNNRecipe:
    profile: str  # "tiny" | "cpu" | "gpu"
    steps: int  # optimisation steps
    n_embd: int  # embedding width
    n_hidden: int  # width of the hidden state
    lr: float  # peak learning rate
    grad_clip: float  # set from the gradient norms these models have (notebook 02 plots them)
    eval_interval: int  # validations for 02's curves: 5x as often as the profile's, for the fast early drop

    def model_sizes(self) -> dict:
        """The models' sizes but the vocabulary: ``RNNLM(V, **R.model_sizes())``."""
        return dict(n_embd=self.n_embd, n_hidden=self.n_hidden)

    def train_config(self, **overrides) -> TrainConfig:
        """The run's settings, ``overrides`` (seed, quiet, ...) on top."""
        return TrainConfig.from_profile(get_profile(self.profile), **{
            "steps": self.steps, "lr": self.lr, "grad_clip": self.grad_clip, "eval_interval": self.eval_interval,
            **overrides})


def recipe(profile: str) -> RNNRecipe:
    p = get_profile(profile)
    return RNNRecipe(p.name, steps=p.train_steps, n_embd=p.n_embd, n_hidden=p.n_embd, lr=3e-3, grad_clip=0.5,
                     eval_interval=max(1, p.eval_interval // 5))
