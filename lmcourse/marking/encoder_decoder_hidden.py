"""Notebook 09's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

import torch

from .encoder_decoder import (
    Q1_LETTER,
    Q2_LETTER,
    batch,
    block_compare,
    built,
    config,
    cross_case,
    decoder_case,
    encoder_case,
    fields,
    grads_compare,
    greedy_case,
    greedy_compare,
    inputs_kept,
    plain_tensor,
    teacher_pair,
    tensor,
)
from .spec import Case

__all__ = ["HIDDEN"]


def _cross_hidden(got, want):
    return (tensor(atol=1e-10, rtol=1e-10, what="the output")(got["y"], want["y"])
            or inputs_kept("x", "memory", "mask")(got, want)
            or grads_compare("CrossAttention")(got["grads"], want["grads"]))


def _model_case(sizes: dict, shape: tuple, seed: int):
    def call(names):
        cfg = config(**sizes)
        m = built(names, cfg, seed)
        src, tgt_in, tgt_out = batch(cfg, *shape, seed=seed)
        with torch.no_grad():
            logits, loss = m(src.clone(), tgt_in.clone(), tgt_out.clone())
        return {"logits": plain_tensor(logits, "the logits"), "loss": plain_tensor(loss, "the loss")}
    return call


_CFG_A = dict(src_vocab_size=9, tgt_vocab_size=7, src_block_size=5, tgt_block_size=4, n_enc_layer=1, n_dec_layer=3,
              n_head=4, n_embd=8, pad_id=0)
_CFG_B = dict(src_vocab_size=9, tgt_vocab_size=9, src_block_size=6, tgt_block_size=3, n_enc_layer=3, n_dec_layer=1,
              n_head=1, n_embd=4, bias=False, pad_id=6)
_MODEL = fields(("logits", tensor(atol=1e-10, rtol=1e-10, what="the logits")),
                ("loss", tensor(atol=1e-10, rtol=1e-9, what="the loss")))
_S2 = [[3, 4, 0], [5, 6, 6], [4, 4, 4]]
_S3 = [[6, 6, 2, 2], [3, 2, 2, 2], [0, 1, 5, 2]]

HIDDEN = {
    "teacher_forcing": (
        Case("padding_mask(ids, 3)", lambda names: names.padding_mask(torch.tensor([[2, 2, 3, 1], [1, 3, 3, 3]]), 3),
             compare=tensor()),
        Case("teacher_forcing with bos 0, eos 9, pad 3",
             lambda names: names.teacher_forcing([[4, 4], [7, 8, 9, 5, 6]], 0, 9, 3), compare=teacher_pair("", "")),
        Case("teacher_forcing of one target of one id", lambda names: names.teacher_forcing([[11]], 1, 2, 0),
             compare=teacher_pair("", "")),
    ),
    "cross_attention": tuple(
        Case(f"CrossAttention({C}, {nh}, bias={bias}) on T = {T}, S = {S}, and its gradients",
             cross_case(C, nh, B, T, S, lengths, seed, bias, grads=True), compare=_cross_hidden)
        for C, nh, B, T, S, lengths, seed, bias in [(12, 3, 2, 1, 7, [7, 2], 903, True),
                                                    (6, 1, 3, 6, 2, [1, 2, 2], 904, False),
                                                    (16, 4, 1, 9, 9, [5], 905, True)]),
    "encoder_block": tuple(
        Case(f"EncoderBlock({C}, {nh}) on S = {S}, and its gradients", encoder_case(C, nh, B, S, lengths, seed, True),
             compare=block_compare(f"EncoderBlock({C}, {nh})", "", ("x",), ""))
        for C, nh, B, S, lengths, seed in [(12, 3, 2, 7, [7, 1], 913), (4, 1, 1, 1, [1], 914)]),
    "decoder_block": tuple(
        Case(f"DecoderBlock({C}, {nh}) on T = {T}, S = {S}, and its gradients",
             decoder_case(C, nh, B, T, S, lengths, seed, True),
             compare=block_compare(f"DecoderBlock({C}, {nh})", "", ("x", "memory"), ""))
        for C, nh, B, T, S, lengths, seed in [(12, 3, 2, 6, 3, [3, 1], 923), (4, 1, 1, 1, 5, [2], 924)]),
    "encoder_decoder": (
        Case("hidden model 0 (pad_id 0): logits and loss", _model_case(_CFG_A, (2, 5, 4, [2, 5], [1, 3]), 933),
             compare=_MODEL),
        Case("hidden model 1 (pad_id 6, no bias): logits and loss", _model_case(_CFG_B, (2, 4, 3, [4, 1], [2, 2]), 934),
             compare=_MODEL),
    ),
    "greedy_decode": tuple(
        Case(f"greedy_decode with bos {bos}, eos {eos}, pad {pad}, max {n}", greedy_case(src, 7, 3, seed, bos, eos, pad,
                                                                                          n, sure),
             compare=greedy_compare(f"greedy_decode with bos {bos}, eos {eos}, pad {pad}, max {n}", ""))
        for src, seed, bos, eos, pad, n, sure in [(_S2, 945, 1, 2, 0, 6, 2), (_S2, 945, 1, 5, 0, 12, 2),
                                                  (_S2, 945, 1, 3, 0, 1, 2), (_S3, 946, 4, 0, 2, 7, 0),
                                                  (_S3, 947, 6, 4, 2, 9, 4)]),
    "exact_match": (
        Case("one right of one", lambda names: names.exact_match(["a"], ["a"])),
        Case("case counts", lambda names: names.exact_match(["a", "B", "c"], ["a", "b", "x"])),
    ),
    "q1": (Q1_LETTER,),
    "q2": (Q2_LETTER,),
}
