# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 05 · A GPT: a decoder-only transformer language model, trained on Shakespeare
#
# **What you will build.** A complete GPT, the architecture of GPT-2: token and position
# embeddings, a stack of pre-LN transformer blocks, a final LayerNorm and a language-model head
# that shares its weights with the token embedding. You will initialise it the way GPT-2 does
# (and see why the residual projections are scaled down), count its parameters (yours, and GPT-2
# small's), write the sampler that makes it talk, check it with three sanity tests every model
# should pass, train it on Shakespeare with the course's training loop, and put it on **the
# ladder**: bits per character of every model of the course so far, on the same validation plays.
#
# **Prerequisites.** Notebooks 02 (the language-model loss, sampling, `lmcourse.train`) and 04
# (the transformer block). From here on the block is `lmcourse.nn.Block`, the reference version
# of the one you wrote in notebook 04, so a slip there does not follow you.
#
# **Time.** About 90 minutes to work through. On a laptop CPU (profile `cpu`, one torch thread)
# the whole notebook runs in a few minutes, most of it the training of section 5 and the models
# of the ladder (section 6); the measured time is printed at the end (measured on a 2-core
# machine with little else running: 4 minutes 15 s, of which the GPT's training 178 s at 11,900
# tokens/s and the ladder's RNN and LSTM 23 s and 45 s; a later run finds those two in the
# course cache). On a GPU (profile `gpu`)
# the GPT is the size of nanoGPT's Shakespeare model (6 layers, 6 heads, 384 wide, 256
# characters of context, 5,000 steps of 64 windows) and trains with mixed precision (bf16, or fp16
# with a gradient scaler on a T4). On Colab's or Kaggle's free T4 (16 GB) it fits with room to
# spare and takes minutes; these are **estimates**, not measured on a T4 (`python
# bench/bench_gpu_fit.py`: parameters and optimizer state counted, one step's tensors measured on
# a CPU and scaled to the batch, FLOPs over the T4's fp16 peak at an assumed 30 % utilisation):
# at most about 6 GiB (float32; less in fp16), about 6 minutes for the GPT (10 if the T4 reaches
# only the 16 % that nanoGPT's reported A100 time implies) and about 3.5 more for the ladder's RNN
# and LSTM when the course cache does not hold them. Under the autograder (profile
# `tiny`) the notebook takes seconds.
#
# **How this notebook works.** Cells marked `# YOUR CODE HERE` are yours; the cell after each
# one checks your answer and says what looks wrong. The autograder runs further hidden tests,
# which check exactly the rules stated with each exercise. Two rules hold for every graded cell:
#
# * build the model from the pieces named in the exercise (`nn.Embedding`, `nn.Linear`,
#   `lmcourse.nn.Block`, a LayerNorm, ...). The course's reference GPT in `lmcourse.nn.gpt`
#   (`GPT`, `GPTConfig`, `init_gpt_weights`, `gpt_param_count`, `generate`) scores 0, however
#   it is reached (an alias, a subclass, a saved reference): the tests watch what runs. So does
#   the course code of other notebooks that does the same work (`lmcourse.decoding`'s generation
#   loops, `lmcourse.nn.mlm.init_mlm_weights`), the test cells' helpers (`lmcourse.reference`),
#   and the Python code of another library (`transformers` has a GPT-2 of its own). A graded call
#   runs on its own thread (starting a thread or a process inside it is refused) and does not
#   read the course's source files;
# * results have the **input's dtype** and live on the **input's device**; inputs are never
#   changed in place.
#
# TorchScript is switched off in this notebook (the setup cell does it): `torch.jit.script` and
# `torch.jit.trace` hand back plain Python, so a compiled reference runs as Python and the tests
# see it.

# %% locked="setup"
import dataclasses
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
import lmcourse.nn.gpt
import lmcourse.reference.gpt
import lmcourse.rules
from lmcourse import plot
from lmcourse.checks import (call_checked, check, check_close, check_equal, check_shape, check_tensor_close,
                             visible_checks_pass)
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import Block, BlockConfig, LayerNorm, block_param_count
from lmcourse.runtime import is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, estimate_loss, train

_notebook_start = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
torch.jit._state.disable()  # TorchScript off: torch.jit.script / trace return plain Python, which the tests can see

# %% [markdown]
# ## 1. From a block to a language model
#
# Notebook 04 built the block; a GPT is what you put around a stack of them. For token ids
# $w_1, \dots, w_T$ (here characters), in the lectures' notation with $d$ = `n_embd`, $L$ =
# `n_layer` and $|V|$ = `vocab_size`:
#
# 1. **Embed.** Each token's identity is a row of a learned matrix $W^{\text{embed}} \in
#    \mathbb{R}^{|V| \times d}$, and each position $t$ has its own learned vector $p_t$. The
#    model's input at position $t$ is their sum,
#    $$x_t = W^{\text{embed}}[w_t] + p_t .$$
# 2. **Transform.** $h^{(0)} = x$, then $h^{(l)} = \mathrm{Block}_l(h^{(l-1)})$ for
#    $l = 1, \dots, L$: causal, pre-LN blocks, each reading from the residual stream and adding
#    back to it.
# 3. **Predict.** A pre-LN stack leaves the stream un-normalised, so a **final LayerNorm** comes
#    before the **language-model head**, which scores every token of the vocabulary:
#    $$\text{logits}_t = W^{\text{embed}}\,\mathrm{LN}_f\big(h_t^{(L)}\big) \in \mathbb{R}^{|V|},
#      \qquad P(w_{t+1} = v \mid w_{\le t}) = \mathrm{softmax}(\text{logits}_t)_v .$$
#
# The head's matrix is the **embedding matrix itself** — *weight tying*. Embedding maps a token
# to a vector by reading its row; the head scores a vector against every row by a dot product, so
# a token whose embedding points the same way as the final vector gets a high score. One matrix
# does both jobs and is trained by both; the model saves $|V| \cdot d$ parameters (for GPT-2
# small, 38.6 million of its 124 million).
#
# **Teacher forcing.** One forward pass predicts every position at once: position $t$ sees the
# true tokens $w_1..w_t$ (never its own earlier guesses) and is scored on $w_{t+1}$. The batches
# of `lmcourse.data.get_batch` come already shifted: `y[b, t] = x[b, t + 1]`. The loss is the mean
# over all $B \cdot T$ positions,
# $$\mathcal{L} = -\frac{1}{BT} \sum_{b,t} \log P(y_{b,t} \mid x_{b, \le t}) ,$$
# which is `F.cross_entropy(logits.view(B * T, V), y.view(B * T))` (it averages by default).
#
# ### The configuration
# Every size lives in one config object, with the course's naming table (the same names as
# nanoGPT and `lmcourse.nn`):
#
# | field | symbol | meaning |
# |---|---|---|
# | `vocab_size` | $\lvert V\rvert$ | tokens the model embeds and predicts |
# | `block_size` | $T_{\max}$ | longest context, and the number of position vectors $p_t$ |
# | `n_layer` | $L$ | blocks in the stack |
# | `n_head` | $h$ | attention heads per block, each on `n_embd // n_head` channels |
# | `n_embd` | $d$ | width of the residual stream |
# | `dropout` | | dropout after the embeddings and inside the blocks (training only) |
# | `bias` | | biases in the linear layers and LayerNorms |
#
# ### Exercise 1 — `GPTConfig` (1 point)
# Write `GPTConfig` as a `@dataclass` with exactly these seven fields, in this order (so that
# `GPTConfig(65, 256, 6, 6, 384, 0.0, True)` works as well as keywords), typed, with the
# defaults of nanoGPT's Shakespeare-character model except dropout: `vocab_size: int = 65`,
# `block_size: int = 256`, `n_layer: int = 6`, `n_head: int = 6`, `n_embd: int = 384`,
# `dropout: float = 0.0`, `bias: bool = True`. Give each field a comment that says what it is.

# %% solution="gpt_config"
@dataclass
class GPTConfig:
    """The sizes of a GPT, with the course's naming table."""

    ### BEGIN SOLUTION
    vocab_size: int = 65  # |V|: tokens embedded and predicted
    block_size: int = 256  # T_max: longest context, number of learned positions
    n_layer: int = 6  # L: transformer blocks
    n_head: int = 6  # attention heads per block
    n_embd: int = 384  # d: width of the residual stream
    dropout: float = 0.0  # dropout probability (training only)
    bias: bool = True  # biases in linear layers and LayerNorms
    ### END SOLUTION


# %% tests="gpt_config_tests" points=1
import dataclasses

from lmcourse.checks import call_checked, check, check_equal

_want_fields = {"vocab_size": (int, 65), "block_size": (int, 256), "n_layer": (int, 6), "n_head": (int, 6),
                "n_embd": (int, 384), "dropout": (float, 0.0), "bias": (bool, True)}
