"""Notebook 05's tests (the GPT): the visible cases, with the hints that teach.

Each case builds its own inputs and, for a model, the student's GPT with the test's config and weights
chosen here (seeded by the parameter's name, loaded by the names the prose states), runs it and returns
what the judge compares; the expected value is the same call on the reference's names
(:mod:`lmcourse.reference.gpt`, itself checked against ``lmcourse.nn.gpt`` in the course's tests), except
where a test states its own (the loss at initialisation, the shares of sampled ids). ``init_weights`` runs
on the reference GPT (a stand-in), and what it leaves is recorded as statistics of each parameter. The
hidden cases are in :mod:`.gpt_hidden`.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

from .rules import Later, exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question
from .tensors import (
    DeviceLog,
    FixedLogits,
    equal,
    fields,
    pair,
    plain_tensor,
    seed_cpu,
    seeded_generator,
    seeded_weights,
    tensor,
    unreached,
)

__all__ = ["NOTEBOOK", "Cfg", "FixedLogits", "grab", "load_weights", "model_case", "pair", "shares_close", "spoiled",
           "stats"]

_F64 = torch.float64

# ------------------------------------------------------------------ 1. GPT

@dataclass
class Cfg:  # the tests' own config: a GPT is judged on the sizes the test gives, whatever the notebook's config
    vocab_size: int = 11
    block_size: int = 8
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True


GPT_NAMES = "wte, wpe, drop, blocks, ln_f, lm_head"


def load_weights(model: nn.Module, seed: int, scale: float = 0.3, gain: float = 1.0, bias: float = 0.1,
                 dtype=_F64) -> nn.Module:
    """``model`` in ``dtype`` with every parameter of its state dict drawn afresh, each from a generator seeded by
    ``seed`` and the parameter's name (so the reference's model gets the same weights under the same names):
    matrices ~ N(0, scale^2), LayerNorm gains around ``gain``, other vectors ~ N(0, bias^2); ``lm_head.weight``
    the values of ``wte.weight`` (tied or not); buffers of the student's own kept."""
    return seeded_weights(model, seed, scale, gain, bias, is_gain=lambda name, value: name.endswith("weight"),
                          tied={"lm_head.weight": "wte.weight"}, dtype=dtype)


def _built(names, cfg, seed: int = 500, dtype=_F64, **kw) -> nn.Module:
    return load_weights(names.GPT(cfg), seed, dtype=dtype, **kw).eval()


def _idx(shape=(3, 8), vocab=11, seed=501):
    g = seeded_generator(seed)
    return torch.randint(vocab, shape, generator=g), torch.randint(vocab, shape, generator=g)


def _param_names(model: nn.Module) -> list[str]:
    return sorted(str(n) for n, _ in model.named_parameters(remove_duplicate=False))


def _structure(names):
    cfg = Cfg()
    m = names.GPT(cfg)
    kinds = {"wte": nn.Embedding, "wpe": nn.Embedding, "drop": nn.Dropout, "blocks": (nn.ModuleList, nn.Sequential),
             "lm_head": nn.Linear}
    attrs = {n: isinstance(getattr(m, n, None), t) for n, t in kinds.items()}
    if not all(attrs.values()):
        return {"attrs": attrs}
    from lmcourse.nn import Block

    return {"attrs": attrs, "config": getattr(m, "config", None) is cfg, "wte": tuple(m.wte.weight.shape),
            "wpe": tuple(m.wpe.weight.shape), "n_blocks": len(m.blocks),
            "blocks": all(isinstance(b, Block) for b in m.blocks), "head_bias": m.lm_head.bias is None,
            "tied": m.lm_head.weight is m.wte.weight, "n_params": sum(p.numel() for p in m.parameters()),
            "names": _param_names(m)}


_KINDS = {"wte": "Embedding", "wpe": "Embedding", "drop": "Dropout", "blocks": "ModuleList or Sequential",
          "lm_head": "Linear"}


def _count_diagnosis(got: int, want: int, V: int, L: int, d: int) -> str | None:
    """What a parameter count that is off by a known piece leaves out or adds."""
    diff = got - want
    block = 12 * d * d + 13 * d
    known = {V * d: "the head has parameters of its own: tie it, self.lm_head.weight = self.wte.weight (one tensor)",
             -2 * d: "the final LayerNorm ln_f is missing",
             -block * (L - 1): "the blocks share one Block: build n_layer separate blocks (a list of one Block "
                               "repeated is the same module n_layer times)"}
    return known.get(diff)


def names_compare(cfg_bias: bool = True) -> Compare:
    """The parameter names of the student's GPT against the reference's."""
    def compare(got, want):
        have, need = set(got), set(want)
        extra_biases = sorted(k for k in have - need if k.endswith("bias"))
        if extra_biases and not cfg_bias:
            return (f"with bias=False your GPT still has biases {extra_biases[:4]}: pass bias=config.bias to every "
                    "BlockConfig and to every LayerNorm and Linear layer you make yourself")
        if have != need:
            return (f"your GPT's parameter names differ from the ones asked for: missing {sorted(need - have)[:4]}, "
                    f"unexpected {sorted(have - need)[:4]} — use the attribute names {GPT_NAMES} (buffers of your "
                    "own are fine; parameters are only these)")
        return None
    return compare


