"""Notebook 11's tests (using a language model): the visible cases, with the hints that teach.

Every case builds its own inputs. The models are the course's given GPT (``lmcourse.nn.GPT``) with small
sizes and weights drawn here by parameter name (:func:`lmcourse.marking.gpt.load_weights`), in float64;
the expected value is the same call on the reference's names (:mod:`lmcourse.reference.finetuning`), and
where a case names a likely slip, ``expect`` also computes what that slip would give, with plain torch.
The hidden cases are in :mod:`.finetuning_hidden`.
"""

from __future__ import annotations

import torch
from torch import nn

from .gpt import load_weights
from .rules import exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question
from .tensors import equal, fields, plain_tensor, seed_cpu, seeded_generator, tensor

__all__ = ["NOTEBOOK", "Q_CALIBRATE_LETTER", "Q_LORA_B_LETTER", "Q_UNFREEZE_LETTER", "add_lora_case", "backbone",
           "classifier_case", "container", "freeze_case", "lora_forward_case", "lora_init_case", "lora_merge_case",
           "pool_case", "score_case", "score_slips_compare", "scores_case", "scores_compare"]

_F64 = torch.float64
_ABS = 1e-10


def backbone(seed: int = 1100, n_layer: int = 2, vocab: int = 11, block: int = 12, d: int = 16, dtype=_F64,
             dropout: float = 0.0):
    """The course's GPT with the test's weights, in eval mode."""
    from lmcourse.nn import GPT, GPTConfig

    cfg = GPTConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=2, n_embd=d, dropout=dropout)
    return load_weights(GPT(cfg), seed, dtype=dtype).eval()


def _rules(*extra):
    """Third-party code refused in a graded call (transformers' and peft's), and ``extra``: course code that does
    the exercise's work, as ``(targets, reason)`` (targets as :func:`lmcourse.marking.rules.exercise_rules` reads
    them)."""
    return exercise_rules(libraries=("transformers", "peft"), extra=extra)


# ------------------------------------------------------------------ 1. scoring a continuation

_SEQUENCE_LOGPROB = (("lmcourse.decoding:sequence_logprob",),
                     "write the scoring yourself, not lmcourse.decoding.sequence_logprob")


def score_case(prompts, continuations, pad_id=0, seed=1100, dtype=_F64):
    def call(names):
        m = backbone(seed, dtype=dtype)
        ps, cs = [list(p) for p in prompts], [list(c) for c in continuations]
        with torch.no_grad():
            out = names.score_continuations(m, ps, cs, pad_id)
        return {"scores": out, "unchanged": ps == [list(p) for p in prompts] and cs == [list(c) for c in continuations]}
    return call


def slip_scores(prompts, continuations, seed=1100, dtype=_F64):
    """What the right scores and three likely slips give, each pair scored alone with plain torch."""
    def expect(names):
        m = backbone(seed, dtype=dtype)
        right, own, whole, mean = [], [], [], []
        for p, c in zip(prompts, continuations):
            ids = torch.tensor([list(p) + list(c)])
            with torch.no_grad():
                logp = torch.log_softmax(m(ids)[0][0].double(), -1)          # (T, V)
            tok = logp[:-1].gather(-1, ids[0, 1:, None]).squeeze(-1)        # log P(token t+1 | ..t)
            right.append(tok[len(p) - 1:].sum())
            whole.append(tok.sum())
            mean.append(tok[len(p) - 1:].mean())
            own.append(logp[len(p):].gather(-1, ids[0, len(p):, None]).sum())   # each token from its own position
        return {"scores": names.score_continuations(m, [list(p) for p in prompts], [list(c) for c in continuations]),
                "unchanged": True, "right": torch.stack(right), "own": torch.stack(own), "whole": torch.stack(whole),
                "mean": torch.stack(mean)}
    return expect


def _near(got, want, tol: float = 1e-8) -> bool:
    return (type(got) is torch.Tensor and got.shape == want.shape and got.device.type == want.device.type
            and got.device.type != "meta" and bool(torch.allclose(got.double(), want.double(), atol=tol, rtol=tol)))


def score_slips_compare(what: str) -> Compare:
    def compare(got, want):
        scores = got["scores"]
        if "own" in want and not _near(scores, want["right"]):
            if _near(scores, want["own"]):
                return (f"{what}: each continuation token was scored at its own position — position t predicts token "
                        "t + 1, so the first continuation token comes from the prompt's last position, "
                        "logp[len(prompt) - 1 : len(prompt) + len(continuation) - 1]")
            if _near(scores, want["whole"]):
                return (f"{what}: you summed the prompt's tokens too — only the continuation's tokens count, "
                        "log P(continuation | prompt)")
            if _near(scores, want["mean"]):
                return f"{what}: that is the mean over the continuation's tokens — sum them (the log of a product)"
        diff = tensor(shape="one score per pair: (N,)",
                      dtype="the scores are float64: cast the logits with .double() before the log-softmax",
                      values="log P(continuation | prompt) = sum over the continuation's tokens of log-softmax(logits)"
                             " at the position before each", atol=_ABS, rtol=_ABS, what=what)(scores, want["scores"])
        if diff:
            return diff
        if not got["unchanged"]:
            return "your function changed the prompts or continuations it was given: leave the lists as they are"
        return None
    return compare


