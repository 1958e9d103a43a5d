"""lmcourse.reference.scaling against facts it does not compute itself: the course's GPT counted
parameter by parameter, torch's own FLOP counter, GPT-3's published sizes and compute, laws with
known constants, and a brute-force search for the compute-optimal split."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lmcourse.nn.gpt import GPT, GPTConfig
from lmcourse.reference import scaling
from lmcourse.reference.scaling import REFERENCE

CHINCHILLA = dict(A=406.4, B=410.7, alpha=0.34, beta=0.28)  # E = 1.69 (Hoffmann et al. 2022, approach 3)
EPOCH = dict(A=482.0, B=2085.0, alpha=0.348, beta=0.366)  # E = 1.82 (Besiroglu et al. 2024's refit)


def test_reference_names_every_function_of_the_module():
    functions = {f for f in vars(scaling).values() if inspect.isfunction(f) and f.__module__ == scaling.__name__}
    assert functions == set(REFERENCE)


# --- 1. parameters ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n_layer, n_embd, bias", [(1, 16, True), (3, 48, True), (4, 64, False)])
def test_12_l_d2_is_the_gpts_weight_matrices_and_the_rest_is_biases_and_layer_norms(n_layer, n_embd, bias):
    """The formula counts the blocks' weight matrices exactly; it leaves out the biases and LayerNorm
    parameters (13 d per block with biases, 2 d without: two LayerNorm gains; the final LayerNorm's
    d or 2 d), all of them 1-D tensors."""
    model = GPT(GPTConfig(vocab_size=65, block_size=32, n_layer=n_layer, n_head=4, n_embd=n_embd, bias=bias))
    matrices = sum(p.numel() for name, p in model.named_parameters()
                   if p.dim() == 2 and not name.startswith(("wte", "wpe")))
    vectors = sum(p.numel() for p in model.parameters() if p.dim() == 1)
    assert matrices == scaling.non_embedding_params(n_layer, n_embd)
    assert model.num_params(non_embedding=True) == scaling.non_embedding_params(n_layer, n_embd) + vectors
    d = n_embd
    assert vectors == (n_layer * 13 * d + 2 * d if bias else n_layer * 2 * d + d)


def test_the_general_count_is_12_l_d2_at_the_usual_shapes_and_counts_other_shapes():
    assert scaling.transformer_params(6, 384) == scaling.non_embedding_params(6, 384)
    # a block with d_attn = d / 2 and d_ff = 2 d: 4 d d_attn + 2 d d_ff = 2 d^2 + 4 d^2 per block
    assert scaling.transformer_params(2, 64, d_attn=32, d_ff=128) == 2 * 6 * 64 ** 2


def test_gpt3_from_the_lectures_table():
    """GPT-3: 96 layers, d = 12288: 173.9e9, the "175 B" of the table within 1 %; GPT-3 Small
    (12 x 768) with its embeddings (50257 tokens, 2048 positions) is the table's 125 M within 1 %."""
    assert scaling.non_embedding_params(96, 12288) == pytest.approx(175e9, rel=0.01)
    small = scaling.non_embedding_params(12, 768) + (50257 + 2048) * 768
    assert small == pytest.approx(125e6, rel=0.01)


# --- 2. compute --------------------------------------------------------------------------------------

def _counted_training_flops(n_layer, n_embd, block_size, batch, vocab=65, fast=False):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=vocab, block_size=block_size, n_layer=n_layer, n_head=4, n_embd=n_embd,
                          fast=fast))
    x = torch.randint(vocab, (batch, block_size))
    y = torch.randint(vocab, (batch, block_size))
    with FlopCounterMode(display=False) as counter:
        _, loss = model(x, y)
        loss.backward()
    return counter.get_total_flops()


def test_6nd_and_the_attention_term_account_for_every_flop_torch_counts():
    """torch counts matrix products (2 FLOPs a multiply-add). Beyond 6 N D, with N = 12 L d^2, it sees
    the tied LM head (6 d V per token; the embeddings are look-ups, no FLOPs) and the attention's two
    (T x T) products in full, 4 L T d per token forward: twice Kaplan's 2 L T d, which counts the causal
    half. On the explicit attention path the sum is exact."""
    L, d, T, B, V = 2, 64, 32, 3, 65
    D = B * T
    N = scaling.non_embedding_params(L, d)
    counted = _counted_training_flops(L, d, T, B, V)
    attention = scaling.training_flops(N, D, n_layer=L, n_ctx=T, d_attn=d) - scaling.training_flops(N, D)
    assert attention == 6 * L * T * d * D
    assert counted == scaling.training_flops(N, D) + 6 * d * V * D + 2 * attention


