"""Notebook 12's tests (instruction tuning, and what a model remembers): the visible cases, with the hints that
teach.

Every case builds its own inputs: small character tokenizers (the course's ``CharTokenizer``), token-id lists,
and for the generation exercises the course's given GPT with small sizes and weights drawn here by parameter
name (:func:`lmcourse.marking.gpt.load_weights`), in float64. The expected value is the same call on the
reference's names (:mod:`lmcourse.reference.instruct`); where a case names a likely slip, its comparison looks
at what the student's value holds. The hidden cases are in :mod:`.instruct_hidden`.
"""

from __future__ import annotations

import torch

from .gpt import load_weights
from .plain import NotPlain
from .rules import exercise_rules
from .show import show
from .spec import Case, Exercise, Notebook, question
from .tensors import tensor

__all__ = ["NOTEBOOK", "Q_DEDUP_LETTER", "Q_HELDOUT_LETTER", "Q_MASK_LETTER", "chat_case", "chat_compare",
           "dedup_case", "dedup_compare", "extraction_case", "extraction_compare", "generate_case",
           "generate_compare", "index_case", "index_compare", "match_case", "match_compare", "model", "sealed_case",
           "sft_case", "sft_compare", "sft_loss_case"]

IGNORE = -100
# A share counted in float32 (a tensor's mean, then .item()) is right to about 1e-7; shares of the cases'
# few windows or passages differ by far more than this when a count differs.
SHARE_TOL = 1e-6
MARKERS = ("<|user|>", "<|assistant|>", "<|end|>")


def _rules(*extra):
    """Third-party code refused in a graded call (transformers'), and ``extra``: course code that does the
    exercise's work, as ``(targets, reason)`` (targets as :func:`lmcourse.marking.rules.exercise_rules` reads
    them)."""
    return exercise_rules(libraries=("transformers",), extra=extra)


# the course's given code that runs a generation loop on a model: the sampling loop, the static-cache
# generators, 09's encoder-decoder decoders (a GPT behind an adapter passes for a decoder) and 09's
# decoder-only greedy loop
_GIVEN_DECODING = (("lmcourse.nn.sampling:generate", "lmcourse.nn.static_cache", "lmcourse.nn.seq2seq:greedy_decode",
                    "lmcourse.nn.seq2seq:_greedy_decode", "lmcourse.nn.seq2seq:beam_decode",
                    "lmcourse.dates:decoder_only_greedy"),
                   "write the greedy loop yourself, not the course's generation loops (lmcourse.nn.sampling, "
                   "lmcourse.nn.static_cache, lmcourse.nn.seq2seq's decoders) or lmcourse.dates' decoders")

# notebook 08's given special-token handling (its split_specials exercise, and the tokenizer that uses it):
# cutting the markers out of a text is this exercise's work
_GIVEN_SPLITTER = (("lmcourse.bpe",), "cut the markers out yourself, not with lmcourse.bpe (notebook 08's "
                   "special-token splitting)")


def _tok(alphabet: str, specials=("<unk>",)):
    from lmcourse.tokenizers import CharTokenizer

    return CharTokenizer.from_text(alphabet, specials)


def model(seed: int = 1200, vocab: int = 11, block: int = 12, n_layer: int = 2, d: int = 16):
    """The course's GPT with the test's weights, in float64 and eval mode."""
    from lmcourse.nn import GPT, GPTConfig

    cfg = GPTConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=2, n_embd=d, dropout=0.0)
    return load_weights(GPT(cfg), seed).eval()


def _grad_log(m) -> list[bool]:
    """Whether autograd was on at each forward pass of ``m`` (the case reports whether any ran with it on)."""
    seen: list[bool] = []
    m.register_forward_pre_hook(lambda module, args: seen.append(torch.is_grad_enabled()))
    return seen


_NO_GRAD = ("the model ran with autograd on: run its forward passes under torch.no_grad() (generation needs no "
            "gradients, and each step would keep a graph)")


# ------------------------------------------------------------------ 1. the chat template