check(dataclasses.is_dataclass(GPTConfig) and isinstance(GPTConfig, type),
      "GPTConfig should be a class decorated with @dataclass")
_fields = {f.name: f for f in dataclasses.fields(GPTConfig)}
check_equal(sorted(_fields), sorted(_want_fields), "the field names of GPTConfig",
            hint="exactly vocab_size, block_size, n_layer, n_head, n_embd, dropout, bias")
check_equal(list(_fields), list(_want_fields), "the order of GPTConfig's fields",
            hint="the table's order, so that GPTConfig(65, 256, 6, 6, 384, 0.0, True) means what it says")
for _name, (_type, _default) in _want_fields.items():
    check(str(_fields[_name].type) in (_type.__name__, f"<class '{_type.__name__}'>"),
          f"the field {_name} should be annotated as {_type.__name__} ({_name}: {_type.__name__} = {_default!r}), "
          f"its annotation is {str(_fields[_name].type)!r}")
_c = GPTConfig()
for _name, (_type, _default) in _want_fields.items():
    check_equal(getattr(_c, _name), _default, f"GPTConfig().{_name}", hint=f"the default of {_name} is {_default!r}")
    check(type(getattr(_c, _name)) is _type, f"GPTConfig().{_name} should be a {_type.__name__}, "
          f"got {type(getattr(_c, _name)).__name__} (write {_default!r})")
_c2 = GPTConfig(vocab_size=11, n_layer=2, n_embd=32, dropout=0.1, bias=False)
check_equal((_c2.vocab_size, _c2.n_layer, _c2.n_embd, _c2.dropout, _c2.bias), (11, 2, 32, 0.1, False),
            "GPTConfig(vocab_size=11, n_layer=2, n_embd=32, dropout=0.1, bias=False) fields")
_c3 = call_checked(GPTConfig, 65, 64, 4, 4, 128, 0.2, True, name="GPTConfig(65, 64, 4, 4, 128, 0.2, True)",
                   hint="the fields take positional arguments too (no kw_only)")
check_equal((_c3.vocab_size, _c3.block_size, _c3.n_layer, _c3.n_head, _c3.n_embd, _c3.dropout, _c3.bias),
            (65, 64, 4, 4, 128, 0.2, True), "GPTConfig with positional arguments in the table's order")
visible_checks_pass("GPTConfig")
### BEGIN HIDDEN TESTS
_c4 = GPTConfig(vocab_size=3, block_size=2, n_layer=1, n_head=1, n_embd=4, dropout=0.25, bias=False)
check_equal((_c4.vocab_size, _c4.block_size, _c4.n_layer, _c4.n_head, _c4.n_embd, _c4.dropout, _c4.bias),
            (3, 2, 1, 1, 4, 0.25, False), "GPTConfig with every field given by name")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2 — `GPT` (5 points)
# Write `GPT(config)` as an `nn.Module` with these attributes (keep the names: the tests copy
# weights into them by name, and notebook 07 loads your trained model by them):
#
# * `self.config = config`;
# * `self.wte = nn.Embedding(vocab_size, n_embd)` ($W^{\text{embed}}$) and
#   `self.wpe = nn.Embedding(block_size, n_embd)` (row $t$ is $p_t$);
# * `self.drop = nn.Dropout(dropout)`, applied to $x$ (it must do nothing in `model.eval()`);
# * `self.blocks = nn.ModuleList(...)` (or an `nn.Sequential`) of `n_layer` reference blocks,
#   `Block(BlockConfig(n_embd=..., n_head=..., block_size=..., dropout=..., bias=...))`
#   (`BlockConfig`'s other defaults are right: causal, pre-LN);
# * `self.ln_f = LayerNorm(n_embd, bias=bias)` (from `lmcourse.nn`; `nn.LayerNorm` works too);
# * `self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)` whose weight **is** `self.wte.weight`:
#   assign the parameter itself (`self.lm_head.weight = self.wte.weight`), so both names hold one
#   tensor. A copy (`.clone()`, `nn.Parameter(w.clone())`, `copy_`) is two tensors that drift apart.
#
# These hold the model's only parameters (the tests compare parameter names with the reference's).
# A buffer of your own, such as a table of positions made with `register_buffer`, is accepted;
# make it `persistent=False` so that it stays out of the checkpoint saved at the end, which
# notebook 07 loads into the reference GPT (it has no place for it).
#
# `forward(idx, targets=None)` takes ids `idx` of shape `(B, T)` with `T <= block_size` and
# returns a pair `(logits, loss)`:
#
# * `logits` of shape `(B, T, vocab_size)`, for **every** position (training scores them all),
#   in the model's dtype. Position embeddings are indexed by the **position** $0..T-1$ (on
#   `idx`'s device), not by the token;
# * `loss`: `None` without targets; otherwise the **mean** cross-entropy between `logits` and
#   `targets` (`(B, T)`, already shifted: do not shift them again).
#
# Leave the initialisation to PyTorch's defaults for now (exercise 3 replaces it).

# %% solution="gpt"
class GPT(nn.Module):
    """Token + position embeddings -> n_layer pre-LN blocks -> final LayerNorm -> tied LM head."""

    def __init__(self, config):
        super().__init__()
        ### BEGIN SOLUTION
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # W_embed: (V, C)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # p_t: (block_size, C)
        self.drop = nn.Dropout(config.dropout)
        block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                dropout=config.dropout, bias=config.bias)
        self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one tensor
        ### END SOLUTION

    def forward(self, idx, targets=None):
        ### BEGIN SOLUTION
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))
        return logits, loss
        ### END SOLUTION


# %% tests="gpt_tests" points=5
import contextlib
import math
from dataclasses import dataclass

import torch
from torch import nn

import lmcourse.checks
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_close, check_equal, check_shape, check_tensor_close
from lmcourse.nn import Block


@dataclass
class _Cfg:  # the tests' own config, so a slip in GPTConfig costs exercise 1's point only
    vocab_size: int = 11
    block_size: int = 8
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True


_rule = "build the GPT from nn.Embedding, lmcourse.nn.Block, a LayerNorm and nn.Linear, not the course's reference GPT"


_rules = lmcourse.rules.rules(*lmcourse.reference.gpt.REFERENCE, reason=_rule)


def _built(cfg, dtype=torch.float64):
    """Your GPT with the reference's weights (by name), in eval mode, and the reference."""
    return lmcourse.reference.gpt.built(GPT, cfg, _rules, dtype)


_cfg = _Cfg()
with _rules():
    _m = call_checked(GPT, _cfg, name="GPT(config)")
for _name, _type in [("wte", nn.Embedding), ("wpe", nn.Embedding), ("drop", nn.Dropout),
                     ("blocks", (nn.ModuleList, nn.Sequential)), ("lm_head", nn.Linear)]:
    check(isinstance(getattr(_m, _name, None), _type), f"GPT should have self.{_name}, an "
          f"{' or '.join(t.__name__ for t in (_type if isinstance(_type, tuple) else (_type,)))}")
check(getattr(_m, "config", None) is _cfg, "store the config as self.config")
check_equal(tuple(_m.wte.weight.shape), (11, 16), "the shape of wte.weight (vocab_size, n_embd)")
check_equal(tuple(_m.wpe.weight.shape), (8, 16), "the shape of wpe.weight (block_size, n_embd)",
            hint="one learned vector per position 0 .. block_size - 1")
check_equal(len(_m.blocks), 2, "the number of blocks for n_layer = 2")
check(all(isinstance(b, Block) for b in _m.blocks), "self.blocks should hold lmcourse.nn.Block modules")
check(_m.lm_head.bias is None, "the LM head has no bias: nn.Linear(n_embd, vocab_size, bias=False)")
check(_m.lm_head.weight is _m.wte.weight,
      "the LM head's weight must be the embedding's weight itself (one tensor): self.lm_head.weight = "
      "self.wte.weight — not a copy (.clone(), nn.Parameter(...clone()), copy_) and not a separate matrix")
check_equal(sum(p.numel() for p in _m.parameters()),
            lmcourse.nn.gpt.gpt_param_count(11, 8, 2, 16),
            "the number of parameters of your GPT (tied head counted once)",
            hint="the head adds no parameters of its own when it is tied")

_m, _ref = _built(_cfg)
_g = torch.Generator().manual_seed(501)
_idx = torch.randint(11, (3, 8), generator=_g)
_tgt = torch.randint(11, (3, 8), generator=_g)
_idx_before = _idx.clone()
with torch.no_grad():
    with _rules():
        _out = call_checked(_m, _idx, name="model(idx)",
                            hint="an index out of range in an embedding: the positions are 0..T-1 "
                                 "(torch.arange(T)), which index wpe (block_size rows); token ids index wte")
    _want_logits, _want_loss = _ref(_idx, _tgt)
