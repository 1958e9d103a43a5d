"""Notebook 06's tests (the masked LM): the visible cases, with the hints that teach.

Each case builds its own inputs and, for ``MaskedLM``, the student's model with the test's weights (drawn
from a generator seeded by the parameter's name, loaded by the names the prose states); the expected value is
the same call on the reference's names (:mod:`lmcourse.reference.mlm`, itself checked against transformers'
``BertForMaskedLM`` and ``DataCollatorForLanguageModeling`` in the course's tests). ``mask_tokens`` is random:
its cases count what the student's draws did (shares of chosen, masked, replaced and unchanged positions) and
the judge holds the counts to the stated probabilities, within a few standard deviations. ``fill_mask`` and
``pseudo_log_likelihood`` run on the test's own small models, which note every input they are given. The
hidden cases are in :mod:`.mlm_hidden`.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import torch
from torch import nn

from .rules import exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question
from .tensors import equal, pair, plain_tensor, seed_cpu, seeded_generator, tensor

__all__ = ["NOTEBOOK", "Probe", "Tiny", "fill_case", "fill_compare", "masking_case", "masking_compare", "model_case",
           "model_compare", "pll_case", "pll_compare", "plain_pair", "weighted"]

_F64 = torch.float64


def plain_pair(x: Any, what: str) -> tuple:
    """``x`` unpacked if it is a pair: (inputs, labels) from the masking, else (logits, loss)."""
    return pair(x, what, "(inputs, labels)" if "mask" in what else "(logits, loss)")


def _within(k: float, n: float, q: float, z: float = 5.0) -> bool:
    """k successes of n independent draws with probability q: within z standard deviations."""
    return abs(k - n * q) <= z * math.sqrt(n * q * (1 - q)) + 1


# ------------------------------------------------------------------ 1. mask_tokens

_SMALL = [[1, 7, 8, 9, 2, 0], [1, 5, 6, 2, 0, 0]]
_SPECIALS5 = [0, 1, 2, 3, 4]
_V, _S = 60, (0, 1, 2, 3, 4)


def padded(B: int, T: int, V: int, n_special: int, seed: int) -> torch.Tensor:
    """Rows of different lengths: <s>, ordinary ids, </s>, then padding (id 0); about a third special."""
    g = seeded_generator(seed)
    tokens = torch.randint(n_special, V, (B, T), generator=g)
    lengths = torch.randint(T // 3, T, (B,), generator=g)
    tokens[torch.arange(T)[None] >= lengths[:, None]] = 0
    tokens[:, 0] = 1
    tokens[torch.arange(B), lengths - 1] = 2
    return tokens


def _small(p: float):
    def call(names):
        tok = torch.tensor(_SMALL)
        before = tok.clone()
        out = names.mask_tokens(tok, 4, 12, list(_SPECIALS5), p, seeded_generator(0))
        if type(out) is not tuple or tuple.__len__(out) != 2:
            return {"pair": False}
        inp, lab = plain_pair(out, "mask_tokens")
        return {"pair": True, "inputs": plain_tensor(inp, "inputs"), "labels": plain_tensor(lab, "labels"),
                "changed": not torch.equal(tok, before), "fresh": inp is not tok and lab is not tok}
    return call


def _small_compare(got, want):
    if not got.get("pair"):
        return "mask_tokens should return a pair (inputs, labels)"
    for key in ("inputs", "labels"):
        if tuple(got[key].shape) != tuple(want[key].shape):
            return f"{key}: shape {tuple(got[key].shape)}, expected {tuple(want[key].shape)}"
    dtypes = (str(got["inputs"].dtype), str(got["labels"].dtype))
    if dtypes != (str(want["inputs"].dtype), str(want["labels"].dtype)):
        return f"the dtypes of inputs and labels: got {dtypes}, expected ('torch.int64', 'torch.int64') — the dtype " \
               "of tokens (torch.long)"
    if got["changed"]:
        return "tokens after mask_tokens differ from tokens before — work on a copy (tokens.clone()), do not change " \
               "tokens in place"
    if not got["fresh"]:
        return "return new tensors, not tokens itself"
    return None


def _p_zero_compare(got, want):
    labels = got["labels"]
    if bool((labels == -100).all()):
        return None
    tokens = torch.tensor(_SMALL)
    chosen = labels != -100
    ordinary = ~torch.isin(tokens, torch.tensor(_SPECIALS5))
    # a few of the ordinary positions labelled with their own ids: chosen with some probability, not with p = 0
    some = tuple(labels.shape) == tuple(tokens.shape) and bool((labels[chosen] == tokens[chosen]).all()) and bool(
        (chosen <= ordinary).all()) and int(chosen.sum()) < int(ordinary.sum())
    if some:
        return (f"with p = 0 no position should be chosen, but {int(chosen.sum())} were (labels {labels.tolist()}): "
                "choose each position with the probability p you are given — a number written in its place (0.15) "
                "ignores it")
    return (f"with p = 0 no position is chosen, so every label should be -100; got labels {labels.tolist()}: labels "
            "hold the original id at the chosen positions only and -100 at every other position (not a copy of tokens)")


def _same_rows_tokens() -> torch.Tensor:
    return torch.randint(5, _V, (1, 300), generator=seeded_generator(3)).repeat(8, 1)


def _same_rows(names):
    inp, lab = plain_pair(names.mask_tokens(_same_rows_tokens(), 4, _V, sorted(_S), 0.15, seeded_generator(3)),
                          "mask_tokens")
    return plain_tensor(lab, "labels") != -100


def _same_rows_compare(got, want):
    if type(got) is not torch.Tensor or tuple(got.shape) != (8, 300):
        return f"got {show(got)}, expected labels of shape (8, 300)"
    if all(not torch.equal(got[0], got[i]) for i in range(1, 8)):
        return None
    return ("eight identical sequences got the same chosen positions: draw a choice for every position of the batch, "
            "shape (B, T), not one row of choices shared by all sequences")


def _counts(names):
    rows = torch.randint(5, _V, (400, 100), generator=seeded_generator(7))
    _, lab = plain_pair(names.mask_tokens(rows, 4, _V, sorted(_S), 0.15, seeded_generator(7)), "mask_tokens")
    return float((plain_tensor(lab, "labels") != -100).sum(1).double().var())


def _counts_compare(got, want):
    want_var = 100 * 0.15 * 0.85
    if type(got) is float and abs(got - want_var) <= 5 * want_var * math.sqrt(2 / 399):
        return None
    return (f"the number of chosen positions per sequence of 100 ordinary ids has variance {show(got)}, expected about "
            f"{want_var:.2f} (a binomial count): choose each position independently with probability p, not a fixed "
            "number p * length per sequence")


def masking_case(tokens, mask_id: int, vocab_size: int, special_ids, p: float, seed: int):
    """``mask_tokens`` on ``tokens()`` (a function: the tokens are made inside the call): what its draws did, counted
    on plain tensors (shares of chosen, masked, unchanged and replaced positions, and what went wrong where)."""
    def call(names):
        tok = tokens()
        specials = set(special_ids)
        out = names.mask_tokens(tok, mask_id, vocab_size, special_ids, p, seeded_generator(seed))
        inp, lab = plain_pair(out, "mask_tokens")
        inp, lab = plain_tensor(inp, "inputs"), plain_tensor(lab, "labels")
        special = torch.isin(tok, torch.tensor(sorted(specials)))
        chosen = lab != -100
        ordinary = [i for i in range(vocab_size) if i not in specials and i != mask_id]
        replaced = inp[chosen & (inp != mask_id) & (inp != tok)]
        bad = replaced[~torch.isin(replaced, torch.tensor(ordinary, dtype=replaced.dtype))]
        return {"n_ord": int((~special).sum()), "n_chosen": int(chosen.sum()), "n_ordinary_ids": len(ordinary),
                "special_chosen": int((chosen & special).sum()),
                "changed_unchosen": int((~chosen & (inp != tok)).sum()),
                "labels_right": bool((lab[chosen] == tok[chosen]).all()),
                "n_mask": int((inp[chosen] == mask_id).sum()), "n_same": int((inp[chosen] == tok[chosen]).sum()),
                "bad": [int(v) for v in bad[:3].tolist()], "n_replaced": int(replaced.numel())}
    return call


def masking_compare(p: float, what: str) -> Compare:
    """The counts of :func:`masking_case` against BERT's recipe with probability ``p``."""
    def compare(got, want):
        n_chosen, n_ord, n_ordinary = got["n_chosen"], got["n_ord"], got["n_ordinary_ids"]
        share = max(n_chosen, 1)
        if got["special_chosen"]:
            return (f"{what}: {got['special_chosen']} special or padding positions were chosen (their label is not "
                    "-100); choose only positions whose id is not in special_ids")
        if got["changed_unchosen"]:
            return (f"{what}: {got['changed_unchosen']} positions changed although their label is -100; change only "
                    "the chosen positions, and give every chosen position (the 10% left unchanged too) its original "
                    "id as label")
        if not got["labels_right"]:
            return f"{what}: a label differs from the original id at a chosen position; labels = the original " \
                   "tokens there, -100 elsewhere"
        if not _within(got["n_mask"], n_chosen, 0.8):
            return (f"{what}: {got['n_mask'] / share:.3f} of the chosen positions became [MASK], expected 0.8 (the "
                    "other 20%: half a random ordinary id, half unchanged)")
        q_same = 0.1 + 0.1 / n_ordinary  # unchanged, or a random draw that hit the original id
        if not _within(got["n_same"], n_chosen, q_same):
            return (f"{what}: {got['n_same'] / share:.3f} of the chosen positions kept their id, expected "
                    f"{q_same:.3f} (10% unchanged, plus random draws that happen to hit it)")
        if got["bad"]:
            return (f"{what}: a random replacement was {got['bad']}, a special id or [MASK]; draw replacements from "
                    "the ordinary ids only (neither in special_ids nor mask_id)")
        if not _within(got["n_replaced"], n_chosen, 0.1 * (1 - 1 / n_ordinary)):
            return (f"{what}: {got['n_replaced'] / share:.3f} of the chosen positions got another ordinary id, "
                    "expected 0.1")
        if not _within(n_chosen, n_ord, p):
            return (f"{what}: {n_chosen} of {n_ord} non-special positions chosen ({n_chosen / max(n_ord, 1):.3f}), "
                    f"expected a share of p = {p} of the non-special positions (not of all positions)")
        return None
    return compare