def _structure_compare(got, want):
    for n, ok in got["attrs"].items():
        if not ok:
            return f"GPT should have self.{n}, " + ("an " if _KINDS[n][0] in "AEIOU" else "a ") + _KINDS[n]
    if not got["config"]:
        return "store the config as self.config"
    checks = [("wte", "the shape of wte.weight (vocab_size, n_embd)", None),
              ("wpe", "the shape of wpe.weight (block_size, n_embd)", "one learned vector per position 0 .. "
                                                                      "block_size - 1"),
              ("n_blocks", "the number of blocks for n_layer = 2", None)]
    for key, what, hint in checks:
        diff = equal(what, hint)(got[key], want[key])
        if diff:
            return diff
    if not got["blocks"]:
        return "self.blocks should hold lmcourse.nn.Block modules"
    if not got["head_bias"]:
        return "the LM head has no bias: nn.Linear(n_embd, vocab_size, bias=False)"
    if not got["tied"]:
        return ("the LM head's weight must be the embedding's weight itself (one tensor): self.lm_head.weight = "
                "self.wte.weight — not a copy (.clone(), nn.Parameter(...clone()), copy_) and not a separate matrix")
    if got["n_params"] != want["n_params"]:
        why = _count_diagnosis(got["n_params"], want["n_params"], 11, 2, 16)
        return (f"the number of parameters of your GPT (tied head counted once): got {got['n_params']}, expected "
                f"{want['n_params']} — " + (why or "the head adds no parameters of its own when it is tied"))
    return names_compare()(got["names"], want["names"])


_INDEX_HINT = ("an index out of range in an embedding: the positions are 0..T-1 (torch.arange(T)), which index wpe "
               "(block_size rows); token ids index wte")
_LOGITS_HINT = ("x = wte(idx) + wpe(positions 0..T-1) (positions, not token ids), through every block in order, then "
                "ln_f, then lm_head; each block is Block(BlockConfig(n_embd=..., n_head=..., block_size=..., "
                "dropout=..., bias=...)), whose other defaults (causal, pre-LN) are right")
_T_HINT = ("the positions are 0..T-1 with T = idx.shape[1] (idx is (B, T)): the first T rows of the table, broadcast "
           "over the batch")
_POS_ERRORS = (("index out of range", _INDEX_HINT), ("must match the size", _T_HINT))


def _forward(names):
    idx, _ = _idx()
    m = _built(names, Cfg())
    before = idx.clone()
    with torch.no_grad():
        out = m(idx)
    return {"out": out, "idx": idx, "before": before}


def _forward_compare(got, want):
    out = got["out"]
    if type(out) is not tuple or len(out) != 2:
        return f"forward should return a pair (logits, loss), it returned {show(out)}"
    if out[1] is not None:
        return f"without targets, forward returns (logits, None); the second value is {show(out[1])}"
    logits, ref = out[0], want["out"][0]
    if type(logits) is not torch.Tensor or logits.shape != ref.shape:
        return tensor(shape=_ALL_POSITIONS, what="the logits for idx of shape (3, 8)")(logits, ref)
    return tensor(values="do not change idx in place", what="idx after calling your model")(got["idx"], got["before"]) \
        or tensor(dtype="no float32 constants or .float() inside", values=_LOGITS_HINT, atol=1e-10, rtol=1e-10,
                  what="your logits vs the reference GPT with the same weights")(logits, ref)


def _logits_of(names, cfg, idx, seed=500, dtype=_F64):
    m = _built(names, cfg, seed, dtype)
    with torch.no_grad():
        return pair(m(idx))[0]


def _short(names):
    idx, _ = _idx()
    return _logits_of(names, Cfg(), idx[:, :5])


def _with_targets(names):
    idx, tgt = _idx()
    m = _built(names, Cfg())
    with torch.no_grad():
        logits, loss = pair(m(idx, tgt))
    return loss


def _loss_compare(what: str, hint: str | None, atol=1e-8, rtol=1e-6) -> Compare:
    """A loss: a 0-dimensional tensor, its value close to the reference's (any float dtype: a loss computed in
    float32 for a float64 model is fine)."""
    def compare(got, want):
        if type(got) is not torch.Tensor:
            return f"{what}: got {show(got)}, expected a torch.Tensor"
        if got.dim() != 0:
            return (f"{what}: shape {tuple(got.shape)}, expected () — a 0-dimensional tensor: the mean over all "
                    "positions")
        g, w = float(got.double()), float(want.double())
        if abs(g - w) <= atol + rtol * abs(w):
            return None
        if w and abs(g / w - 24) < 1e-6 * 24:
            return (f"{what}: got {g:.6g}, expected {w:.6g} — 24 times too large: the loss is a sum over the B * T = "
                    "24 positions; take the mean (F.cross_entropy's default reduction)")
        return f"{what}: got {g:.6g}, expected {w:.6g}" + (f" — {hint}" if hint else "")
    return compare


def _no_bias(names):
    idx, _ = _idx()
    cfg = Cfg(bias=False, n_layer=1)
    m = names.GPT(cfg)
    got = {"names": _param_names(m)}
    load_weights(m, 500).eval()
    with torch.no_grad():
        got["logits"] = pair(m(idx))[0]
    return got


def _float32(names):
    idx, tgt = _idx()
    m = _built(names, Cfg(), dtype=torch.float32)
    with torch.no_grad():
        logits, _ = pair(m(idx, tgt))
    return logits


def _grads(names):
    idx, tgt = _idx()
    m = _built(names, Cfg())
    m.zero_grad()
    loss = pair(m(idx, tgt))[1]
    plain_tensor(loss, "the loss").backward()
    return unreached(m, nonzero=True)