def chat_case(alphabet: str, renders=(), encodes=(), decodes=()):
    """``ChatTokenizer(CharTokenizer.from_text(alphabet))``: its ids and size, ``render(*args)`` of each of
    ``renders``, ``encode`` of each of ``encodes`` and ``decode(encode(t))`` of each of ``decodes``."""
    def call(names):
        tok = _tok(alphabet)
        chat = names.ChatTokenizer(tok)
        out = {"ids": [getattr(chat, a, None) for a in ("user_id", "assistant_id", "end_id", "vocab_size")],
               "render": [chat.render(*args) for args in renders],
               "encode": [chat.encode(t) for t in encodes],
               "round trip": [chat.decode(chat.encode(t)) for t in decodes]}
        return out
    return call


def chat_compare(got, want):
    if type(got) is not dict or set(got) != set(want):
        return f"got {show(got)}"
    if got["ids"] != want["ids"]:
        return (f"user_id, assistant_id, end_id, vocab_size: got {show(got['ids'])}, expected {want['ids']} — the "
                "markers take the ids after the character vocabulary, tok.vocab_size, + 1, + 2 in the order "
                "<|user|>, <|assistant|>, <|end|>, and vocab_size counts them (an int each)")
    for g, w in zip(got["render"], want["render"]):
        if g != w:
            return (f"render: got {g!r}, expected {w!r} — '<|user|>' + instruction + '<|assistant|>', then "
                    "response + '<|end|>' when a response is given, '' included (only None means no response; "
                    "nothing added between them)")
    for g, w in zip(got["encode"], want["encode"]):
        if g != w:
            if type(g) is list and len(g) > len(w):
                return (f"encode: got {show(g)}, expected {w} — a marker is one token (its own id), not the ids of "
                        "its characters")
            return f"encode: got {show(g)}, expected {w} — each marker its one id, every other character through tok"
    for g, w in zip(got["round trip"], want["round trip"]):
        if g != w:
            return (f"decode(encode(text)): got {g!r}, expected {w!r} — decode writes each marker's id back as the "
                    "marker's text and every other id through tok.decode")
    if got != want:
        return f"got {show(got)}, expected {show(want)}"
    return None


_ALPHA = "abc de.\n<|>"

CHAT_TOKENIZER = Exercise("ChatTokenizer", (
    Case("ChatTokenizer(tok): the markers' ids and the vocabulary size", chat_case(_ALPHA), compare=chat_compare),
    Case("render('ab c'), render('ab c', 'de.') and render('ab', '') (an empty response is a response)",
         chat_case(_ALPHA, renders=(("ab c",), ("ab c", "de."), ("ab", ""))), compare=chat_compare),
    Case("encode(render('ab', 'cd'))", chat_case(_ALPHA, encodes=("<|user|>ab<|assistant|>cd<|end|>",)),
         compare=chat_compare),
    Case("encode of text with '<', '|' and '>' that is no marker", chat_case(_ALPHA, encodes=("a<|b|>c", "<|end|")),
         compare=chat_compare),
    Case("decode(encode(text)) gives the text back", chat_case(_ALPHA, decodes=(
        "<|user|>ab c<|assistant|>de.<|end|>", "<|end|><|end|>a", "a<|b|>\n", "")), compare=chat_compare),
), answer="ChatTokenizer", rules=_rules(_GIVEN_SPLITTER))


# ------------------------------------------------------------------ 2. SFT labels

def sft_case(pairs, end_id, pad_id=None):
    def call(names):
        copies = [(list(p), list(r)) for p, r in pairs]
        out = names.sft_batch(copies, end_id) if pad_id is None else names.sft_batch(copies, end_id, pad_id)
        same = copies == [(list(p), list(r)) for p, r in pairs]
        if type(out) is not tuple or len(out) != 2:
            return {"batch": out, "unchanged": same}
        return {"idx": out[0], "targets": out[1], "unchanged": same}
    return call


