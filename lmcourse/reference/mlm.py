"""Notebook 06 (masked LM): the reference answers of its exercises, in the notebook's signatures
(``mask_tokens``, ``MaskedLM``, ``fill_mask``, ``pseudo_log_likelihood``, the two questions' letters),
and ``REFERENCE``: the course code that does one of its exercises' work.

The grader computes expected values from these in its own process; the grading kernel of 06
cannot import this module (:mod:`lmcourse.marking`). The given code stays in :mod:`lmcourse.nn.mlm`
(``MLMConfig``, BERT's initialisation, saving); :func:`load_mlm` is here, as it builds a
:class:`MaskedLM`. Checked against transformers' ``BertForMaskedLM`` and
``DataCollatorForLanguageModeling`` in the course's tests.

The objective, in the lectures' notation: choose some positions ``i`` of a sequence
``x_1..x_n``, corrupt the input there, and train the model to give the original token back,
``p(x_i | x_1 .. x_{i-1}, x_{i+1} .. x_n)``, from both sides at once.

Masking (BERT's recipe; the rates and ``-100`` labels of ``transformers``'
``DataCollatorForLanguageModeling``)::

    chosen   ~ Bernoulli(p) at every non-special position, independently (p = 0.15)
    of those:  80% -> [MASK],  10% -> a random *ordinary* token,  10% -> left as they are
    labels   = the original token at chosen positions, -100 (ignored by the loss) elsewhere

The model (BERT's layout, without segment embeddings or next-sentence prediction)::

    x        = dropout(LN_emb(W_embed[w_t] + p_t))         token + learned position, normalised
    h^(l)    = Block_l(h^(l-1))                             post-LN, bidirectional (causal=False)
    z_t      = LN_head(GELU(W_dense h_t^(L) + b_dense))     BERT's prediction-head transform
    logits_t = W_embed z_t + b_out                          decoder tied to the token embedding
    loss     = mean over chosen positions of -log softmax(logits_t)[label_t]
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lmcourse.nn.block import Block, LayerNorm
from lmcourse.nn.checkpoint import load_model
from lmcourse.nn.mlm import IGNORE_INDEX, MLMConfig, init_mlm_weights

__all__ = ["ANSWERS", "REFERENCE", "MaskedLM", "answer_q1", "answer_q2", "expected_pll", "fill_mask", "mask_tokens",
           "load_mlm", "ordinary_ids", "pseudo_log_likelihood", "reference_mlm"]


class MaskedLM(nn.Module):
    """Embeddings with a LayerNorm, ``n_layer`` post-LN blocks, BERT's head tied to the embedding.

    ``forward(idx, targets=None)`` takes ids ``(B, T)`` and returns ``(logits, loss)``: logits
    ``(B, T, V)`` at every position, and the mean cross-entropy over the positions whose target is
    not ``-100`` (or ``None`` without targets).
    """

    def __init__(self, config: MLMConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # W_embed: (V, C)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # p_t: (block_size, C)
        self.ln_emb = LayerNorm(config.n_embd, bias=config.bias, eps=config.ln_eps)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config.block_config()) for _ in range(config.n_layer))
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.head_ln = LayerNorm(config.n_embd, bias=config.bias, eps=config.ln_eps)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=True)  # its own bias b_out
        self.lm_head.weight = self.wte.weight  # tied: one tensor
        init_mlm_weights(self)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        z = self.head_ln(F.gelu(self.head_dense(x)))  # (B, T, C)
        logits = self.lm_head(z)  # (B, T, V)
        loss = None
        if targets is not None:
            flat = logits.reshape(B * T, -1)
            flat = flat.to(torch.promote_types(flat.dtype, torch.float32))  # at least float32 under autocast
            loss = F.cross_entropy(flat, targets.reshape(B * T), ignore_index=IGNORE_INDEX)
        return logits, loss



def ordinary_ids(vocab_size: int, special_ids, mask_id: int, device=None) -> Tensor:
    """The ids a random replacement may take: every id that is neither special nor ``[MASK]``."""
    keep = torch.ones(vocab_size, dtype=torch.bool, device=device)
    special = torch.as_tensor(sorted({int(i) for i in special_ids} | {int(mask_id)}), dtype=torch.long)
    keep[special[(special >= 0) & (special < vocab_size)].to(keep.device)] = False
    return keep.nonzero().flatten()  # (n_ordinary,)


def mask_tokens(tokens: Tensor, mask_id: int, vocab_size: int, special_ids, p: float = 0.15,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """BERT's corruption of a batch of ids ``(B, T)``: ``(inputs, labels)``, both like ``tokens``.

    Each position whose id is not in ``special_ids`` is chosen with probability ``p``,
    independently (so each sequence gets its own draw); a chosen position becomes ``mask_id``
    with probability 0.8, a random ordinary id (uniform over the ids that are neither special
    nor ``mask_id``) with probability 0.1, and stays as it is otherwise. ``labels`` holds the
    original id at chosen positions and ``-100`` elsewhere. Every draw uses ``generator``.
    ``tokens`` is not changed.
    """
    device = tokens.device
    special = torch.as_tensor(sorted({int(i) for i in special_ids}), dtype=tokens.dtype, device=device)
    is_special = torch.isin(tokens, special)  # (B, T)
    u = torch.rand(tokens.shape, generator=generator, device=device)  # (B, T): which positions
    chosen = (u < p) & ~is_special
    r = torch.rand(tokens.shape, generator=generator, device=device)  # (B, T): what they become
    to_mask = chosen & (r < 0.8)
    to_random = chosen & (r >= 0.8) & (r < 0.9)
    pool = ordinary_ids(vocab_size, special_ids, mask_id, device=device)  # (n_ordinary,)
    pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)  # (B, T)
    inputs = tokens.clone()
    inputs[to_mask] = mask_id
    inputs[to_random] = pool[pick[to_random]].to(tokens.dtype)
    labels = torch.full_like(tokens, IGNORE_INDEX)
    labels[chosen] = tokens[chosen]
    return inputs, labels


def _mask_ids(tokenizer, text: str, mask_token: str = "[MASK]") -> list[int]:
    """``text`` as ids, with ``mask_id`` wherever ``mask_token`` is written."""
    mask_id = tokenizer.stoi[mask_token]
    ids: list[int] = []
    for k, piece in enumerate(text.split(mask_token)):
        if k:
            ids.append(mask_id)
        ids += tokenizer.encode(piece)
    return ids


def fill_mask(model: nn.Module, tokenizer, text: str, top_k: int = 5,
              mask_token: str = "[MASK]") -> list[list[tuple[str, float]]]:
    """The ``top_k`` most likely tokens, with their probabilities, for each ``mask_token`` in
    ``text``, left to right: one list of ``(token, probability)`` pairs per blank, most likely
    first. One forward pass; the probabilities are a softmax over the whole vocabulary."""
    ids = _mask_ids(tokenizer, text, mask_token)
    mask_id = tokenizer.stoi[mask_token]
    device = next(model.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    with torch.no_grad():
        logits = model(idx)[0][0]  # (T, V)
    out = []
    for t in (idx[0] == mask_id).nonzero().flatten().tolist():
        probs = torch.softmax(logits[t].double(), dim=-1)  # (V,)
        top = torch.topk(probs, top_k)
        out.append([(tokenizer.itos[i], float(q)) for q, i in zip(top.values.tolist(), top.indices.tolist())])
    return out


def pseudo_log_likelihood(model: nn.Module, ids: Tensor, mask_id: int) -> float:
    """``sum_i log p(x_i | x with position i replaced by mask_id)`` in nats, for 1-D ``ids``:
    the ``T`` masked copies go through the model as one batch ``(T, T)``."""
    T = ids.numel()
    batch = ids.reshape(1, T).repeat(T, 1)  # (T, T): row i will have position i masked
    diag = torch.arange(T, device=ids.device)
    batch[diag, diag] = mask_id
    with torch.no_grad():
        logits = model(batch)[0]  # (T, T, V)
    logp = torch.log_softmax(logits[diag, diag].double(), dim=-1)  # (T, V): position i of row i
    return float(logp[diag, ids.reshape(T)].sum())


answer_q1 = "C"     # the loss is averaged over every chosen position, the 10% left unchanged included
answer_q2 = "B"     # one masked copy per position: n passes, or one pass over n copies


def reference_mlm(cfg: MLMConfig, dtype: torch.dtype = torch.float64, seed: int = 0) -> MaskedLM:
    """The course's ``MaskedLM(cfg)``, seeded, in ``dtype`` and eval mode, its biases and LayerNorm
    parameters moved by ``0.1 N(0, 1)`` away from 0 and 1 so that each one matters."""
    torch.manual_seed(seed)
    ref = MaskedLM(cfg).to(dtype).eval()
    with torch.no_grad():
        for p in ref.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return ref


def expected_pll(model, ids, mask_id) -> float:
    """The pseudo-log-likelihood of ``ids`` (1-D), one masked copy at a time, for a model whose
    ``forward`` returns ``(logits, ...)``: the loop form of :func:`pseudo_log_likelihood`."""
    total = 0.0
    for i in range(len(ids)):
        x = ids.clone()
        x[i] = mask_id
        with torch.no_grad():
            logits = model.forward(x[None])[0][0, i]
        total += float(logits[ids[i]] - torch.logsumexp(logits, 0))
    return total


# the answers, and with them every course function that does one of 06's exercises' work
def load_mlm(path, device: torch.device | str = "cpu") -> tuple[nn.Module, dict]:
    """A :class:`MaskedLM` saved by :func:`lmcourse.nn.mlm.save_mlm` (``lmcourse train mlm``'s checkpoint),
    in eval mode, and the rest of what was saved. A config or weight this model does not have, or lacks,
    raises :class:`~lmcourse.nn.checkpoint.ModelCheckpointError` naming them."""
    return load_model(path, MaskedLM, MLMConfig, device)


ANSWERS = (MaskedLM, ordinary_ids, mask_tokens, _mask_ids, fill_mask, pseudo_log_likelihood)
REFERENCE = ANSWERS + (init_mlm_weights, expected_pll, reference_mlm)
