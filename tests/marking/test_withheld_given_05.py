"""05_gpt's graded kernel has no course GPT: ``lmcourse.nn.gpt`` (given code for 06, 07, 08 and 10)
answers 05's exercises, so a submission that imports it (or switches off the in-kernel rules that
watch it) must find nothing. Each check runs in a fresh interpreter, as the graded kernel is one:
withholding is for good."""

import pytest

from tests.marking.withheld_kernel import WithheldKernel

# what 05's setup cell and its training cell import, before the withholding
SETUP = """
import lmcourse, lmcourse.marking
from lmcourse import plot
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import Block, BlockConfig, LayerNorm, block_param_count
from lmcourse.runtime import given, is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, estimate_loss, train
import lmcourse.marking.gpt, lmcourse.marking.hidden_source
"""
KERNEL = WithheldKernel("05_gpt", SETUP)


def test_the_setup_never_imports_the_course_gpt():
    # the modules the graded kernel needs must not bring it in before the withholding (it would stay
    # reachable through them) or after it (the import would fail)
    done = KERNEL.run("""
        assert "lmcourse.nn.gpt" not in sys.modules, "a module of 05's setup imported lmcourse.nn.gpt"
        assert "lmcourse.reference.gpt" not in sys.modules, "a module of 05's setup imported 05's reference"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("how", [
    "import lmcourse.nn.gpt",
    "from lmcourse.nn import gpt",
    "from lmcourse.nn.gpt import GPT",
    "from lmcourse.nn import GPT",
    "import lmcourse.nn; lmcourse.nn.init_gpt_weights",
    "import importlib; importlib.import_module('lmcourse.nn.gpt')",
    "__import__('lmcourse.nn.gpt')",
    "import lmcourse.reference.gpt",
])
def test_the_course_gpt_is_refused(how):
    KERNEL.assert_refuses(how)


def test_what_the_notebook_still_uses_works():
    done = KERNEL.run("""
        import tempfile
        from pathlib import Path

        import torch
        from lmcourse.nn.checkpoint import save_model
        from lmcourse.recipes import gpt as gpt_recipe
        rt = lmcourse.setup(seed=0)
        # the notebook's own cells: the course's GPT is absent, said in one line
        assert given("lmcourse.nn.gpt", "the demo") is None
        # a graded call's rules are made without the course's GPT
        for ex in load("05_gpt").exercises:
            if ex.rules is not None:
                with ex.rules():
                    pass
        # the training cell's recipe, and the sizes it gives the student's GPTConfig
        R = gpt_recipe.recipe("tiny")
        sizes = R.model_sizes()
        assert set(sizes) == {"block_size", "n_layer", "n_head", "n_embd", "dropout"}, sizes
        cfg = R.train_config(seed=0)
        block = Block(BlockConfig(n_embd=sizes["n_embd"], n_head=sizes["n_head"], block_size=sizes["block_size"]))
        out = block(torch.zeros(1, 4, sizes["n_embd"]))
        assert out.shape == (1, 4, sizes["n_embd"])
        save_model(block, Path(tempfile.mkdtemp()) / "b.pt")
        assert "lmcourse.nn.gpt" not in sys.modules
        print("ok", cfg.steps, block_param_count(sizes["n_embd"]) > 0)
    """)
    assert done.returncode == 0, done.stderr
    assert "\nok " in done.stdout, done.stdout
    assert "(skipped: lmcourse.nn.gpt is not available while this notebook is graded; the demo)" in done.stdout