def _slip(got_t, want_t):
    """What the student's targets say about the slip, or None."""
    if not (type(got_t) is torch.Tensor and got_t.shape == want_t.shape and got_t.dtype == want_t.dtype):
        return None
    missing = (got_t == IGNORE) & (want_t != IGNORE)     # a token the loss should see, ignored
    extra = (got_t != IGNORE) & (want_t == IGNORE)       # a position the loss should skip, kept
    if missing.any() and not extra.any():
        ends = [int((row != IGNORE).nonzero().max()) for row in want_t]
        if int(missing.sum()) == len(ends) and all(bool(missing[b, t]) for b, t in enumerate(ends)):
            return ("the end token is not among the targets: append end_id to each response, and the position "
                    "before it predicts it (the model must learn to stop)")
        return ("targets ignore response tokens: the first response token is predicted at the prompt's last "
                "position, len(prompt) - 1, and every response token and the end token are targets")
    if extra.any():
        return ("targets carry tokens the loss must skip: every position before the prompt's last (it would "
                f"predict the prompt) and the padding are {IGNORE}, the ignore index")
    return None


def sft_compare(got, want):
    if "batch" in got:
        return f"sft_batch should return a tuple (idx, targets), got {show(got['batch'])}"
    if type(got["idx"]) is torch.Tensor and type(got["targets"]) is torch.Tensor:
        if got["idx"].shape != want["idx"].shape:
            return (f"shape {tuple(got['idx'].shape)}, expected {tuple(want['idx'].shape)} — T is the longest "
                    "prompt + response + end token minus one: idx holds each sequence without its last token, "
                    "targets without its first")
        slip = _slip(got["targets"], want["targets"])
        if slip:
            return f"targets: {slip}"
    return (tensor(shape="(B, T)", dtype="token ids are torch.long", values="each sequence prompt + response + "
                   "[end_id] without its last token, then pad_id", what="idx")(got["idx"], want["idx"])
            or tensor(shape="(B, T)", dtype="torch.long", values=f"targets[b, t] is the token at t + 1 from the "
                      f"prompt's last position on (the response and the end token), {IGNORE} elsewhere (the "
                      "prompt and the padding)", what="targets")(got["targets"], want["targets"])
            or (None if got["unchanged"] else "sft_batch changed the lists it was given: leave them as they are"))


def sft_loss_case(pairs, end_id, seed=1210):
    """The masked loss of the batch against each pair's alone, with pad ids 0 and 5: padding changes nothing."""
    def call(names):
        import torch.nn.functional as F

        m = model(seed)
        out = {}
        with torch.no_grad():
            for pad in (0, 5):
                idx, targets = names.sft_batch([(list(p), list(r)) for p, r in pairs], end_id, pad)
                logits, _ = m(idx)
                out[f"pad {pad}"] = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                                                    reduction="sum")
            alone = []
            for p, r in pairs:
                idx, targets = names.sft_batch([(list(p), list(r))], end_id, 0)
                alone.append(F.cross_entropy(m(idx)[0].flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                                             reduction="sum"))
            out["alone"] = torch.stack(alone).sum()
        return out
    return call


def sft_loss_compare(got, want):
    for key in ("pad 0", "pad 5"):
        diff = tensor(atol=1e-9, rtol=1e-9, values="the summed loss over the response tokens: only the response's "
                      f"positions and its end token count, the prompt and the pads are {IGNORE}",
                      what=f"the batch's summed loss, {key}")(got[key], want[key])
        if diff:
            return diff
    return tensor(atol=1e-9, rtol=1e-9, values="the padded batch must give what each pair gives alone",
                  what="the batch's loss vs each pair alone")(got["pad 0"], got["alone"])


_ONE = [([1, 2, 3], [4, 5])]
_THREE = [([1, 2, 3], [4, 5]), ([6], [7, 8, 2, 1, 4, 6]), ([3, 3], [9])]     # sequences of 6, 8 and 4 tokens

SFT_BATCH = Exercise("sft_batch", (
    Case("sft_batch([([1, 2, 3], [4, 5])], end_id=10)", sft_case(_ONE, 10), compare=sft_compare),
    Case("sft_batch of three pairs of unequal lengths, end_id=10", sft_case(_THREE, 10), compare=sft_compare),
    Case("the same three pairs, pad_id=7", sft_case(_THREE, 10, 7), compare=sft_compare),
    Case("the masked loss of a padded batch vs each pair alone", sft_loss_case(_THREE, 10), compare=sft_loss_compare),
), rules=_rules())


