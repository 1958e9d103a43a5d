"""Notebook 02's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .rnn import F64, QUESTIONS, Die, fields, grads, grads_of, kept, plain_tensor, rnnlm_case, rnnlm_compare, tensor
from .rnn_optim import adamw_run, clip_run, clipped, trajectory
from .show import show
from .spec import Case, close
from .tensors import seed_cpu

__all__ = ["HIDDEN"]


def _step_args(B: int, n_in: int, H: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(B * 100 + n_in)
    return [torch.randn(B, n_in, generator=g, dtype=F64), torch.randn(B, H, generator=g, dtype=F64),
            torch.randn(H, n_in, generator=g, dtype=F64), torch.randn(H, H, generator=g, dtype=F64),
            torch.randn(H, generator=g, dtype=F64)]


def _step(B: int, n_in: int, H: int):
    def call(names):
        args = _step_args(B, n_in, H)
        return {"out": names.elman_step(*args), "inputs": args}
    return call


def _step_grads(names):
    ps = [a.requires_grad_() for a in _step_args(8, 5, 9)]
    return grads_of(names.elman_step(*ps), ps)


_STEP = fields(("inputs", kept("elman_step changed its inputs in place")), ("out", tensor(atol=1e-12)))
_GRAD = "gradients flow to every argument: no .detach()"


def _seq(B: int, T: int, n_in: int, H: int):
    def call(names):
        g = torch.Generator().manual_seed(7 * T + H)
        x = torch.randn(B, T, n_in, generator=g, dtype=F64)
        W1 = torch.randn(H, n_in, generator=g, dtype=F64) * 0.5
        W2 = torch.randn(H, H, generator=g, dtype=F64) * 0.5
        return names.rnn_forward(x, None, W1, W2, torch.randn(H, generator=g, dtype=F64))
    return call


def _seq_grads(names):
    seed_cpu(2)
    ref = nn.RNN(3, 4, batch_first=True, dtype=F64)
    x, h0 = torch.randn(2, 6, 3, dtype=F64), torch.randn(2, 4, dtype=F64)
    ps = [h0.requires_grad_(), ref.weight_ih_l0.detach().clone().requires_grad_(),
          ref.weight_hh_l0.detach().clone().requires_grad_(), (ref.bias_ih_l0 + ref.bias_hh_l0).detach().clone()]
    return grads_of(names.rnn_forward(x, *ps), ps[:3])


def _loss(B: int, T: int, V: int):
    def call(names):
        g = torch.Generator().manual_seed(B + T + V)
        lg = torch.randn(B, T, V, generator=g, dtype=F64) * 3
        ix = torch.randint(V, (B, T), generator=g)
        loss = plain_tensor(names.lm_loss(lg.clone(), ix.clone()), "the loss")    # logits that need no gradient
        lgr = lg.clone().requires_grad_()
        return {"loss": loss, "grad": torch.autograd.grad(plain_tensor(names.lm_loss(lgr, ix), "the loss"), lgr)[0]}
    return call


_LOSS = fields(("loss", tensor(atol=0.0, rtol=1e-10, what="the loss")),
               ("grad", tensor(atol=1e-12, what="the gradient w.r.t. the logits")))


class Markov(Die):
    """Next token depends on the last one read: after k, the next is k (prob 0.8) or k+1 mod 4 (0.2)."""

    def __init__(self):
        super().__init__()
        T = torch.full((4, 4), 1e-12)
        for k in range(4):
            T[k, k], T[k, (k + 1) % 4] = 0.8, 0.2
        self.table = T.log()

    def forward_state(self, idx, state=None):  # the state is not needed: the last token decides
        return self.table[idx], state


def _chain(got: Any, want: Any) -> str | None:
    if type(got) is not list or len(got) != 4000 or not all(type(t) is int for t in got):
        return f"got {show(got)} — return a list of 4000 ints"
    prev = [1] + got[:-1]
    if not all(b in (a, (a + 1) % 4) for a, b in zip(prev, got)):
        return "sample drew a token the model forbids"
    stay = sum(a == b for a, b in zip(prev, got)) / len(got)
    return None if abs(stay - 0.8) < 0.03 else f"the chain stayed put {stay:.3f} of the time, expected 0.8"


def _hot(got: Any, want: Any) -> str | None:
    if type(got) is not list or not got:
        return f"got {show(got)} — return a list of ints"
    p0 = float(torch.softmax(torch.tensor([0.7, 0.2, 0.1]).log() / 2.0, 0)[0])
    f0 = got.count(0) / len(got)
    return None if abs(f0 - p0) < 0.04 else f"at temperature 2 token 0 should come {p0:.3f} of the time, got {f0:.3f}"


class TwoLayerLM(nn.Module):
    def __init__(self, V=7, E=4, H=6):
        super().__init__()
        self.emb = nn.Embedding(V, E)
        self.mix = nn.Linear(E, H)
        self.frozen = nn.Linear(H, H)
        self.frozen.requires_grad_(False)
        self.lm_head = nn.Linear(H, V)

    def forward(self, idx):
        return self.lm_head(torch.tanh(self.frozen(torch.tanh(self.mix(self.emb(idx))))))


def _five_steps(names):
    seed_cpu(11)
    m = TwoLayerLM().double()
    g = torch.Generator().manual_seed(4)
    rets = [names.train_step(m, torch.randint(7, (3, 8), generator=g), 0.7) for _ in range(5)]
    return {"rets": [r if type(r) is float else show(r) for r in rets],
            "params": {n: p.detach().clone() for n, p in m.named_parameters()},
            "cleared": all(p.grad is None or float(p.grad.abs().max()) == 0 for p in m.parameters())}


def _five_compare(got: Any, want: Any) -> str | None:
    for k, (r, w) in enumerate(zip(got["rets"], want["rets"])):
        if type(r) is not float:
            return f"train_step returned {r} at step {k + 1}: it must return a Python float"
        if abs(r - w) > 1e-9 * max(1.0, abs(w)):
            return f"train_step loss at step {k + 1}: got {r!r}, expected {w!r}"
    for n, w in want["params"].items():
        diff = tensor(atol=1e-12, what=f"{n} after 5 steps")(got["params"].get(n), w)
        if diff:
            return diff
    return None if got["cleared"] else "train_step must clear the gradients"


def _adamw_inputs(steps: int, seed: int) -> tuple[list, list]:
    """Three parameters, the last without a gradient, and each step's gradients: plain lists."""
    g = torch.Generator().manual_seed(seed)
    shapes = (6, 3)
    params = [torch.randn(n, generator=g, dtype=F64).tolist() for n in shapes] + [[1.5, -0.5]]
    grads = [[torch.randn(n, generator=g, dtype=F64).tolist() for n in shapes] + [None] for _ in range(steps)]
    return params, grads