def _meta(names):
    # one layer: the blocks are the course's, and each operation on 'meta' runs Python meta kernels under the rules
    m = names.GPT(Cfg(n_layer=1)).to("meta")
    log = DeviceLog()
    with log, torch.no_grad():
        out = plain_tensor(pair(m(torch.zeros(2, 5, dtype=torch.long, device="meta")))[0], "the logits")
    return {"mixed": list(log.mixed), "out": out}


def _meta_compare(got, want):
    if got["mixed"]:
        return (f"with the model and idx on the 'meta' device, your forward mixed devices in {got['mixed'][:2]}: make "
                "the positions on idx's device, torch.arange(T, device=idx.device)")
    return tensor(device="the logits live on idx's device", what="the device of the logits for a model and ids on "
                  "'meta'")(got["out"], want["out"])


@contextlib.contextmanager
def grab(module: nn.Module):
    """Within the block, the first input of ``module``'s forward is replaced by a detached copy that requires
    grad, kept as ``.x`` of the namespace yielded."""
    got = SimpleNamespace(x=None)

    def hook(_module, args):
        got.x = args[0].detach().requires_grad_()
        return (got.x, *args[1:])

    handle = module.register_forward_pre_hook(hook)
    try:
        yield got
    finally:
        handle.remove()


def _causal(names):
    """Whether the logits at positions 0, 3, 6 have a gradient from the first block's input at later positions."""
    idx, _ = _idx()
    m = _built(names, Cfg())
    with grab(m.blocks[0]) as cap:
        lg = plain_tensor(pair(m(idx[:1]))[0], "the logits")
    if tuple(lg.shape) != (1, 8, 11):
        return {"shape": tuple(lg.shape)}
    leaks = []
    for t in (0, 3, 6):
        (g,) = torch.autograd.grad(lg[0, t].sum(), cap.x, retain_graph=True)
        leaks.append(float(g[0, t + 1:].abs().sum()) != 0.0)
    return {"shape": tuple(lg.shape), "leaks": leaks}


_ALL_POSITIONS = "logits for every position (B, T, vocab_size), also when targets is None"


def _causal_compare(got, want):
    if got["shape"] != want["shape"]:
        return f"the logits for idx of shape (1, 8): shape {got['shape']}, expected {want['shape']} — {_ALL_POSITIONS}"
    for t, leak in zip((0, 3, 6), got["leaks"]):
        if leak:
            return (f"the logits at position {t} have a gradient from the input of the first block at later "
                    "positions: the model sees the future. Keep the blocks causal (BlockConfig's default causal=True)")
    return None


def _dropout_eval(names):
    idx, _ = _idx()
    m = _built(names, Cfg(dropout=0.5))
    with torch.no_grad():
        return {"e1": pair(m(idx))[0], "e2": pair(m(idx))[0]}


def _dropout_eval_compare(got, want):
    return tensor(values="use the nn.Dropout module self.drop (it follows model.eval()); F.dropout(x, p) is on unless "
                         "told training=self.training", atol=1e-10, rtol=1e-10,
                  what="GPT with dropout = 0.5 in eval mode vs the reference")(got["e1"], want["e1"]) \
        or tensor(what="two calls in eval mode")(got["e2"], got["e1"])


def _dropout_train(names):
    idx, _ = _idx()
    m = _built(names, Cfg(dropout=0.5))
    with torch.no_grad():
        ev = pair(m(idx))[0]
        m.train()
        seed_cpu(502)
        tr = pair(m(idx))[0]
    return {"eval": ev, "train": tr}


def _changed(got, want):
    tr, ev = plain_tensor(got["train"], "the logits"), plain_tensor(got["eval"], "the logits")
    if tr.shape != ev.shape or float((tr - ev).abs().max()) > 1e-6:
        return None
    return ("with dropout = 0.5 in training mode the logits should change: apply self.drop to x = wte(idx) + "
            "wpe(pos), and pass dropout to the blocks")


def _first_input(names):
    """The first block's input in training mode with dropout = 0.5, and wte(idx) + wpe(0..T-1) of the test's
    weights."""
    idx, _ = _idx()
    m = _built(names, Cfg(dropout=0.5)).train()
    seed_cpu(507)
    with torch.no_grad(), grab(m.blocks[0]) as cap:
        m(idx)
    w = {n: p for n, p in load_weights(nn.ModuleDict({"wte": nn.Embedding(11, 16), "wpe": nn.Embedding(8, 16)}),
                                       500).named_parameters()}
    with torch.no_grad():
        emb = w["wte.weight"][idx] + w["wpe.weight"][:8]
    return {"x": plain_tensor(cap.x, "the first block's input").detach().clone(), "emb": emb}


def _first_input_compare(got, want):
    x, emb = got["x"], want["emb"]
    kept = x != 0
    if not bool(kept.any()) or bool(kept.all()):
        return ("with dropout = 0.5 in training mode about half of the first block's input should be 0: apply "
                "self.drop to x = wte(idx) + wpe(pos) before the blocks (not after ln_f, not only inside the blocks)")
    return tensor(values="the first block reads self.drop(wte(idx) + wpe(pos)): dropout once, on the sum, scaled by "
                         "1 / (1 - p)", atol=1e-10, rtol=1e-10,
                  what="the entries of the first block's input that dropout keeps (p = 0.5)")(x[kept], 2 * emb[kept])