check(isinstance(_out, tuple) and len(_out) == 2, "forward should return a pair (logits, loss)")
check(_out[1] is None, "without targets, forward returns (logits, None)")
check_shape(_out[0], (3, 8, 11), "the logits for idx of shape (3, 8)",
            hint="logits for every position (B, T, vocab_size), also when targets is None")
check_tensor_close(_idx, _idx_before, "idx after calling your model", atol=0, rtol=0, hint="do not change idx in place")
check_equal(str(_out[0].dtype), "torch.float64", "the dtype of the logits of a float64 model",
            hint="no float32 constants or .float() inside")
check_tensor_close(_out[0], _want_logits, "your logits vs the reference GPT with the same weights",
                   atol=1e-10, rtol=1e-10,
                   hint="x = wte(idx) + wpe(positions 0..T-1) (positions, not token ids), through every block "
                        "in order, then ln_f, then lm_head")
with torch.no_grad(), _rules():
    _short = call_checked(_m, _idx[:, :5], name="model(idx) with T = 5 < block_size")[0]
check_tensor_close(_short, _want_logits[:, :5], "the logits for the first 5 positions (T = 5 < block_size = 8)",
                   atol=1e-10, rtol=1e-10,
                   hint="use the first T position vectors, wpe(torch.arange(T)); causal blocks make the first 5 "
                        "positions independent of what follows")
with torch.no_grad(), _rules():
    _logits2, _loss = call_checked(_m, _idx, _tgt, name="model(idx, targets)")
check_shape(_loss, (), "the loss returned with targets", hint="a 0-dimensional tensor: the mean over all positions")
check_tensor_close(_loss, _want_loss, "the loss for (3, 8) ids and targets", atol=1e-8, rtol=1e-6,
                   hint="the mean cross-entropy over all B * T positions: F.cross_entropy(logits.view(B * T, V), "
                        "targets.view(B * T)), with the targets as given (they are already shifted)")
# bias=False reaches every LayerNorm and Linear
_mb, _rb = _built(_Cfg(bias=False, n_layer=1))
with torch.no_grad():
    with _rules():
        _gb = call_checked(_mb, _idx, name="model(idx) with bias=False")[0]
    _wb = _rb(_idx)[0]
check_tensor_close(_gb, _wb, "your logits vs the reference GPT with bias=False", atol=1e-10, rtol=1e-10)
# float32 in, float32 out
_m32, _r32 = _built(_cfg, dtype=torch.float32)
with _rules(), torch.no_grad():
    _o32 = call_checked(_m32, _idx, _tgt, name="a float32 model(idx, targets)")
check_equal(str(_o32[0].dtype), "torch.float32", "the dtype of the logits of a float32 model",
            hint="the logits have the model's dtype: no .double() or float64 constants inside")
with torch.no_grad():
    check_tensor_close(_o32[0], _r32(_idx)[0], "the logits of a float32 model", atol=1e-5, rtol=1e-5)
# every parameter is trained: the loss has a gradient for each
_m.zero_grad()
with _rules():
    _loss_grad = _m(_idx, _tgt)[1]
_loss_grad.backward()
for _n, _p in _m.named_parameters():
    check(_p.grad is not None and float(_p.grad.abs().sum()) > 0, f"the loss gives no gradient to {_n}: "
          "compute the logits and the loss with tensor operations on the parameters themselves (no .detach(), "
          ".data or .item() on the way)")
_m.zero_grad()
# The device: positions are made where idx lives. On the 'meta' device (shapes without data) no
# operation may mix a tensor on the CPU with the model's.
with _rules():
    _mm = call_checked(GPT, _cfg, name="GPT(config)").to("meta")
    _log = lmcourse.reference.gpt.DeviceLog()
    with _log:
        _om = call_checked(_mm, torch.zeros(2, 5, dtype=torch.long, device="meta"), name="model(idx) on 'meta'")[0]
check(not _log.mixed, f"with the model and idx on the 'meta' device, your forward mixed devices in "
      f"{_log.mixed[:2]}: make the positions on idx's device, torch.arange(T, device=idx.device)")
check_equal(str(_om.device), "meta", "the device of the logits for a model and ids on 'meta'")
# Causality, by gradients: the logits at position t must not depend on the stream after t.
_m.zero_grad()
with lmcourse.reference.gpt.grab(_m.blocks[0]) as _cap, _rules():
    _lg, _ = _m(_idx[:1])
for _t in (0, 3, 6):
    (_grad,) = torch.autograd.grad(_lg[0, _t].sum(), _cap.x, retain_graph=True)
    check(float(_grad[0, _t + 1:].abs().sum()) == 0.0,
          f"the logits at position {_t} have a gradient from the input of the first block at later positions: "
          "the model sees the future. Keep the blocks causal (BlockConfig's default causal=True)")
# Dropout: on in training, off in eval.
_cfg_d = _Cfg(dropout=0.5)
_md, _refd = _built(_cfg_d)
with torch.no_grad():
    with _rules():
        _e1 = _md(_idx)[0]
        _e2 = _md(_idx)[0]
    _wd = _refd(_idx)[0]
check_tensor_close(_e1, _wd, "GPT with dropout = 0.5 in eval mode vs the reference", atol=1e-10, rtol=1e-10,
                   hint="use the nn.Dropout module self.drop (it follows model.eval()); F.dropout(x, p) is on "
                        "unless told training=self.training")
check_tensor_close(_e2, _e1, "two calls in eval mode", atol=0, rtol=0)
_md.train()
torch.manual_seed(502)
with torch.no_grad(), _rules():
    _tr = _md(_idx)[0]
check(float((_tr - _e1).abs().max()) > 1e-6, "with dropout = 0.5 in training mode the logits should change: "
      "apply self.drop to x = wte(idx) + wpe(pos), and pass dropout to the blocks")
# self.drop acts on x = wte(idx) + wpe(pos), before the first block (the blocks' own dropout comes later)
with torch.no_grad():
    _emb_d = _md.wte.weight[_idx] + _md.wpe.weight[:8]  # (3, 8, 16)
torch.manual_seed(507)
with torch.no_grad(), lmcourse.reference.gpt.grab(_md.blocks[0]) as _cap, _rules():
    _md(_idx)
_kept = _cap.x != 0
check(bool(_kept.any()) and not bool(_kept.all()), "with dropout = 0.5 in training mode about half of the first "
      "block's input should be 0: apply self.drop to x = wte(idx) + wpe(pos) before the blocks (not after ln_f, "
      "not only inside the blocks)")
check_tensor_close(_cap.x[_kept], 2 * _emb_d[_kept], "the entries of the first block's input that dropout keeps "
                   "(p = 0.5)", atol=1e-10, rtol=1e-10, hint="the first block reads self.drop(wte(idx) + wpe(pos)): "
                   "dropout once, on the sum, scaled by 1 / (1 - p)")
_xb = torch.randn(2, 8, 16, dtype=torch.float64)
with torch.no_grad():
    _b1, _b2 = _md.blocks[0](_xb), _md.blocks[0](_xb)
check(float((_b1 - _b2).abs().max()) > 1e-6, "with dropout = 0.5 the first block gives the same output twice in "
      "training mode: pass dropout=config.dropout to each block's BlockConfig")
# Sanity check 1: at initialisation (GPT-2's, from the reference) the loss is about ln V.
torch.manual_seed(503)
with _rules():
    _m65 = GPT(_Cfg(vocab_size=65, n_embd=32, block_size=16))
lmcourse.nn.gpt.init_gpt_weights(_m65)
_ids65 = torch.randint(65, (8, 16), generator=_g)
with torch.no_grad(), _rules():
    _l65 = _m65(_ids65, torch.randint(65, (8, 16), generator=_g))[1]
check_close(float(_l65), math.log(65), "the loss at initialisation (V = 65)", rel=0, abs_=0.1,
            hint="small random weights give almost uniform predictions, whose cross-entropy is ln V = 4.17; "
                 "a very different value means the loss is not a mean, or the logits are scaled")
# Sanity check 2: a few dozen steps of AdamW overfit one batch.
torch.manual_seed(504)
with _rules():
    _mo = GPT(_Cfg(n_layer=1, n_embd=32))
lmcourse.nn.gpt.init_gpt_weights(_mo)
_xo, _yo = torch.randint(11, (4, 8), generator=_g), torch.randint(11, (4, 8), generator=_g)
_opt = torch.optim.AdamW(_mo.parameters(), lr=1e-2)
for _step in range(40):
    with contextlib.ExitStack() if _step else _rules():  # the rules once: the hook slows every call
        _lo = _mo(_xo, _yo)[1]
    _opt.zero_grad()
    _lo.backward()
    _opt.step()
