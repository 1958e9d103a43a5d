"""Notebook 06's masked language model on Shakespeare's words (BERT's recipe at the course's size:
AdamW, weight decay 0.01, warm-up over 5 % of the steps, the lowest validation loss kept).
``lmcourse train mlm`` trains the same."""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import get_profile
from ..train import TrainConfig

NOTEBOOK = "06_mlm"   # the notebook whose master reads this recipe

__all__ = ["MLMRecipe", "recipe", "MASK_TOKEN"]

MASK_TOKEN = "[MASK]"


@dataclass(frozen=True)
class MLMRecipe:
    profile: str  # "tiny" | "cpu" | "gpu"
    vocab: int  # words kept in the vocabulary (the rest: <unk>)
    chars: int | None  # training characters used (None: all); validation gets a fifth as many
    block: int  # words per window
    steps: int  # optimisation steps
    batch_size: int  # windows per step
    n_embd: int  # model width
    n_layer: int  # blocks
    n_head: int  # attention heads
    evals: int  # validations in the run (every steps // evals steps)
    n_blanks: int  # validation blanks scored at the end
    lr: float  # peak learning rate
    dropout: float = 0.0  # after the embeddings and in the blocks

    def model_sizes(self, causal: bool = False) -> dict:
        """MLMConfig's fields but the vocabulary: ``MLMConfig(vocab_size=V, **R.model_sizes())``."""
        return dict(block_size=self.block, n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                    dropout=self.dropout, causal=causal)

    def train_config(self, **overrides) -> TrainConfig:
        """The run's settings, ``overrides`` (seed, device, checkpoint, ...) on top."""
        return TrainConfig.from_profile(get_profile(self.profile), **{
            "steps": self.steps, "batch_size": self.batch_size, "block_size": self.block, "lr": self.lr,
            "warmup_steps": max(1, self.steps // 20), "weight_decay": 0.01,
            "eval_interval": max(1, self.steps // self.evals), "keep_best": True, **overrides})


def recipe(profile: str) -> MLMRecipe:
    p = get_profile(profile)
    if p.name == "tiny":  # a slice of the text, for seconds under the autograder
        return MLMRecipe(p.name, vocab=600, chars=300_000, block=32, steps=p.train_steps, batch_size=p.batch_size,
                         n_embd=32, n_layer=1, n_head=2, evals=4, n_blanks=256, lr=3e-3)
    if p.name == "cpu":  # a laptop's few minutes: ends on the plateau (the notebook says why)
        return MLMRecipe(p.name, vocab=2000, chars=None, block=32, steps=800, batch_size=p.batch_size, n_embd=64,
                         n_layer=2, n_head=4, evals=4, n_blanks=2000, lr=3e-3)
    return MLMRecipe(p.name, vocab=8000, chars=None, block=128, steps=p.train_steps, batch_size=p.batch_size,
                     n_embd=256, n_layer=4, n_head=8, evals=20, n_blanks=4000, lr=1e-3)
