"""Does each notebook's ``gpu`` profile fit a 16 GB T4, and how long would it train there? Estimated on a CPU.

    python bench/bench_gpu_fit.py              # 05, 06 and 09: every training run of their gpu profile
    python bench/bench_gpu_fit.py --util 0.25  # another assumed T4 utilisation

No T4 (no GPU at all) was at hand when this was written, so **every figure it prints about a T4 is an
estimate**, made this way:

* **Memory** (bytes, per training run of the notebook, at its gpu sizes). Counted exactly: parameters,
  AdamW's two moments (float32, like the parameters), and the parameters of the notebook's other
  models that stay on the GPU meanwhile (06 keeps all four). Measured on the CPU: the peak of the
  bytes held by tensors created during one forward and backward pass (activations, their gradients,
  the parameters' gradients, the logits), tracked by a ``TorchDispatchMode`` that adds every new
  tensor's storage and subtracts it when freed. It is measured at two small batches and extrapolated
  linearly to the gpu batch (every activation is proportional to the batch). Twice: in float32, and
  under CPU autocast in bfloat16 as a stand-in for the T4's fp16 autocast (same 2 bytes; CUDA's
  autocast lists of ops differ a little), plus autocast's 2-byte copy of the weights (for 05's RNN and
  LSTM, whose CPU kernel refuses bfloat16, half the float32 figure). The CPU runs
  attention through ``F.scaled_dot_product_attention`` like the T4 does, but a T4 picks its
  memory-efficient kernel, which saves no ``T x T`` matrix: the CPU's figure is not smaller than the
  T4's. The peak is then compared with what a T4 offers: 15 GiB visible (nvidia-smi's 15,360 MiB),
  less ~0.5 GiB for the CUDA context, with 20 % added to the tensors' peak for the caching allocator's
  fragmentation. The float32 figure is the one judged, so the verdict holds with ``--no-amp`` too.
* **Time**: floating-point operations of a training step counted by ``torch.utils.flop_counter``
  (every matrix product of the forward and backward pass, attention's included) at a small batch and
  scaled to the gpu batch, cross-checked against the usual count (Chowdhery et al. 2022, *PaLM*,
  appendix B: ``6 N + 12 L T d`` FLOPs per token, ``N`` the parameters in matrix products, ``L`` layers,
  ``T`` positions, ``d`` width); the ``T x T`` attention products make up the difference. Time =
  FLOPs / (65 TFLOP/s, the T4's fp16 tensor-core peak, x an assumed utilisation of 30 %, range 25-35 %
  for a model this small) + the kernels launched per step x 10 microseconds (assumed: eager PyTorch,
  one kernel per operation counted on the CPU; ``torch.compile`` launches fewer). Validation passes
  (forward only, a third of a step) are added; the notebooks' other work (counting n-grams, decoding,
  plots) is not. A real T4 may well be 2x off either way.
* The ladder of 05 trains notebook 02's RNN and LSTM at the gpu sizes; on a GPU cuDNN runs their 256
  time steps one after the other, so their time is latency-bound: counted as 256 x 3 (forward, and
  backward at twice its cost) x 20 microseconds a step (assumed) on top of the FLOP time, whose count
  is ``6 N`` per token (the CPU's fused LSTM kernel escapes the FLOP counter).
* A cross-check from outside: nanoGPT's README reports about 3 minutes on one A100 for its Shakespeare
  model, which is 05's gpu GPT (same sizes, batch and 5,000 steps; its config also evaluates 200
  batches of each split every 250 steps, a third of a step each): with the FLOPs counted here that is
  about 16 % of the A100's 312 TFLOP/s. A T4 at 16 % of its peak would need about 10 minutes for
  05's run instead of the 6 this script estimates at 30 %; ``--util 0.16`` prints that case.

A cross-check on this CPU: the measured time of one training step at the small batch, and the GFLOP/s
it implies, per run (the FLOP count is the work measure the estimate divides; similar GFLOP/s across
runs says it tracks the work). Prints a table; asserts nothing. ``tests/test_gpu_fit.py`` keeps the
memory verdict (fits, in float32) true as the profiles change.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time
import weakref
from collections.abc import Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode

from lmcourse import dates
from lmcourse.nn import GPT, GPTConfig, MLMConfig
from lmcourse.nn.seq2seq import EncoderDecoder, Seq2SeqConfig
from lmcourse.recipes import gpt, mlm, seq2seq
from lmcourse.reference.mlm import MaskedLM
from lmcourse.runtime import get_profile
from lmcourse.train import lm_cross_entropy, model_logits

GIB = 2 ** 30
T4_VISIBLE_GIB = 15.0  # a 16 GB T4 shows 15,360 MiB (nvidia-smi; Colab says "15.0 GB")
CUDA_CONTEXT_GIB = 0.5  # the CUDA context and cuBLAS/cuDNN workspaces
FRAGMENTATION = 1.2  # the caching allocator's blocks are larger than the tensors in them
T4_FP16_TFLOPS = 65.0  # NVIDIA T4 datasheet: mixed-precision (fp16) tensor cores
UTILISATION = 0.30  # assumed share of that peak a model this small reaches (25-35 %)
LAUNCH_S = 10e-6  # assumed host cost of one eager kernel launch
RNN_STEP_S = 20e-6  # assumed latency of one cuDNN recurrent time step


@dataclasses.dataclass
class Run:
    """One training run of a notebook's gpu profile."""

    notebook: str
    name: str
    build: Callable[[], nn.Module]  # the model, as the notebook builds it
    batch: Callable[[int, torch.Generator], tuple]  # (inputs, targets) of b windows
    loss: Callable  # loss_fn(logits, targets)
    batch_size: int  # the gpu profile's batch
    steps: int
    validations: int  # validation passes in the run
    eval_batches: int  # batches each
    resident_params: int = 0  # parameters of the notebook's other models on the GPU meanwhile
    recurrent_steps: int = 0  # RNN/LSTM: time steps run one after the other
    formula: Callable[[nn.Module], float] | None = None  # 6N + 12LTd FLOPs per window, where it applies


