"""Notebook 09's tests (the encoder-decoder): the visible cases, with the hints that teach.

Each case builds its own inputs and, for a module, the student's module with the test's config and
weights chosen here (seeded, loaded by the names the prose states), calls it and returns what the
judge compares; the expected value is the same call on the reference's names
(:mod:`lmcourse.reference.encoder_decoder`, itself checked against ``nn.MultiheadAttention`` and
``nn.Transformer*`` in the course's tests). The hidden cases are in :mod:`.encoder_decoder_hidden`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from lmcourse.nn.seq2seq_config import Seq2SeqConfig

from .rules import Later, course, exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question, when
from .tensors import (
    DeviceLog,
    equal,
    fields,
    grads,
    is_tensor,
    param_grads,
    plain_tensor,
    seed_cpu,
    seeded_weights,
    tensor,
)

__all__ = ["NOTEBOOK", "DeviceLog", "greedy_probe", "seeded"]

_TORCH_ATTENTION = ("scaled_dot_product", "multi_head_attention", "transformer")


def _course_work() -> tuple:
    from lmcourse import dates
    from lmcourse.reference import nn_seq2seq_work

    loops = course("lmcourse.reference.decoding:ANSWERS")    # 07's, where the kernel has them
    return nn_seq2seq_work() + (loops[0] if loops else ()) + (
        dates.make_batch, dates.sample_batch, dates.padded_cross_entropy, dates.one_sequence_batch,
        dates.decoder_only_greedy)


# the course code that does some of this work (the dates' batch code, and where a kernel has them the
# encoder-decoder of lmcourse.nn.seq2seq and notebook 07's decoding loops), and torch's attention and transformer layers
_COURSE = (Later(_course_work), nn.Transformer, nn.TransformerEncoder,
           nn.TransformerDecoder, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.MultiheadAttention)


def _second_line(reason: str, torch_names: tuple[str, ...] = ()):
    """This notebook's rules: :data:`_COURSE` and the torch functions named ``torch_names`` refused."""
    return exercise_rules(reason, *_COURSE, torch=torch_names)


# ------------------------------------------------------------------ comparing tensors

def _pair(x: Any, what: str, hint: str) -> tuple:
    if type(x) is not tuple or len(x) != 2:
        raise TypeError(f"{what} returned {type(x).__name__}{'' if type(x) is not tuple else ' of ' + str(len(x))}, "
                        f"not a pair — {hint}")
    return x


def seeded(module: nn.Module, seed: int, scale: float = 0.3, gain: float = 1.0, dtype=torch.float64) -> nn.Module:
    """``module`` in ``dtype`` with every entry of its state dict drawn afresh, each from a generator seeded by
    ``seed`` and the entry's name (so the reference's module gets the same weights under the same names); LayerNorm
    weights around ``gain``; ``lm_head.weight`` the same values as ``tgt_wte.weight`` (tied or not); buffers kept."""
    return seeded_weights(module, seed, scale, gain, is_gain=_is_layer_norm_gain,
                          tied={"lm_head.weight": "tgt_wte.weight"}, dtype=dtype)


def _is_layer_norm_gain(name: str, value: torch.Tensor) -> bool:
    return value.dim() == 1 and name.endswith("weight") and (".ln" in name or name.startswith("ln"))


_KEEP_INIT = "keep __init__ as it is written (the tests load weights by these names: {})"


# ------------------------------------------------------------------ 1. a batch: padding_mask

def _mask_keeps_ids(names):
    ids = torch.tensor([[5, 6, 7, 0, 0], [8, 0, 0, 0, 0], [3, 4, 5, 6, 7]])
    names.padding_mask(ids, 0)
    return ids


_MASK_META = ("meta tensor", "your mask was made on the CPU from Python values (ids.tolist(), torch.tensor([...])): "
                             "build it from ids itself, ids != pad_id, so it lives on ids' device")



# ------------------------------------------------------------------ 1. a batch: teacher_forcing

_TF_HINTS = (("<bos> then the target: the decoder reads the target shifted one position to the right"),
             ("the target then <eos>, right after its last id (not at the end of the row), then padding"))


def _rows(x: Any) -> list | None:
    return x.tolist() if is_tensor(x) else None


