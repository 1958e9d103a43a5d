"""08_bpe's graded kernel has no course tokenizer: ``lmcourse.bpe`` answers 08's exercises, so a
submission that imports it (or switches off the in-kernel rules that watch it) must find nothing.
Each check runs in a fresh interpreter, as the graded kernel is one: withholding is for good."""

import pytest

from tests.marking.withheld_kernel import WithheldKernel

# what 08's setup cell imports and builds, before the withholding
SETUP = """
import lmcourse, lmcourse.marking
from lmcourse.data import data_dir, encode_text, load_shakespeare
from lmcourse.nn import GPT, GPTConfig
from lmcourse.runtime import given, is_autograding
from lmcourse.tokenizers import CharTokenizer, split_words
from lmcourse.train import TrainConfig, train
import lmcourse.marking.bpe, lmcourse.marking.hidden_source
"""
KERNEL = WithheldKernel("08_bpe", SETUP)


def test_the_setup_never_imports_the_course_tokenizer():
    # the modules the graded kernel needs must not bring it in before the withholding (it would stay
    # reachable through them) or after it (the import would fail)
    done = KERNEL.run("""
        assert "lmcourse.bpe" not in sys.modules, "a module of 08's setup imported lmcourse.bpe"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("how", [
    "import lmcourse.bpe",
    "from lmcourse import bpe",
    "from lmcourse.bpe import train_bpe",
    "import importlib; importlib.import_module('lmcourse.bpe')",
    "__import__('lmcourse.bpe')",
    "import lmcourse.reference.bpe",
])
def test_the_course_tokenizer_is_refused(how):
    KERNEL.assert_refuses(how)


def test_what_the_notebook_still_uses_works():
    done = KERNEL.run("""
        import torch
        rt = lmcourse.setup(seed=0)
        # the notebook's own cells: the course's tokenizer is absent, said in one line
        assert given("lmcourse.bpe", "the demo") is None
        # a graded call's rules are made without the course's tokenizer
        with lmcourse.marking.bpe.RULES():
            pass
        tok = CharTokenizer.from_text("to be or not to be")
        ids = encode_text("to be", tok)
        model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=2, n_embd=16))
        logits = model(ids[None, :])[0]
        assert logits.shape == (1, len(ids), tok.vocab_size)
        print("ok", split_words("to be, or not"))
    """)
    assert done.returncode == 0, done.stderr
    assert "\nok " in done.stdout, done.stdout
    assert "(skipped: lmcourse.bpe is not available while this notebook is graded; the demo)" in done.stdout