def test_6nd_alone_is_within_15_percent_of_the_count_for_a_wide_short_context_model():
    """The gap 6 N D leaves is (6 d V + 12 L T d) D against 12 L d^2 * 6 D: V / (12 L d) + T / (6 d),
    small when d is large against T and V (here 0.8 % + 8.3 %)."""
    L, d, T, B = 4, 128, 64, 2
    counted = _counted_training_flops(L, d, T, B)
    assert scaling.training_flops(scaling.non_embedding_params(L, d), B * T) == pytest.approx(counted, rel=0.15)


def test_the_fused_attention_is_invisible_to_the_counter_on_the_cpu():
    """Why the tests above use the explicit path: on the CPU the counter has no formula for the fused
    attention kernel, so its FLOPs drop out of the count (a fact about the tool, not the model)."""
    L, d, T, B = 2, 64, 32, 3
    assert _counted_training_flops(L, d, T, B, fast=True) < _counted_training_flops(L, d, T, B, fast=False)


def test_gpt3_compute_and_the_slides_50_petaflop_days():
    """GPT-3 (175 B parameters, 300 B tokens): 6 N D = 3.15e23 FLOPs, 3,646 PF-days (the GPT-3 paper's
    table D.1 gives 3.14e23 and 3,640). The slide's "50 petaflop/s-days" is the paper's figure 2.2
    caption about GPT-3 2.7B ("3B") and RoBERTa-Large: 6 * 2.7e9 * 300e9 is 56 PF-days; GPT-3 175B took
    some 70 times that."""
    total = scaling.training_flops(175e9, 300e9)
    assert total == pytest.approx(3.14e23, rel=0.01)
    assert scaling.pf_days(total) == pytest.approx(3640, rel=0.01)
    assert scaling.PF_DAY == 8.64e19  # the slide's "each of which are 8.64e+19 flops"
    assert scaling.pf_days(scaling.training_flops(2.7e9, 300e9)) == pytest.approx(50, rel=0.15)
    assert scaling.pf_days(total) / 50 > 70


def test_the_attention_term_needs_all_its_sizes():
    with pytest.raises(ValueError):
        scaling.training_flops(1e6, 1e6, n_layer=2)


# --- 3. power laws -----------------------------------------------------------------------------------

def test_log_space_fit_recovers_a_pure_power_law():
    x = np.logspace(3, 7, 9)
    A, alpha = scaling.fit_power_law(x, 52.0 * x ** -0.076)
    assert A == pytest.approx(52.0, rel=1e-9) and alpha == pytest.approx(0.076, rel=1e-9)


@pytest.mark.parametrize("E, A, alpha", [(1.69, 406.4, 0.34), (1.82, 2085.0, 0.366), (0.5, 20.0, 0.1)])
def test_the_offset_fit_recovers_known_constants_from_noise_free_data(E, A, alpha):
    x = np.logspace(4, 9, 12)
    got = scaling.fit_power_law_offset(x, scaling.power_law(x, E, A, alpha))
    assert got == pytest.approx((E, A, alpha), rel=1e-4)


def test_the_offset_fit_is_close_on_seeded_noisy_data():
    """0.5 % multiplicative noise on 12 points over three decades (seed 0): E within 3 %, alpha within
    10 %, A within 25 % (A trades off against alpha: it is the value at x = 1, far outside the data)."""
    rng = np.random.default_rng(0)
    x = np.logspace(3, 6, 12)
    y = scaling.power_law(x, 1.7, 40.0, 0.4) * np.exp(rng.normal(0.0, 0.005, size=x.shape))
    E, A, alpha = scaling.fit_power_law_offset(x, y)
    assert E == pytest.approx(1.7, rel=0.03)
    assert alpha == pytest.approx(0.4, rel=0.10)
    assert A == pytest.approx(40.0, rel=0.25)


def test_ignoring_the_offset_gives_a_smaller_exponent():
    """Why the offset matters: a pure power law fitted to E + A x^-alpha bends to the floor E with a far
    smaller exponent (Kaplan's 0.076 is of this kind)."""
    x = np.logspace(3, 6, 12)
    _, alpha0 = scaling.fit_power_law(x, scaling.power_law(x, 1.7, 40.0, 0.4))
    assert alpha0 < 0.4 / 2


