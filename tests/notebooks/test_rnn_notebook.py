"""Notebook 02 (recurrent LMs) keeps its promises. (That each catalogued mistake costs
exactly its own test cell is checked for every notebook by tests/test_mutants.py.)

* what the text says about the model is what the code does: the input at step t is the token
  *before* the one scored (x_t = E[w_{t-1}]), the initialisation is described as it is, and the
  gradient-clipping threshold of the training cells does act on the cpu profile's models.
"""

import math
import re

import pytest
import torch
import torch.nn as nn

from lmcourse.notebook_runner import solution_namespace

from tests.conftest import ROOT

# one worker builds the module-scoped fixture once (pytest-xdist --dist loadgroup)
pytestmark = [pytest.mark.xdist_group("rnn-notebook"), pytest.mark.slow]

NAME = "02_rnn"
MASTER = ROOT / "autograder" / "masters" / f"{NAME}.py"


@pytest.fixture(scope="module")
def notebook():
    threads = torch.get_num_threads()  # the setup cell sets torch's threads for this process
    try:
        yield solution_namespace(NAME, ("setup", "elman_step", "rnn_forward", "RNNLM", "lm_loss"))
    finally:
        torch.set_num_threads(threads)


def test_the_model_never_scores_the_token_it_just_read(notebook):
    """x_t = E[w_{t-1}]: logits[:, j] depend on idx[:, :j+1] only, and lm_loss scores them against
    idx[:, j+1], a token the model has not read; so changing a window's last token changes the loss
    through the target only, never through what the model read."""
    torch.manual_seed(0)
    model = notebook["RNNLM"](vocab_size=9, n_embd=4, n_hidden=5).double()
    idx = torch.randint(9, (2, 7))
    later = idx.clone()
    later[:, 4:] = (later[:, 4:] + 1) % 9
    logits, changed = model(idx), model(later)
    assert torch.equal(logits[:, :4], changed[:, :4]), "position j must not see tokens after idx[:, j]"
    assert not torch.allclose(logits[:, 4:], changed[:, 4:])
    # the loss is the mean of -log softmax(logits[:, j])[idx[:, j + 1]], j = 0..T-2
    logp = torch.log_softmax(logits.detach(), -1)
    want = -sum(float(logp[b, j, idx[b, j + 1]]) for b in range(2) for j in range(6)) / 12
    assert math.isclose(float(notebook["lm_loss"](logits, idx)), want, rel_tol=1e-12)
    text = MASTER.read_text()
    assert "x_t = E[w_{t-1}]" in text, "the text must define the input as the previous token's embedding"
    assert not re.search(r"row \$w_t\$ of", text), "the text still says x_t is row w_t of E"


def test_initialisation_is_described_as_it_is(notebook):
    torch.manual_seed(0)
    model = notebook["RNNLM"](vocab_size=11, n_embd=16, n_hidden=64)
    bound = 1 / math.sqrt(64)
    for w in (model.W_xh, model.W_hh):  # nn.RNN's weight initialisation, U(-1/sqrt(H), 1/sqrt(H))
        assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.9 * bound
    assert torch.count_nonzero(model.b_h) == 0
    assert torch.count_nonzero(nn.RNN(16, 64).bias_ih_l0) > 0  # so "the same as nn.RNN" would be false
    text = MASTER.read_text()
    assert "same initialisation as nn.RNN" not in text
    assert re.search(r"self\.b_h = .*# starts at 0", text), "the comment on b_h must say it starts at zero"


def test_clipping_threshold_of_the_training_cells_acts(notebook):
    """The notebook's clipping demo must show clipping at work: with the threshold its training
    cells use, early steps of the cpu-profile RNN have larger gradient norms (measured: 0.6 to 1.0
    in the first 20 steps, against a median of 0.3 over a full run)."""
    from lmcourse.data import encode_split, load_shakespeare
    from lmcourse.recipes import rnn
    from lmcourse.runtime import get_profile
    from lmcourse.tokenizers import CharTokenizer
    from lmcourse.train import TrainConfig, train

    clip = rnn.recipe("cpu").grad_clip  # what the training cells use (tests/test_recipes.py: they read it)
    P = get_profile("cpu")
    corpus = load_shakespeare(quiet=True)
    tok = CharTokenizer.from_text(corpus.text("train"))
    ids = encode_split(corpus, "train", tok, max_chars=200_000)
    torch.manual_seed(0)
    model = notebook["RNNLM"](tok.vocab_size, P.n_embd, P.n_embd)
    cfg = TrainConfig.from_profile(P, steps=20, lr=3e-3, grad_clip=clip, eval_batches=0, device="cpu",
                                   progress=False, quiet=True)
    hist = train(model, ids, None, cfg)
    assert hist.clipped_fraction(clip) > 0.5, (clip, hist.grad_norm)