def _block_dropout(names):
    m = _built(names, Cfg(dropout=0.5)).train()
    xb = torch.randn(2, 8, 16, generator=seeded_generator(503), dtype=_F64)
    with torch.no_grad():
        return {"b1": m.blocks[0](xb), "b2": m.blocks[0](xb)}


def _block_dropout_compare(got, want):
    b1, b2 = plain_tensor(got["b1"], "the block's output"), plain_tensor(got["b2"], "the block's output")
    if b1.shape == b2.shape and float((b1 - b2).abs().max()) <= 1e-6:
        return ("with dropout = 0.5 the first block gives the same output twice in training mode: pass "
                "dropout=config.dropout to each block's BlockConfig")
    return None


def _init_loss(names):
    """Sanity check 1: with small weights (N(0, 0.02^2), gains 1, biases 0) the loss is about ln V."""
    cfg = Cfg(vocab_size=65, n_embd=32, block_size=16)
    m = _built(names, cfg, seed=503, scale=0.02, bias=0.0)
    g = seeded_generator(503)
    with torch.no_grad():
        loss = pair(m(torch.randint(65, (8, 16), generator=g), torch.randint(65, (8, 16), generator=g)))[1]
    return float(plain_tensor(loss, "the loss"))


def _init_loss_compare(got, want):
    if abs(got - want) <= 0.1:
        return None
    return (f"the loss at initialisation (V = 65): got {got:.4g}, expected about ln 65 = {want:.4g} — small random "
            "weights give almost uniform predictions, whose cross-entropy is ln V = 4.17; a very different value "
            "means the loss is not a mean, or the logits are scaled")


def _overfit(names):
    """Sanity check 2: 40 steps of AdamW on one batch."""
    seed_cpu(504)
    m = load_weights(names.GPT(Cfg(n_layer=1, n_embd=32)), 504, scale=0.02, bias=0.0, dtype=torch.float32).train()
    g = seeded_generator(504)
    x, y = torch.randint(11, (4, 8), generator=g), torch.randint(11, (4, 8), generator=g)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    for _ in range(40):
        loss = plain_tensor(pair(m(x, y))[1], "the loss")
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())


def _overfit_compare(got, want):
    if got < 0.2:
        return None
    return (f"after 40 steps on one batch the loss is still {got:.3f}; a model that cannot memorise 32 targets has a "
            "bug (is every parameter trained? is the loss computed from the logits?)")


_GPT_RULE = ("build the GPT from nn.Embedding, lmcourse.nn.Block, a LayerNorm and nn.Linear, not the course's "
             "reference GPT")

GPT = Exercise("gpt", (
    Case("GPT(config) with vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16", _structure,
         compare=_structure_compare),
    Case("causality: the logits at position t and the first block's input after t", _causal,
         compare=_causal_compare, errors=_POS_ERRORS),
    Case("model(idx) on ids of shape (3, 8), with the test's weights", _forward, compare=_forward_compare,
         errors=_POS_ERRORS),
    Case("model(idx) with T = 5 < block_size", _short,
         compare=tensor(values="use the first T position vectors, wpe(torch.arange(T)); causal blocks make the first "
                               "5 positions independent of what follows", atol=1e-10, rtol=1e-10,
                        what="the logits for the first 5 positions (T = 5 < block_size = 8)"),
         errors=(("must match the size", "use the first T position vectors, wpe(torch.arange(T)), not the whole "
                                         "table of block_size rows"),)),
    Case("model(idx, targets)", _with_targets,
         compare=_loss_compare("the loss for (3, 8) ids and targets",
                               "the mean cross-entropy over all B * T positions: F.cross_entropy(logits.view(B * T, "
                               "V), targets.view(B * T)), with the targets as given (they are already shifted)"),
         errors=(("target size", "flatten the logits to (B * T, V) and the targets to (B * T,): "
                                 "F.cross_entropy(logits.view(B * T, V), targets.view(B * T))"),)),
    Case("model(idx) with bias=False", _no_bias, compare=fields(
        ("names", names_compare(cfg_bias=False)),
        ("logits", tensor(atol=1e-10, rtol=1e-10, what="your logits vs the reference GPT with bias=False")))),
    Case("a float32 model(idx, targets)", _float32,
         compare=tensor(dtype="the logits have the model's dtype: no .double() or float64 constants inside",
                        atol=1e-5, rtol=1e-5, what="the logits of a float32 model")),
    Case("the gradient of the loss for every parameter", _grads,
         compare=lambda got, want: None if not got else (
             f"the loss gives no gradient to {got[0]}: compute the logits and the loss with tensor operations on the "
             "parameters themselves (no .detach(), .data or .item() on the way)")),
    Case("model(idx) on the 'meta' device", _meta, compare=_meta_compare,
         errors=(("meta", "make the positions on idx's device, torch.arange(T, device=idx.device)"),
                 ("device", "make the positions on idx's device, torch.arange(T, device=idx.device)"))),
    Case("GPT with dropout = 0.5 in eval mode", _dropout_eval, compare=_dropout_eval_compare),
    Case("GPT with dropout = 0.5 in training mode", _dropout_train, compare=_changed),
    Case("the first block's input with dropout = 0.5 in training mode", _first_input, compare=_first_input_compare),
    Case("the first block with dropout = 0.5 in training mode, twice", _block_dropout,
         compare=_block_dropout_compare),
    Case("the loss at initialisation (V = 65)", _init_loss, compare=_init_loss_compare,
         expect=lambda names: math.log(65)),
    Case("40 steps of AdamW on one batch", _overfit, compare=_overfit_compare),
), answer="GPT", rules=exercise_rules(_GPT_RULE, "lmcourse.nn.gpt:GPT"))


