"""Notebook 12 (instruction tuning, and what a model remembers): the reference answers, and ``REFERENCE``, the
names that do its exercises.

1. a chat template: ``<|user|>instruction<|assistant|>response<|end|>``, its three markers one token each
   (ids after the character vocabulary), rendered, encoded and decoded back;
2. supervised fine-tuning (SFT) labels: the loss on the response's tokens and the end token only, the prompt
   and the padding at the ignore index;
3. greedy response generation that stops at the end token or a budget, and exact match after a stated
   normalisation;
4. memorisation: the share of a text's k-grams found verbatim in the training text (an index built once),
   and the extraction rate of training passages (Carlini et al. 2021, 2023): a prefix of p characters,
   continued greedily, compared with the next s characters;
5. exact deduplication of repeated paragraphs (Lee et al. 2022; Kandpal et al. 2022 on what it does to
   memorisation).

Written for clarity; the notebook's data and training loop are :mod:`lmcourse.instruct` and
:mod:`lmcourse.memorisation`.
"""

from __future__ import annotations

import re

import torch
from torch import Tensor, nn

__all__ = ["IGNORE_INDEX", "REFERENCE", "SPECIAL_TOKENS", "ChatTokenizer", "KGramIndex", "answer_q_dedup",
           "answer_q_heldout", "answer_q_mask", "deduplicate", "exact_match", "extraction_rate",
           "generate_response", "sft_batch"]

IGNORE_INDEX = -100          # the target of a position the loss skips (F.cross_entropy's default ignore_index)
SPECIAL_TOKENS = ("<|user|>", "<|assistant|>", "<|end|>")


# --- 1. the chat template -------------------------------------------------------------------------------

class ChatTokenizer:
    """A character tokenizer ``tok`` with the chat template's three markers added as tokens of their own:
    ``<|user|>``, ``<|assistant|>``, ``<|end|>`` get the ids ``tok.vocab_size``, ``+ 1``, ``+ 2``."""

    def __init__(self, tok) -> None:
        self.tok = tok
        self.user_id, self.assistant_id, self.end_id = (tok.vocab_size + i for i in range(len(SPECIAL_TOKENS)))
        self.vocab_size = tok.vocab_size + len(SPECIAL_TOKENS)

    def render(self, instruction: str, response: str | None = None) -> str:
        """The prompt ``<|user|>instruction<|assistant|>``, followed by ``response<|end|>`` when given."""
        prompt = f"<|user|>{instruction}<|assistant|>"
        return prompt if response is None else f"{prompt}{response}<|end|>"

    def encode(self, text: str) -> list[int]:
        """Each marker as its one id, everything between them through ``tok`` (one id per character)."""
        ids: list[int] = []
        # a capturing split keeps the markers: ["", "<|user|>", "ab", "<|assistant|>", ...]
        for part in re.split("(" + "|".join(re.escape(s) for s in SPECIAL_TOKENS) + ")", text):
            if part in SPECIAL_TOKENS:
                ids.append(self.tok.vocab_size + SPECIAL_TOKENS.index(part))
            elif part:
                ids.extend(self.tok.encode(part))
        return ids

    def decode(self, ids) -> str:
        out = []
        for i in ids:
            i = int(i)
            out.append(SPECIAL_TOKENS[i - self.tok.vocab_size] if i >= self.tok.vocab_size else self.tok.decode([i]))
        return "".join(out)


# --- 2. SFT labels ----------------------------------------------------------------------------------------

def sft_batch(pairs: list[tuple[list[int], list[int]]], end_id: int, pad_id: int = 0) -> tuple[Tensor, Tensor]:
    """``(idx, targets)``, both ``(B, T)`` long, for ``pairs`` of ``(prompt_ids, response_ids)``: each sequence
    is ``prompt + response + [end_id]``; ``idx`` holds it without its last token, ``targets`` the token after
    each position, :data:`IGNORE_INDEX` where that token is still the prompt's; both right-padded (``pad_id``
    in ``idx``, the ignore index in ``targets``) to ``T``, the longest sequence minus one."""
    seqs = [(list(p) + list(r) + [end_id], len(p)) for p, r in pairs]
    T = max(len(s) for s, _ in seqs) - 1
    idx = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    targets = torch.full((len(seqs), T), IGNORE_INDEX, dtype=torch.long)
    for b, (s, n_prompt) in enumerate(seqs):
        idx[b, :len(s) - 1] = torch.tensor(s[:-1])
        # position t predicts token t + 1: the first response token is predicted at the prompt's last position
        targets[b, n_prompt - 1:len(s) - 1] = torch.tensor(s[n_prompt:])
    return idx, targets


