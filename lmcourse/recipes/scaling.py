"""Notebook 10's sweep: the course's GPT (05's model) at several sizes, each trained at several compute
budgets on Shakespeare's characters, one run per (size, budget) with its own full cosine schedule.

A budget is training FLOPs ``C = 6 N D`` with ``N`` the non-embedding parameters (Kaplan's count), so a
run's tokens are ``D = C / (6 N)`` and its steps ``D / (batch_size * block_size)``. The recipe is the
rest of 05's (AdamW with betas (0.9, 0.99), weight decay 0.1, warm-up over 5 % of the steps, cosine to
a tenth, clipping at 1), one peak learning rate for every size.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import get_profile
from ..train import TrainConfig

NOTEBOOK = "10_scaling"   # the notebook whose master reads this recipe

__all__ = ["ScalingRecipe", "recipe"]


@dataclass(frozen=True)
class ScalingRecipe:
    profile: str  # "tiny" | "cpu" | "gpu"
    sizes: tuple[tuple[int, int], ...]  # (n_layer, n_embd) of each model swept, smallest first
    budgets: tuple[float, ...]  # training FLOPs C = 6 N D of each run, smallest first
    head_size: int  # channels per attention head: n_head = n_embd // head_size
    batch_size: int  # windows per step (B)
    block_size: int  # characters per window (T), the model's context too
    lr: float  # peak learning rate
    eval_batches: int  # validation batches averaged at the end of each run
    max_chars: int | None  # training characters used (None: all of the split)
    predict_factor: float  # the held-out run's budget, as a multiple of the largest budget swept

    def n_head(self, n_embd: int) -> int:
        return max(1, n_embd // self.head_size)

    @property
    def n_embd(self) -> int:
        """The largest model's width (what a reader of every recipe compares across profiles)."""
        return self.sizes[-1][1]

    def model_sizes(self) -> dict[str, int]:
        """The largest model swept, as GPTConfig's keywords (less the vocabulary)."""
        n_layer, n_embd = self.sizes[-1]
        return {"n_layer": n_layer, "n_embd": n_embd, "n_head": self.n_head(n_embd), "block_size": self.block_size}

    def steps_for(self, n_layer: int, n_embd: int, budget: float) -> int:
        """A run's steps: its tokens ``C / (6 N)`` (``N = 12 n_layer d^2``) in windows of ``B T``."""
        return max(1, round(budget / (6 * 12 * n_layer * n_embd ** 2) / (self.batch_size * self.block_size)))

    def train_config(self, steps: int | None = None, **overrides) -> TrainConfig:
        """One run's settings: ``steps`` sets the schedule (warm-up and cosine end with the run); by
        default the largest model's run at the largest budget."""
        steps = self.steps_for(*self.sizes[-1], self.budgets[-1]) if steps is None else steps
        return TrainConfig.from_profile(get_profile(self.profile), **{
            "steps": steps, "batch_size": self.batch_size, "block_size": self.block_size, "lr": self.lr,
            "betas": (0.9, 0.99), "weight_decay": 0.1, "warmup_steps": max(1, steps // 20), "min_lr_ratio": 0.1,
            "grad_clip": 1.0, "eval_interval": steps, "eval_batches": self.eval_batches, **overrides})


def recipe(profile: str) -> ScalingRecipe:
    p = get_profile(profile)
    if p.name == "tiny":  # seconds under the autograder: two sizes, two budgets, a slice of the text
        return ScalingRecipe(p.name, sizes=((1, 16), (1, 32)), budgets=(6e7, 2e8), head_size=16, batch_size=8,
                             block_size=32, lr=5e-3, eval_batches=2, max_chars=200_000, predict_factor=4.0)
    # cpu: a laptop core's few minutes; N from 3.3e3 to 1.5e5; each budget's best size is inside. Its held-out
    # budget (3x) is the one the shipped held-out runs were trained at, so a student's run compares with them.
    if p.name == "cpu":
        return ScalingRecipe(p.name, sizes=((1, 16), (1, 32), (2, 32), (2, 48), (3, 64)),
                             budgets=(1e11, 2e11, 4e11), head_size=16, batch_size=8, block_size=64, lr=5e-3,
                             eval_batches=40, max_chars=None, predict_factor=3.0)
    return ScalingRecipe(p.name, sizes=((2, 64), (3, 96), (4, 128), (6, 192), (8, 256), (8, 384)),
                         budgets=(1e13, 3e13, 1e14, 3e14), head_size=32, batch_size=64, block_size=256, lr=2e-3,
                         eval_batches=50, max_chars=None, predict_factor=4.0)