check(_lo.item() < 0.2, f"after 40 steps on one batch the loss is still {_lo.item():.3f}; a model that cannot "
      "memorise 32 targets has a bug (is every parameter trained? is the loss computed from the logits?)")
visible_checks_pass("GPT")
### BEGIN HIDDEN TESTS
for _c in [_Cfg(vocab_size=7, block_size=5, n_layer=3, n_head=1, n_embd=8),
           _Cfg(vocab_size=13, block_size=6, n_layer=1, n_head=4, n_embd=12, bias=False),
           _Cfg(vocab_size=5, block_size=4, n_layer=2, n_head=2, n_embd=4)]:
    _mh, _rh = _built(_c)
    check(_mh.lm_head.weight is _mh.wte.weight, f"tied head for {_c}")
    for _T in (1, _c.block_size):
        _ih = torch.randint(_c.vocab_size, (2, _T), generator=_g)
        _th = torch.randint(_c.vocab_size, (2, _T), generator=_g)
        with torch.no_grad():
            with _rules():
                _gl, _gloss = _mh(_ih, _th)
            _wl, _wloss = _rh(_ih, _th)
        check_tensor_close(_gl, _wl, f"logits for {_c}, T = {_T}", atol=1e-10, rtol=1e-10)
        check_tensor_close(_gloss, _wloss, f"loss for {_c}, T = {_T}", atol=1e-8, rtol=1e-6)
        del _wl, _wloss
    check_equal(sum(p.numel() for p in _mh.parameters()),
                lmcourse.nn.gpt.gpt_param_count(_c.vocab_size, _c.block_size, _c.n_layer, _c.n_embd, bias=_c.bias),
                f"parameters of GPT({_c})")
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Initialisation, and why the residual projections are scaled
#
# PyTorch initialises every `nn.Linear` for a network where layers are composed; a transformer
# **adds** its layers into the residual stream instead. Each block adds two outputs to it, the
# attention's (through its output projection `attn.c_proj`) and the MLP's (through `mlp.c_proj`),
# so after $L$ blocks the stream holds $x + \sum_{k=1}^{2L} f_k$. If the $2L$ additions are
# roughly independent with variance $\sigma^2$ each, the stream's variance grows like
# $\mathrm{Var}(x) + 2L\,\sigma^2$: deeper models start with a larger and larger stream, and the
# LayerNorm of every later block has to divide more of it away. GPT-2's answer: draw the weights
# of those **residual projections** with a standard deviation $1/\sqrt{2L}$ times smaller, so that
# the sum of their $2L$ contributions has the variance of one of them, whatever the depth.
#
# GPT-2's initialisation, in full:
#
# * every `nn.Linear` weight and every `nn.Embedding` weight $\sim \mathcal{N}(0,\, 0.02^2)$;
# * every bias $= 0$; every LayerNorm gain $= 1$ (and shift $= 0$);
# * then the weights of the residual projections, the parameters whose name ends in
#   `c_proj.weight` (`blocks[i].attn.c_proj.weight` and `blocks[i].mlp.c_proj.weight`),
#   $\sim \mathcal{N}\big(0,\, (0.02/\sqrt{2L})^2\big)$.
#
# The next cell measures it: the standard deviation of the residual stream after each block of
# a 12-layer model, with and without the scaling (using the reference initialisation).

# %%
def stream_std(model, idx):
    """Standard deviation of the residual stream after each block."""
    stds = []
    hooks = [b.register_forward_hook(lambda mod, inp, out: stds.append(float(out.std()))) for b in model.blocks]
    with torch.no_grad():
        model(idx)
    for h in hooks:
        h.remove()
    return stds


torch.manual_seed(rt.seed)
_deep = lmcourse.nn.gpt.GPT(lmcourse.nn.gpt.GPTConfig(vocab_size=65, block_size=32, n_layer=12, n_head=4,
                                                      n_embd=64)).eval()
_idx_demo = torch.randint(65, (16, 32))
scaled = stream_std(_deep, _idx_demo)
with torch.no_grad():
    for _name, _p in _deep.named_parameters():
        if _name.endswith("c_proj.weight"):
            _p.normal_(0.0, 0.02)  # the same draw without the 1/sqrt(2L)
unscaled = stream_std(_deep, _idx_demo)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(range(1, 13), unscaled, "o-", label="N(0, 0.02²) everywhere")
ax.plot(range(1, 13), scaled, "o-", label="residual projections × 1/√(2L)")
ax.set_xlabel("after block l")
ax.set_ylabel("std of the residual stream")
ax.set_title("Residual stream at initialisation, L = 12")
ax.legend()
plt.show()
print(f"after 12 blocks: std {unscaled[-1]:.4f} unscaled vs {scaled[-1]:.4f} scaled "
      f"(the embeddings alone: about {0.02 * math.sqrt(2):.4f})")

# %% [markdown]
# ### Exercise 3 — `init_weights` (3 points)
# Write `init_weights(model, n_layer, std=0.02)`, which initialises `model` **in place** as listed
# above, with the argument `std` in place of 0.02 (go through `model.modules()` for the layers and
# `model.named_parameters()` for the residual projections) and returns nothing. It must work for
# any model built from `nn.Embedding`, `nn.Linear` and LayerNorms (`lmcourse.nn.LayerNorm` or
# `nn.LayerNorm`):
#
# * keep the parameters' dtype and device: fill them in place with `nn.init.normal_`,
#   `nn.init.zeros_`, `nn.init.ones_` (or `p.normal_(...)` under `torch.no_grad()`); do not
#   replace them with new tensors, which would also break the tying of the head;
# * use torch's global random generator (what `nn.init` uses), so `torch.manual_seed` makes it
#   repeatable;
# * scale the residual projections with the argument `n_layer` ($L$), not a number of blocks
#   read from the model (the test passes an `n_layer` of its own);
# * with `bias=False` a layer's `bias` is `None` (LayerNorms included): leave it alone.
#
# The test runs your function on the reference GPT, so exercise 2 does not count here.

# %% solution="init_weights"
def init_weights(model, n_layer, std=0.02):
    """GPT-2's initialisation, in place."""
    ### BEGIN SOLUTION
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))
    ### END SOLUTION


# %% tests="init_weights_tests" points=3
import contextlib
import math

import torch
from torch import nn

import lmcourse.checks
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_close, check_equal

_rule = "initialise the weights yourself, not with the course's reference init_gpt_weights"


_rules = lmcourse.rules.rules(*lmcourse.reference.gpt.REFERENCE, reason=_rule)


def _spoiled(n_layer=4, n_embd=64, dtype=torch.float32, device="cpu", bias=True):
    """A reference GPT whose every parameter is 7.0, so nothing left untouched looks initialised."""
    cfg = lmcourse.nn.gpt.GPTConfig(vocab_size=65, block_size=64, n_layer=n_layer, n_head=4, n_embd=n_embd, bias=bias)
    model = lmcourse.nn.gpt.GPT(cfg).to(dtype=dtype, device=device)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(7.0)
    return model


def _std(t):
    return float(t.detach().double().std())


_model = _spoiled()
_params_before = {n: p for n, p in _model.named_parameters()}
torch.manual_seed(505)
with _rules():
    _ret = call_checked(init_weights, _model, 4, name="init_weights(model, n_layer=4)")
check(_ret is None or _ret is _model, "init_weights works in place and returns nothing")
check(all(p is _params_before[n] for n, p in _model.named_parameters()),
      "init_weights must fill the existing parameters in place (nn.init.normal_(p, ...)), not assign new ones")
check(_model.lm_head.weight is _model.wte.weight, "after init_weights the head must still be tied to wte")
for _name, _t in [(_n, _p) for _n, _p in _model.named_parameters() if _n.endswith("weight") and ".ln" not in _n
                  and not _n.startswith("ln_f") and not _n.endswith("c_proj.weight")]:
    check_close(_std(_t), 0.02, f"the standard deviation of {_name}", rel=0.1, abs_=0,
                hint="every nn.Linear and nn.Embedding weight ~ N(0, 0.02²): nn.init.normal_(w, mean=0.0, std=0.02) "
                     "(std, not variance)")
    check_close(float(_t.detach().double().mean()), 0.0, f"the mean of {_name}", rel=0, abs_=0.003)
_pooled = torch.cat([_p.detach().double().flatten() / _std(_p) for _n, _p in _model.named_parameters()
                     if _p.dim() == 2 and not _n.endswith("c_proj.weight")])
_kurt = float((_pooled - _pooled.mean()).pow(4).mean() / (_pooled - _pooled.mean()).pow(2).mean() ** 2)
check_close(_kurt, 3.0, "the kurtosis of the weights (a normal distribution's is 3, a uniform one's 1.8)", rel=0,
            abs_=0.3, hint="draw from a normal distribution, nn.init.normal_, not a uniform one with the same std")