def teacher_pair(want_in: str, want_out: str) -> Compare:
    """The pair (tgt_in, tgt_out): its form, shapes, dtypes, then each tensor, with diagnoses of the shifts."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not tuple:
            return f"got {show(got)} — return a pair: return tgt_in, tgt_out"
        if len(got) != 2:
            return f"teacher_forcing returned {len(got)} values — return a pair: return tgt_in, tgt_out"
        for g, w, name in ((got[0], want[0], "tgt_in"), (got[1], want[1], "tgt_out")):
            diff = tensor(shape="(B, L + 1): one more position than the longest target, for <bos> in tgt_in and "
                                "<eos> in tgt_out", dtype="torch.long ids", what=name)(g, w)
            if diff and "shape" in diff or diff and "dtype" in diff or diff and "expected a torch" in diff:
                return diff
        g_in, g_out, w_in, w_out = _rows(got[0]), _rows(got[1]), want[0].tolist(), want[1].tolist()
        if g_in == w_out and g_out == w_in:
            return ("tgt_in and tgt_out are swapped: the decoder READS <bos> + target (tgt_in) and must PREDICT "
                    "target + <eos> (tgt_out)")
        if g_in == w_out:
            return ("tgt_in is what the decoder must predict (target + <eos>): the decoder reads <bos> followed by "
                    "the target, shifted one position to the right of tgt_out — it must not see the token it predicts")
        if g_out == w_in and g_in == w_in:
            return "tgt_out starts with <bos> too: tgt_out is the target then <eos>, one position ahead of tgt_in"
        if g_in != w_in:
            return f"tgt_in: got {g_in}, expected {w_in}" + (f" — {want_in}" if want_in else "")
        if g_out != w_out:
            return f"tgt_out: got {g_out}, expected {w_out}" + (f" — {want_out}" if want_out else "")
        return None
    return compare


def _tf_keeps_targets(names):
    targets = [[5, 6, 7], [8], [9, 10]]
    names.teacher_forcing(targets, 1, 2, 0)
    return targets


# exercise 1 is one unit, a batch's tensors: the padding mask's cases first, then teacher forcing's
TEACHER_FORCING = Exercise("teacher_forcing", (
    Case("padding_mask(ids, 0)",
         lambda names: names.padding_mask(torch.tensor([[5, 6, 7, 0, 0], [8, 0, 0, 0, 0], [3, 4, 5, 6, 7]]), 0),
         compare=tensor(shape="one entry per position: the shape of ids",
                        dtype="a comparison (ids != pad_id) gives bool",
                        values="True at real tokens, False at padding (not the other way round)")),
    Case("ids after padding_mask", _mask_keeps_ids, compare=tensor(values="do not change ids in place")),
    Case("padding_mask(ids, 9): pad_id = 9", lambda names: names.padding_mask(torch.tensor([[4, 9, 9], [0, 1, 9]]), 9),
         compare=tensor(shape="one entry per position: the shape of ids",
                        values="compare with pad_id, not with 0: here 0 is a real token")),
    Case("padding_mask on ids on PyTorch's 'meta' device",
         lambda names: names.padding_mask(torch.zeros(2, 4, dtype=torch.long, device="meta"), 0),
         compare=tensor(device="build the mask from ids itself (no .tolist(), no new tensor on the CPU)"),
         errors=(_MASK_META,)),
    Case("teacher_forcing([[5, 6, 7], [8], [9, 10]], 1, 2, 0)",
         lambda names: names.teacher_forcing([[5, 6, 7], [8], [9, 10]], 1, 2, 0), compare=teacher_pair(*_TF_HINTS)),
    Case("targets after teacher_forcing", _tf_keeps_targets, hint="do not change targets"),
    Case("teacher_forcing([[4], [5, 6]], 1, 2, 7): pad_id = 7",
         lambda names: names.teacher_forcing([[4], [5, 6]], 1, 2, 7),
         compare=teacher_pair("fill with pad_id, whatever its value (here 7, not 0)",
                          "fill with pad_id, whatever its value (here 7, not 0)")),
), rules=_second_line("write the padding mask and teacher forcing yourself"))


# ------------------------------------------------------------------ 2. CrossAttention

_CROSS_NAMES = "q_proj, k_proj, v_proj and c_proj, nn.Linear(n_embd, n_embd)"


def _key_mask(S: int, lengths: list[int] | None) -> torch.Tensor | None:
    return None if lengths is None else torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]


def cross_case(C, nh, B, T, S, lengths, seed, bias=True, grads=False, padded=False):
    """CrossAttention(C, nh, bias) with the test's weights (float64): its output on the test's x, memory and mask;
    the inputs after the call; with ``padded``, the output again with the memory changed at padded positions;
    with ``grads``, the gradients of the sum of the output's squares."""
    def call(names):
        seed_cpu(seed)
        att = seeded(names.CrossAttention(C, nh, bias), seed, scale=0.5, gain=0.0)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(B, T, C, generator=g, dtype=torch.float64)
        memory = torch.randn(B, S, C, generator=g, dtype=torch.float64)
        mask = _key_mask(S, lengths)
        before = (x.clone(), memory.clone(), None if mask is None else mask.clone())
        with torch.set_grad_enabled(grads):
            y = plain_tensor(att(x, memory, mask), "the output")
        out = {"y": y.detach().clone(), "x": x, "memory": memory, "mask": mask}
        if padded:
            mem2 = before[1].clone()
            mem2[~before[2]] = 100.0
            with torch.no_grad():
                out["y_padded"] = plain_tensor(att(before[0].clone(), mem2, before[2].clone()), "the output").clone()
        if grads:
            y.pow(2).sum().backward()
            out["grads"] = param_grads(att)
        return out
    return call


def _padding_ignored(got, want) -> str | None:
    if "y_padded" not in got or not is_tensor(got["y_padded"]) or not is_tensor(got["y"]):
        return None
    if got["y_padded"].shape == got["y"].shape and torch.allclose(got["y_padded"], got["y"], atol=1e-10, rtol=1e-10):
        return None
    return ("the output changed when only the memory at padded source positions changed — padding keys must get "
            "weight 0, and the real keys' weights must still sum to 1: hide the padding in the scores BEFORE the "
            "softmax (-inf there; weights multiplied by the mask afterwards are no longer normalised), with the mask "
            "(B, S) on the KEY axis: memory_mask[:, None, None, :] broadcasts to (B, n_head, T, S); True = attend; "
            "the softmax runs over the keys (dim=-1)")