# ------------------------------------------------------------------ 3. greedy responses

def generate_case(prompt, end_ids, budget, seed=1220, block=12):
    def call(names):
        m = model(seed, block=block)
        grad = _grad_log(m)
        out = []
        for end_id in end_ids:
            ids = list(prompt)
            out.append(names.generate_response(m, ids, end_id, budget))
            if ids != list(prompt):
                return {"changed": True}
        return {"responses": out, "grad on": any(grad)}
    return call


def generate_compare(got, want):
    if type(got) is not dict or "changed" in got:
        return "generate_response changed prompt_ids: leave the list it was given as it is"
    diff = _responses_compare(got["responses"], want["responses"])
    return diff or (_NO_GRAD if got["grad on"] else None)


def _responses_compare(got, want):
    if type(got) is not list or len(got) != len(want):
        return f"got {show(got)}"
    for g, w in zip(got, want):
        if type(g) is not list or any(type(i) is not int for i in g):
            return f"a response should be a list of ints (the new ids), got {show(g)}"
        if g == w:
            continue
        if len(g) == len(w) + 1 and g[:-1] == w:
            return (f"got {g}, expected {w} — stop at the end token without returning it (or stop at the budget: "
                    "at most max_new_tokens ids)")
        if len(g) > len(w) and g[-len(w):] == w if w else False:
            return f"got {g}, expected {w} — return only the new ids, not the prompt's"
        if len(g) + 1 == len(w) and w[:-1] == g:
            return f"got {g}, expected {w} — one id too few: max_new_tokens ids when the end token never comes"
        return (f"got {g}, expected {w} — at each step the id with the largest logit at the last position, the model "
                "seeing the last block_size ids; stop at end_id (not returned) or after max_new_tokens ids")
    return None