_scaled = 0.02 / math.sqrt(2 * 4)
for _i in range(4):
    for _name, _t in [("attn.c_proj.weight", _model.blocks[_i].attn.c_proj.weight),
                      ("mlp.c_proj.weight", _model.blocks[_i].mlp.c_proj.weight)]:
        check_close(_std(_t), _scaled, f"the standard deviation of blocks[{_i}].{_name} for n_layer = 4",
                    rel=0.1, abs_=0,
                    hint=f"the residual projections (names ending in c_proj.weight) get std 0.02 / sqrt(2 * n_layer) "
                         f"= {_scaled:.5f}, after the general initialisation")
check(all(float(p.detach().abs().max()) == 0.0 for n, p in _model.named_parameters() if n.endswith("bias")
          and ".ln" not in n and not n.startswith("ln_f")), "every bias of a Linear layer should be 0")
for _n, _p in _model.named_parameters():
    if ".ln" in _n or _n.startswith("ln_f"):
        _want = 1.0 if _n.endswith("weight") else 0.0
        check(bool((_p == _want).all()), f"{_n} should be {_want} everywhere after init_weights (LayerNorm gain 1, "
              "shift 0); initialise only nn.Linear and nn.Embedding weights from a normal distribution")
# repeatable with torch.manual_seed; dtype and device kept
_a, _b = _spoiled(n_layer=2, n_embd=16), _spoiled(n_layer=2, n_embd=16)
with _rules():
    torch.manual_seed(7)
    init_weights(_a, 2)
    torch.manual_seed(7)
    init_weights(_b, 2)
check(all(torch.equal(p, q) for p, q in zip(_a.parameters(), _b.parameters())),
      "two calls after the same torch.manual_seed should give the same weights: draw with torch's global generator")
with _rules():
    torch.manual_seed(8)
    init_weights(_b, 2)
check(not torch.equal(_a.wte.weight, _b.wte.weight), "torch.manual_seed(7) and torch.manual_seed(8) gave the same "
      "weights: draw with torch's global generator (nn.init.normal_ does), not a generator of your own")
# the std argument, and any model of nn.Linear, nn.Embedding and nn.LayerNorm
_any = nn.Sequential(nn.Embedding(50, 40), nn.Linear(40, 60), nn.LayerNorm(60), nn.Linear(60, 40))
with torch.no_grad():
    for _p in _any.parameters():
        _p.fill_(3.0)
torch.manual_seed(9)
with _rules():
    call_checked(init_weights, _any, 3, std=0.05, name="init_weights(nn.Sequential(...), n_layer=3, std=0.05)")
check_close(_std(_any[0].weight), 0.05, "the standard deviation of an nn.Embedding's weight with std=0.05",
            rel=0.1, abs_=0, hint="use the std argument, not 0.02 written in")
check_close(_std(_any[3].weight), 0.05, "the standard deviation of an nn.Linear's weight with std=0.05",
            rel=0.1, abs_=0, hint="use the std argument, not 0.02 written in")
check(bool((_any[1].bias == 0).all()) and bool((_any[3].bias == 0).all()), "every nn.Linear bias should be 0")
check(bool((_any[2].weight == 1).all()) and bool((_any[2].bias == 0).all()),
      "an nn.LayerNorm's weight should be 1 and its bias 0: reset torch's nn.LayerNorm as well as lmcourse's LayerNorm")
_m64 = _spoiled(n_layer=2, n_embd=16, dtype=torch.float64)
with _rules():
    init_weights(_m64, 2)
check(all(p.dtype == torch.float64 for p in _m64.parameters()), "init_weights must keep a float64 model's dtype")
_mm = _spoiled(n_layer=2, n_embd=16, device="meta")
with _rules():
    call_checked(init_weights, _mm, 2, name="init_weights on a model on the 'meta' device")
check(all(p.device.type == "meta" for p in _mm.parameters()), "init_weights must keep the parameters' device")
# the argument n_layer sets the scaling (here 8, for a model of 2 blocks), and bias=False has no biases
_nb = _spoiled(n_layer=2, n_embd=64, bias=False)
torch.manual_seed(508)
with _rules():
    call_checked(init_weights, _nb, 8, name="init_weights(model with bias=False, n_layer=8)",
                 hint="with bias=False every bias is None, the LayerNorms' too: zero a bias only if it is not None")
check_close(_std(_nb.blocks[1].attn.c_proj.weight), 0.02 / 4, "the standard deviation of blocks[1].attn.c_proj.weight "
            "for n_layer = 8 (a model of 2 blocks)", rel=0.1, abs_=0,
            hint="scale by 1 / sqrt(2 * n_layer) with the argument n_layer, not the model's own number of blocks")
check(all(bool((ln.weight == 1).all()) for b in _nb.blocks for ln in (b.ln1, b.ln2)),
      "with bias=False the LayerNorm gains should still be 1")
visible_checks_pass("init_weights")
### BEGIN HIDDEN TESTS
_h = _spoiled(n_layer=8, n_embd=64, bias=False)
torch.manual_seed(506)
with _rules():
    init_weights(_h, 8, std=0.05)
check_close(_std(_h.wte.weight), 0.05, "std of wte with std=0.05", rel=0.1, abs_=0)
check_close(_std(_h.blocks[5].mlp.c_fc.weight), 0.05, "std of c_fc with std=0.05", rel=0.1, abs_=0)
check_close(_std(_h.blocks[7].attn.c_proj.weight), 0.05 / 4, "std of c_proj, n_layer 8, std=0.05", rel=0.1, abs_=0)
check_close(_std(_h.blocks[2].mlp.c_proj.weight), 0.05 / 4, "std of mlp c_proj, n_layer 8, std=0.05", rel=0.1, abs_=0)
check(all(bool((ln.weight == 1).all()) for b in _h.blocks for ln in (b.ln1, b.ln2)), "LayerNorm gains 1 (no bias)")
_nl = nn.Sequential(nn.Linear(30, 40), nn.LayerNorm(40), nn.Linear(40, 30))
with torch.no_grad():
    for _p in _nl.parameters():
        _p.fill_(3.0)
with _rules():
    init_weights(_nl, 1)
check(bool((_nl[1].weight == 1).all()) and bool((_nl[1].bias == 0).all()), "nn.LayerNorm reset to 1 and 0")
check(bool((_nl[0].bias == 0).all()), "Linear biases 0 in any model")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. How many parameters?
#
# With tying, the parameters of the GPT are the token embedding ($|V| d$), the position
# embeddings ($T_{\max} d$), $L$ blocks of $12d^2 + 13d$ each (notebook 04: attention $4d^2+4d$,
# MLP $8d^2+5d$, two LayerNorms $4d$), and the final LayerNorm ($2d$). The head adds nothing.
# The lecture's rule of thumb, $N \approx 12 L d^2$, counts only the blocks' matrices: the
# *non-embedding* parameters.
#
# ### Exercise 4 — `gpt_param_count` (2 points)
# Write `gpt_param_count(vocab_size, block_size, n_layer, n_embd)`: the number of parameters of
# your `GPT` with biases and a tied head, as a Python `int`, from the formula (do not build a
# model; `block_param_count` from `lmcourse.nn`, notebook 04's count of one block, may be used).
# The test compares it with `sum(p.numel() for p in model.parameters())` of models of several
# sizes; the next cell then prints the count for GPT-2 small.

# %% solution="gpt_param_count"
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    """Parameters of a GPT with biases and a tied head."""
    ### BEGIN SOLUTION
    d = n_embd
    embeddings = vocab_size * d + block_size * d
    blocks = n_layer * (12 * d * d + 13 * d)
    final_ln = 2 * d
    return embeddings + blocks + final_ln
    ### END SOLUTION


# %% tests="gpt_param_count_tests" points=2
import contextlib

from torch import nn

import lmcourse.checks
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check_equal, check_type

_rule = "compute the count from the formula, without building a model or calling the reference count"


_rules = lmcourse.rules.rules(*lmcourse.reference.gpt.REFERENCE, nn.Module.__init__, reason=_rule)


for _V, _T, _L, _d in [(65, 256, 6, 384), (11, 8, 2, 16), (100, 32, 1, 8)]:
    with _rules():
        _got = call_checked(gpt_param_count, _V, _T, _L, _d, name=f"gpt_param_count({_V}, {_T}, {_L}, {_d})")
    _model = lmcourse.nn.gpt.GPT(lmcourse.nn.gpt.GPTConfig(vocab_size=_V, block_size=_T, n_layer=_L,
                                                           n_head=2, n_embd=_d))
    _want = sum(p.numel() for p in _model.parameters())
    check_type(_got, int, f"gpt_param_count({_V}, {_T}, {_L}, {_d})", hint="return a Python int")
    check_equal(_got, _want, f"gpt_param_count({_V}, {_T}, {_L}, {_d}) vs the parameters of such a GPT",
                hint="token embedding V d + positions T d + L blocks of 12 d^2 + 13 d + final LayerNorm 2 d; "
                     "the tied head adds nothing (count it and you are V d too high)")
    del _model, _want