# --- sizes: the notebooks' recipes (lmcourse.recipes), read, not copied ------------------------------

def char_vocab_size() -> int:
    """05's vocabulary: the characters of the training plays (the corpus when cached, else an upper bound)."""
    try:
        from lmcourse.data import load_shakespeare

        return len(set(load_shakespeare(quiet=True).text("train"))) + 1
    except Exception:  # noqa: BLE001 (no corpus: the estimate barely depends on it)
        return 128


def lm_batch(vocab: int, block: int, masked: bool = False):
    def batch(b: int, g: torch.Generator):
        x = torch.randint(vocab, (b, block), generator=g)
        y = torch.randint(vocab, (b, block), generator=g)
        if masked:  # 15 % of positions carry a label, as mask_tokens leaves them
            y = torch.where(torch.rand(b, block, generator=g) < 0.15, y, torch.full_like(y, -100))
        return x, y
    return batch


def dates_batch(fn, block: int):
    """Batches of the longest pair only: a batch is padded to its longest row, so every batch size gets
    the same (worst-case) lengths and the measurements at two small batches extrapolate."""
    longest = max(dates.make_splits(2_000, 10, 10, seed=0)["train"], key=lambda pair: len(pair[0]) + len(pair[1]))
    return lambda b, g: fn([longest], b, block, g)