def _sevens(names):
    sevens = torch.full((100, 200), 7)
    inp, _ = plain_pair(names.mask_tokens(sevens, 4, 12, {0, 1, 2, 3}, 1.0, seeded_generator(8)), "mask_tokens")
    inp = plain_tensor(inp, "inputs")
    return {i: int((inp == i).sum()) for i in (5, 6, 8, 9, 10, 11)}


def _sevens_compare(got, want):
    n = 100 * 200
    if 0 < sum(got.values()) < 0.5 * 0.1 * n:
        return (f"with p = 1.0 every position is chosen, so about {n // 10} of the {n} should get a random ordinary "
                f"id; {sum(got.values())} did: choose each position with the probability p you are given (a number "
                "written in its place, such as 0.15, ignores it)")
    for i, k in got.items():
        if not _within(k, n, 0.1 / 7):
            return (f"the ordinary id {i} replaced {k} of {n} chosen positions, expected about {n * 0.1 / 7:.0f} (10% "
                    "spread evenly over the 7 ordinary ids 5..11): draw each random replacement on its own, every "
                    "ordinary id equally likely")
    return None


def _mask_not_special(names):
    ones = torch.ones(100, 200, dtype=torch.long)
    inp, lab = plain_pair(names.mask_tokens(ones, 2, 3, [0], 1.0, seeded_generator(2)), "mask_tokens")
    inp, lab = plain_tensor(inp, "inputs"), plain_tensor(lab, "labels")
    return {"all_chosen": bool((lab == 1).all()), "share": float((inp == 2).double().mean())}