visible_checks_pass("gpt_param_count")
### BEGIN HIDDEN TESTS
with _rules():
    check_equal(gpt_param_count(50257, 1024, 12, 768), 124_439_808, "GPT-2 small")
    check_equal(gpt_param_count(50257, 1024, 24, 1024), 354_823_168, "GPT-2 medium")
    check_equal(gpt_param_count(3, 1, 0, 5), 30, "no blocks")
### END HIDDEN TESTS

# %%
gpt2_small = gpt_param_count(50257, 1024, 12, 768)
print(f"GPT-2 small (V = 50257, T = 1024, L = 12, d = 768): {gpt2_small:,} parameters")
print(f"  of which the token embedding (shared with the head): {50257 * 768:,} "
      f"({50257 * 768 / gpt2_small:.0%}); an untied head would add as many again")
print(f"  non-embedding (the blocks): {12 * (12 * 768**2 + 13 * 768):,} vs the rule of thumb 12 L d^2 = "
      f"{12 * 12 * 768**2:,}")
_ours = gpt_param_count(65, 256, 6, 384)
print(f"nanoGPT's Shakespeare model (V = 65, T = 256, L = 6, d = 384): {_ours:,} parameters, "
      f"embeddings {(65 + 256) * 384 / _ours:.1%} of them")

# %% [markdown]
# ## 4. Generating text
#
# To continue a text, feed the ids you have, take the logits of the **last** position, turn
# them into probabilities with a softmax at **temperature** $\tau$,
# $$P(v) = \frac{\exp(\text{logits}_v / \tau)}{\sum_{u} \exp(\text{logits}_u / \tau)},$$
# draw the next id from them, append it, and repeat. $\tau = 1$ samples from the model;
# $\tau < 1$ sharpens the distribution (towards the most likely token), $\tau > 1$ flattens it.
# The temperature divides the **logits**, before the softmax. The model has only `block_size`
# position vectors, so once the text is longer it sees only its last `block_size` ids.
#
# ### Exercise 5 — `generate` (3 points)
# Write `generate(model, idx, max_new_tokens, temperature=1.0, generator=None)`:
#
# * `idx` is `(B, T)`; return `(B, T + max_new_tokens)`: `idx` followed by the new ids, on
#   `idx`'s device and with its dtype (`torch.long`), without changing `idx`;
# * at each step call `model(context)` with `context` the last `model.config.block_size` ids
#   (all of them when there are fewer); it returns `(logits, loss)`;
# * draw every id with `generator` (a `torch.Generator`, e.g. `torch.multinomial(probs, 1,
#   generator=generator)`), so that the same seed gives the same text, with fresh random numbers
#   at every step;
# * `temperature` is positive (greedy decoding, the limit $\tau \to 0$, is notebook 07's);
# * no gradients are needed: call the model under `torch.no_grad()`;
# * leave the model's mode as you found it: the caller chooses `model.eval()` (as the training
#   cell below does). If you switch to eval mode inside, switch back before returning.

# %% solution="generate"
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    """Sample max_new_tokens ids after idx (B, T), one at a time."""
    ### BEGIN SOLUTION
    block_size = model.config.block_size
    with torch.no_grad():
        for _ in range(max_new_tokens):
            context = idx[:, -block_size:]  # (B, <= block_size)
            logits, _ = model(context)  # (B, T, V)
            probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)
            nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
            idx = torch.cat([idx, nxt], dim=1)
    return idx
    ### END SOLUTION


# %% tests="generate_tests" points=3
import torch

import lmcourse.checks
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_close, check_equal, check_shape, check_tensor_close

_rule = "write the sampling loop yourself, not the course's reference generate"


_rules = lmcourse.rules.rules(*lmcourse.reference.gpt.REFERENCE, reason=_rule)


_Fixed = lmcourse.reference.gpt.FixedLogits


_logits = [2.0, 1.0, 0.0, -1.0]
# shape, prefix, dtype, cropping
_m = _Fixed(_logits, block_size=4)
_idx = torch.tensor([[3, 1, 2], [0, 0, 1]])
_before = _idx.clone()
with _rules():
    _out = call_checked(generate, _m, _idx, 6, generator=torch.Generator().manual_seed(0),
                        name="generate(model, idx of shape (2, 3), 6)",
                        hint="torch.multinomial takes probabilities (finite, >= 0), not logits: sample from "
                             "softmax(logits[:, -1, :] / temperature)")
check_shape(_out, (2, 9), "generate(model, idx of shape (2, 3), max_new_tokens=6)",
            hint="append one id per step to idx, along dim 1")
check_equal(str(_out.dtype), "torch.int64", "the dtype of generate's output", hint="torch.multinomial gives int64 ids")
check_tensor_close(_idx, _before, "idx after generate", atol=0, rtol=0, hint="build a new tensor (torch.cat)")
check_tensor_close(_out[:, :3], _idx, "the first 3 columns of generate's output", atol=0, rtol=0,
                   hint="the output starts with idx itself")
_m.obeyed()
check_equal(len(_m.seen), 6, "the number of model calls for max_new_tokens = 6", hint="one call per new id")
check(not any(_m.grad_on), "generate called the model with gradients on: sample under torch.no_grad() (no graph is "
      "needed to sample, and keeping one costs memory at every step)")
for _k, _ctx in enumerate(_m.seen):
    _end = 3 + _k
    _want_ctx = _out[:, max(0, _end - 4):_end]
    check(_ctx.shape == _want_ctx.shape and bool((_ctx == _want_ctx).all()),
          f"at step {_k + 1} the model should see the last min(T, block_size) ids {_want_ctx.tolist()}, "
          f"it saw {_ctx.tolist()} — crop with idx[:, -block_size:]")
# the model's mode is left as it was
for _mode in (True, False):
    _mmode = _Fixed(_logits, block_size=4).train(_mode)
    with _rules():
        generate(_mmode, torch.zeros(2, 1, dtype=torch.long), 2, generator=torch.Generator().manual_seed(0))
    check(_mmode.training is _mode, f"generate left a model that was in {'training' if _mode else 'eval'} mode in "
          f"{'training' if _mmode.training else 'eval'} mode: leave model.training as you found it (if you switch "
          "to model.eval() inside, switch back)")
# the distribution, at three temperatures: 4000 rows of two new ids each
for _tau in (1.0, 0.5, 2.0):
    _mt = _Fixed(_logits, block_size=4)
    with _rules():
        _draws = generate(_mt, torch.zeros(4000, 3, dtype=torch.long), 2, temperature=_tau,
                          generator=torch.Generator().manual_seed(11))[:, -2:]
    _want = lmcourse.reference.gpt.softmax_list([v / _tau for v in _logits])
    for _col in (0, 1):
        for _v in range(4):
            _freq = float((_draws[:, _col] == _v).double().mean())
            check_close(_freq, _want[_v], f"the share of id {_v} among the {('first', 'second')[_col]} new ids of "
                        f"4000 rows at temperature {_tau} (logits {_logits})", rel=0, abs_=0.03,
                        hint="sample from softmax(logits[:, -1, :] / temperature): the last position's logits, "
                             "divided (not multiplied) by the temperature before the softmax (not the probabilities "
                             "after it), then a draw (not the argmax)")
    # the two draws of a row are independent: the same id twice with probability sum_v P(v)^2
    _same = float((_draws[:, 0] == _draws[:, 1]).double().mean())
    check_close(_same, sum(q * q for q in _want), f"the share of rows whose two new ids are equal at temperature "
                f"{_tau} (independent draws)", rel=0, abs_=0.04,
                hint="draw fresh random numbers at every step (a uniform drawn once before the loop repeats the "
                     "same choice)")
# the generator decides: the same seed gives the same ids whatever the global seed; another seed others
_mg = _Fixed(_logits, block_size=4)
_start = torch.zeros(64, 1, dtype=torch.long)
with _rules():
    torch.manual_seed(1)
    _s1 = generate(_mg, _start, 5, generator=torch.Generator().manual_seed(42))
    torch.manual_seed(2)
    _s2 = generate(_mg, _start, 5, generator=torch.Generator().manual_seed(42))
    _s3 = generate(_mg, _start, 5, generator=torch.Generator().manual_seed(43))
check(torch.equal(_s1, _s2), "two calls with generators seeded alike gave different ids: pass generator= to the "
      "sampling function (torch.multinomial(probs, 1, generator=generator))")