def inputs_kept(*names_: str) -> Compare:
    def compare(got, want):
        for n in names_:
            diff = tensor(values="change no input: work on new tensors", what=f"{n} after the call")(got[n], want[n])
            if diff:
                return diff
        return None
    return compare


_CROSS_VALUES = ("q from x with q_proj, k and v from memory with k_proj / v_proj; softmax(q k^T / sqrt(hs)) over the "
                 "source axis; no causal mask; heads back side by side: transpose(1, 2) before the reshape to "
                 "(B, T, C), then c_proj")
_STATE_ERRORS = ("state_dict", _KEEP_INIT.format(_CROSS_NAMES))
_CROSS_SHAPES = ("here T = 4 queries (from x) and S = 6 keys (from memory): q (B, nh, T, hs), k and v (B, nh, S, hs), "
                 "scores (B, nh, T, S); the mask hides keys: memory_mask[:, None, None, :]")


def _cross_main(got, want):
    shape = tensor(shape="one output per query, i.e. per decoder position: (B, T, C), T from x, not S from memory",
                   what="the output")
    for step in (lambda: shape(got["y"], want["y"]) if "shape" in (shape(got["y"], want["y"]) or "") else None,
                 lambda: inputs_kept("x", "memory", "mask")(got, want),
                 lambda: _padding_ignored(got, want),
                 lambda: tensor(values=_CROSS_VALUES, atol=1e-10, rtol=1e-10, what="the output vs "
                                "nn.MultiheadAttention's with the same weights")(got["y"], want["y"])):
        diff = step()
        if diff:
            return diff
    return None


def _cross_float32(names):
    seed_cpu(0)
    att = names.CrossAttention(8, 2)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        y = plain_tensor(att(torch.randn(2, 3, 8, generator=g), torch.randn(2, 5, 8, generator=g),
                       torch.ones(2, 5, dtype=torch.bool)), "the output")
    return {"shape": tuple(y.shape), "dtype": str(y.dtype)}


CROSS_ATTENTION = Exercise("cross_attention", (
    Case("CrossAttention(8, 2)(x (3, 4, 8), memory (3, 6, 8), mask (3, 6))",
         cross_case(8, 2, 3, 4, 6, [6, 3, 1], seed=901, padded=True), compare=_cross_main,
         errors=(_STATE_ERRORS, ("", _CROSS_SHAPES)),
         hint="here T = 4 queries (from x) and S = 6 keys (from memory): q (B, nh, T, hs), k and v (B, nh, S, hs), "
              "scores (B, nh, T, S); the mask hides keys: memory_mask[:, None, None, :]"),
    Case("CrossAttention(8, 4)(x, memory) without a mask (memory_mask=None)",
         cross_case(8, 4, 2, 5, 3, None, seed=902),
         compare=lambda got, want: tensor(values="memory_mask=None means every source position is real",
                                          atol=1e-10, rtol=1e-10, what="the output vs nn.MultiheadAttention's")(
             got["y"], want["y"]), errors=(_STATE_ERRORS, ("", _CROSS_SHAPES))),
    Case("CrossAttention(8, 2) on float32 x (2, 3, 8) and memory (2, 5, 8)", _cross_float32,
         compare=fields(("shape", equal("the output's shape")),
                        ("dtype", equal("the output's dtype", "keep the input's dtype: no .double() or float64 "
                                                              "constants")))),
), answer="CrossAttention",
    rules=_second_line("write cross-attention yourself (lmcourse.nn.scaled_dot_product_attention is fine), not with "
                       "F.scaled_dot_product_attention or nn.MultiheadAttention", _TORCH_ATTENTION))


# ------------------------------------------------------------------ 3. EncoderBlock

_ENCODER_NAMES = "ln1, attn, ln2, mlp"