def _mask_not_special_compare(got, want):
    if not got["all_chosen"]:
        return "with p = 1.0 every ordinary position is chosen: every label should be 1"
    if abs(got["share"] - 0.8) < 0.015:
        return None
    return (f"with mask_id = 2 not in special_ids, {got['share']:.3f} of the chosen positions hold [MASK], expected "
            "0.8: a random replacement must not be mask_id (exclude it from the ordinary ids)")


def _mixed(names):
    mixed = torch.tensor([[0, 1, 11, 2, 3, 10, 11, 1]]).repeat(50, 1)
    _, lab = plain_pair(names.mask_tokens(mixed, 11, 12, [0, 10, 11], 1.0, seeded_generator(11)), "mask_tokens")
    lab = plain_tensor(lab, "labels")
    sp = torch.isin(mixed, torch.tensor([0, 10, 11]))
    return {"specials_left": bool((lab[sp] == -100).all()), "ordinary_chosen": bool((lab[~sp] == mixed[~sp]).all())}


def _mixed_compare(got, want):
    if not got["specials_left"]:
        return ("with special_ids [0, 10, 11] ([MASK] = 11) and p = 1.0, a position holding 10 or 11 was chosen: the "
                "specials are the ids listed in special_ids, wherever they are in the vocabulary (test membership, "
                "e.g. torch.isin(tokens, special_ids)), not the first len(special_ids) ids")
    if not got["ordinary_chosen"]:
        return ("with special_ids [0, 10, 11] and p = 1.0, a position holding the ordinary id 1, 2 or 3 was not "
                "chosen: every id that is not in special_ids is ordinary, however small (test membership, e.g. "
                "torch.isin(tokens, special_ids), not tokens < len(special_ids))")
    return None


def _generator(names):
    rows = _same_rows_tokens()
    seed_cpu(100)
    a = plain_pair(names.mask_tokens(rows, 4, _V, sorted(_S), 0.15, seeded_generator(9)), "mask_tokens")
    seed_cpu(200)
    b = plain_pair(names.mask_tokens(rows, 4, _V, sorted(_S), 0.15, seeded_generator(9)), "mask_tokens")
    c = plain_pair(names.mask_tokens(rows, 4, _V, sorted(_S), 0.15, seeded_generator(10)), "mask_tokens")
    a, b, c = ([plain_tensor(t, "the result") for t in x] for x in (a, b, c))
    return {"same": torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), "differs": not torch.equal(a[1], c[1])}


def _generator_compare(got, want):
    if not got["same"]:
        return ("two calls with generators seeded alike gave different results: pass generator= to every random draw "
                "(torch.rand, torch.randint, torch.bernoulli, torch.randperm, torch.multinomial)")
    if not got["differs"]:
        return "generators with different seeds gave the same labels"
    return None