def model_case(cfg: Cfg, T: int, seed: int) -> Any:
    """The call of a hidden case: ``GPT(cfg)`` with the test's weights on (2, T) ids: its parameter names, whether
    the head is tied, its parameter count, the logits and the loss."""
    def call(names):
        m = names.GPT(cfg)
        got = {"names": _param_names(m), "tied": m.lm_head.weight is m.wte.weight,
               "n_params": sum(p.numel() for p in m.parameters())}
        load_weights(m, seed).eval()
        g = seeded_generator(seed)
        ids = torch.randint(cfg.vocab_size, (2, T), generator=g)
        tgt = torch.randint(cfg.vocab_size, (2, T), generator=g)
        with torch.no_grad():
            got["logits"], got["loss"] = pair(m(ids, tgt))
        return got
    return call


def model_compare(what: str, bias: bool = True) -> Compare:
    return fields(("names", names_compare(bias)), ("tied", equal(f"tied head for {what}")),
                  ("n_params", equal(f"parameters of GPT({what})")),
                  ("logits", tensor(atol=1e-10, rtol=1e-10, what=f"logits for {what}")),
                  ("loss", _loss_compare(f"loss for {what}", None)))


# ------------------------------------------------------------------ 2. init_weights

def spoiled(names, n_layer=4, n_embd=64, dtype=torch.float32, device="cpu", bias=True) -> nn.Module:
    """The reference GPT (the stand-in ``GPT``) whose every parameter is 7.0, so nothing left untouched looks
    initialised."""
    model = names.GPT(Cfg(vocab_size=65, block_size=64, n_layer=n_layer, n_head=4, n_embd=n_embd, bias=bias))
    model = model.to(dtype=dtype, device=device)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(7.0)
    return model


def stats(p: torch.Tensor) -> dict:
    """A parameter after initialisation: its standard deviation, mean, smallest and largest entries."""
    with torch._C.DisableTorchFunction():
        t = plain_tensor(p.detach(), "a parameter").double()
        return {"std": float(t.std()) if t.numel() > 1 else 0.0, "mean": float(t.mean()), "min": float(t.min()),
                "max": float(t.max())}


def _is_ln(name: str) -> bool:
    return ".ln" in name or name.startswith("ln_f")


def _init_gpt(names):
    model = spoiled(names)
    before = dict(model.named_parameters())
    seed_cpu(505)
    ret = names.init_weights(model, 4)
    params = dict(model.named_parameters())
    pooled = torch.cat([p.detach().double().flatten() / p.detach().double().std() for n, p in params.items()
                        if p.dim() == 2 and not n.endswith("c_proj.weight")])
    centred = pooled - pooled.mean()
    return {"returned": ret is None or ret is model, "in_place": all(p is before.get(n) for n, p in params.items()),
            "tied": model.lm_head.weight is model.wte.weight,
            "stats": {str(n): stats(p) for n, p in params.items()},
            "kurtosis": float(centred.pow(4).mean() / centred.pow(2).mean() ** 2)}


def _rel(got: float, want: float, rel: float) -> bool:
    return abs(got - want) <= rel * abs(want)


_STD_HINT = ("every nn.Linear and nn.Embedding weight ~ N(0, 0.02²): nn.init.normal_(w, mean=0.0, std=0.02) (std, not "
             "variance)")


def _init_gpt_compare(got, want):
    if not got["returned"]:
        return "init_weights works in place and returns nothing"
    if not got["in_place"]:
        return "init_weights must fill the existing parameters in place (nn.init.normal_(p, ...)), not assign new ones"
    if not got["tied"]:
        return "after init_weights the head must still be tied to wte"
    gs, ws = got["stats"], want["stats"]
    for n, w in ws.items():
        if n.endswith("weight") and not _is_ln(n) and not n.endswith("c_proj.weight"):
            g = gs[n]
            if not _rel(g["std"], w["std"], 0.1):
                return f"the standard deviation of {n}: got {g['std']:.4g}, expected about {w['std']:.3g} — {_STD_HINT}"
            if abs(g["mean"] - w["mean"]) > 0.003:
                return f"the mean of {n}: got {g['mean']:.4g}, expected about 0"
    if abs(got["kurtosis"] - want["kurtosis"]) > 0.3:
        return (f"the kurtosis of the weights (a normal distribution's is 3, a uniform one's 1.8): got "
                f"{got['kurtosis']:.3g} — draw from a normal distribution, nn.init.normal_, not a uniform one with the "
                "same std")
    for n, w in ws.items():
        if n.endswith("c_proj.weight") and not _rel(gs[n]["std"], w["std"], 0.1):
            return (f"the standard deviation of {n} for n_layer = 4: got {gs[n]['std']:.4g}, expected about "
                    f"{w['std']:.3g} — the residual projections (names ending in c_proj.weight) get std 0.02 / "
                    "sqrt(2 * n_layer) = 0.00707, after the general initialisation")
    for n in ws:
        if n.endswith("bias") and not _is_ln(n) and (gs[n]["min"], gs[n]["max"]) != (0.0, 0.0):
            return "every bias of a Linear layer should be 0"
    for n, w in ws.items():
        if _is_ln(n) and (gs[n]["min"], gs[n]["max"]) != (w["min"], w["max"]):
            value = 1.0 if n.endswith("weight") else 0.0
            return (f"{n} should be {value} everywhere after init_weights (LayerNorm gain 1, shift 0); initialise only "
                    "nn.Linear and nn.Embedding weights from a normal distribution")
    return None