def _padding(names):
    m = backbone(1101)
    prompts, conts = [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10]], [[7, 1], [2, 3, 4, 5, 6], [3]]
    with torch.no_grad():
        batch = names.score_continuations(m, prompts, conts, 0)
        other_pad = names.score_continuations(m, prompts, conts, 9)
        alone = [names.score_continuations(m, [p], [c], 0) for p, c in zip(prompts, conts)]
    return {"batch": batch, "other_pad": other_pad,
            "alone": torch.cat([plain_tensor(a, "score_continuations' output") for a in alone])}


def _padding_compare(got, want):
    cmp = tensor(shape="one score per pair", dtype="the scores are float64", atol=_ABS, rtol=_ABS,
                 values="pads go after each sequence (right padding) and no score reads a pad's position: the model "
                        "is causal, so the positions before a pad never see it")
    return (cmp(got["alone"], want["alone"]) or
            tensor(atol=_ABS, rtol=_ABS, values="the batch must give what each pair gives alone: read only the "
                   "positions of each pair's own tokens", what="three pairs in one batch vs each alone")(
                got["batch"], got["alone"]) or
            tensor(atol=_ABS, rtol=_ABS, values="the pad id must change nothing", what="pad_id=9 vs pad_id=0")(
                got["other_pad"], got["batch"]))


def float32_slip(prompts, continuations, seed=1100):
    """A float32 model's scores, and what the log-softmax taken in float32 and cast after gives on the same
    right-padded batch (it differs in the seventh digit)."""
    def expect(names):
        m = backbone(seed, dtype=torch.float32)
        rows = [list(p) + list(c) for p, c in zip(prompts, continuations)]
        T = max(map(len, rows))
        idx = torch.tensor([r + [0] * (T - len(r)) for r in rows])
        with torch.no_grad():
            logp = torch.log_softmax(m(idx)[0], -1).double()        # the slip: float32, then float64
        late = torch.stack([logp[i, len(p) - 1:len(r) - 1].gather(-1, idx[i, len(p):len(r), None]).sum()
                            for i, (p, r) in enumerate(zip(prompts, rows))])
        return {"scores": names.score_continuations(m, [list(p) for p in prompts],
                                                    [list(c) for c in continuations]),
                "unchanged": True, "late": late}
    return expect


def _float32_compare(got, want):
    scores = got["scores"]
    if not _near(scores, want["scores"], 1e-13) and _near(scores, want["late"], 1e-13):
        return ("the scores of a float32 model: the log-softmax ran in float32 and was cast after — cast the logits "
                "with .double() before the log-softmax (a float32 log-softmax loses the digits the float64 sum keeps)")
    return tensor(dtype="the scores are float64 whatever the model's dtype: cast the logits with .double() before the "
                        "log-softmax", atol=1e-4, rtol=1e-4, what="the scores of a float32 model")(
        scores, want["scores"])


_P1, _C1 = [[1, 2, 3, 4]], [[5, 6, 7]]
_P2, _C2 = [[3, 1, 4, 1, 5], [9, 2], [6]], [[2, 6], [5, 3, 5, 8], [9, 7, 9]]

SCORE_CONTINUATIONS = Exercise("score_continuations", (
    Case("score_continuations(model, [[1, 2, 3, 4]], [[5, 6, 7]])", score_case(_P1, _C1),
         compare=score_slips_compare("the score of one pair"), expect=slip_scores(_P1, _C1)),
    Case("score_continuations on three pairs of different lengths", score_case(_P2, _C2),
         compare=score_slips_compare("the scores of three pairs"), expect=slip_scores(_P2, _C2)),
    Case("three pairs in one batch, alone, and with another pad id", _padding, compare=_padding_compare),
    Case("score_continuations with a float32 model", score_case(_P2, _C2, dtype=torch.float32),
         compare=_float32_compare, expect=float32_slip(_P2, _C2)),
), rules=_rules(_SEQUENCE_LOGPROB))


# ------------------------------------------------------------------ 2. zero-shot scores

def _logprobs(seed, n=4, k=3, dtype=_F64):
    g = seeded_generator(seed)
    lp = -(torch.rand(n, k, generator=g, dtype=_F64) * 12 + 0.5)
    lengths = torch.randint(1, 7, (k,), generator=g).to(dtype)
    free = -(torch.rand(k, generator=g, dtype=_F64) * 12 + 0.5)
    return lp.to(dtype), lengths, free.to(dtype)


def scores_case(seed, use_lengths, use_free, dtype=_F64):
    def call(names):
        lp, lengths, free = _logprobs(seed, dtype=dtype)
        args = (lp.clone(), lengths.clone() if use_lengths else None, free.clone() if use_free else None)
        out = names.zero_shot_scores(*args)
        same = torch.equal(args[0], lp) and (args[1] is None or torch.equal(args[1], lengths)) and (
            args[2] is None or torch.equal(args[2], free))
        return {"scores": out, "unchanged": same}
    return call