# --- 3. generation and exact match -----------------------------------------------------------------------

def generate_response(model: nn.Module, prompt_ids: list[int], end_id: int, max_new_tokens: int) -> list[int]:
    """Greedy: append the most probable next id (the first on a tie) until ``end_id`` comes (not returned) or
    ``max_new_tokens`` ids are generated; the model sees the last ``block_size`` ids. The new ids, a list."""
    device = next(model.parameters()).device
    idx = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)
    out: list[int] = []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(idx[:, -model.config.block_size:])     # (1, T, V)
            nxt = int(logits[0, -1].argmax())
            if nxt == end_id:
                break
            out.append(nxt)
            idx = torch.cat([idx, torch.tensor([[nxt]], device=device)], dim=1)
    return out


def _normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def exact_match(prediction: str, reference: str) -> bool:
    """Equal after normalisation: whitespace at the ends dropped, runs of whitespace inside as one space,
    lower case."""
    return _normalise(prediction) == _normalise(reference)


# --- 4. memorisation -------------------------------------------------------------------------------------

class KGramIndex:
    """Every k-gram (``k`` consecutive characters) of ``text``, indexed once; ``kgram in index`` and
    ``fraction(generated)``: the share of ``generated``'s k-grams (every window, repeats counted) found in
    ``text``, 0.0 when it has none. Python's hash of a string: 64 bits, one int per k-gram of the text."""

    def __init__(self, text: str, k: int) -> None:
        self.k = k
        self._hashes = {hash(text[i:i + k]) for i in range(len(text) - k + 1)}

    def __contains__(self, kgram: str) -> bool:
        return len(kgram) == self.k and hash(kgram) in self._hashes

    def fraction(self, generated: str) -> float:
        windows = [generated[i:i + self.k] for i in range(len(generated) - self.k + 1)]
        if not windows:
            return 0.0
        return sum(w in self for w in windows) / len(windows)


def extraction_rate(model: nn.Module, tok, passages: list[str], p: int, s: int) -> float:
    """The share of ``passages`` whose next ``s`` characters come back exactly when the model continues their
    first ``p`` characters greedily (one batch: every prompt has ``p`` tokens; the model sees the last
    ``block_size``)."""
    device = next(model.parameters()).device
    idx = torch.tensor([tok.encode(t[:p]) for t in passages], dtype=torch.long, device=device)   # (N, p)
    with torch.no_grad():
        for _ in range(s):
            logits, _ = model(idx[:, -model.config.block_size:])                              # (N, T, V)
            idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    hits = [tok.decode(row[p:].tolist()) == t[p:p + s] for row, t in zip(idx, passages)]
    return sum(hits) / len(passages)


# --- 5. deduplication ------------------------------------------------------------------------------------

def deduplicate(text: str, min_chars: int) -> tuple[str, int]:
    """The paragraphs of ``text`` (``text.split("\\n\\n")``) with every repeat of an earlier paragraph of at
    least ``min_chars`` characters removed (shorter ones always kept), joined by ``"\\n\\n"``; and how many
    were removed."""
    seen: set[str] = set()
    kept, removed = [], 0
    for para in text.split("\n\n"):
        if len(para) >= min_chars:
            if para in seen:
                removed += 1
                continue
            seen.add(para)
        kept.append(para)
    return "\n\n".join(kept), removed


# the multiple-choice questions: masking the prompt spends the loss on the answers; held-out prefixes are the
# baseline of what any good language model would write; deduplication removes the repeats and keeps the rest
answer_q_mask = "B"
answer_q_heldout = "D"
answer_q_dedup = "C"


REFERENCE = (ChatTokenizer, sft_batch, generate_response, exact_match, KGramIndex, extraction_rate, deduplicate)
