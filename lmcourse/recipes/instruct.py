"""Notebook 12's runs: the backbone (05's GPT, trained here as notebook 11 does when 05's checkpoint is not in the
course cache), the instruction data and the fine-tuning runs, and the memorisation experiment's GPTs (trained
on a slice of the training plays with and without planted duplicates)."""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import get_profile
from ..train import TrainConfig
from . import gpt

NOTEBOOK = "12_instruct"   # the notebook whose master reads this recipe

__all__ = ["InstructRecipe", "recipe"]


@dataclass(frozen=True)
class InstructRecipe:
    profile: str  # "tiny" | "cpu" | "gpu"
    backbone_steps: int  # steps of the GPT trained here when 05's checkpoint is missing
    n_dates: int  # ISO-date instructions in the fine-tuning data
    n_lines: int  # continue-a-line instructions in the fine-tuning data
    n_test: int  # held-out instructions of each kind
    n_impossible: int  # requests for dates that do not exist
    prompt_chars: int  # characters of a line given in a continue-a-line instruction
    answer_chars: int  # characters the model must continue it with
    max_new_tokens: int  # the response budget of greedy generation
    sft_steps: int  # fine-tuning steps (pretrained and from random initialisation alike)
    sft_lr: float  # peak learning rate of fine-tuning
    sft_batch_size: int  # instructions per fine-tuning step
    # the memorisation experiment: a GPT of these sizes trained on mem_chars characters of the training plays
    steps: int  # its training steps
    lr: float  # its peak learning rate
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    mem_chars: int  # characters of training text
    n_planted: int  # passages planted as duplicates
    copies: int  # extra copies of each planted passage
    n_passages: int  # training and held-out passages the extraction is measured on
    prefix: int  # p: characters of the prompt
    suffix: int  # s: characters that must come back exactly
    kgram: int  # k of the k-gram overlap
    sample_chars: int  # characters sampled to measure the k-gram overlap
    ngram_orders: tuple[int, ...]  # n of the character n-gram models

    def gpt_recipe(self) -> gpt.GPTRecipe:
        return gpt.recipe(self.profile)

    def model_sizes(self) -> dict:
        """The memorisation GPT's config fields but the vocabulary."""
        return dict(block_size=self.block_size, n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                    dropout=0.0)

    def train_config(self, **overrides) -> TrainConfig:
        """The memorisation GPT's run (05's recipe at these steps), ``overrides`` on top."""
        return TrainConfig.from_profile(get_profile(self.profile), **{
            "steps": self.steps, "block_size": self.block_size, "lr": self.lr, "betas": (0.9, 0.99),
            "weight_decay": 0.0, "warmup_steps": max(1, self.steps // 20), "min_lr_ratio": 0.1, "grad_clip": 1.0,
            "eval_interval": self.steps, **overrides})

    def sft_config(self, **overrides) -> TrainConfig:
        """A fine-tuning run: ``sft_steps`` of AdamW, a short warm-up, no validation."""
        return TrainConfig.from_profile(get_profile(self.profile), **{
            "steps": self.sft_steps, "batch_size": self.sft_batch_size, "lr": self.sft_lr, "betas": (0.9, 0.99),
            "weight_decay": 0.0, "warmup_steps": max(1, self.sft_steps // 20), "min_lr_ratio": 0.1, "grad_clip": 1.0,
            "eval_interval": self.sft_steps, "quiet": True, **overrides})


def recipe(profile: str) -> InstructRecipe:
    p = get_profile(profile)
    base = gpt.recipe(p.name)
    small = p.name == "tiny"
    return InstructRecipe(
        profile=p.name, backbone_steps=base.steps // 3 if p.name == "cpu" else base.steps,
        n_dates={"tiny": 200, "cpu": 3000, "gpu": 20000}[p.name],
        n_lines={"tiny": 200, "cpu": 3000, "gpu": 20000}[p.name],
        n_test={"tiny": 10, "cpu": 200, "gpu": 500}[p.name], n_impossible={"tiny": 5, "cpu": 100, "gpu": 200}[p.name],
        prompt_chars=8 if small else 16, answer_chars=6 if small else 12, max_new_tokens=12 if small else 16,
        sft_steps={"tiny": 10, "cpu": 600, "gpu": 3000}[p.name], sft_lr=1e-3 if p.name == "gpu" else 2e-3,
        sft_batch_size=8 if small else 32,
        # at cpu, many copies and few steps: the number of times a passage is seen, more than the steps, makes it
        # come back, and steps are what a laptop pays for
        steps={"tiny": 20, "cpu": 600, "gpu": 4000}[p.name], lr=1e-3 if p.name == "gpu" else 3e-3,
        n_layer=p.n_layer, n_head=p.n_head, n_embd=p.n_embd, block_size=p.block_size,
        mem_chars={"tiny": 20_000, "cpu": 150_000, "gpu": 1_000_000}[p.name],
        n_planted={"tiny": 4, "cpu": 40, "gpu": 100}[p.name], copies={"tiny": 4, "cpu": 60, "gpu": 20}[p.name],
        n_passages={"tiny": 8, "cpu": 200, "gpu": 500}[p.name],
        prefix=min(32, p.block_size // 2), suffix=min(32, p.block_size // 2),
        kgram=16 if small else 32, sample_chars={"tiny": 200, "cpu": 2000, "gpu": 5000}[p.name],
        ngram_orders=(3, 6) if small else (4, 8, 12))