MASK_TOKENS = Exercise("mask_tokens", (
    Case("mask_tokens(tokens, 4, 12, [0, 1, 2, 3, 4], 0.5, generator)", _small(0.5), compare=_small_compare),
    Case("mask_tokens(tokens, 4, 12, [0, 1, 2, 3, 4], 0.0, generator)", _small(0.0), compare=_p_zero_compare),
    Case("mask_tokens on eight identical sequences", _same_rows, compare=_same_rows_compare),
    Case("mask_tokens on 400 sequences of 100 ordinary ids", _counts, compare=_counts_compare),
    Case("mask_tokens on a padded batch (256, 400)",
         masking_case(lambda: padded(256, 400, _V, 5, seed=601), 4, _V, sorted(_S), 0.15, 1),
         compare=masking_compare(0.15, "a padded batch of 256 x 400 ids, p = 0.15")),
    Case("mask_tokens(tokens, 4, 12, {0, 1, 2, 3}, 1.0, generator) (specials as a set)", _sevens,
         compare=_sevens_compare),
    Case("mask_tokens(tokens, 2, 3, [0], 1.0, generator) ([MASK] not among the specials)", _mask_not_special,
         compare=_mask_not_special_compare),
    Case("mask_tokens(tokens, 11, 12, [0, 10, 11], 1.0, generator)", _mixed, compare=_mixed_compare),
    Case("mask_tokens with generators seeded alike and differently", _generator, compare=_generator_compare),
), rules=exercise_rules("write the masking yourself, not with transformers' DataCollatorForLanguageModeling"))


# ------------------------------------------------------------------ 2. MaskedLM

_NAMES = "wte, wpe, ln_emb, drop, blocks, head_dense, head_ln, lm_head (with a bias)"


def _config(**kw):
    from lmcourse.nn import MLMConfig

    base = dict(vocab_size=13, block_size=8, n_layer=2, n_head=2, n_embd=16)
    base.update(kw)
    return MLMConfig(**base)


def weighted(model: nn.Module, seed: int, dtype: torch.dtype = _F64) -> nn.Module:
    """``model`` in ``dtype`` and eval mode with the test's weights: every parameter drawn afresh from a generator
    seeded by ``seed`` and its name (the tied decoder weight by the embedding's name, whichever side holds it), so
    the reference's model gets the same weights under the same names; LayerNorm gains around 1, biases around 0."""
    model = model.to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters(remove_duplicate=False):
            key = "wte.weight" if name == "lm_head.weight" else name
            g = seeded_generator(seed * 1_000_003 + zlib.crc32(key.encode()))
            v = torch.randn(tuple(p.shape), generator=g, dtype=dtype)
            if p.dim() >= 2:
                v = v * 0.3
            else:
                v = v * 0.1 + (1.0 if name.endswith("weight") else 0.0)
            p.copy_(v)
    return model.eval()


def _idx_targets():
    g = seeded_generator(601)
    idx = torch.randint(13, (3, 8), generator=g)
    tgt = torch.full((3, 8), -100)
    tgt[0, 1], tgt[1, 6], tgt[2, 3], tgt[2, 4] = 5, 7, 12, 0
    return idx, tgt


def _built(names, cfg, seed: int = 601, dtype: torch.dtype = _F64):
    m = names.MaskedLM(cfg)
    params = sorted(n for n, _ in m.named_parameters(remove_duplicate=False))
    return weighted(m, seed, dtype), params


def _attributes(names):
    from lmcourse.nn import Block

    cfg = _config()
    m = names.MaskedLM(cfg)
    kinds = [("wte", nn.Embedding), ("wpe", nn.Embedding), ("drop", nn.Dropout),
             ("blocks", (nn.ModuleList, nn.Sequential)), ("head_dense", nn.Linear), ("lm_head", nn.Linear)]
    missing = [name for name, kind in kinds if not isinstance(getattr(m, name, None), kind)]
    if missing:
        return {"missing": missing}
    bias = m.lm_head.bias
    return {"missing": [], "config": getattr(m, "config", None) is cfg, "n_blocks": len(m.blocks),
            "blocks": all(isinstance(b, Block) for b in m.blocks), "tied": m.lm_head.weight is m.wte.weight,
            "bias": None if bias is None else [int(s) for s in bias.shape]}


def _attributes_compare(got, want):
    if got["missing"]:
        return f"MaskedLM should have self.{got['missing'][0]}"
    if not got["config"]:
        return "store the config as self.config"
    if got["n_blocks"] != want["n_blocks"]:
        return f"the number of blocks for n_layer = 2: got {got['n_blocks']}, expected {want['n_blocks']}"
    if not got["blocks"]:
        return "self.blocks should hold lmcourse.nn.Block modules"
    if not got["tied"]:
        return ("the head's weight must be the embedding's weight itself (one tensor): self.lm_head.weight = "
                "self.wte.weight — not a copy and not a separate matrix")
    if got["bias"] != want["bias"]:
        return "BERT's decoder has a bias per token: nn.Linear(n_embd, vocab_size) with its default bias=True"
    return None