def _clip_grads(seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(5, generator=g, dtype=F64).mul(0.2).tolist(), None,
            torch.randn(2, 3, generator=g, dtype=F64).mul(0.2).tolist(), torch.randn(1, generator=g).tolist()]


def _letter(n: int) -> tuple[Case, ...]:
    return (QUESTIONS[n][1],)


HIDDEN = {
    "elman_step": tuple(Case(f"elman_step {(B, n_in, H)}", _step(B, n_in, H), compare=_STEP)
                        for B, n_in, H in [(1, 1, 1), (3, 7, 5), (8, 5, 9)]) + (
        Case("gradient of elman_step", _step_grads, compare=grads(("x_t", "h_prev", "W_xh", "W_hh", "b_h"), _GRAD,
                                                                  what="elman_step")),),
    "rnn_forward": tuple(Case(f"rnn_forward {(B, T, n_in, H)}", _seq(B, T, n_in, H), compare=tensor(atol=1e-12))
                         for B, T, n_in, H in [(1, 1, 2, 3), (2, 9, 3, 3), (4, 5, 6, 2)]) + (
        Case("gradient of rnn_forward vs nn.RNN", _seq_grads, compare=grads(("h0", "W_xh", "W_hh"), _GRAD,
                                                                            what="rnn_forward")),),
    "RNNLM": (Case("RNNLM(13, 4, 6) (hidden)", rnnlm_case(13, 4, 6, 3, 9, seed=3), compare=rnnlm_compare),),
    "lm_loss": tuple(Case(f"lm_loss {(B, T, V)}", _loss(B, T, V), compare=_LOSS)
                     for B, T, V in [(1, 2, 2), (3, 8, 5), (5, 17, 29)]),
    "perplexity": (
        Case("perplexity(random losses)",
             lambda names: names.perplexity(torch.rand(1000, generator=torch.Generator().manual_seed(5)) * 4),
             compare=lambda g, w: None if type(g) is float and abs(g - w) <= 1e-6 * abs(w) else
             f"got {show(g)}, expected {w!r}"),
        Case("perplexity of a perfect model", lambda names: names.perplexity(torch.zeros(3)),
             compare=lambda g, w: None if type(g) is float and abs(g - 1.0) <= 1e-12 else
             f"got {show(g)}, expected 1.0"),
    ),
    "sample": (
        Case("sample(Markov chain, prompt [3, 1], 4000)",
             lambda names: names.sample(Markov(), [3, 1], 4000, torch.Generator().manual_seed(11)), compare=_chain),
        Case("sample(die, 3000, temperature=2)",
             lambda names: names.sample(Die(), [0], 3000, torch.Generator().manual_seed(3), temperature=2.0),
             compare=_hot),
    ),
    "train_step": (Case("train_step, 5 steps on a two-layer model (hidden)", _five_steps, compare=_five_compare),),
    "adamw_step": (
        Case("adamw_step: 10 steps, the learning rate changing each step, betas (0.8, 0.95), eps 1e-6, decay 0.05",
             adamw_run(*_adamw_inputs(10, seed=5), [0.02 * (1 + k) for k in range(10)], (0.8, 0.95), 1e-6, 0.05),
             compare=trajectory(1e-12, "the step of torch.optim.AdamW, with the lr given at each call")),
        Case("adamw_step: 4 steps in float32 (lr 1e-3, betas (0.9, 0.999), decay 0.01)",
             adamw_run(*_adamw_inputs(4, seed=6), 1e-3, (0.9, 0.999), 1e-8, 0.01, dtype=torch.float32),
             compare=trajectory(1e-6, "the step of torch.optim.AdamW, in the parameters' dtype")),
    ),
    "lr_schedule": (
        Case("lr_schedule over 100 steps, 10 of warm-up", lambda names: [names.lr_schedule(s, 6e-4, 6e-5, 10, 100)
                                                                        for s in range(100)], compare=close(rel=1e-9)),
        Case("lr_schedule over 7 steps, 1 of warm-up", lambda names: [names.lr_schedule(s, 2.0, 0.0, 1, 7)
                                                                     for s in range(7)], compare=close(rel=1e-9)),
    ),
    "clip_grad_norm": (
        Case("clip_grad_norm on four random gradients, max_norm 0.3", clip_run(_clip_grads(7), 0.3), compare=clipped()),
        Case("clip_grad_norm on four random gradients, max_norm 50", clip_run(_clip_grads(8), 50.0), compare=clipped()),
    ),
    "q1": _letter(1),
    "q2": _letter(2),
    "q3": _letter(3),
    "q4": _letter(4),
}