def _real(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return plain_tensor(x, "the output")[mask[:, :, None].expand(x.shape)] if x.shape[:2] == mask.shape else x


def encoder_case(C, nh, B, S, lengths, seed, grads=False):
    """EncoderBlock(C, nh) (the reference CrossAttention inside) with the test's weights (float64): its output at
    real positions, x after the call and, with ``grads``, the gradients of the sum of the squares at real
    positions."""
    def call(names):
        seed_cpu(seed)
        blk = seeded(names.EncoderBlock(C, nh), seed, scale=0.4)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(B, S, C, generator=g, dtype=torch.float64)
        mask = _key_mask(S, lengths)
        with torch.set_grad_enabled(grads):
            y = plain_tensor(blk(x, mask.clone()), "the output")
        out = {"shape": tuple(y.shape), "y": _real(y, mask).detach().clone(), "x": x}
        if grads:
            (y.pow(2) * mask[:, :, None]).sum().backward()
            out["grads"] = param_grads(blk)
        return out
    return call


def block_compare(label: str, values: str, inputs: tuple[str, ...], shape_hint: str) -> Compare:
    def compare(got, want):
        for diff in (equal(f"the shape of {label}'s output", shape_hint)(got["shape"], want["shape"]),
                     inputs_kept(*inputs)(got, want),
                     tensor(values=values, atol=1e-10, rtol=1e-10, what=f"{label}'s output")(got["y"], want["y"])):
            if diff:
                return diff
        if "grads" in want:
            return grads_compare(label)(got["grads"], want["grads"])
        return None
    return compare


def grads_compare(label: str) -> Compare:
    """The gradients of a layer's parameters (:func:`param_grads`) against the reference's."""
    return grads(f"the gradient of {{}} in {label}", "no .detach() or torch.no_grad() inside the forward",
                 atol=1e-9, rtol=1e-9, params=f"the parameters of {label}")


def _block_float32(make, *inputs):
    def call(names):
        seed_cpu(0)
        blk = make(names)
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            y = plain_tensor(blk(*(torch.randn(*s, generator=g) for s in inputs)), "the output")
        return {"shape": tuple(y.shape), "dtype": str(y.dtype)}
    return call


ENCODER_BLOCK = Exercise("encoder_block", (
    Case("EncoderBlock(8, 2) on x (3, 5, 8) at real positions vs nn.TransformerEncoderLayer(norm_first=True)",
         encoder_case(8, 2, 3, 5, [5, 2, 4], seed=911),
         compare=block_compare("EncoderBlock(8, 2)",
                             "a = ln1(x); h = x + attn(a, a, src_mask) (queries, keys and values all from ln1(x), the "
                             "padding mask passed on); out = h + mlp(ln2(h)): no LayerNorm after the sums",
                             ("x",), "a block keeps the shape (B, S, C)"),
         errors=(("state_dict", _KEEP_INIT.format(_ENCODER_NAMES)),)),
    Case("EncoderBlock(8, 2) on float32 x (2, 4, 8) without a mask",
         _block_float32(lambda names: names.EncoderBlock(8, 2), (2, 4, 8)),
         compare=fields(("shape", equal("the output's shape")),
                        ("dtype", equal("the output's dtype", "src_mask=None: pass it on as it is; keep the input's "
                                                              "dtype")))),
), standins=("CrossAttention",), answer="EncoderBlock",
    rules=_second_line("write the encoder block's forward yourself, not with nn.TransformerEncoderLayer",
                       _TORCH_ATTENTION))


# ------------------------------------------------------------------ 4. DecoderBlock

_DECODER_NAMES = "ln1, attn, ln_cross, cross, ln2, mlp"


def decoder_case(C, nh, B, T, S, lengths, seed, grads=False):
    """DecoderBlock(C, nh, T) (the reference CrossAttention inside) with the test's weights (float64): its output,
    the inputs after the call and, with ``grads``, the gradients of the sum of the output's squares."""
    def call(names):
        seed_cpu(seed)
        blk = seeded(names.DecoderBlock(C, nh, block_size=T), seed, scale=0.4)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(B, T, C, generator=g, dtype=torch.float64)
        memory = torch.randn(B, S, C, generator=g, dtype=torch.float64)
        mask = _key_mask(S, lengths)
        with torch.set_grad_enabled(grads):
            y = plain_tensor(blk(x, memory, mask.clone()), "the output")
        out = {"shape": tuple(y.shape), "y": y.detach().clone(), "x": x, "memory": memory}
        if grads:
            y.pow(2).sum().backward()
            out["grads"] = param_grads(blk)
        return out
    return call


DECODER_BLOCK = Exercise("decoder_block", (
    Case("DecoderBlock(8, 2) on x (3, 4, 8), memory (3, 6, 8) vs nn.TransformerDecoderLayer(norm_first=True) with a "
         "causal tgt_mask and memory_key_padding_mask", decoder_case(8, 2, 3, 4, 6, [6, 2, 5], seed=921),
         compare=block_compare("DecoderBlock(8, 2)",
                             "x = x + attn(ln1(x)); x = x + cross(ln_cross(x), memory, memory_mask) (the memory as "
                             "it is, the padding mask passed on); out = x + mlp(ln2(x)), in this order",
                             ("x", "memory"), "the decoder's stream keeps its shape (B, T, C)"),
         errors=(("state_dict", _KEEP_INIT.format(_DECODER_NAMES)),)),
    Case("DecoderBlock(8, 2) on float32 x (2, 3, 8), memory (2, 4, 8), without a mask",
         _block_float32(lambda names: names.DecoderBlock(8, 2, block_size=3), (2, 3, 8), (2, 4, 8)),
         compare=fields(("shape", equal("the output's shape")),
                        ("dtype", equal("the output's dtype", "keep the input's dtype")))),
), standins=("CrossAttention",), answer="DecoderBlock",
    rules=_second_line("write the decoder block's forward yourself, not with nn.TransformerDecoderLayer",
                       ("multi_head_attention", "transformer")))


# ------------------------------------------------------------------ 5. EncoderDecoder

def config(**sizes) -> Seq2SeqConfig:
    return Seq2SeqConfig(**sizes)


_CFG = dict(src_vocab_size=13, tgt_vocab_size=11, src_block_size=7, tgt_block_size=6, n_enc_layer=2, n_dec_layer=2,
            n_head=2, n_embd=8, pad_id=4)
_MODULES = [("src_wte", nn.Embedding), ("src_wpe", nn.Embedding), ("tgt_wte", nn.Embedding),
            ("tgt_wpe", nn.Embedding), ("drop", nn.Dropout), ("encoder", nn.ModuleList), ("decoder", nn.ModuleList),
            ("lm_head", nn.Linear)]


def batch(cfg: Seq2SeqConfig, B, S, T, lengths, tgt_lengths, seed):
    """src, tgt_in, tgt_out (each its own tensor), ids drawn from the vocabulary but pad_id, padding at the ends."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, cfg.src_vocab_size - 1, (B, S), generator=g)
    src = src + (src >= cfg.pad_id).long()
    src[torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]] = cfg.pad_id
    tgt = torch.randint(0, cfg.tgt_vocab_size - 1, (B, T + 1), generator=g)
    tgt = tgt + (tgt >= cfg.pad_id).long()
    tgt[torch.arange(T + 1)[None, :] >= torch.tensor(tgt_lengths)[:, None] + 1] = cfg.pad_id
    return src, tgt[:, :-1].clone(), tgt[:, 1:].clone()


def built(names, cfg: Seq2SeqConfig, seed: int) -> nn.Module:
    seed_cpu(seed)
    return seeded(names.EncoderDecoder(cfg), seed).eval()


def _structure(names):
    cfg = config(**_CFG)
    m = names.EncoderDecoder(cfg)
    return {"config": getattr(m, "config", None) is cfg,
            "modules": [n for n, t in _MODULES if isinstance(getattr(m, n, None), t)],
            "blocks": [len(m.encoder), len(m.decoder)],
            "tied": m.lm_head.weight is m.tgt_wte.weight,
            "parameters": sorted(str(k) for k, _ in m.named_parameters(remove_duplicate=False))}


_STRUCTURE = fields(
    ("config", lambda g, w: None if g == w else "store the config as self.config"),
    ("modules", equal("the modules your EncoderDecoder has (self.src_wte, ...)",
                      "self.src_wte, self.src_wpe, self.tgt_wte, self.tgt_wpe (nn.Embedding), self.drop (nn.Dropout), "
                      "self.encoder, self.decoder (nn.ModuleList), self.lm_head (nn.Linear)")),
    ("blocks", equal("the number of encoder and decoder blocks")),
    ("tied", lambda g, w: None if g == w else "the head's weight must be the target embedding's weight itself: "
                                              "self.lm_head.weight = self.tgt_wte.weight"),
    ("parameters", equal("the names of your model's parameters",
                         "use src_wte, src_wpe, tgt_wte, tgt_wpe, encoder, ln_enc, decoder, ln_f, lm_head, and no "
                         "other parameters")))


def _encode(names):
    cfg = config(**_CFG)
    m = built(names, cfg, 931)
    src, _, _ = batch(cfg, 3, 7, 5, [7, 3, 1], [5, 2, 3], seed=932)
    with torch.no_grad():
        memory, mask = _pair(m.encode(src), "model.encode(src)", "return the pair (memory, src_mask)")
    real = src != cfg.pad_id
    memory = plain_tensor(memory, "the memory")
    return {"mask": plain_tensor(mask, "the src_mask"), "shape": tuple(memory.shape),
            "memory": memory[real[:, :, None].expand(memory.shape)] if memory.shape[:2] == real.shape else memory}


_ENCODE = fields(
    ("mask", tensor(shape="padding_mask(src, self.config.pad_id): one entry per source position",
                    values="padding_mask(src, self.config.pad_id): the padding id is the config's, not always 0",
                    what="the src_mask encode returns (pad_id = 4 here)")),
    ("shape", equal("the shape of the memory encode returns for src (3, 7)", "(B, S, n_embd)")),
    ("memory", tensor(values="drop(src_wte(src) + src_wpe(0..S-1)), every encoder block with the padding mask, then "
                             "ln_enc", atol=1e-10, rtol=1e-10,
                      what="the memory encode returns (at real source positions) vs the reference")))


def _memory(cfg, B, S, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, S, cfg.n_embd, generator=g, dtype=torch.float64)


def _decode(names):
    cfg = config(**_CFG)
    m = built(names, cfg, 931)
    src, tgt_in, _ = batch(cfg, 3, 7, 5, [7, 3, 1], [5, 2, 3], seed=932)
    with torch.no_grad():
        return m.decode(tgt_in, _memory(cfg, 3, 7, 933), src != cfg.pad_id)


def _forward(with_target: bool):
    def call(names):
        cfg = config(**_CFG)
        m = built(names, cfg, 931)
        src, tgt_in, tgt_out = batch(cfg, 3, 7, 5, [7, 3, 1], [5, 2, 3], seed=932)
        before = (src.clone(), tgt_in.clone(), tgt_out.clone())
        with torch.no_grad():
            logits, loss = _pair(m(src, tgt_in, tgt_out) if with_target else m(src, tgt_in),
                                 "model(src, tgt_in" + (", tgt_out)" if with_target else ")"),
                                 "forward returns the pair (logits, loss)")
        if not with_target:
            return {"logits": plain_tensor(logits, "the logits"), "loss": loss}
        return {"loss": plain_tensor(loss, "the loss"), "src": src, "tgt_in": tgt_in, "tgt_out": tgt_out,
                "before": before}
    return call


def _loss_compare(got, want):
    diff = tensor(shape="a 0-dimensional tensor: the mean", what="the loss")(got["loss"], want["loss"])
    if diff and ("shape" in diff or "expected a torch" in diff):
        return diff
    diff = tensor(values="the mean cross-entropy over positions where tgt_out is not pad_id: "
                         "ignore_index=self.config.pad_id", atol=1e-10, rtol=1e-9,
                  what="the loss (10 real target positions of 15; pad_id = 4 here)")(got["loss"], want["loss"])
    if diff:
        return diff
    for n in ("src", "tgt_in", "tgt_out"):
        diff = tensor(values="change no input", what=f"{n} after calling your model")(got[n], want[n])
        if diff:
            return diff
    return None


def _no_gradient(names):
    cfg = config(**_CFG)
    m = built(names, cfg, 931)
    src, tgt_in, tgt_out = batch(cfg, 3, 7, 5, [7, 3, 1], [5, 2, 3], seed=932)
    m.zero_grad()
    plain_tensor(_pair(m(src, tgt_in, tgt_out), "model(src, tgt_in, tgt_out)", "forward returns (logits, loss)")[1],
           "the loss").backward()
    return [str(n) for n, p in m.named_parameters() if p.grad is None]


def _dropped(names):
    """In train mode with p = 1 dropout zeroes what it is given, with no randomness."""
    cfg = config(**_CFG)
    m = built(names, cfg, 931)
    src, tgt_in, _ = batch(cfg, 3, 7, 5, [7, 3, 1], [5, 2, 3], seed=932)
    m.drop.p = 1.0
    m.train()
    with torch.no_grad():
        memory = plain_tensor(m.encode(src)[0], "the memory")
        logits = plain_tensor(m.decode(tgt_in, _memory(cfg, 3, 7, 933), src != cfg.pad_id), "the logits")
    real = src != cfg.pad_id
    return {"memory": memory[real[:, :, None].expand(memory.shape)] if memory.shape[:2] == real.shape else memory,
            "logits": logits}


def _on_meta(names):
    """The model and its inputs on 'meta': no operation may mix a tensor made on the CPU with the model's. One
    layer each way: a layer's code runs the same in every layer, and each operation on 'meta' runs torch's
    Python meta kernels under the rules' watch."""
    cfg = config(**{**_CFG, "n_enc_layer": 1, "n_dec_layer": 1})
    seed_cpu(0)
    m = names.EncoderDecoder(cfg).to("meta").eval()
    src = torch.zeros(2, 5, dtype=torch.long, device="meta")
    tgt_in = torch.zeros(2, 4, dtype=torch.long, device="meta")
    log = DeviceLog()
    with log, torch.no_grad():
        logits = _pair(m(src, tgt_in), "model(src, tgt_in)", "forward returns (logits, loss)")[0]
    return {"mixed": list(log.mixed), "logits": plain_tensor(logits, "the logits")}


ENCODER_DECODER = Exercise("encoder_decoder", (
    Case("EncoderDecoder(config): its attributes", _structure, compare=_STRUCTURE),
    Case("model.encode(src)", _encode, compare=_ENCODE,
         errors=(("not a pair", "return the pair (memory, src_mask)"),)),
    Case("model.decode(tgt_in, memory, src_mask)", _decode,
         compare=tensor(shape="(B, T, tgt_vocab_size)", atol=1e-10, rtol=1e-10,
                        values="drop(tgt_wte(tgt_in) + tgt_wpe(0..T-1)), every decoder block reading memory and "
                               "src_mask, ln_f, lm_head", what="decode's logits vs the reference, same memory")),
    Case("model(src, tgt_in)", _forward(False),
         compare=fields(("loss", lambda g, w: None if g is None else "without tgt_out, forward returns (logits, None)"),
                        ("logits", tensor(values="forward = decode(tgt_in, *encode(src))", atol=1e-10, rtol=1e-10,
                                          what="forward's logits vs the reference")))),
    Case("model(src, tgt_in, tgt_out)", _forward(True), compare=_loss_compare,
         hint="the loss needs logits (B * T, V) and targets (B * T,): reshape, which works whatever the memory layout "
              "of its input (.view needs a contiguous one)"),
    Case("the parameters no gradient reaches", _no_gradient, hint="no .detach() or torch.no_grad() inside the model"),
    Case("encode's memory and decode's logits when self.drop drops every value (train mode, p = 1)", _dropped,
         compare=fields(
             ("memory", tensor(values="self.drop(src_wte(src) + src_wpe(0..S-1)): self.drop on the source's "
                                      "embedding sum, and nowhere else", atol=1e-10, rtol=1e-10,
                               what="the memory when self.drop drops every value")),
             ("logits", tensor(values="self.drop(tgt_wte(tgt_in) + tgt_wpe(0..T-1)): self.drop on the target's "
                                      "embedding sum, and nowhere else", atol=1e-10, rtol=1e-10,
                               what="decode's logits when self.drop drops every value")))),
    Case("EncoderDecoder with src and tgt_in on PyTorch's 'meta' device", _on_meta,
         diagnoses=(when(lambda got, want: got["mixed"] and not want["mixed"],
                         "your model mixed a tensor made on the CPU with the model's (positions made with "
                         "torch.arange(T) without a device?): make the positions on the ids' device, "
                         "torch.arange(T, device=src.device) / device=tgt_in.device"),),
         compare=fields(("mixed", equal("operations mixing devices")),
                        ("logits", tensor(device="the logits live on the ids' device", what="the logits")))),
), standins=("padding_mask", "CrossAttention", "EncoderBlock", "DecoderBlock"), answer="EncoderDecoder",
    rules=_second_line("build the model from nn.Embedding, your blocks, LayerNorms and nn.Linear",
                       ("multi_head_attention", "transformer")))


# ------------------------------------------------------------------ 6. greedy_decode

def greedy_probe(V: int, C: int, seed: int, pad_id: int = 0, bos_id: int = 1, sure_id: int = 2, device=None):
    """The greedy-decoding tests' model, and ``calls``, what a call did to it.

    The model (float64, no gradients) has ``encode(src)`` -> ``(memory, src_mask)``, the memory the embedding of
    the source (zero at ``pad_id``), and ``decode(ids, memory, src_mask)`` -> logits ``(B, t, V)`` that depend on
    every id read, its position and the mean of the real source positions; it never writes ``pad_id`` or
    ``bos_id``, and writes ``sure_id`` at the latest as its 5th token. ``calls()`` returns ``(encodes, first,
    lengths)``: the number of ``encode`` calls, the ids of the first ``decode`` call (a tensor) and the length of
    the ids of every ``decode`` call, kept in this closure."""
    log = {"encodes": 0, "first": None, "lengths": []}

    class Probe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(seed)
            self.emb = nn.Parameter(torch.randn(V, C, generator=g, dtype=torch.float64), requires_grad=False)
            self.tok = nn.Parameter(torch.randn(V, V, generator=g, dtype=torch.float64) * 2, requires_grad=False)
            self.mix = nn.Parameter(torch.randn(C, V, generator=g, dtype=torch.float64) * 2, requires_grad=False)
            self.pos = nn.Parameter(torch.randn(16, V, generator=g, dtype=torch.float64), requires_grad=False)
            self.pos.data[4:, sure_id] += 50.0  # sure_id certain as the 5th token written
            self.pos.data[:, [pad_id, bos_id]] -= 50.0  # never <pad> or <bos>

        def encode(self, src):
            log["encodes"] += 1
            mask = src != pad_id
            return self.emb[src] * mask[..., None], mask  # (B, S, C), (B, S)

        def decode(self, ids, memory, src_mask):
            if log["first"] is None:
                log["first"] = ids.detach().clone() if type(ids) is torch.Tensor else ids
            log["lengths"].append(int(ids.shape[1]))
            ctx = memory.sum(1) / src_mask.sum(1, keepdim=True)  # (B, C)
            return self.tok[ids] + (ctx @ self.mix)[:, None, :] + self.pos[: ids.size(1)]  # (B, t, V)

    def calls():
        out = (log["encodes"], log["first"], list(log["lengths"]))
        log["encodes"], log["first"], log["lengths"] = 0, None, []
        return out

    probe = Probe()
    return (probe.to(device) if device is not None else probe), calls


def greedy_case(src: list[list[int]], V, C, seed, bos, eos, pad, n, sure=2):
    def call(names):
        probe, calls = greedy_probe(V, C, seed, pad_id=pad, bos_id=bos, sure_id=sure)
        s = torch.tensor(src)
        ids = names.greedy_decode(probe, s, bos, eos, pad, n)
        encodes, first, lengths = calls()
        return {"encodes": encodes, "first": first.tolist() if type(first) is torch.Tensor else first,
                "ids": plain_tensor(ids, "greedy_decode's ids"), "src": s, "lengths": lengths}
    return call


def greedy_compare(what: str, ids_hint: str, first_hint: str = "start every row from <bos> alone: a (B, 1) tensor "
                                                                "of bos_id") -> Compare:
    def compare(got, want):
        for diff in (
                equal("the number of calls of model.encode for one batch",
                      "the encoder's output depends on the source only: encode once, before the loop")(
                    got["encodes"], want["encodes"]),
                equal("what the first call of model.decode read (ids)", first_hint)(got["first"], want["first"]),
                tensor(shape="(B, n) without <bos>, n the steps taken: stop as soon as every row has ended, before "
                             "max_new_tokens", dtype="torch.long ids", values=ids_hint, what=what)(
                    got["ids"], want["ids"]),
                tensor(values="do not change src", what="src after greedy_decode")(got["src"], want["src"]),
                equal("the lengths of the ids decode read at each step")(got["lengths"], want["lengths"])):
            if diff:
                return diff
        return None
    return compare


def _first_position(got, want) -> bool:
    """The student's ids are what argmax of the FIRST position's logits gives: every step the same token."""
    ids = got["ids"]
    return is_tensor(ids) and ids.dim() == 2 and ids.size(1) > 1 and not torch.equal(ids, want["ids"]) and bool(
        (ids[:, :1] == ids[:, 1:]).all())


def _ids_differ(got, want) -> bool:
    return not (is_tensor(got["ids"]) and got["ids"].shape == want["ids"].shape and torch.equal(got["ids"],
                                                                                                 want["ids"]))


_LAST_TOKEN_ONLY = when(lambda got, want: _ids_differ(got, want) and len(got["lengths"]) > 1 and set(
    got["lengths"]) == {1}, "decode read one token at every step: it must read <bos> and everything written so far "
                            "(ids, one longer at each step), since the model keeps no cache")
_BOS_KEPT = when(lambda got, want: _ids_differ(got, want) and is_tensor(got["ids"]) and got["ids"].dim() == 2 and
                 got["ids"].shape[1] == want["ids"].shape[1] + 1 and torch.equal(got["ids"][:, 1:], want["ids"]),
                 "the ids start with <bos>: return what was written, without the <bos> column (ids[:, 1:])")

_FIRST_POSITION = when(_first_position, "every row repeats one token: the next token is the argmax of the LAST "
                                        "position's logits (logits[:, -1]), the prediction after everything read so "
                                        "far — logits[:, 0] is the prediction after <bos>, the same at every step")

_GREEDY_SRC = [[3, 4, 5, 0], [6, 7, 8, 5], [4, 0, 0, 0], [8, 8, 3, 0], [5, 6, 0, 0]]


def _greedy_meta(names):
    """The probe and src on 'meta': the <bos> column and the done flags must live on src's device. The loop cannot
    finish there (whether every row has ended is data), so the call records what ran before that."""
    probe, calls = greedy_probe(9, 4, seed=941, device="meta")
    src = torch.zeros(3, 4, dtype=torch.long, device="meta")
    log = DeviceLog()
    try:
        with log:
            names.greedy_decode(probe, src, 1, 2, 0, 4)
    except RuntimeError as exc:
        if "meta" not in str(exc):
            raise
    first = calls()[1]
    return {"first": plain_tensor(first, "the ids decode read") if first is not None else None,
            "mixed": list(log.mixed)}


GREEDY_DECODE = Exercise("greedy_decode", (
    Case("greedy_decode(model, src (5, 4), 1, 2, 0, 8)", greedy_case(_GREEDY_SRC, 9, 4, 941, 1, 2, 0, 8),
         diagnoses=(_LAST_TOKEN_ONLY, _BOS_KEPT, _FIRST_POSITION),
         compare=greedy_compare("greedy_decode's ids (without <bos>)",
                                 "argmax of the LAST position's logits (logits[:, -1]) appended to all rows; after a "
                                 "row's eos_id only pad_id; stop as soon as every row has ended or after "
                                 "max_new_tokens steps; drop the <bos>")),
    Case("greedy_decode(..., max_new_tokens=2)", greedy_case(_GREEDY_SRC, 9, 4, 941, 1, 2, 0, 2),
         diagnoses=(_LAST_TOKEN_ONLY, _BOS_KEPT, _FIRST_POSITION),
         compare=greedy_compare("greedy_decode with max_new_tokens = 2", "at most max_new_tokens steps")),
    Case("greedy_decode(model, src (3, 4), bos_id=3, eos_id=2, pad_id=5, max_new_tokens=8)",
         greedy_case([[4, 6, 5, 5], [7, 8, 6, 1], [0, 5, 5, 5]], 9, 4, 942, 3, 2, 5, 8),
         diagnoses=(_LAST_TOKEN_ONLY, _BOS_KEPT, _FIRST_POSITION),
         compare=greedy_compare("greedy_decode's ids with bos_id = 3, pad_id = 5",
                                 "after a row's eos_id write pad_id, whatever its value (here 5, not 0)",
                                 "start from bos_id, whatever its value (here 3, not 1)")),
    Case("greedy_decode with the model and src on PyTorch's 'meta' device", _greedy_meta,
         compare=fields(
             # a loop that asks whether every row has ended before its first step stops there on 'meta' (None)
             ("first", lambda g, w: None if g is None else tensor(
                 device="the <bos> column is made on the CPU: make it on src's device, torch.full((B, 1), bos_id, "
                        "dtype=torch.long, device=src.device)", what="the ids of the first decode call")(g, w)),
             ("mixed", lambda g, w: None if g == w else (
                 f"a tensor made on the CPU met src's device in {g[:2]}: make the done flags (and every tensor you "
                 "create) on src's device, torch.zeros(B, dtype=torch.bool, device=src.device)")))),
), answer="greedy_decode",
    rules=_second_line("write greedy decoding yourself, not with notebook 07's decoding loops"))


# ------------------------------------------------------------------ 7. exact_match

def _number(hint: str, what: str) -> Compare:
    def compare(got, want):
        if type(got) is not float:
            return f"{what}: got {show(got)}, expected a Python float — a fraction, not a count"
        return None if math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12) else \
            f"{what}: got {show(got)}, expected {show(want)} — {hint}"
    return compare


