"""transformers' GPT-2 with the course GPT's sizes and a copy of its weights: the widely used
implementation that the tests and ``make gpu-check`` hold the course's model against.

transformers is a test and benchmark dependency (the ``dev`` extra), imported here only when a
twin is made. Nothing is downloaded: the model is built from a config.
"""

from __future__ import annotations

import torch

__all__ = ["gpt2_twin"]


def gpt2_twin(model, activation: str = "gelu_new"):
    """``GPT2LMHeadModel`` with ``model``'s sizes, dtype, device and weights (GPT-2's ``Conv1D``
    stores a weight as (in, out), the transpose of ``nn.Linear``'s); in eval mode, eager attention,
    no dropout. ``activation``: ``gelu_new`` for the course's ``gelu="tanh"``, ``gelu`` for ``"none"``."""
    import transformers

    c = model.config
    cfg = transformers.GPT2Config(vocab_size=c.vocab_size, n_positions=c.block_size, n_embd=c.n_embd,
                                  n_layer=c.n_layer, n_head=c.n_head, activation_function=activation,
                                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=c.ln_eps,
                                  tie_word_embeddings=True, bos_token_id=None, eos_token_id=None)
    cfg._attn_implementation = "eager"
    p = next(model.parameters())
    hf = transformers.GPT2LMHeadModel(cfg).to(device=p.device, dtype=p.dtype).eval()
    with torch.no_grad():
        t = hf.transformer
        t.wte.weight.copy_(model.wte.weight)
        t.wpe.weight.copy_(model.wpe.weight)
        for ours, theirs in zip(model.blocks, t.h):
            for a, b in [(ours.ln1, theirs.ln_1), (ours.ln2, theirs.ln_2)]:
                b.weight.copy_(a.weight)
                b.bias.copy_(a.bias)
            for a, b in [(ours.attn.c_attn, theirs.attn.c_attn), (ours.attn.c_proj, theirs.attn.c_proj),
                         (ours.mlp.c_fc, theirs.mlp.c_fc), (ours.mlp.c_proj, theirs.mlp.c_proj)]:
                b.weight.copy_(a.weight.T)
                b.bias.copy_(a.bias)
        t.ln_f.weight.copy_(model.ln_f.weight)
        t.ln_f.bias.copy_(model.ln_f.bias)
    return hf