GENERATE_RESPONSE = Exercise("generate_response", (
    Case("generate_response(model, [1, 2, 3], end_id, 6) for every end_id of 0 .. 10",
         generate_case([1, 2, 3], range(11), 6), compare=generate_compare),
    Case("a budget of 0 (an empty response)", generate_case([4, 5], [3], 0), compare=generate_compare),
    Case("a prompt of 10 ids, 8 more, block_size 12 (the model sees the last 12)",
         generate_case([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [0, 4, 7], 8), compare=generate_compare),
), rules=_rules(_GIVEN_DECODING))


# ------------------------------------------------------------------ 4. exact match

def match_case(pairs):
    def call(names):
        return [names.exact_match(p, r) for p, r in pairs]
    return call


def match_compare(got, want):
    if type(got) is not list or any(type(g) is not bool for g in got):
        return f"exact_match should return a bool (True or False) for each pair, got {show(got)}"
    if got != want:
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        return (f"exact_match differs on pair(s) {bad}: got {got}, expected {want} — normalise both sides the same "
                "way: drop the whitespace at the ends, write every run of whitespace inside as one space, lower "
                "case; then the whole strings must be equal (not one inside the other)")
    return None


_MATCH = [("1987-03-03", "1987-03-03"), (" 1987-03-03\n", "1987-03-03"), ("IAGO", "iago"), ("to  be", "to be"),
          ("1987-03-0", "1987-03-03"), ("1987-03-03 and more", "1987-03-03"), ("", ""), ("a b", "ab"),
          ("to\tbe\n or not", "To be or  not")]

EXACT_MATCH = Exercise("exact_match", (
    Case("exact_match on nine pairs (case, whitespace at the ends and inside, prefixes)", match_case(_MATCH),
         compare=match_compare),
), rules=_rules())


# ------------------------------------------------------------------ 5. the k-gram index

def index_case(text, k, queries=(), generated=()):
    def call(names):
        index = names.KGramIndex(text, k)
        return {"in": [q in index for q in queries], "fraction": [index.fraction(g) for g in generated]}
    return call


class _Sealed(str):
    """A training text that refuses to be searched once its index is built."""

    sealed = False

    def _refuse(self, *args, **kwargs):
        raise RuntimeError("KGramIndex searched the training text again after it was built: build the index once in "
                           "__init__ (a set of the k-grams, or of their hashes) and look k-grams up in it")

    def __contains__(self, item):
        return self._refuse() if self.sealed else str.__contains__(self, item)

    def find(self, *args):
        return self._refuse() if self.sealed else str.find(self, *args)

    def index(self, *args):
        return self._refuse() if self.sealed else str.index(self, *args)

    def count(self, *args):
        return self._refuse() if self.sealed else str.count(self, *args)


def sealed_case(text, k, generated):
    """``fraction`` after the text is sealed: the index is built once, not a search of the text per query."""
    def call(names):
        t = _Sealed(text)
        index = names.KGramIndex(t, k)
        t.sealed = True
        return [index.fraction(g) for g in generated]
    return call


def index_compare(got, want):
    if type(got) is dict and type(want) is dict:
        if got["in"] != want["in"]:
            return (f"`kgram in index`: got {got['in']}, expected {want['in']} — True exactly when the string is one "
                    "of the text's k-grams (k characters long, found verbatim)")
        got, want = got["fraction"], want["fraction"]
    if type(got) is not list or any(type(g) is not float for g in got):
        return f"fraction should return a float for each text, got {show(got)}"
    for g, w in zip(got, want):
        if abs(g - w) > SHARE_TOL:
            return (f"fractions: got {got}, expected {want} — the generated text's k-grams are its len - k + 1 "
                    "windows (every one, repeats counted); the fraction found in the text; 0.0 when it has none")
    return None


_TEXT = "the cat sat on the mat.\nthe dog sat on the log."

KGRAM_INDEX = Exercise("KGramIndex", (
    Case("KGramIndex(text, 3): which strings are in it", index_case(_TEXT, 3, queries=(
        "the", "sat", "mat", "cow", "th", "the ", "g.", "t.\n", "og.")), compare=index_compare),
    Case("KGramIndex(text, 5).fraction of four texts", index_case(_TEXT, 5, generated=(
        "the cat sat on the log", "the cow ate", "sat on the mat, sat on the mat", "abc")), compare=index_compare),
    Case("the index is built once: fraction never searches the text again",
         sealed_case(_TEXT, 4, ("the dog sat", "a cat sat")), compare=index_compare),
), answer="KGramIndex", rules=_rules())


# ------------------------------------------------------------------ 6. extraction

_LETTERS = "abcdefghij"


def _greedy_text(m, tok, prompt: str, n: int) -> str:
    """The test's own greedy continuation (no end token: n characters), to build passages the model extracts."""
    idx = torch.tensor([tok.encode(prompt)])
    with torch.no_grad():
        for _ in range(n):
            nxt = m(idx[:, -m.config.block_size:])[0][:, -1].argmax(-1, keepdim=True)
            idx = torch.cat([idx, nxt], dim=1)
    return tok.decode(idx[0, len(prompt):].tolist())


def _passages(m, tok, p, s, seed):
    """Passages of p + s + 2 characters: some the model's own greedy continuation (extracted), some with one
    character changed at the start, the end or just after the s characters."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for j in range(6):
        prompt = "".join(_LETTERS[int(i)] for i in torch.randint(len(_LETTERS), (p,), generator=g))
        cont = _greedy_text(m, tok, prompt, s + 2)
        flip = {0: None, 1: 0, 2: s - 1, 3: s, 4: None, 5: 1}[j]
        if flip is not None:
            cont = cont[:flip] + ("a" if cont[flip] != "a" else "b") + cont[flip + 1:]
        out.append(prompt + cont)
    return out


def extraction_case(p, s, seed=1230, block=12):
    def call(names):
        tok = _tok(_LETTERS, ())          # every id a letter: a continuation is as many characters as ids
        m = model(seed, vocab=tok.vocab_size, block=block)
        texts = _passages(m, tok, p, s, seed)
        grad = _grad_log(m)
        return {"rate": names.extraction_rate(m, tok, list(texts), p, s), "grad on": any(grad)}
    return call


def extraction_compare(got, want):
    if type(got["rate"]) is NotPlain:
        return f"extraction_rate returned {got['rate'].what}, which the grader does not read: return a float"
    diff = _rate_compare(got["rate"], want["rate"])
    return diff or (_NO_GRAD if got["grad on"] else None)


def _rate_compare(got, want):
    if type(got) is not float:
        return f"extraction_rate should return a float (the share of passages), got {show(got)}"
    if abs(got - want) > SHARE_TOL:
        return (f"got {got}, expected {want} — continue each passage's first p characters greedily for s tokens "
                "(the model seeing the last block_size ids) and count a passage when those s characters equal "
                "passage[p:p + s] exactly; divide by the number of passages")
    return None


EXTRACTION_RATE = Exercise("extraction_rate", (
    Case("extraction_rate of six passages, p=4, s=3", extraction_case(4, 3), compare=extraction_compare),
    Case("extraction_rate of six passages, p=6, s=8, block_size 12", extraction_case(6, 8, 1231),
         compare=extraction_compare),
), rules=_rules(_GIVEN_DECODING))


# ------------------------------------------------------------------ 7. deduplication

def dedup_case(paragraphs, min_chars, joiner="\n\n"):
    def call(names):
        return names.deduplicate(joiner.join(paragraphs), min_chars)
    return call


def dedup_compare(got, want):
    if type(got) is not tuple or len(got) != 2 or type(got[0]) is not str or type(got[1]) is not int:
        return f"deduplicate should return a tuple (text, number removed), got {show(got)}"
    if got[1] != want[1]:
        return (f"removed: got {got[1]}, expected {want[1]} — count each paragraph of text.split('\\n\\n'), as it is "
                "(not stripped), dropped as an exact repeat of an earlier one: one of min_chars characters or more "
                "is dropped, a shorter one never")
    if got[0] != want[0]:
        return (f"text: got {got[0]!r}, expected {want[0]!r} — the paragraphs are text.split('\\n\\n'); keep the first "
                "of each (in order) and drop its later exact copies, then join the kept ones with '\\n\\n'")
    return None


_PARAS = ["To be, or not", "Exit.", "To be, or not", "Ay, there's the rub", "Exit.", "To be, or not"]

DEDUPLICATE = Exercise("deduplicate", (
    Case("deduplicate: a paragraph planted three times, a short one twice (min_chars=8)", dedup_case(_PARAS, 8),
         compare=dedup_compare),
    Case("deduplicate with min_chars=3: the short one goes too", dedup_case(_PARAS, 3), compare=dedup_compare),
    Case("deduplicate of a text without repeats (unchanged)", dedup_case(["a b c", "d e f", "a b c d"], 2),
         compare=dedup_compare),
    Case("deduplicate: a paragraph of exactly min_chars characters repeated (min_chars=4)",
         dedup_case(["abcd", "xy", "abcd", "xy"], 4), compare=dedup_compare),
    Case("deduplicate: a third newline starts the next paragraph, which is then no copy",
         dedup_case(["To be", "\nTo be", "To be"], 3), compare=dedup_compare),
), rules=_rules())


# ------------------------------------------------------------------ the multiple-choice questions

Q_MASK, Q_MASK_LETTER = question("q_mask", "answer_q_mask", "ABCD")
Q_HELDOUT, Q_HELDOUT_LETTER = question("q_heldout", "answer_q_heldout", "ABCD")
Q_DEDUP, Q_DEDUP_LETTER = question("q_dedup", "answer_q_dedup", "ABCD")

NOTEBOOK = Notebook(
    "12_instruct", reference="lmcourse.reference.instruct", hidden="lmcourse.marking.instruct_hidden",
    exercises=(CHAT_TOKENIZER, SFT_BATCH, Q_MASK, GENERATE_RESPONSE, EXACT_MATCH, KGRAM_INDEX, EXTRACTION_RATE,
               Q_HELDOUT, DEDUPLICATE, Q_DEDUP),
    withheld=("lmcourse.reference.instruct",))