def slips_of(seed, use_lengths, use_free, dtype=_F64):
    def expect(names):
        lp, lengths, free = _logprobs(seed, dtype=dtype)
        out = {"scores": names.zero_shot_scores(lp, lengths if use_lengths else None, free if use_free else None),
               "unchanged": True}
        s, f = (lp / lengths, free / lengths) if use_lengths else (lp, free)
        out["wrong_dim"] = torch.log_softmax(s - f if use_free else s, dim=0)
        out["probs"] = out["scores"].exp()
        out["times"] = torch.log_softmax(lp * lengths - (free * lengths if use_free else 0), dim=-1)
        out["plus"] = torch.log_softmax(s + f, dim=-1)
        out["raw_free"] = torch.log_softmax(lp / lengths - free, dim=-1)
        out["unnormalised"] = s - f if use_free else s
        if use_free:
            out["ratio"] = torch.log_softmax(s / f, dim=-1)
            out["normalised_first"] = torch.log_softmax(s, dim=-1) - f
            out["no_free"] = torch.log_softmax(s, dim=-1)
            if use_lengths:
                out["no_lengths"] = torch.log_softmax(lp - free, dim=-1)
        return out
    return expect


_SLIP_NAMES = (
    ("wrong_dim", "you normalised over the examples (dim 0): normalise over the labels, log_softmax(..., dim=-1)"),
    ("probs", "those are probabilities: return log-probabilities (log_softmax, not softmax)"),
    ("times", "lengths multiply the scores: divide each label's summed log-probability by its verbaliser's length "
              "(the mean log-probability per token)"),
    ("plus", "you added the content-free scores: calibration divides by p(label | content-free), so subtract its "
             "log-probability"),
    ("raw_free", "the content-free scores need the same length normalisation as the scores: divide both by lengths"),
    ("unnormalised", "renormalise over the labels at the end: log_softmax(scores, dim=-1), so that each row's "
                     "probabilities sum to 1"),
    ("ratio", "you divided the log-probabilities by the content-free ones: calibration divides the probabilities, "
              "so subtract the log-probabilities"),
    ("normalised_first", "the log-softmax comes last, after the content-free scores are subtracted, so that each "
                         "row's probabilities sum to 1"),
    ("no_free", "the content-free scores were left out: subtract them whenever content_free is given"),
    ("no_lengths", "the lengths were left out: divide by them whenever lengths is given (with content_free too)"),
)


def scores_compare(what: str, tol: float = 1e-10) -> Compare:
    """The scores within ``tol`` (absolute and relative), after naming a slip that gives what the student got."""
    def compare(got, want):
        scores = got["scores"]
        if not _near(scores, want["scores"]):
            for key, message in _SLIP_NAMES:
                if key in want and _near(scores, want[key]):
                    return f"{what}: {message}"
        diff = tensor(shape="(N, K): one row per example, one column per label",
                      dtype="keep the dtype of logprobs (no float64 or float32 constants)",
                      values="log_softmax over the labels of (logprobs / lengths) - (content_free / lengths), each "
                             "part only when it is given", atol=tol, rtol=tol, what=what)(scores, want["scores"])
        if diff:
            return diff
        if not got["unchanged"]:
            return f"{what}: your function changed its inputs in place — compute new tensors (no /=, -=, .sub_())"
        return None
    return compare


def _scores_case(label, seed, use_lengths, use_free, dtype=_F64):
    tol = 1e-10 if dtype == _F64 else 1e-5
    return Case(label, scores_case(seed, use_lengths, use_free, dtype), compare=scores_compare("the scores", tol),
                expect=slips_of(seed, use_lengths, use_free, dtype))


ZERO_SHOT_SCORES = Exercise("zero_shot_scores", (
    _scores_case("zero_shot_scores(logprobs) of 4 examples and 3 labels", 1110, False, False),
    _scores_case("zero_shot_scores(logprobs, lengths)", 1111, True, False),
    _scores_case("zero_shot_scores(logprobs, content_free=...)", 1112, False, True),
    _scores_case("zero_shot_scores(logprobs, lengths, content_free)", 1113, True, True),
    _scores_case("zero_shot_scores on float32 inputs, lengths and content_free", 1114, True, True, torch.float32),
), rules=_rules())


# ------------------------------------------------------------------ 3. pooling

def _mask(n_real, T):
    return torch.tensor([[t < n for t in range(T)] for n in n_real])


def pool_case(n_real, how, seed=1120, d=4, dtype=_F64):
    def call(names):
        h = torch.randn(len(n_real), max(n_real) + 2, d, generator=seeded_generator(seed), dtype=dtype)
        mask = _mask(n_real, h.shape[1])
        before = (h.clone(), mask.clone())
        out = names.pool_hidden(h, mask, how)
        return {"pooled": out, "unchanged": torch.equal(h, before[0]) and torch.equal(mask, before[1])}
    return call