# --- 4. IsoFLOP ----------------------------------------------------------------------------------------

def _chinchilla_loss(N, D):
    return 1.69 + CHINCHILLA["A"] / N ** CHINCHILLA["alpha"] + CHINCHILLA["B"] / D ** CHINCHILLA["beta"]


def test_a_parabola_is_found_exactly():
    lx = np.linspace(8, 12, 7)
    coef, n_opt = scaling.isoflop_parabola(np.exp(lx), 0.3 * (lx - 10.2) ** 2 + 2.5)
    assert n_opt == pytest.approx(math.exp(10.2), rel=1e-9)
    assert coef == pytest.approx((0.3, -0.6 * 10.2, 0.3 * 10.2 ** 2 + 2.5), rel=1e-9)


def test_a_budget_without_a_minimum_is_refused():
    with pytest.raises(ValueError):
        scaling.isoflop_parabola([1e3, 1e4, 1e5, 1e6], [1.7, 1.9, 1.95, 1.7])


def test_isoflop_minima_of_chinchillas_law_give_its_closed_form_exponent():
    """IsoFLOP slices of L(N, D) with D = C / (6 N), sizes spread over a factor 4 each side of the
    optimum: each parabola's minimum is the closed form's N_opt within 3 % (a parabola is not the curve's
    exact shape: the minimum it finds moves away as the sizes spread), and N_opt ∝ C^a with
    a = beta / (alpha + beta) = 0.452 within 0.01 (approaches 2 and 3 agree on a law they both fit)."""
    budgets = [1e18, 1e19, 1e20, 1e21, 1e22]
    cs, ns, losses = [], [], []
    for C in budgets:
        centre = scaling.compute_optimal(C, **CHINCHILLA)[0]
        for n in centre * np.logspace(-0.6, 0.6, 9):
            cs.append(C)
            ns.append(float(n))
            losses.append(_chinchilla_loss(n, C / (6 * n)))
    minima = scaling.isoflop_minima(cs, ns, losses)
    for C in budgets:
        assert minima[C] == pytest.approx(scaling.compute_optimal(C, **CHINCHILLA)[0], rel=0.03)
    fit = scaling.fit_exponents(list(minima), list(minima.values()))
    beta, alpha = CHINCHILLA["beta"], CHINCHILLA["alpha"]
    assert fit["a"] == pytest.approx(beta / (alpha + beta), abs=0.01)
    assert fit["a"] + fit["b"] == pytest.approx(1.0, abs=1e-9)
    assert fit["k_N"] * fit["k_D"] == pytest.approx(1 / 6, rel=1e-6)  # N D = C / 6 at every C


# --- 5. the closed form --------------------------------------------------------------------------------

@pytest.mark.parametrize("law", [CHINCHILLA, EPOCH], ids=["chinchilla", "epoch"])
@pytest.mark.parametrize("C", [1e21, 5.76e23])
def test_the_closed_form_is_the_brute_force_minimum(law, C):
    """The loss along C = 6 N D on a fine grid of N (100 points a decade) is lowest within one grid
    step of the closed form's N_opt."""
    grid = np.logspace(6, 14, 801)
    loss = law["A"] / grid ** law["alpha"] + law["B"] / (C / (6 * grid)) ** law["beta"]
    n_opt, d_opt = scaling.compute_optimal(C, **law)
    assert grid[np.argmin(loss)] == pytest.approx(n_opt, rel=10 ** 0.01 - 1 + 1e-9)
    assert 6 * n_opt * d_opt == pytest.approx(C, rel=1e-12)


def test_tokens_per_parameter_against_the_rule_of_thumb():
    """At Chinchilla's compute (5.76e23 FLOPs) Epoch's refit gives 18 tokens per parameter, near the
    "20 tokens per parameter" rule; Hoffmann et al.'s published constants give 93, far from it (the
    inconsistency Epoch's replication pointed out). These numbers are the ones the brute-force test
    above confirms, read at one budget."""
    C = 5.76e23
    epoch = scaling.tokens_per_parameter(C, **EPOCH)
    chinchilla = scaling.tokens_per_parameter(C, **CHINCHILLA)
    assert 15 < epoch < 25
    assert chinchilla > 3 * epoch
    # with beta < alpha (Chinchilla) tokens per parameter grow with C; with beta > alpha (Epoch) they shrink
    assert scaling.tokens_per_parameter(1e21, **CHINCHILLA) < chinchilla
    assert scaling.tokens_per_parameter(1e21, **EPOCH) > epoch