check(not torch.equal(_s1, _s3), "generators with different seeds gave the same ids: are you sampling at all?")
# a prompt longer than block_size is cropped before the first call too
_ml = _Fixed([0.0, 3.0, 0.5], block_size=2)
with _rules():
    _ol = call_checked(generate, _ml, torch.tensor([[1, 2, 0, 1, 2]]), 2, generator=torch.Generator().manual_seed(3),
                       name="generate(model with block_size 2, a prompt of 5 ids, 2)")
check_shape(_ol, (1, 7), "generate with a prompt of 5 ids and 2 new ones")
_ml.obeyed()
visible_checks_pass("generate")
### BEGIN HIDDEN TESTS
_mh = _Fixed([0.0, 3.0, 0.5], block_size=2)
with _rules():
    _oh = generate(_mh, torch.tensor([[1, 2, 0, 1, 2]]), 4, temperature=0.7, generator=torch.Generator().manual_seed(3))
check_shape(_oh, (1, 9), "generate with T > block_size from the start")
_mh.obeyed()
check(all(c.size(1) == 2 for c in _mh.seen), "context cropped to block_size = 2 from the first step")
_me = _Fixed([0.0, 3.0, 0.5], block_size=5)
with _rules():
    _oe = generate(_me, torch.tensor([[1, 2]]), 0, generator=torch.Generator().manual_seed(3))
check_tensor_close(_oe, torch.tensor([[1, 2]]), "max_new_tokens = 0 returns idx", atol=0, rtol=0)
_mc = _Fixed([5.0, -5.0, 0.0, 1.0, 2.0], block_size=3)
with _rules():
    _dc = generate(_mc, torch.zeros(3000, 2, dtype=torch.long), 2, temperature=3.0,
                   generator=torch.Generator().manual_seed(12))[:, 2:]
_wc = lmcourse.reference.gpt.softmax_list([v / 3.0 for v in [5.0, -5.0, 0.0, 1.0, 2.0]])
for _v in range(5):
    check_close(float((_dc == _v).double().mean()), _wc[_v], f"share of id {_v} at temperature 3", rel=0, abs_=0.03)
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Training on Shakespeare
#
# The course corpus, split **by play** as in notebook 02 (the validation plays are never seen in
# training), one id per character. The sizes come from the profile: in `cpu`, a 4-layer,
# 128-wide model with 64 characters of context; in `gpu`, nanoGPT's Shakespeare model (6 layers,
# 6 heads, 384 wide, 256 characters, dropout 0.2) trained with bf16 autocast (fp16 with a
# gradient scaler on a T4, whose bf16 is slow), the fused AdamW
# kernel, the fused attention kernel (`F.scaled_dot_product_attention`, which `lmcourse.nn.Block`
# uses) and `torch.compile`.

# %%
from lmcourse.recipes import gpt as gpt_recipe

corpus = load_shakespeare()
tok = CharTokenizer.from_text(corpus.text("train"))
train_ids = encode_split(corpus, "train", tok)
val_ids = encode_split(corpus, "val", tok)
on_gpu = rt.device.type == "cuda"
R = gpt_recipe.recipe(P.name)  # this profile's sizes and run, in one place (lmcourse.recipes.gpt)
config = GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())
torch.manual_seed(rt.seed)
model = GPT(config)
init_weights(model, config.n_layer)
n_params = sum(p.numel() for p in model.parameters())
print(f"{tok.vocab_size} characters; {len(train_ids):,} training and {len(val_ids):,} validation characters")
by_formula = gpt_param_count(config.vocab_size, config.block_size, config.n_layer, config.n_embd)
print(f"{config}\n{n_params:,} parameters ({by_formula:,} by your formula)")
with torch.no_grad():
    _x0 = train_ids[:config.block_size][None]
    _, loss0 = model(_x0, train_ids[1:config.block_size + 1][None])
print(f"loss at initialisation {loss0.item():.3f} nats; ln V = {math.log(tok.vocab_size):.3f}")

# %% [markdown]
# The run is cut into four parts; after each, the model writes a few lines. `lmcourse.train`
# saves a checkpoint when it stops and `resume=True` continues from it with exactly the batches
# and learning rates of one uninterrupted run, so the four parts *are* one run.

# %%
# the recipe: AdamW, warm-up over 5 % of the steps, cosine to a tenth, clipping at 1; a high peak
# learning rate for a small model trained briefly (on a CPU, two thirds of the profile's steps)
cfg = R.train_config(seed=rt.seed, compile=on_gpu, quiet=True,
                     checkpoint_path=str(Path(tempfile.mkdtemp()) / "gpt.ckpt"), resume=True)
sample_gen = torch.Generator(device=rt.device).manual_seed(rt.seed)  # on the device where sampling runs
prompt = torch.tensor([tok.encode("\n")], device=rt.device)
train_start = time.perf_counter()
for part in range(1, 5):
    hist = train(model, train_ids, val_ids, cfg, stop_after=part * cfg.steps // 4)
    model.eval()
    text = tok.decode(generate(model, prompt, R.sample_chars, generator=sample_gen)[0].tolist())
    model.train()
    print(f"--- step {hist.steps[-1]}: train loss {hist.train_loss[-1]:.3f}, val loss {hist.final_val_loss:.3f}")
    print(text.strip())
train_seconds = time.perf_counter() - train_start
print(f"\ntrained in {train_seconds:.0f} s ({hist.tokens_per_sec:,.0f} tokens/s on {rt.device})")
ax = plot.loss_curves({"GPT": hist}, title=f"GPT on Shakespeare ({P.name})")
ax.axhline(math.log(tok.vocab_size), color="gray", lw=0.8, ls=":", label="uniform guess, ln V")
ax.legend()
plt.show()

# %% [markdown]
# The trained model goes to the course cache, where notebook 07 (decoding) picks it up:
# `lmcourse.nn.load_gpt(path)` rebuilds it as the reference GPT (same names, same weights), and
# the saved vocabulary rebuilds the tokenizer, `CharTokenizer(extra["vocabulary"])`. (Nothing is
# written under the autograder.)

# %%
gpt_checkpoint = data_dir() / "checkpoints" / f"05_gpt_{P.name}.pt"
if is_autograding():
    print("autograding: the model is not saved")
else:
    lmcourse.nn.save_gpt(model, gpt_checkpoint, vocabulary=list(tok.itos), profile=P.name,
                         val_loss=hist.final_val_loss, steps=hist.steps[-1])
    print(f"saved to {gpt_checkpoint}")

# %% [markdown]
# ## 6. The ladder: what each step of the course bought
#
# One number per model: **bits per character** on the same validation text (the first
# `eval_batches × batch_size × block_size` characters of the validation plays, in windows of
# `block_size` characters), $\text{bpc} = \text{loss in nats} / \ln 2$. The models:
#
# * a character **n-gram** of order `max_order` with interpolated **Kneser–Ney** smoothing
#   (notebook 01's estimator, `lmcourse.ngram`, counted here on characters);
# * the **RNN** and the **LSTM** of notebook 02, with the same sizes and recipe. Notebook 02 does
#   not save them, so they are trained here within this profile's budget, and kept in the course
#   cache for the next run (the cell says which it did);
# * your **GPT**.
#
# Expect a surprise on a CPU. Counting is cheap: the n-gram has seen every one of the 4.3 million
# training characters, and a 5-gram already knows most spellings. The neural models, after a few
# minutes of training, have seen each character about once. (Measured on the `cpu` profile:
# 5-gram 2.17 bits per character, RNN 2.57, LSTM 2.51, GPT 2.47.) The count-based model gains
# nothing from more compute; the neural ones keep improving, and with the `gpu` profile's budget
# the GPT is expected to pass it: nanoGPT's model of that size reaches 1.47 nats, 2.12 bits per
# character, on the similar Tiny Shakespeare.

# %%
from lmcourse.recipes import rnn as rnn_recipe

def bits_per_char(model, ids, block_size):
    """Mean loss in bits over consecutive windows of ids (each window starts without context)."""
    n = (len(ids) - 1) // block_size * block_size
    x = ids[:n].view(-1, block_size).to(rt.device)
    y = ids[1:n + 1].view(-1, block_size).to(rt.device)
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), 64):
            out = model(x[i:i + 64])
            logits = out[0] if isinstance(out, tuple) else out
            total += F.cross_entropy(logits.float().flatten(0, 1), y[i:i + 64].flatten(), reduction="sum").item()
    return total / (n * math.log(2))