def pool_slips(n_real, how, seed=1120, d=4, dtype=_F64):
    def expect(names):
        h = torch.randn(len(n_real), max(n_real) + 2, d, generator=seeded_generator(seed), dtype=dtype)
        mask = _mask(n_real, h.shape[1])
        return {"pooled": names.pool_hidden(h, mask, how), "unchanged": True, "end": h[:, -1], "all": h.mean(1),
                "over_T": (h * mask[..., None]).sum(1) / h.shape[1],
                "first": h[:, 0], "after": h[torch.arange(len(n_real)), torch.tensor(n_real).clamp(max=h.shape[1] - 1)]}
    return expect


_POOL_SLIPS = (("end", "that is the last position of the padded row, a pad: take the last real position, "
                       "mask.sum(1) - 1 in each row"),
               ("all", "that is the mean over every position, pads included: average over the real positions only "
                       "(sum of hidden * mask over T, divided by mask.sum(1))"),
               ("over_T", "the sum over the real positions divided by T, the padded length: divide by the number of "
                          "real positions, mask.sum(1)"),
               ("first", "that is the first position: 'last' is the last real token (the only one that has read the "
                         "whole sequence in a causal model)"),
               ("after", "one position too far: the last real position is mask.sum(1) - 1 (positions count from 0)"))


def pool_compare(what: str, tol: float = 1e-12) -> Compare:
    def compare(got, want):
        pooled = got["pooled"]
        if not _near(pooled, want["pooled"]):
            for key, message in _POOL_SLIPS:
                if key in want and _near(pooled, want[key]):
                    return f"{what}: {message}"
        return tensor(shape="(B, d): one vector per sequence", dtype="keep hidden's dtype",
                      values="'last': hidden at the last position where mask is true; 'mean': the mean over the "
                             "positions where mask is true", atol=tol, rtol=tol, what=what)(
            pooled, want["pooled"]) or (None if got["unchanged"] else
                                        f"{what}: your function changed hidden or mask in place")
    return compare


def _pool(label, n_real, how, seed=1120, dtype=_F64):
    tol = 1e-12 if dtype == _F64 else 1e-6
    return Case(label, pool_case(n_real, how, seed, dtype=dtype), compare=pool_compare("the pooled states", tol),
                expect=pool_slips(n_real, how, seed, dtype=dtype))


def _unknown_how(names):
    h, mask = torch.zeros(1, 2, 3, dtype=_F64), torch.ones(1, 2, dtype=torch.bool)
    try:
        names.pool_hidden(h, mask, "max")
    except ValueError:
        return "ValueError"
    return "no ValueError"


POOL_HIDDEN = Exercise("pool_hidden", (
    _pool("pool_hidden(hidden, mask, 'last'), rows of 5, 2 and 1 real tokens", [5, 2, 1], "last"),
    _pool("pool_hidden(hidden, mask, 'mean'), rows of 5, 2 and 1 real tokens", [5, 2, 1], "mean"),
    _pool("pool_hidden(hidden, mask, 'last'), no pads in the longest row", [3, 3, 2], "last", seed=1121),
    _pool("pool_hidden on float32 hidden states, 'mean'", [4, 1], "mean", seed=1122, dtype=torch.float32),
    Case("pool_hidden(hidden, mask, 'max')", _unknown_how,
         compare=equal("pool_hidden with how='max'", "raise ValueError for any how but 'last' and 'mean'")),
), rules=_rules())


# ------------------------------------------------------------------ 4. the classifier

def _trainable(model: nn.Module, remove_duplicate: bool = True) -> list[str]:
    """The names of the parameters whose requires_grad is True, read through nn.Module's own method (a method
    an answer set on the instance is not what the test reads)."""
    return sorted(str(n) for n, p in nn.Module.named_parameters(model, remove_duplicate=remove_duplicate)
                  if type(p) is nn.Parameter and p.requires_grad)


def _param_names(model: nn.Module) -> list[str]:
    return sorted(str(n) for n, _ in model.named_parameters())


def _structure(names):
    bb = backbone()
    m = names.SequenceClassifier(bb, 3, "mean")
    head = getattr(m, "head", None)
    return {"backbone": getattr(m, "backbone", None) is bb, "pooling": getattr(m, "pooling", None),
            "head": isinstance(head, nn.Linear) and (head.in_features, head.out_features, head.bias is not None),
            "names": _param_names(m)}


def _structure_compare(got, want):
    if not got["backbone"]:
        return "keep the backbone you are given as self.backbone (the same object, not a copy)"
    if got["pooling"] != want["pooling"]:
        return f"self.pooling should be the pooling asked for ({want['pooling']!r}), it is {show(got['pooling'])}"
    if got["head"] != want["head"]:
        return ("self.head should be nn.Linear(n_embd, n_classes) with a bias: here (16, 3, True), got "
                f"{show(got['head'])}")
    if got["names"] != want["names"]:
        extra = sorted(set(got["names"]) - set(want["names"]))[:3]
        missing = sorted(set(want["names"]) - set(got["names"]))[:3]
        return (f"the classifier's parameters should be the backbone's and head's only: unexpected {extra}, missing "
                f"{missing}")
    return None