def _names_compare(got, want) -> str | None:
    have, expected = set(got["params"]), set(want["params"])
    if have == expected:
        return None
    return (f"your MaskedLM's parameter names differ from the ones asked for: missing {sorted(expected - have)[:4]}, "
            f"unexpected {sorted(have - expected)[:4]} — use the attribute names {_NAMES} (buffers of your own are "
            "fine; parameters are only these)")


def model_case(cfg_kw: dict, seed: int, idx_fn=None):
    """MaskedLM(config) with the test's weights on ids: the logits and the loss (float64), and the parameter names.
    ``idx_fn``: ``(idx, targets)`` made inside the call (default: the visible ids (3, 8) with 4 targets)."""
    def call(names):
        m, params = _built(names, _config(**cfg_kw), seed)
        idx, tgt = (idx_fn or _idx_targets)()
        with torch.no_grad():
            logits, loss = plain_pair(m(idx, tgt), "MaskedLM.forward")
        return {"params": params, "logits": plain_tensor(logits, "the logits"), "loss": plain_tensor(loss, "the loss")}
    return call


def model_compare(label: str, logits_hint: str | None = None, loss_hint: str | None = None) -> Compare:
    def compare(got, want):
        return (_names_compare(got, want)
                or tensor(shape="logits at every position: (B, T, V)", values=logits_hint, atol=1e-10, rtol=1e-10,
                          what=f"logits of {label}")(got["logits"], want["logits"])
                or tensor(values=loss_hint, atol=1e-10, rtol=1e-9, what=f"the loss of {label}")(got["loss"],
                                                                                                 want["loss"]))
    return compare


def _forward(names):
    m, params = _built(names, _config())
    idx, _ = _idx_targets()
    before = idx.clone()
    with torch.no_grad():
        out = m(idx)
    if type(out) is not tuple or tuple.__len__(out) != 2:
        return {"params": params, "pair": False}
    logits, loss = plain_pair(out, "MaskedLM.forward")
    return {"params": params, "pair": True, "loss_none": loss is None, "logits": plain_tensor(logits, "the logits"),
            "idx_changed": not torch.equal(idx, before)}


def _forward_compare(got, want):
    diff = _names_compare(got, want)
    if diff:
        return diff
    if not got["pair"]:
        return "forward should return a pair (logits, loss)"
    if not got["loss_none"]:
        return "without targets, forward returns (logits, None)"
    logits = got["logits"]
    if tuple(logits.shape) != tuple(want["logits"].shape):
        return f"the logits for idx of shape (3, 8): shape {tuple(logits.shape)}, expected (3, 8, 13) — logits at " \
               "every position: (B, T, V)"
    if got["idx_changed"]:
        return "idx after calling your model differs from idx before: do not change idx in place"
    if logits.dtype != want["logits"].dtype:
        return f"the dtype of the logits of a float64 model: got {logits.dtype}, expected {want['logits'].dtype}"
    return None


def _float32(names):
    m, _ = _built(names, _config(), dtype=torch.float32)
    idx, tgt = _idx_targets()
    with torch.no_grad():
        logits, _ = plain_pair(m(idx, tgt), "MaskedLM.forward")
    return str(plain_tensor(logits, "the logits").dtype)


def _bidirectional(names):
    m, _ = _built(names, _config())
    idx, _ = _idx_targets()
    seen = {}

    def hook(_module, args):
        seen["x"] = args[0].detach().requires_grad_()
        return (seen["x"], *args[1:])

    handle = m.blocks[0].register_forward_pre_hook(hook)
    try:
        logits, _ = plain_pair(m(idx[:1]), "MaskedLM.forward")
    finally:
        handle.remove()
    (grad,) = torch.autograd.grad(plain_tensor(logits, "the logits")[0, 0].sum(), seen["x"])
    return float(grad[0, 1:].abs().sum()) > 0


def _bidirectional_compare(got, want):
    if got is True:
        return None
    return ("the logits at position 0 do not depend on later positions: the blocks are still causal. Build them with "
            "causal=config.causal (False for a masked LM)")


def _logits(names):
    m, params = _built(names, _config())
    idx, _ = _idx_targets()
    with torch.no_grad():
        logits, _ = plain_pair(m(idx), "MaskedLM.forward")
    return {"params": params, "logits": plain_tensor(logits, "the logits")}


_LOGITS_HINT = ("x = drop(ln_emb(wte(idx) + wpe(positions 0..T-1))), post-LN blocks (prenorm=False), then "
                "head_dense, the exact GELU, head_ln, lm_head (tied weight, own bias); no final LayerNorm")


def _loss(names):
    m, _ = _built(names, _config())
    idx, tgt = _idx_targets()
    with torch.no_grad():
        _, loss = plain_pair(m(idx, tgt), "MaskedLM.forward")
    return plain_tensor(loss, "the loss")