def _same(a: nn.Module, b: nn.Module) -> bool:
    with torch._C.DisableTorchFunction():
        return all(torch.equal(p.detach(), q.detach()) for p, q in zip(a.parameters(), b.parameters()))


def _repeatable(names):
    a, b = spoiled(names, n_layer=2, n_embd=16), spoiled(names, n_layer=2, n_embd=16)
    seed_cpu(7)
    names.init_weights(a, 2)
    seed_cpu(7)
    names.init_weights(b, 2)
    same = _same(a, b)
    seed_cpu(8)
    names.init_weights(b, 2)
    with torch._C.DisableTorchFunction():
        other = not torch.equal(a.wte.weight.detach(), b.wte.weight.detach())
    return {"same": same, "other": other}


def _repeatable_compare(got, want):
    if not got["same"]:
        return ("two calls after the same torch.manual_seed should give the same weights: draw with torch's global "
                "generator")
    if not got["other"]:
        return ("torch.manual_seed(7) and torch.manual_seed(8) gave the same weights: draw with torch's global "
                "generator (nn.init.normal_ does), not a generator of your own")
    return None


def any_model(names, layers: list[nn.Module], n_layer: int, std: float | None, seed: int | None = None):
    """``nn.Sequential(*layers)`` filled with 3.0, then ``init_weights``: each parameter's statistics."""
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(3.0)
    if seed is not None:
        seed_cpu(seed)
    names.init_weights(model, n_layer) if std is None else names.init_weights(model, n_layer, std=std)
    return {str(n): stats(p) for n, p in model.named_parameters()}


def _any(names):
    return any_model(names, [nn.Embedding(50, 40), nn.Linear(40, 60), nn.LayerNorm(60), nn.Linear(60, 40)], 3, 0.05, 9)


def _any_compare(got, want):
    for n, what in (("0.weight", "an nn.Embedding's"), ("3.weight", "an nn.Linear's")):
        if not _rel(got[n]["std"], want[n]["std"], 0.1):
            return (f"the standard deviation of {what} weight with std=0.05: got {got[n]['std']:.4g}, expected about "
                    f"{want[n]['std']:.3g} — use the std argument, not 0.02 written in")
    if any((got[n]["min"], got[n]["max"]) != (0.0, 0.0) for n in ("1.bias", "3.bias")):
        return "every nn.Linear bias should be 0"
    if any((got[n]["min"], got[n]["max"]) != (want[n]["min"], want[n]["max"]) for n in ("2.weight", "2.bias")):
        return ("an nn.LayerNorm's weight should be 1 and its bias 0: reset torch's nn.LayerNorm as well as lmcourse's "
                "LayerNorm")
    return None


def _dtypes(names):
    m = spoiled(names, n_layer=2, n_embd=16, dtype=_F64)
    names.init_weights(m, 2)
    return sorted({str(p.dtype) for p in m.parameters()})


def _devices(names):
    m = spoiled(names, n_layer=2, n_embd=16, device="meta")
    names.init_weights(m, 2)
    return sorted({p.device.type for p in m.parameters()})


def _no_bias_init(names):
    m = spoiled(names, n_layer=2, n_embd=64, bias=False)
    seed_cpu(508)
    names.init_weights(m, 8)
    return {"c_proj": stats(m.blocks[1].attn.c_proj.weight),
            "gains": [stats(ln.weight) for b in m.blocks for ln in (b.ln1, b.ln2)]}


def _no_bias_init_compare(got, want):
    g, w = got["c_proj"]["std"], want["c_proj"]["std"]
    if not _rel(g, w, 0.1):
        return (f"the standard deviation of blocks[1].attn.c_proj.weight for n_layer = 8 (a model of 2 blocks): got "
                f"{g:.4g}, expected about {w:.3g} — scale by 1 / sqrt(2 * n_layer) with the argument n_layer, not the "
                "model's own number of blocks")
    if got["gains"] != want["gains"]:
        return "with bias=False the LayerNorm gains should still be 1"
    return None


INIT_WEIGHTS = Exercise("init_weights", (
    Case("init_weights(model, n_layer=4) on the reference GPT (every parameter 7.0 before)", _init_gpt,
         compare=_init_gpt_compare),
    Case("init_weights after torch.manual_seed(7) twice, then 8", _repeatable, compare=_repeatable_compare),
    Case("init_weights(nn.Sequential(Embedding, Linear, LayerNorm, Linear), n_layer=3, std=0.05)", _any,
         compare=_any_compare),
    Case("the dtype of a float64 model's parameters after init_weights", _dtypes,
         compare=equal("the dtypes of the parameters", "init_weights must keep a float64 model's dtype")),
    Case("init_weights on a model on the 'meta' device", _devices,
         compare=equal("the devices of the parameters", "init_weights must keep the parameters' device")),
    Case("init_weights(model with bias=False, n_layer=8)", _no_bias_init, compare=_no_bias_init_compare,
         hint="with bias=False every bias is None, the LayerNorms' too: zero a bias only if it is not None"),
), standins=("GPT",),
    rules=exercise_rules("initialise the weights yourself, not with the course's reference init_gpt_weights",
                         "lmcourse.nn.gpt:init_gpt_weights", "lmcourse.nn.gpt:_init_gpt_weights",
                         "lmcourse.nn.mlm:init_mlm_weights"))


# ------------------------------------------------------------------ 3. gpt_param_count