def classifier_case(pooling, rows, seed=1130, n_layer=2, dtype=_F64):
    """The class logits for right-padded rows of ids (``rows``: lists of ids), weights drawn by name."""
    def call(names):
        m = names.SequenceClassifier(backbone(seed, n_layer, dtype=dtype), 3, pooling)
        load_weights(m, seed + 1, dtype=dtype).eval()
        T = max(len(r) for r in rows)
        idx = torch.tensor([list(r) + [0] * (T - len(r)) for r in rows])
        with torch.no_grad():
            return m(idx, _mask([len(r) for r in rows], T))
    return call


_HIDDEN_HINT = ("the hidden states are the backbone without its LM head: drop(wte(idx) + wpe(0..T-1)), every block, "
                "then ln_f; pooled with pool_hidden(h, mask, self.pooling), then self.head")


def _pads(names):
    m = names.SequenceClassifier(backbone(1132), 3, "last")
    load_weights(m, 1133).eval()
    with torch.no_grad():
        alone = m(torch.tensor([[4, 2, 7]]), torch.ones(1, 3, dtype=torch.bool))
        padded = m(torch.tensor([[4, 2, 7, 0, 5]]), torch.tensor([[True, True, True, False, False]]))
    return {"alone": alone, "padded": padded}


def _training(names):
    """In training mode, dropout 0.5 drawn from a seeded generator, then one backward pass: the logits and the
    gradients that reach the backbone's first and last weights."""
    m = names.SequenceClassifier(backbone(1134, dropout=0.5), 3, "mean")
    load_weights(m, 1135).train()
    rows = ([3, 1, 4, 1, 5], [2, 6])
    idx = torch.tensor([list(r) + [0] * (5 - len(r)) for r in rows])
    seed_cpu(1136)
    logits = m(idx, _mask([len(r) for r in rows], 5))
    logits.sum().backward()
    grads = {n: p.grad for n, p in nn.Module.named_parameters(m) if n in ("backbone.wte.weight",
                                                                           "backbone.blocks.0.attn.c_attn.weight")}
    return {"logits": logits.detach(), "wte": grads.get("backbone.wte.weight"),
            "c_attn": grads.get("backbone.blocks.0.attn.c_attn.weight")}


_NO_GRAD = ("no gradient reached the backbone: fine-tuning trains through it, so forward runs no torch.no_grad(), "
            ".detach() or eval() of its own")
def _gradient(what: str) -> Compare:
    values = tensor(atol=_ABS, rtol=_ABS, what=what, values="the gradient through the backbone, pooled, then the head")

    def compare(got, want):
        if got is None and want is not None:
            return f"{what}: None — {_NO_GRAD}"
        return values(got, want)
    return compare


_TRAINING = fields(
    ("logits", tensor(atol=_ABS, rtol=_ABS, what="the class logits in training mode (dropout 0.5, seeded)",
                      values="the backbone's own dropouts in its own order: drop(wte(idx) + wpe(0..T-1)), then each "
                             "block, and none of the classifier's own; forward leaves the training mode as it is (no "
                             "eval() inside)")),
    ("wte", _gradient("the gradient of backbone.wte.weight")),
    ("c_attn", _gradient("the gradient of the first block's attn.c_attn.weight")))

_ROWS = ([3, 1, 4, 1, 5, 9], [2, 6, 5], [3])

SEQUENCE_CLASSIFIER = Exercise("SequenceClassifier", (
    Case("SequenceClassifier(backbone, 3, 'mean'): its attributes", _structure, compare=_structure_compare),
    Case("the class logits, 'last' pooling, rows of 6, 3 and 1 tokens", classifier_case("last", _ROWS),
         compare=tensor(shape="(B, n_classes)", dtype="the model's dtype", values=_HIDDEN_HINT, atol=_ABS, rtol=_ABS,
                        what="the class logits with 'last' pooling")),
    Case("the class logits, 'mean' pooling", classifier_case("mean", _ROWS, seed=1131),
         compare=tensor(shape="(B, n_classes)", values=_HIDDEN_HINT, atol=_ABS, rtol=_ABS,
                        what="the class logits with 'mean' pooling")),
    Case("a row alone and the same row with two pads after it", _pads,
         compare=fields(("alone", tensor(atol=_ABS, rtol=_ABS, values=_HIDDEN_HINT, what="the row alone")),
                        ("padded", tensor(atol=_ABS, rtol=_ABS, values="pads after the row must change nothing",
                                          what="the same row padded")))),
    Case("in training mode: dropout, then the gradients into the backbone", _training, compare=_TRAINING),
), standins=("pool_hidden",), answer="SequenceClassifier", rules=_rules())


# ------------------------------------------------------------------ 5. what to train