class RecurrentLM(nn.Module):
    """05's ladder model (notebook 02's): embedding -> nn.RNN or nn.LSTM -> output layer."""

    def __init__(self, kind: str, vocab: int, n_embd: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.rnn = (nn.LSTM if kind == "LSTM" else nn.RNN)(n_embd, n_embd, batch_first=True)
        self.lm_head = nn.Linear(n_embd, vocab)

    def forward(self, idx):
        return self.lm_head(self.rnn(self.wte(idx))[0])


def matmul_params(model: nn.Module, skip: tuple[str, ...] = ("wpe",)) -> int:
    """Parameters that take part in a matrix product: all but the position tables (a lookup); a tied
    embedding counts once, as the output layer."""
    return sum(p.numel() for n, p in model.named_parameters() if not n.startswith(skip))


def palm_flops(L: int, T: int, d: int):
    """Training FLOPs per window of T tokens: (6 N + 12 L T d) T (PaLM, appendix B)."""
    return lambda model: (6 * matmul_params(model) + 12 * L * T * d) * T


def runs() -> list[Run]:
    out = []
    V = char_vocab_size()
    r, c = gpt.recipe("gpu"), gpt.recipe("gpu").train_config()
    gpt05 = GPTConfig(vocab_size=V, **r.model_sizes())
    val05 = c.steps // c.eval_interval + 1
    gpt05_params = sum(q.numel() for q in GPT(gpt05).parameters())
    out.append(Run("05_gpt", "GPT", lambda: GPT(gpt05), lm_batch(V, c.block_size), lm_cross_entropy, c.batch_size,
                   c.steps, val05, c.eval_batches, formula=palm_flops(r.n_layer, c.block_size, r.n_embd)))
    p = get_profile("gpu")  # the ladder: notebook 02's RNN and LSTM at the profile's sizes
    for kind in ("RNN", "LSTM"):
        out.append(Run("05_gpt", f"ladder {kind}", lambda k=kind: RecurrentLM(k, V, p.n_embd),
                       lm_batch(V, p.block_size), lm_cross_entropy, p.batch_size, p.train_steps, val05,
                       p.eval_batches, resident_params=gpt05_params, recurrent_steps=p.block_size,
                       formula=lambda model: 6 * matmul_params(model) * p.block_size))

    r, c = mlm.recipe("gpu"), mlm.recipe("gpu").train_config()
    vocab06 = r.vocab + 8  # at most the vocabulary asked for, plus the specials
    evals06 = r.evals + 1
    for i, (name, causal) in enumerate((("masked LM", False), ("no masking", False), ("left-to-right", True),
                                        ("all [MASK]", False))):
        cfg06 = MLMConfig(vocab_size=vocab06, **r.model_sizes(causal=causal))
        n06 = sum(q.numel() for q in MaskedLM(cfg06).parameters())
        out.append(Run("06_mlm", name, lambda m=cfg06: MaskedLM(m), lm_batch(vocab06, r.block, masked=not causal),
                       lm_cross_entropy, c.batch_size, c.steps, evals06, c.eval_batches,
                       resident_params=i * n06, formula=palm_flops(r.n_layer, r.block, r.n_embd)))

    r = seq2seq.recipe("gpu")
    c, cg = r.train_config(), r.gpt_train_config()
    V9 = len(dates.CharVocab())
    evals09 = r.evals + 1  # and once before training
    seq = Seq2SeqConfig(src_vocab_size=V9, tgt_vocab_size=V9, **r.model_sizes())
    gpt09 = GPTConfig(vocab_size=V9, **r.gpt_sizes())
    out.append(Run("09_encoder_decoder", "encoder-decoder", lambda: EncoderDecoder(seq),
                   dates_batch(dates.sample_batch, c.block_size), dates.padded_cross_entropy, c.batch_size, c.steps,
                   evals09, c.eval_batches))
    out.append(Run("09_encoder_decoder", "decoder-only GPT", lambda: GPT(gpt09),
                   dates_batch(dates.one_sequence_batch, cg.block_size), dates.padded_cross_entropy, cg.batch_size,
                   cg.steps, evals09, cg.eval_batches,
                   resident_params=sum(q.numel() for q in EncoderDecoder(seq).parameters())))
    return out


# --- measuring on the CPU ------------------------------------------------------------------------------

class LiveBytes(TorchDispatchMode):
    """Bytes held by the tensors created inside the mode (each storage once, until it is freed), their
    peak, and the number of operations run."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = self.peak = self.ops = 0

    def _freed(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type != "meta":
                storage = t.untyped_storage()
                key = id(storage)
                if key not in self.live:
                    self.live[key] = storage.nbytes()
                    self.now += self.live[key]
                    self.peak = max(self.peak, self.now)
                    weakref.finalize(storage, self._freed, key)
        return out


def _step(model: nn.Module, run: Run, b: int, half: bool) -> None:
    x, y = run.batch(b, torch.Generator().manual_seed(0))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=half):
        logits = model_logits(model(*x) if isinstance(x, (tuple, list)) else model(x))
    run.loss(logits, y).backward()


def step_peak(model: nn.Module, run: Run, b: int, half: bool = False) -> tuple[int, int]:
    """(peak bytes of the tensors one training step creates, operations it runs) at batch ``b``."""
    model.zero_grad(set_to_none=True)
    mode = LiveBytes()
    with mode:
        _step(model, run, b, half)
        model.zero_grad(set_to_none=True)
    return mode.peak, mode.ops


def step_flops(model: nn.Module, run: Run, b: int) -> int:
    counter = FlopCounterMode(display=False)
    with counter:
        _step(model, run, b, half=False)
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


@dataclasses.dataclass
class Estimate:
    run: Run
    params: int
    fixed_bytes: int  # parameters + AdamW moments + the other models' parameters
    peak32: float  # bytes, float32 step at the gpu batch
    peak16: float  # bytes, 2-byte autocast, with the weights' 2-byte copies
    flops_step: float
    flops_formula: float | None
    ops: int
    cpu_step_s: float
    cpu_b: int

    @property
    def need32_gib(self) -> float:
        return (FRAGMENTATION * (self.fixed_bytes + self.peak32)) / GIB + CUDA_CONTEXT_GIB

    @property
    def need16_gib(self) -> float:
        return (FRAGMENTATION * (self.fixed_bytes + self.peak16)) / GIB + CUDA_CONTEXT_GIB

    @property
    def fits(self) -> bool:
        return self.need32_gib <= T4_VISIBLE_GIB

    def t4_seconds(self, util: float = UTILISATION) -> float:
        r = self.run
        flop_s = self.flops_step / (T4_FP16_TFLOPS * 1e12 * util)
        # overhead: eager kernel launches, or (RNN, LSTM: cuDNN, a few kernels) the time steps in sequence
        overhead = r.recurrent_steps * 3 * RNN_STEP_S if r.recurrent_steps else self.ops * LAUNCH_S
        return r.steps * (flop_s + overhead) + r.validations * r.eval_batches * (flop_s + overhead) / 3


def estimate(run: Run, small: tuple[int, int] = (2, 4), full: bool = True) -> Estimate:
    """Measure one run at two small batches and extrapolate to its gpu batch (see the module's text).
    ``full=False`` measures the float32 memory only (what the verdict needs; the test's quick path)."""
    torch.manual_seed(0)
    model = run.build()
    params = sum(p.numel() for p in model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    fixed = 3 * param_bytes + 4 * run.resident_params  # weights, AdamW's exp_avg and exp_avg_sq; other models
    b1, b2 = small
    B = run.batch_size

    def at_gpu_batch(half: bool) -> tuple[float, int]:
        (p1, ops), (p2, _) = step_peak(model, run, b1, half), step_peak(model, run, b2, half)
        return p1 + (p2 - p1) * (B - b1) / (b2 - b1), ops

    peak32, ops = at_gpu_batch(False)
    if not full:
        return Estimate(run, params, fixed, peak32, float("nan"), float("nan"), None, ops, 0.0, b2)
    if run.recurrent_steps:  # the CPU's bf16 LSTM kernel (oneDNN) refuses; cuDNN's fp16 keeps 2-byte activations
        peak16 = peak32 / 2
    else:
        peak16, _ = at_gpu_batch(True)
    peak16 += 2 * sum(p.numel() for p in model.parameters() if p.dim() >= 2)  # autocast's fp16 weight copies
    flops = step_flops(model, run, b1) * B / b1
    if run.recurrent_steps:  # the CPU's fused LSTM kernel is not counted by the FLOP counter: 6 N per token
        flops = run.formula(model) * B
    formula = run.formula(model) * B if run.formula else None
    cpu_s = 0.0
    if full:
        _step(model, run, b2, half=False)  # warm
        t0 = time.perf_counter()
        _step(model, run, b2, half=False)
        cpu_s = time.perf_counter() - t0
        model.zero_grad(set_to_none=True)
    return Estimate(run, params, fixed, peak32, peak16, flops, formula, ops, cpu_s, b2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--util", type=float, default=UTILISATION, help="assumed T4 utilisation (default 0.30)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s). "
          f"T4 figures are ESTIMATES (no T4 measured): {T4_VISIBLE_GIB:g} GiB visible, {CUDA_CONTEXT_GIB} GiB "
          f"context, x{FRAGMENTATION} fragmentation; {T4_FP16_TFLOPS:g} TFLOP/s fp16 x {args.util:.0%} "
          f"(and x 25 % / 35 %), {LAUNCH_S * 1e6:g} us a kernel launch")
    head = (f"{'notebook':<19}{'run':<17}{'params':>11}{'fixed MB':>9}{'act32 MB':>9}{'act16 MB':>9}"
            f"{'need32 GiB':>11}{'need16 GiB':>11}{'fits':>5}{'GFLOP/step':>11}{'PaLM':>7}{'ops':>6}"
            f"{'CPU GFLOP/s':>12}{'T4 min':>8}{'(25-35%)':>12}")
    print(head)
    totals: dict[str, list[float]] = {}
    for run in runs():
        e = estimate(run)
        mins = [e.t4_seconds(u) / 60 for u in (args.util, 0.25, 0.35)]
        totals[run.notebook] = [a + m for a, m in zip(totals.get(run.notebook, [0.0] * 3), mins)]
        cpu_rate = e.flops_step * e.cpu_b / run.batch_size / e.cpu_step_s / 1e9 if e.cpu_step_s else float("nan")
        palm = f"{e.flops_formula / e.flops_step:.2f}x" if e.flops_formula else "-"
        print(f"{run.notebook:<19}{run.name:<17}{e.params:>11,}{e.fixed_bytes / 1e6:>9.0f}{e.peak32 / 1e6:>9.0f}"
              f"{e.peak16 / 1e6:>9.0f}{e.need32_gib:>11.2f}{e.need16_gib:>11.2f}{'yes' if e.fits else 'NO':>5}"
              f"{e.flops_step / 1e9:>11.1f}{palm:>7}{e.ops:>6}{cpu_rate:>12.1f}{mins[0]:>8.1f}"
              f"{f'{mins[2]:.1f}-{mins[1]:.1f}':>12}", flush=True)
    print("\nestimated T4 training time of each notebook's gpu profile (all its runs; validation included; "
          "n-gram counting, decoding and plots not):")
    for nb, (m, lo, hi) in totals.items():
        print(f"  {nb:<19} {m:5.1f} min at {args.util:.0%} ({hi:.1f} to {lo:.1f} min at 35 % to 25 %)")
    print("fixed: parameters + AdamW moments + the notebook's other models on the GPU; act: the peak of one "
          "step's tensors at the gpu batch; need: x1.2 + 0.5 GiB context. PaLM: (6N + 12LTd) / counted FLOPs.")


if __name__ == "__main__":
    main()
