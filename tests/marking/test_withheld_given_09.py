"""09_encoder_decoder's graded kernel has no course encoder-decoder: ``lmcourse.nn.seq2seq`` answers 09's
exercises, so a submission that imports it (or switches off the in-kernel rules that watch it) must find
nothing. Each check runs in a fresh interpreter, as the graded kernel is one: withholding is for good."""

import pytest

from tests.marking.withheld_kernel import WithheldKernel

# what 09's setup cell imports, the modules its graded cells use, before the withholding
SETUP = """
import lmcourse, lmcourse.marking
from lmcourse import dates, plot
from lmcourse.nn import MLP, AttentionConfig, BlockConfig, CausalSelfAttention, LayerNorm, scaled_dot_product_attention
from lmcourse.nn.seq2seq_config import Seq2SeqConfig
from lmcourse.runtime import given
from lmcourse.train import train
from lmcourse.recipes import seq2seq as seq2seq_recipe
import lmcourse.marking.encoder_decoder, lmcourse.marking.hidden_source
"""
KERNEL = WithheldKernel("09_encoder_decoder", SETUP)


def test_the_setup_never_imports_the_course_encoder_decoder():
    # a module of the setup that brought it in would keep it reachable through that module
    done = KERNEL.run("""
        assert "lmcourse.nn.seq2seq" not in sys.modules, "a module of 09's setup imported lmcourse.nn.seq2seq"
        assert not hasattr(lmcourse.nn, "seq2seq"), "lmcourse.nn kept a reference to its seq2seq submodule"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("how", [
    "import lmcourse.nn.seq2seq",
    "from lmcourse.nn import seq2seq",
    "from lmcourse.nn.seq2seq import EncoderDecoder",
    "from lmcourse.nn.seq2seq import CrossAttention",
    "import importlib; importlib.import_module('lmcourse.nn.seq2seq')",
    "__import__('lmcourse.nn.seq2seq')",
    "import lmcourse.reference.encoder_decoder",
    "import lmcourse.reference.decoding",
])
def test_the_course_encoder_decoder_is_refused(how):
    KERNEL.assert_refuses(how)


def test_what_the_notebook_still_uses_works():
    done = KERNEL.run("""
        import torch
        rt = lmcourse.setup(seed=0)
        # sections 9 to 11: the course's encoder-decoder is absent, said in one line
        assert given("lmcourse.nn.seq2seq", "sections 9 to 11") is None
        # the given pieces the exercises build on: the config, the data, the recipe, lmcourse.nn's layers
        config = Seq2SeqConfig(src_vocab_size=20, tgt_vocab_size=20, n_embd=16, n_head=2)
        block = config.block_config("decoder")
        attn = CausalSelfAttention(AttentionConfig(n_embd=16, n_head=2, block_size=8))
        assert attn(torch.zeros(1, 4, 16)).shape == (1, 4, 16)
        assert MLP(block)(torch.zeros(1, 4, 16)).shape == (1, 4, 16)
        pairs = dates.make_splits(8, 4, 4, seed=0)["train"]
        batch = dates.make_batch(pairs, dates.CharVocab())
        assert batch.src.shape[0] == 8
        assert seq2seq_recipe.recipe("tiny").steps > 0
        # a graded call's rules are made without the course's encoder-decoder
        import lmcourse.reference
        assert lmcourse.reference.nn_seq2seq_work() == ()
        rules = lmcourse.marking.encoder_decoder._second_line("a test")
        with rules():
            pass
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout.splitlines(), done.stdout
    assert "(skipped: lmcourse.nn.seq2seq is not available while this notebook is graded; sections 9 to 11)" in \
        done.stdout, done.stdout