class _Classifier(nn.Module):
    """A classifier as the tests build it: the given GPT as ``backbone`` and a linear ``head``."""

    def __init__(self, bb: nn.Module, n_classes: int = 3):
        super().__init__()
        self.backbone = bb
        self.head = nn.Linear(bb.config.n_embd, n_classes)


def container(n_layer: int = 3, seed: int = 1140) -> nn.Module:
    return _Classifier(backbone(seed, n_layer)).double()


def freeze_case(*calls):
    """``freeze(model, what, k)`` for each ``(what, k)`` in turn on one model: the count returned and the names of
    the trainable parameters after each."""
    def call(names):
        m = container()
        out = []
        for what, k in calls:
            n = names.freeze(m, what) if k is None else names.freeze(m, what, k)
            out.append({"count": n, "trainable": _trainable(m, remove_duplicate=False)})
        return out
    return call


def freeze_compare(got, want):
    if type(got) is not list or len(got) != len(want):
        return f"got {show(got)}"
    for g, w in zip(got, want):
        if g["trainable"] != w["trainable"]:
            extra = sorted(set(g["trainable"]) - set(w["trainable"]))
            missing = sorted(set(w["trainable"]) - set(g["trainable"]))
            why = ""
            if "backbone.lm_head.weight" in extra and set(extra) <= {"backbone.lm_head.weight", "backbone.wte.weight"}:
                why = (" — backbone.lm_head is the GPT's LM head, tied to the token table (wte): unfreezing it trains "
                       "the embeddings; the head that trains is the classifier's, model.head")
            elif any(n.startswith("backbone.blocks.0.") for n in extra):
                why = " — only the last k blocks train: model.backbone.blocks[-k:]"
            elif "backbone.ln_f.weight" in missing:
                why = " — the final LayerNorm (backbone.ln_f) trains with the last blocks: it reads their output"
            elif extra and not missing:
                why = " — set requires_grad to False on everything else (a call undoes what an earlier one unfroze)"
            elif any(n.startswith("backbone.blocks.") for n in missing):
                why = " — each of the last k blocks trains, all k of them: model.backbone.blocks[-k:]"
            return f"the trainable parameters: unexpected {extra[:3]}, missing {missing[:3]}{why}"
        if type(g["count"]) is not int or g["count"] != w["count"]:
            tied = g["count"] == w["count"] + 11 * 16 if type(g["count"]) is int else False
            return (f"the count returned: got {show(g['count'])}, expected {w['count']}" +
                    (" — the tied LM head is the token table itself: count each tensor once (model.parameters() "
                     "does)" if tied else " — the number of elements (p.numel()) of the trainable parameters, an int"))
    return None


FREEZE = Exercise("freeze", (
    Case("freeze(model, 'head')", freeze_case(("head", None)), compare=freeze_compare),
    Case("freeze(model, 'last') and freeze(model, 'last', k=2)", freeze_case(("last", None), ("last", 2)),
         compare=freeze_compare),
    Case("freeze(model, 'all')", freeze_case(("all", None)), compare=freeze_compare),
    Case("freeze(model, 'all'), then freeze(model, 'head')", freeze_case(("all", None), ("head", None)),
         compare=freeze_compare),
), rules=_rules())


# ------------------------------------------------------------------ 6. LoRA

def _base(seed, n_in=6, n_out=5, bias=True, dtype=_F64):
    lin = nn.Linear(n_in, n_out, bias=bias)
    return load_weights(lin, seed, dtype=dtype)


def lora_init_case(r=2, alpha=8.0, seed=1150, bias=True, dtype=_F64):
    def call(names):
        base = _base(seed, bias=bias, dtype=dtype)
        layer = names.LoRALinear(base, r, alpha)
        x = torch.randn(3, 6, generator=seeded_generator(seed), dtype=dtype)
        with torch.no_grad():
            out, plain = layer(x), base(x)
        A, B = getattr(layer, "lora_A", None), getattr(layer, "lora_B", None)
        return {"base": getattr(layer, "base", None) is base, "scaling": getattr(layer, "scaling", None),
                "A": None if A is None else {"shape": tuple(A.shape), "dtype": str(A.dtype),
                                             "nonzero": bool(A.detach().abs().sum() > 0),
                                             "parameter": type(A) is nn.Parameter},
                "B": None if B is None else {"shape": tuple(B.shape), "dtype": str(B.dtype),
                                             "zero": bool((B.detach() == 0).all()),
                                             "parameter": type(B) is nn.Parameter},
                "trainable": _trainable(layer),
                "out": out, "plain": plain}
    return call


