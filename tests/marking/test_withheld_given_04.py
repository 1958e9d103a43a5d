"""04_block's graded kernel has no course block: ``lmcourse.nn.block`` answers 04's exercises (layer norm, the
MLP, the position tables and embeddings, the block, its parameter count), so a submission that imports it, or
switches off the in-kernel rules that watched it, must find nothing; nor the course models built on it. 03's
attention stays: it is given code for 04. Each check runs in a fresh interpreter, as the graded kernel is one:
withholding is for good."""

import pytest

from lmcourse.marking.hidden_source import hidden_source
from lmcourse.marking.notebooks import load
from tests.marking.withheld_kernel import WithheldKernel

# what 04's setup cell imports, the modules its graded cells use, before the withholding
SETUP = """
import math, sys
import torch
import torch.nn.functional as F
from torch import nn
import lmcourse, lmcourse.marking
from lmcourse import plot
from lmcourse.data import encode_split, load_shakespeare
from lmcourse.nn import AttentionConfig, CausalSelfAttention
from lmcourse.runtime import given
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, train
import lmcourse.marking.block, lmcourse.marking.hidden_source, lmcourse.marking.standins
"""
KERNEL = WithheldKernel("04_block", SETUP)


def test_the_setup_never_imports_the_course_block():
    # a module of the setup that brought it in would keep it reachable through that module
    done = KERNEL.run("""
        for name in ("lmcourse.nn.block", "lmcourse.nn.gpt", "lmcourse.nn.mlm", "lmcourse.nn.seq2seq"):
            assert name not in sys.modules, f"a module of 04's setup imported {name}"
        assert not hasattr(lmcourse.nn, "block"), "lmcourse.nn kept a reference to its block submodule"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("how", [
    "import lmcourse.nn.block",
    "from lmcourse.nn import block",
    "from lmcourse.nn.block import sinusoidal_positions",
    "from lmcourse.nn import LayerNorm",
    "from lmcourse.nn import Block",
    "import lmcourse.nn; lmcourse.nn.block_param_count",
    "import importlib; importlib.import_module('lmcourse.nn.block')",
    "__import__('lmcourse.nn.block')",
    "import lmcourse.nn.gpt",
    "import lmcourse.reference.block",
])
def test_the_course_block_is_refused(how):
    KERNEL.assert_refuses(how)


def test_what_the_notebook_still_uses_works():
    spec = load("04_block")
    hidden = {ex.name: hidden_source(spec, ex.name) for ex in spec.exercises}
    done = KERNEL.run(f"""
        HIDDEN_TEXT = {hidden!r}
        rt = lmcourse.setup(seed=0)
        # sections 7 and 8 run the course's blocks: absent, said in one line
        assert given("lmcourse.nn.block", "sections 7 and 8") is None
        # 03's attention is given code for 04: the block exercise builds on it
        attn = CausalSelfAttention(AttentionConfig(n_embd=16, n_head=2, block_size=8))
        assert attn(torch.zeros(1, 4, 16)).shape == (1, 4, 16)
        assert lmcourse.nn.scaled_dot_product_attention is not None
        # a graded call's rules and the hidden cases load without the course's block
        for name in ("layer_norm", "sinusoidal_positions", "rotation_matrix", "block"):
            ex = lmcourse.marking.block.NOTEBOOK.exercise(name)
            if ex.rules:
                with ex.rules():
                    pass
        for name, text in HIDDEN_TEXT.items():
            assert lmcourse.marking.hidden_source.load_hidden(text, lmcourse.marking.block.NOTEBOOK.exercise(name))
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout.splitlines(), done.stdout
    assert "(skipped: lmcourse.nn.block is not available while this notebook is graded; sections 7 and 8)" in \
        done.stdout, done.stdout