_LOSS_HINT = ("the mean cross-entropy over the positions whose target is not -100 only: F.cross_entropy(logits.reshape("
              "B * T, V), targets.reshape(B * T), ignore_index=-100); divide by the number of chosen positions, not by "
              "B * T")


def _loss_compare(got, want):
    if type(got) is not torch.Tensor or got.dim() != 0:
        return "with targets, loss is a 0-dimensional tensor"
    return tensor(values=_LOSS_HINT, atol=1e-10, rtol=1e-9, what="the loss with 4 chosen positions of 24")(got, want)


def _extra_biases(names):
    m = names.MaskedLM(_config(n_layer=1, n_head=4, bias=False))
    return sorted(n for n, _ in m.named_parameters() if n.endswith("bias") and n != "lm_head.bias")


def _extra_biases_compare(got, want):
    if not got:
        return None
    return (f"with bias=False your MaskedLM still has biases {got[:4]}: pass bias=config.bias to the blocks, "
            "head_dense, ln_emb and head_ln (lm_head keeps its own bias)")


def _dropout_eval(names):
    m, _ = _built(names, _config(dropout=0.5))
    idx, _ = _idx_targets()
    with torch.no_grad():
        first, _ = plain_pair(m(idx), "MaskedLM.forward")
        m.train()
        seed_cpu(602)
        train, _ = plain_pair(m(idx), "MaskedLM.forward")
    first, train = plain_tensor(first, "the logits"), plain_tensor(train, "the logits")
    return {"eval": first, "moved": float((train - first).abs().max())}


def _dropout_eval_compare(got, want):
    diff = tensor(values="use the nn.Dropout module self.drop (it follows model.eval())", atol=1e-10, rtol=1e-10,
                  what="MaskedLM with dropout = 0.5 in eval mode vs the reference")(got["eval"], want["eval"])
    if diff:
        return diff
    if got["moved"] > 1e-6:
        return None
    return ("with dropout = 0.5 in training mode the logits should change: apply self.drop after ln_emb, and pass "
            "dropout to the blocks")


def _dropout_embeddings(names):
    m, _ = _built(names, _config(dropout=0.5))
    idx, _ = _idx_targets()
    m.train()
    for b in m.blocks:
        b.eval()
    with torch.no_grad():
        seed_cpu(603)
        logits, _ = plain_pair(m(idx), "MaskedLM.forward")
    return plain_tensor(logits, "the logits")


def _gradients(names):
    m, _ = _built(names, _config())
    idx, tgt = _idx_targets()
    m.zero_grad()
    _, loss = plain_pair(m(idx, tgt), "MaskedLM.forward")
    plain_tensor(loss, "the loss").backward()
    return {"wte": m.wte.weight.grad is not None, "wpe": m.wpe.weight.grad is not None,
            "ln_emb": m.ln_emb.weight.grad is not None, "lm_head.bias": m.lm_head.bias.grad is not None}


def _gradients_compare(got, want):
    if all(got.values()):
        return None
    return ("the loss's gradients should reach wte, wpe, ln_emb and the head's bias: no .detach(), .data or "
            "torch.no_grad() inside forward")


def _meta(names):
    # one layer: the blocks are the course's, and each operation on 'meta' runs Python meta kernels under the rules
    m = names.MaskedLM(_config(n_layer=1)).to("meta")
    logits, _ = plain_pair(m(torch.zeros(2, 5, dtype=torch.long, device="meta")), "MaskedLM.forward")
    return plain_tensor(logits, "the logits")


_META_HINT = "no .item(), .tolist() or Python branch on a tensor's values inside forward"

MASKED_LM = Exercise("masked_lm", (
    Case("MaskedLM(config): its attributes", _attributes, compare=_attributes_compare),
    Case("model(idx) for idx of shape (3, 8), with the test's weights", _forward, compare=_forward_compare,
         errors=(("has no attribute", f"keep the attribute names {_NAMES}: the test loads its weights by them"),)),
    Case("MaskedLM in float32", _float32,
         compare=equal("the dtype of the logits of a float32 model", "the model's dtype: no .double() or .float() on "
                                                                      "the logits")),
    Case("the logits at position 0 and the later positions", _bidirectional, compare=_bidirectional_compare),
    Case("model(idx) with the test's weights", _logits,
         compare=lambda got, want: _names_compare(got, want) or tensor(
             values=_LOGITS_HINT, atol=1e-10, rtol=1e-10,
             what="your logits vs the reference MaskedLM with the same weights")(got["logits"], want["logits"])),
    Case("model(idx, targets)", _loss, compare=_loss_compare),
    Case("MaskedLM(config with causal=True)", model_case({"causal": True}, 601),
         compare=model_compare("MaskedLM(config with causal=True)", "BlockConfig(..., causal=config.causal, "
                                                                     "prenorm=False)")),
    Case("MaskedLM(config with bias=False): its biases", _extra_biases, compare=_extra_biases_compare),
    Case("MaskedLM(config with bias=False)", model_case({"n_layer": 1, "n_head": 4, "bias": False}, 601),
         compare=model_compare("MaskedLM(config with bias=False)", "pass bias=config.bias to the blocks, head_dense, "
                                                                    "ln_emb and head_ln")),
    Case("MaskedLM with dropout = 0.5, in eval and in training mode", _dropout_eval, compare=_dropout_eval_compare),
    Case("MaskedLM with dropout = 0.5 in training mode, its blocks in eval mode", _dropout_embeddings,
         compare=tensor(values="x = self.drop(self.ln_emb(wte(idx) + wpe(positions))): apply self.drop once, after "
                               "ln_emb", atol=1e-10, rtol=1e-10,
                        what="logits with dropout 0.5 on the embeddings only (blocks in eval mode, same seed as the "
                             "reference)")),
    Case("model(idx, targets) with gradients", _gradients, compare=_gradients_compare),
    Case("model(idx) for a model and ids on the 'meta' device", _meta,
         compare=tensor(device="the logits are on the device of idx", what="the device of the logits for a model and "
                                                                           "ids on 'meta'"),
         errors=(("", _META_HINT),)),
), answer="MaskedLM",
    rules=exercise_rules("build the model from nn.Embedding, lmcourse.nn.Block, LayerNorms and nn.Linear, not "
                         "transformers' BERT"))