def lora_init_compare(got, want):
    if not got["base"]:
        return "keep the layer you wrap as self.base (the same nn.Linear, not a copy)"
    if got["A"] is None or got["B"] is None:
        return "the LoRA matrices are parameters named lora_A (r, in_features) and lora_B (out_features, r)"
    for m in ("A", "B"):
        if not got[m].get("parameter", True):
            return (f"lora_{m} is a plain tensor, not an nn.Parameter, so it is not registered and never trains — "
                    f"make it in the base layer's dtype inside nn.Parameter(...) (.to() or .double() on a parameter "
                    "returns a plain tensor)")
    for key in ("shape", "dtype"):
        for m in ("A", "B"):
            if got[m][key] != want[m][key]:
                return (f"lora_{m}'s {key}: got {got[m][key]}, expected {want[m][key]} — lora_A is (r, in_features), "
                        "lora_B (out_features, r), both in the base layer's dtype and on its device")
    if not got["B"]["zero"]:
        return "lora_B must start at zero, so that the wrapped layer is exactly the pretrained one at step 0"
    if not got["A"]["nonzero"]:
        return ("lora_A must start random (small values), not zero: with A = 0 and B = 0 the gradients of both are "
                "zero and nothing ever trains")
    if type(got["scaling"]) not in (int, float) or abs(got["scaling"] - want["scaling"]) > 1e-12:
        return f"self.scaling should be alpha / r = {want['scaling']}, got {show(got['scaling'])}"
    if got["trainable"] != want["trainable"]:
        base_trains = any(n.startswith("base.") for n in got["trainable"])
        return (f"the trainable parameters should be lora_A and lora_B only, got {got['trainable']} — " +
                ("freeze the base layer (requires_grad_(False) on its weight and bias)" if base_trains else
                 "lora_A and lora_B train (nn.Parameter's requires_grad is True)"))
    return tensor(atol=1e-6, rtol=1e-6, values="with B = 0 the output is the base layer's",
                  what="the output at initialisation vs base(x)")(got["out"], got["plain"])


def lora_forward_case(r=2, alpha=8.0, seed=1151, bias=True, shape=(3, 6)):
    """The output with A and B drawn by name (``load_weights``), on inputs of ``shape``."""
    def call(names):
        layer = names.LoRALinear(_base(seed, bias=bias), r, alpha)
        load_weights(layer, seed + 1)
        x = torch.randn(*shape, generator=seeded_generator(seed), dtype=_F64)
        with torch.no_grad():
            return layer(x)
    return call


def lora_slips(r, alpha, seed, bias=True, shape=(3, 6)):
    def expect(names):
        layer = names.LoRALinear(_base(seed, bias=bias), r, alpha)
        load_weights(layer, seed + 1)
        x = torch.randn(*shape, generator=seeded_generator(seed), dtype=_F64)
        with torch.no_grad():
            base, delta = layer.base(x), x @ layer.lora_A.T @ layer.lora_B.T
            return {"out": layer(x), "unscaled": base + delta, "inverse": base + (r / alpha) * delta,
                    "alpha": base + alpha * delta}
    return expect


def lora_forward_compare(what):
    def compare(got, want):
        if not _near(got, want["out"]):
            for key, message in (("unscaled", "the update is not scaled: multiply B A x by alpha / r"),
                                 ("inverse", "the scale is upside down: alpha / r, not r / alpha"),
                                 ("alpha", "the scale is alpha / r, not alpha")):
                if _near(got, want[key]):
                    return f"{what}: {message}"
        return tensor(shape="the base layer's output shape", values="base(x) + (alpha / r) x A^T B^T", atol=_ABS,
                      rtol=_ABS, what=what)(got, want["out"])
    return compare


def lora_merge_case(r=2, alpha=8.0, seed=1152, bias=True):
    def call(names):
        layer = names.LoRALinear(_base(seed, bias=bias), r, alpha)
        load_weights(layer, seed + 1)
        weight_before = layer.base.weight.detach().clone()
        x = torch.randn(4, 6, generator=seeded_generator(seed), dtype=_F64)
        merged = layer.merge()
        if type(merged) is not nn.Linear:
            return {"type": type(merged).__name__}
        with torch.no_grad():
            return {"type": "Linear", "weight": merged.weight.detach().clone(),
                    "bias": None if merged.bias is None else merged.bias.detach().clone(), "out": merged(x),
                    "layer": layer(x), "base_kept": torch.equal(layer.base.weight.detach(), weight_before)}
    return call


def merge_compare(got, want):
    if got["type"] != "Linear":
        return f"merge() should return a plain torch.nn.Linear, it returned a {got['type']}"
    return (tensor(shape="(out_features, in_features)", dtype="the base layer's dtype",
                   values="W + (alpha / r) B A", atol=_ABS, rtol=_ABS, what="the merged weight")(got["weight"],
                                                                                                  want["weight"])
            or tensor(values="the base layer's bias, unchanged (None when it has none)", atol=0, rtol=0,
                      what="the merged bias")(got["bias"], want["bias"])
            or (None if got["base_kept"] else "merge() changed the base layer's weight: build a new nn.Linear and "
                                              "leave the LoRA layer as it was")
            or tensor(atol=_ABS, rtol=_ABS, values="merged(x) must equal the LoRA layer's output",
                      what="the merged layer's output vs the LoRA layer's")(got["out"], got["layer"]))


_DTYPES = (("same dtype", "lora_A, lora_B and merge()'s nn.Linear are made in the base layer's dtype and on its device "
                          "(dtype=base.weight.dtype, device=base.weight.device)"),)