def count_case(V: int, T: int, L: int, d: int) -> Case:
    label = f"gpt_param_count({V}, {T}, {L}, {d})"

    def compare(got, want):
        if type(got) is not int:
            return f"got {show(got)} ({type(got).__name__}), expected an int — return a Python int"
        if got == want:
            return None
        known = {V * d: "the tied head adds nothing: you counted it (V d too high)",
                 -2 * d: "the final LayerNorm's 2 d (gain and shift) is missing",
                 -T * d: "the position embeddings' T d are missing",
                 -L * 13 * d - 2 * d: "12 L d^2 counts only the blocks' matrices: add their biases and LayerNorms "
                                      "(13 d per block), the final LayerNorm (2 d) and the embeddings",
                 -L * 13 * d - d: "that is the count without biases: with bias=True every block has 13 d of biases "
                                  "and LayerNorm parameters, and the final LayerNorm 2 d"}
        why = known.get(got - want) if L else None
        return (f"got {got}, expected {want} — " + (why or "token embedding V d + positions T d + L blocks of "
                "12 d^2 + 13 d + final LayerNorm 2 d; the tied head adds nothing (count it and you are V d too high)"))
    return Case(label, lambda names: names.gpt_param_count(V, T, L, d), compare=compare)


GPT_PARAM_COUNT = Exercise("gpt_param_count", tuple(
    count_case(*c) for c in [(65, 256, 6, 384), (11, 8, 2, 16), (100, 32, 1, 8)]),
    rules=exercise_rules("compute the count from the formula, without building a model or calling the reference "
                         "count", "lmcourse.nn.gpt:gpt_param_count", nn.Module.__init__))


# ------------------------------------------------------------------ 4. generate

_LOGITS = [2.0, 1.0, 0.0, -1.0]


def _generate_first(names):
    m = FixedLogits(_LOGITS, block_size=4)
    idx = torch.tensor([[3, 1, 2], [0, 0, 1]])
    before = idx.clone()
    out = names.generate(m, idx, 6, generator=seeded_generator(0))
    report = m.report(out, 3)
    return {"out": out, "idx": idx, "before": before, "report": report}


def _generate_first_compare(got, want):
    out, ref = got["out"], want["out"]
    if type(out) is not torch.Tensor:
        return f"generate returned {show(out)}, expected a torch.Tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return (f"generate(model, idx of shape (2, 3), max_new_tokens=6): shape {tuple(out.shape)}, expected "
                f"{tuple(ref.shape)} — append one id per step to idx, along dim 1")
    if out.dtype != ref.dtype:
        return f"the dtype of generate's output: {out.dtype}, expected {ref.dtype} — torch.multinomial gives int64 ids"
    diff = tensor(values="build a new tensor (torch.cat)", what="idx after generate")(got["idx"], got["before"]) or \
        tensor(values="the output starts with idx itself", what="the first 3 columns of generate's output")(
            out[:, :3], got["before"])
    if diff:
        return diff
    return report_compare(6)(got["report"], want["report"])


def report_compare(n_new: int) -> Compare:
    """A FixedLogits report: no wrong call, one call per new id, no gradients, each step's context."""
    def compare(got, want):
        if got["wrong"]:
            return got["wrong"][0]
        if got["calls"] != want["calls"]:
            return (f"the number of model calls for max_new_tokens = {n_new}: got {got['calls']}, expected "
                    f"{want['calls']} — one call per new id")
        if got["grad_on"]:
            return ("generate called the model with gradients on: sample under torch.no_grad() (no graph is needed "
                    "to sample, and keeping one costs memory at every step)")
        if got["context"] is not None:
            k, want_ctx, ctx = got["context"]
            return (f"at step {k} the model should see the last min(T, block_size) ids {want_ctx}, it saw {ctx} — "
                    "crop with idx[:, -block_size:]")
        return None
    return compare


def _modes(names):
    left = []
    for mode in (True, False):
        m = FixedLogits(_LOGITS, block_size=4).train(mode)
        names.generate(m, torch.zeros(2, 1, dtype=torch.long), 2, generator=seeded_generator(0))
        left.append(m.training)
    return left


def _modes_compare(got, want):
    for mode, now in zip((True, False), got):
        if now is not mode:
            return (f"generate left a model that was in {'training' if mode else 'eval'} mode in "
                    f"{'training' if now else 'eval'} mode: leave model.training as you found it (if you switch to "
                    "model.eval() inside, switch back)")
    return None


def shares(ids: torch.Tensor, values: int) -> dict[int, float]:
    return {v: float((ids == v).double().mean()) for v in range(values)}


def _draws(tau: float):
    def call(names):
        out = plain_tensor(names.generate(FixedLogits(_LOGITS, block_size=4), torch.zeros(4000, 3, dtype=torch.long),
                                          2, temperature=tau, generator=seeded_generator(11)), "generate's output")
        draws = out[:, -2:]
        return {"first": shares(draws[:, 0], 4), "second": shares(draws[:, 1], 4),
                "same": float((draws[:, 0] == draws[:, 1]).double().mean())}

    def expect(names):
        p = torch.softmax(torch.tensor(_LOGITS, dtype=_F64) / tau, -1).tolist()
        return {"first": dict(enumerate(p)), "second": dict(enumerate(p)), "same": sum(q * q for q in p)}
    return call, expect