# ------------------------------------------------------------------ 3. fill_mask

class Probe(nn.Module):
    """The test's model: fixed logits per position (a different distribution at every position), and a record of
    the ids it was given."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = nn.Parameter(table, requires_grad=False)  # (T_max, V)
        self.seen: list = []

    def forward(self, idx, targets=None):
        self.seen.append(idx.clone())
        return self.table[: idx.size(1)].expand(idx.size(0), -1, -1).clone(), None  # (B, T, V)


def _tokenizer():
    from lmcourse.tokenizers import SPECIALS, WordTokenizer

    return WordTokenizer(["the", "cat", "sat", "on", "mat", "a", "dog", "."], specials=list(SPECIALS) + ["[MASK]"])


def fill_case(text: str, top_k: int):
    """fill_mask(probe, tokenizer, text, top_k) on the test's probe: what it returned, and the last ids it gave."""
    def call(names):
        tok = _tokenizer()
        table = torch.randn(12, tok.vocab_size, generator=seeded_generator(603), dtype=_F64) * 2
        probe = Probe(table)
        result = names.fill_mask(probe, tok, text, top_k)
        return {"seen": probe.seen[-1] if probe.seen else None, "result": result}
    return call


def _seen_compare(got, want):
    seen, ids = got["seen"], want["seen"]
    if type(seen) is torch.Tensor and seen.shape == ids.shape and torch.equal(seen, ids):
        return None
    return (f"the model should be given ids {ids.tolist()} (shape (1, {ids.shape[1]}), [MASK] = "
            f"{_tokenizer().stoi['[MASK]']}), got "
            f"{seen.tolist() if type(seen) is torch.Tensor else show(seen)}: split the text at \"[MASK]\", encode the "
            "pieces, put the [MASK] id between them")


def fill_compare(sums: bool = False) -> Compare:
    """The blanks: one list per [MASK], each of top_k (token, probability) pairs, against the reference's; with
    ``sums``, each blank's probabilities compared by their sum (the hidden test's form)."""
    def compare(got, want):
        diff = _seen_compare(got, want)
        if diff:
            return diff
        res, ref = got["result"], want["result"]
        if type(res) is not list or len(res) != len(ref):
            return f"one list per [MASK]: expected {len(ref)} lists, got {show(res)}"
        for k, (blank, wanted) in enumerate(zip(res, ref)):
            top_k = len(wanted)
            if type(blank) is not list or len(blank) != top_k:
                return f"blank {k}: expected a list of top_k = {top_k} pairs, got {show(blank)}"
            if not all(type(pair) is tuple and len(pair) == 2 for pair in blank):
                return f"blank {k}: (token, probability) pairs, got {show(blank)}"
            words, want_words = [w for w, _ in blank], [w for w, _ in wanted]
            if words != want_words:
                return (f"the top {top_k} tokens at blank {k}: got {show(words)}, expected {show(want_words)} — read "
                        "the logits at the blank's own position, logits[0, t] (not t - 1), and sort by probability, "
                        "most likely first (torch.topk)")
            for (w, q), (_, qw) in zip(blank, wanted):
                if type(q) is not float:
                    return f"the probability of {w!r}: got {show(q)} ({type(q).__name__}), expected a float — a " \
                           "Python float: float(p)"
                if not sums and not math.isclose(q, qw, rel_tol=1e-6, abs_tol=1e-9):
                    return (f"the probability of {w!r} at blank {k}: got {q:.6g}, expected {qw:.6g} — probabilities "
                            "from a softmax over the whole vocabulary, not the logits")
            if sums and not math.isclose(sum(q for _, q in blank), sum(q for _, q in wanted), rel_tol=1e-6,
                                         abs_tol=1e-9):
                return f"the probabilities at blank {k} differ from the reference's"
        return None
    return compare