EXACT_MATCH = Exercise("exact_match", (
    Case("exact_match with 2 of 4 right",
         lambda names: names.exact_match(["2026-11-23", "2026-11-24", "1999-01-01", "2000-02-02"],
                                         ["2026-11-23", "2026-11-23", "1999-01-01", "2000-02-20"]),
         compare=_number("a prediction counts only when every character equals the target's: 2026-11-24 is wrong",
                         "exact_match(4 predictions)")),
    Case("exact_match of '2026-11-23 ' and '2026-11-2' against '2026-11-23'",
         lambda names: names.exact_match(["2026-11-23 ", "2026-11-2"], ["2026-11-23", "2026-11-23"]),
         compare=_number("compare whole strings as they are: no strip(), no prefix", "exact_match")),
    Case('exact_match(["ab", "B"], ["ab", "b"])', lambda names: names.exact_match(["ab", "B"], ["ab", "b"]),
         compare=_number("upper and lower case are different characters: no lower()", "exact_match")),
), rules=_second_line("write exact match yourself"))


# ------------------------------------------------------------------ the multiple-choice questions

Q1, Q1_LETTER = question("q1", "answer_q1", "ABCD")
Q2, Q2_LETTER = question("q2", "answer_q2", "ABCD")


NOTEBOOK = Notebook(
    "09_encoder_decoder", reference="lmcourse.reference.encoder_decoder",
    hidden="lmcourse.marking.encoder_decoder_hidden",
    exercises=(TEACHER_FORCING, CROSS_ATTENTION, ENCODER_BLOCK, DECODER_BLOCK, ENCODER_DECODER,
               GREEDY_DECODE, EXACT_MATCH, Q1, Q2),
    # lmcourse.nn.seq2seq, the course's trained encoder-decoder, does 09's work: absent here too
    withheld=("lmcourse.reference.encoder_decoder", "lmcourse.reference.decoding", "lmcourse.nn.seq2seq"))