def shares_close(what: str, hint: str | None, tol: float = 0.03) -> Compare:
    def compare(got, want):
        for v, p in want.items():
            g = got.get(v, 0.0)
            if abs(g - p) > tol:
                return (f"the share of id {v} among {what}: got {g:.3f}, expected {p:.3f}"
                        + (f" — {hint}" if hint else ""))
        return None
    return compare


_DRAW_HINT = ("sample from softmax(logits[:, -1, :] / temperature): the last position's logits, divided (not "
              "multiplied) by the temperature before the softmax (not the probabilities after it), then a draw (not "
              "the argmax)")


def _draw_case(tau: float) -> Case:
    call, expect = _draws(tau)
    rows = f"of 4000 rows at temperature {tau} (logits {_LOGITS})"

    def same(got, want):
        if abs(got - want) <= 0.04:
            return None
        return (f"the share of rows whose two new ids are equal at temperature {tau} (independent draws): got "
                f"{got:.3f}, expected {want:.3f} — draw fresh random numbers at every step (a uniform drawn once "
                "before the loop repeats the same choice)")
    return Case(f"generate: 2 new ids for each of 4000 rows at temperature {tau}", call, expect=expect, compare=fields(
        ("first", shares_close(f"the first new ids {rows}", _DRAW_HINT)),
        ("second", shares_close(f"the second new ids {rows}", _DRAW_HINT)),
        ("same", same)))


def _seeds(names):
    m = FixedLogits(_LOGITS, block_size=4)
    start = torch.zeros(64, 1, dtype=torch.long)
    seed_cpu(1)
    s1 = plain_tensor(names.generate(m, start, 5, generator=seeded_generator(42)), "generate's output")
    seed_cpu(2)
    s2 = plain_tensor(names.generate(m, start, 5, generator=seeded_generator(42)), "generate's output")
    s3 = plain_tensor(names.generate(m, start, 5, generator=seeded_generator(43)), "generate's output")
    return {"alike": torch.equal(s1, s2), "apart": not torch.equal(s1, s3)}


def _seeds_compare(got, want):
    if not got["alike"]:
        return ("two calls with generators seeded alike gave different ids: pass generator= to the sampling function "
                "(torch.multinomial(probs, 1, generator=generator))")
    if not got["apart"]:
        return "generators with different seeds gave the same ids: are you sampling at all?"
    return None


def long_prompt(n_new: int, temperature: float | None = None):
    """A prompt of 5 ids for a model with block_size 2: the output and the model's report."""
    def call(names):
        m = FixedLogits([0.0, 3.0, 0.5], block_size=2)
        kw = {} if temperature is None else {"temperature": temperature}
        out = names.generate(m, torch.tensor([[1, 2, 0, 1, 2]]), n_new, generator=seeded_generator(3), **kw)
        return {"shape": tuple(plain_tensor(out, "generate's output").shape), "report": m.report(out, 5),
                "sizes": [int(c.size(1)) for c in m.seen]}
    return call


def long_compare(n_new: int) -> Compare:
    def compare(got, want):
        if got["report"]["wrong"]:
            return got["report"]["wrong"][0]
        return equal(f"the shape of generate's output with a prompt of 5 ids and {n_new} new ones")(
            got["shape"], want["shape"]) or equal("the context sizes (cropped to block_size = 2 from the first step)")(
            got["sizes"], want["sizes"])
    return compare


def _decoding_loops() -> tuple:
    """07's generation loops where a kernel still holds them (none where 07's reference is withheld)."""
    try:
        from lmcourse.reference.decoding import ANSWERS
    except ImportError:
        return ()
    return tuple(f for f in ANSWERS if "generate" in getattr(f, "__name__", ""))


GENERATE = Exercise("generate", (
    Case("generate(model, idx of shape (2, 3), 6)", _generate_first, compare=_generate_first_compare,
         errors=(("", "torch.multinomial takes probabilities (finite, >= 0), not logits: sample from "
                      "softmax(logits[:, -1, :] / temperature)"),)),
    Case("generate on a model in training mode, then in eval mode", _modes, compare=_modes_compare),
    _draw_case(1.0), _draw_case(0.5), _draw_case(2.0),
    Case("generate with generators seeded alike (and different global seeds), then apart", _seeds,
         compare=_seeds_compare),
    Case("generate(model with block_size 2, a prompt of 5 ids, 2)", long_prompt(2), compare=long_compare(2)),
), rules=exercise_rules("write the sampling loop yourself, not the course's reference generate",
                        "lmcourse.nn.sampling:generate", "lmcourse.nn.sampling:_generate", Later(_decoding_loops)))


# ------------------------------------------------------------------ the multiple-choice questions

Q1, Q1_LETTER = question("q1", "answer_q1", "ABCD")
Q2, Q2_LETTER = question("q2", "answer_q2", "ABCD")
Q3, Q3_LETTER = question("q3", "answer_q3", "ABCD")


NOTEBOOK = Notebook(
    "05_gpt", reference="lmcourse.reference.gpt", hidden="lmcourse.marking.gpt_hidden",
    exercises=(GPT, INIT_WEIGHTS, GPT_PARAM_COUNT, GENERATE, Q1, Q2, Q3),
    # lmcourse.nn.gpt, the GPT later notebooks are given, does 05's work: absent here too (and the static
    # KV cache's forward, a GPT forward pass)
    withheld=("lmcourse.reference.gpt", "lmcourse.reference.decoding", "lmcourse.nn.gpt", "lmcourse.nn.sampling",
              "lmcourse.nn.static_cache"),
    uses=("lmcourse.reference.ngram",))   # the ladder's Kneser-Ney counts (notebook 01's answers)