def _no_blank_compare(got, want):
    if got["result"] == [] and type(got["result"]) is list:
        return None
    return f"fill_mask for a line without [MASK]: got {show(got['result'])}, expected [] — one list per [MASK]: " \
           "none, an empty list"


FILL_MASK = Exercise("fill_mask", (
    Case('fill_mask(model, tokenizer, "the [MASK] sat on the [MASK] .", 3)',
         fill_case("the [MASK] sat on the [MASK] .", 3), compare=fill_compare()),
    Case('fill_mask(model, tokenizer, "the cat sat .", 2)', fill_case("the cat sat .", 2), compare=_no_blank_compare),
), rules=exercise_rules("write fill_mask yourself, not with transformers' fill-mask pipeline"))


# ------------------------------------------------------------------ 4. pseudo_log_likelihood

class Tiny(nn.Module):
    """A small bidirectional model of the test's own (float64), and a record of what it was given."""

    def __init__(self, V: int, T: int, seed: int):
        super().__init__()
        from lmcourse.nn import Block, BlockConfig

        seed_cpu(seed)
        self.wte, self.wpe = nn.Embedding(V, 16), nn.Embedding(T, 16)
        self.block = Block(BlockConfig(n_embd=16, n_head=2, block_size=T, causal=False))
        self.out = nn.Linear(16, V)
        self.double().eval()
        self.seen: list = []

    def forward(self, idx, targets=None):
        self.seen.append(idx.clone())
        return self.out(self.block(self.wte(idx) + self.wpe(torch.arange(idx.size(1))))), None


_PLL_IDS = [3, 7, 5, 5, 8, 2]


def pll_case(V: int, T: int, seed: int, ids: list[int], mask_id: int):
    """pseudo_log_likelihood(model, ids, mask_id) on the test's Tiny model: the value, ids after the call, and every
    row of ids the model was given."""
    def call(names):
        model = Tiny(V, T, seed)
        x = torch.tensor(ids)
        value = names.pseudo_log_likelihood(model, x, mask_id)
        rows = []
        for batch in model.seen:
            batch = plain_tensor(batch, "the ids given to the model")
            rows += [[int(v) for v in row] for row in batch.reshape(-1, batch.shape[-1]).tolist()]
        return {"pll": value, "ids": x, "rows": rows}
    return call


def pll_compare(what: str, hint: str | None = None, mask_id: int | None = None) -> Compare:
    """The value against the reference's within 1e-9; with ``mask_id``, first the form (a float, ids unchanged) and
    that the model saw ids with each single position masked."""
    def compare(got, want):
        value = got["pll"]
        if mask_id is not None:
            if type(value) is not float:
                return f"pseudo_log_likelihood(...): got {show(value)} ({type(value).__name__}), expected a float — " \
                       "return a Python float: float(total)"
            if not torch.equal(got["ids"], want["ids"]):
                return "ids after pseudo_log_likelihood differ from ids before — mask copies, not ids"
            ids = want["ids"].tolist()
            for i in range(len(ids)):
                masked = list(ids)
                masked[i] = mask_id
                if masked not in got["rows"]:
                    return (f"the model never saw ids with only position {i} masked ({masked}); mask one position at a "
                            "time, every position once")
        if type(value) is float and math.isclose(value, want["pll"], rel_tol=1e-9, abs_tol=1e-9):
            return None
        return f"{what}: got {show(value)}, expected {show(want['pll'])}" + (f" — {hint}" if hint else "")
    return compare


PLL = Exercise("pseudo_log_likelihood", (
    Case("pseudo_log_likelihood(model, ids of 6, 9)", pll_case(10, 8, 604, _PLL_IDS, 9),
         compare=pll_compare("the pseudo-log-likelihood of 6 ids",
                             "the SUM over positions i of log softmax(logits[i])[ids[i]], with position i masked in "
                             "the input and read at position i (not a mean, not the logits before log_softmax)", 9)),
    Case("pseudo_log_likelihood(model, a single id, 9)", pll_case(10, 8, 604, [4], 9),
         compare=pll_compare("the pseudo-log-likelihood of a single id", "n = 1: one masked copy of shape (1, 1); "
                             "watch out for squeeze() dropping the batch dimension")),
), rules=exercise_rules("write the pseudo-log-likelihood yourself, not with transformers"))


# ------------------------------------------------------------------ the multiple-choice questions

Q1, Q1_LETTER = question("q1", "answer_q1", "ABCD")
Q2, Q2_LETTER = question("q2", "answer_q2", "ABCD")


NOTEBOOK = Notebook(
    "06_mlm", reference="lmcourse.reference.mlm", hidden="lmcourse.marking.mlm_hidden",
    exercises=(MASK_TOKENS, MASKED_LM, FILL_MASK, PLL, Q1, Q2),
    # the answers (and load_mlm, which builds one); lmcourse.nn.mlm keeps the given code only (MLMConfig,
    # BERT's initialisation, saving)
    withheld=("lmcourse.reference.mlm",))