def ngram_bits_per_char(text_train, text_eval, order, vocab_size):
    """Interpolated Kneser-Ney on characters (lmcourse.ngram): bits per character of text_eval."""
    from collections import Counter

    from lmcourse.ngram import build_kn_tables, kneser_ney_prob

    raw = Counter(tuple(text_train[i:i + order]) for i in range(len(text_train) - order + 1))
    tables = build_kn_tables(raw)
    bits = 0.0
    for i in range(1, len(text_eval)):
        context = tuple(text_eval[max(0, i - order + 1):i])
        bits -= math.log2(kneser_ney_prob(tables, vocab_size, context, text_eval[i]))
    return bits / (len(text_eval) - 1)


class RecurrentLM(nn.Module):
    """Notebook 02's character models: embedding -> nn.RNN or nn.LSTM -> output layer."""

    def __init__(self, kind, vocab_size, n_embd):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.rnn = (nn.LSTM if kind == "LSTM" else nn.RNN)(n_embd, n_embd, batch_first=True)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        return self.lm_head(self.rnn(self.wte(idx))[0])  # (B, T, V)


n_eval = min(len(val_ids) - 1, P.eval_batches * P.batch_size * P.block_size)
eval_ids = val_ids[:n_eval + 1]
ladder = {}
_t = time.perf_counter()
_train_text = corpus.text("train")
if P.max_sentences is not None:  # tiny: count on the first part of the training text only
    _train_text = _train_text[:100 * P.max_sentences]
ladder[f"{P.max_order}-gram, Kneser-Ney"] = ngram_bits_per_char(_train_text, corpus.text("val")[:n_eval + 1],
                                                               P.max_order, tok.vocab_size)
print(f"{P.max_order}-gram counted and scored in {time.perf_counter() - _t:.0f} s")
R02 = rnn_recipe.recipe(P.name)  # notebook 02's recipe; no curves here: validated as the profile says
rnn_cfg = R02.train_config(eval_interval=P.eval_interval, seed=rt.seed, quiet=True)
for kind in ("RNN", "LSTM"):
    torch.manual_seed(rt.seed)
    rnn_model = RecurrentLM(kind, tok.vocab_size, R02.n_embd)
    path = data_dir() / "checkpoints" / f"02_{kind.lower()}_{P.name}.pt"
    # a checkpoint is used only if it was trained exactly as this cell would train it
    recipe = {"kind": kind, "profile": P.name, "n_embd": R02.n_embd, "steps": rnn_cfg.steps,
              "vocabulary": list(tok.itos)}
    saved = torch.load(path, map_location="cpu") if path.exists() and not is_autograding() else None
    if saved is not None and all(saved.get(k) == v for k, v in recipe.items()):
        rnn_model.load_state_dict(saved["model"])
        print(f"{kind}: loaded from {path}")
    else:
        _t = time.perf_counter()
        train(rnn_model, train_ids, val_ids, rnn_cfg)
        print(f"{kind}: trained here, {rnn_cfg.steps} steps in {time.perf_counter() - _t:.0f} s "
              "(no checkpoint of this recipe in the course cache)")
        if not is_autograding():
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"model": rnn_model.state_dict(), **recipe}, path)
    ladder[kind] = bits_per_char(rnn_model.to(rt.device), eval_ids, P.block_size)
ladder["GPT (yours)"] = bits_per_char(model, eval_ids, config.block_size)
print(f"\nbits per character on {n_eval:,} validation characters (uniform: {math.log2(tok.vocab_size):.2f})")
for name, bpc in ladder.items():
    print(f"  {name:<22} {bpc:.3f}")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.barh(list(ladder)[::-1], list(ladder.values())[::-1], color="tab:blue")
for i, v in enumerate(list(ladder.values())[::-1]):
    ax.text(v, i, f" {v:.2f}", va="center")
ax.set_xlabel("validation bits per character (lower is better)")
ax.set_title(f"The ladder ({P.name} profile)")
plt.show()

# %% [markdown]
# ## 7. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** A GPT with vocabulary $|V|$ and width $d$ ties its head to its token embedding. Compared
# with an untied head, it has
#
# * A. the same number of parameters: tying only changes how they are initialised.
# * B. $|V| \cdot d$ fewer parameters, and the embedding matrix receives gradient from both the
#   input and the output side.
# * C. $d^2$ fewer parameters, because the head becomes a square matrix.
# * D. half the parameters of the whole model.

# %% solution="q1"
# Your answer, one letter: answer_q1 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q1 = "B"
### END SOLUTION

# %% tests="q1_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q1, "ABCD", "answer_q1")
visible_checks_pass("answer_q1")
### BEGIN HIDDEN TESTS
check_choice(answer_q1, "ABCD", "answer_q1", correct="B")
### END HIDDEN TESTS

# %% [markdown]
# **Q2.** You double the depth of a GPT from $L$ to $2L$ layers and keep GPT-2's initialisation.
# The standard deviation of the weights of each residual projection
#
# * A. stays $0.02$.
# * B. is multiplied by $1/\sqrt{2}$, so the stream's variance at initialisation stays about the same.
# * C. is multiplied by $\sqrt{2}$, to make up for the extra LayerNorms.
# * D. is multiplied by $1/2$.

# %% solution="q2"
# Your answer, one letter: answer_q2 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q2 = "B"
### END SOLUTION

# %% tests="q2_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q2, "ABCD", "answer_q2")
visible_checks_pass("answer_q2")
### BEGIN HIDDEN TESTS
check_choice(answer_q2, "ABCD", "answer_q2", correct="B")
### END HIDDEN TESTS

# %% [markdown]
# **Q3.** During training, the GPT computes logits for all $T$ positions of a window in one
# forward pass. Why is that allowed?
#
# * A. Because with teacher forcing every position's input is the true text, and the causal mask
#   keeps each position from seeing the token it must predict.
# * B. Because the model predicts all $T$ tokens at once and they are sampled together.
# * C. Because positions are independent: attention does not mix them.
# * D. It is not: the loss should use the last position only.

# %% solution="q3"
# Your answer, one letter: answer_q3 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q3 = "A"
### END SOLUTION

# %% tests="q3_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q3, "ABCD", "answer_q3")
visible_checks_pass("answer_q3")
### BEGIN HIDDEN TESTS
check_choice(answer_q3, "ABCD", "answer_q3", correct="A")
### END HIDDEN TESTS

# %% [markdown]
# **Q4 (free text, graded by hand).** In three to five sentences: (a) why should the loss of a
# freshly initialised GPT be close to $\ln |V|$, and what would a loss far above it at step 0 tell
# you? (b) In your ladder, which step of the course bought the most, and which the least? Give
# one reason for each, from what the models can see of the past.

# %% [markdown] answer="q4_free_text" points=2
# ### BEGIN SOLUTION
# (a) After the final LayerNorm every vector has entries of about unit size, and the head scores
# it against rows of the embedding drawn from N(0, 0.02²): each logit has a standard deviation of
# about 0.02·√d (0.23 for d = 128). The logits are nearly equal, the softmax nearly uniform, every
# character gets probability about 1/|V|, and the cross-entropy is ln |V| (4.17 nats for 65
# characters). A loss far above it says either that the loss is not a mean over positions (a sum
# grows with B·T) or that the model is confidently wrong from the start, with logits far too
# large: weights drawn with std 1 (26.8 nats, measured on a 4-layer, 128-wide model), or
# embeddings left at PyTorch's N(0, 1), which the tied head then uses as its rows (87 nats). The
# first steps of training are then spent undoing the initialisation.
# (b) On the cpu profile (2.17 / 2.57 / 2.51 / 2.47 bits per character) the largest step is
# from the neural models' point of view a step *down*: the 5-gram, counted over the whole
# training text, beats every neural model trained for a few minutes, because counting sees all
# 4.3 million characters at once while gradient descent has seen each about once. Among the
# neural models each step is small after a few minutes of training: the LSTM gains 0.06 bits over
# the RNN (its gates let the gradient reach further back than the RNN's single squashed vector),
# and the GPT 0.05 over the LSTM, the least, although each of its positions attends directly to
# every earlier character of its window: a 64-character window and a short run leave it little
# long context to use.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You built a GPT from the reference blocks — embeddings with learned positions, a pre-LN stack,
# the final LayerNorm and a head tied to the embedding — checked it against the reference in
# float64, gave it GPT-2's initialisation, counted its parameters (and GPT-2 small's 124 million),
# wrote the sampler, and trained it with the course's loop on every device. The ladder shows
# what attention bought over counting and recurrence. (A test of the course checks this
# architecture against the `transformers` library's GPT-2, logit for logit.)
#
# **Next:** notebook 06 replaces characters by subword tokens, and notebook 07 decodes from the
# model you just saved: greedy, beam search, top-k and nucleus sampling.

# %%
print(f"whole notebook: {time.perf_counter() - _notebook_start:.0f} s in profile {P.name} on {rt.device} "
      f"with {rt.threads} CPU thread(s)")