LORA_LINEAR = Exercise("LoRALinear", (
    Case("LoRALinear(nn.Linear(6, 5), r=2, alpha=8) at initialisation", lora_init_case(), compare=lora_init_compare,
         errors=_DTYPES),
    Case("LoRALinear(nn.Linear(6, 5), r=2, alpha=8) with A and B drawn by the test", lora_forward_case(),
         compare=lora_forward_compare("the output, r = 2, alpha = 8"), expect=lora_slips(2, 8.0, 1151)),
    Case("LoRALinear(nn.Linear(6, 5, bias=False), r=4, alpha=2), inputs (2, 3, 6)",
         lora_forward_case(4, 2.0, 1153, bias=False, shape=(2, 3, 6)),
         compare=lora_forward_compare("the output, r = 4, alpha = 2, no bias"),
         expect=lora_slips(4, 2.0, 1153, bias=False, shape=(2, 3, 6))),
    Case("merge() of a LoRALinear with A and B drawn by the test", lora_merge_case(), compare=merge_compare,
         errors=_DTYPES),
), answer="LoRALinear", rules=_rules())


# ------------------------------------------------------------------ 7. LoRA on the GPT

def add_lora_case(r=2, alpha=4.0, n_layer=3, seed=1160):
    def call(names):
        m = container(n_layer, seed)
        idx = torch.tensor([[1, 2, 3, 4, 5]])
        with torch.no_grad():
            before = m.head(_final(m, idx))
        n = names.add_lora(m, r, alpha)
        wrapped = [type(getattr(b.attn, part)).__name__ for b in m.backbone.blocks for part in ("c_attn", "c_proj")]
        with torch.no_grad():
            after = m.head(_final(m, idx))
        trainable = _trainable(m)
        load_weights(m, seed + 1)       # every weight drawn by name, the LoRA matrices too: B is not zero any more
        with torch.no_grad():
            drawn = m.head(_final(m, idx))
        return {"count": n, "wrapped": wrapped, "trainable": trainable, "before": before, "after": after,
                "drawn": drawn}
    return call


def _final(m, idx):
    """The classifier's last-token features, through the backbone's own modules (whatever wraps them)."""
    g = m.backbone
    x = g.drop(g.wte(idx) + g.wpe(torch.arange(idx.shape[1])))
    for block in g.blocks:
        x = block(x)
    return g.ln_f(x)[:, -1]


def add_lora_compare(got, want):
    if got["wrapped"] != want["wrapped"]:
        return (f"the attention projections of every block, attn.c_attn and attn.c_proj, should be LoRALinear: got "
                f"{got['wrapped']}")
    if got["trainable"] != want["trainable"]:
        extra = sorted(set(got["trainable"]) - set(want["trainable"]))[:3]
        missing = sorted(set(want["trainable"]) - set(got["trainable"]))[:3]
        return (f"the trainable parameters: unexpected {extra}, missing {missing} — only the LoRA matrices and the "
                "classifier's head train; everything of the backbone is frozen")
    if type(got["count"]) is not int or got["count"] != want["count"]:
        return f"the count returned: got {show(got['count'])}, expected {want['count']} (the trainable elements)"
    return (tensor(atol=_ABS, rtol=_ABS, values="with every B = 0 the model must be unchanged",
                   what="the classifier's features after add_lora")(got["after"], got["before"])
            or tensor(atol=_ABS, rtol=_ABS, what="the classifier's outputs with A and B drawn by the test",
                      values="each projection wrapped as LoRALinear(layer, r, alpha), with the r and alpha given "
                             "(LoRALinear computes the scale alpha / r itself)")(got["drawn"], want["drawn"]))


ADD_LORA = Exercise("add_lora", (
    Case("add_lora(model of 3 blocks, r=2, alpha=4)", add_lora_case(), compare=add_lora_compare),
    Case("add_lora(model of 1 block, r=4, alpha=4)", add_lora_case(4, 4.0, 1, 1161), compare=add_lora_compare),
), standins=("LoRALinear",), rules=_rules())


# ------------------------------------------------------------------ the multiple-choice questions

Q_CALIBRATE, Q_CALIBRATE_LETTER = question("q_calibrate", "answer_q_calibrate", "ABCD")
Q_LORA_B, Q_LORA_B_LETTER = question("q_lora_b", "answer_q_lora_b", "ABCD")
Q_UNFREEZE, Q_UNFREEZE_LETTER = question("q_unfreeze", "answer_q_unfreeze", "ABCD")


NOTEBOOK = Notebook(
    "11_finetuning", reference="lmcourse.reference.finetuning", hidden="lmcourse.marking.finetuning_hidden",
    exercises=(SCORE_CONTINUATIONS, ZERO_SHOT_SCORES, Q_CALIBRATE, POOL_HIDDEN, SEQUENCE_CLASSIFIER, FREEZE,
               Q_UNFREEZE, LORA_LINEAR, ADD_LORA, Q_LORA_B),
    withheld=("lmcourse.reference.finetuning",))
