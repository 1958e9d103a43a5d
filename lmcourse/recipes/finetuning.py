"""Notebook 11's runs: the backbone (05's GPT, trained here with a third of 05's steps when 05's checkpoint is not
in the course cache), the tasks' sizes, and the fine-tuning runs of the learning curve."""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import get_profile
from . import gpt

NOTEBOOK = "11_finetuning"   # the notebook whose master reads this recipe

__all__ = ["FinetuneRecipe", "recipe"]


@dataclass(frozen=True)
class FinetuneRecipe:
    profile: str  # "tiny" | "cpu" | "gpu"
    backbone_steps: int  # steps of the GPT trained here when 05's checkpoint is missing
    per_play: int  # passages drawn from each play for the genre task
    max_eval: int  # test examples scored (zero-shot and fine-tuned)
    curve_sizes: tuple[int, ...]  # labelled examples of the learning curve
    steps: int  # fine-tuning steps of each run
    batch_size: int  # examples per fine-tuning step
    lr_head: float  # learning rate when only the head (or LoRA and the head) trains
    lr_full: float  # learning rate when blocks train too
    lora_r: int  # LoRA's rank
    lora_alpha: float  # LoRA's alpha (the update is scaled by alpha / r)

    def gpt_recipe(self) -> gpt.GPTRecipe:
        return gpt.recipe(self.profile)

    @property
    def n_embd(self) -> int:
        return self.gpt_recipe().n_embd

    def model_sizes(self) -> dict:
        """The backbone's sizes: 05's GPT at this profile."""
        return self.gpt_recipe().model_sizes()

    def train_config(self, **overrides):
        """The backbone's run when 05's checkpoint is missing: 05's recipe with ``backbone_steps`` steps."""
        return self.gpt_recipe().train_config(**{"steps": self.backbone_steps,
                                                 "warmup_steps": max(1, self.backbone_steps // 20), **overrides})


def recipe(profile: str) -> FinetuneRecipe:
    p = get_profile(profile)
    base = gpt.recipe(p.name)
    sizes = {"tiny": (16, 64), "cpu": (32, 128, 512), "gpu": (32, 128, 512, 2048)}[p.name]
    return FinetuneRecipe(
        profile=p.name, backbone_steps=base.steps // 3 if p.name == "cpu" else base.steps,
        per_play={"tiny": 10, "cpu": 60, "gpu": 120}[p.name], max_eval={"tiny": 48, "cpu": 600, "gpu": 2000}[p.name],
        curve_sizes=sizes, steps={"tiny": 8, "cpu": 150, "gpu": 400}[p.name], batch_size=16 if p.name == "tiny" else 32,
        lr_head=1e-2, lr_full=1e-3, lora_r=4, lora_alpha=8.0)
