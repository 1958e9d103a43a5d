"""07_decoding's graded kernel keeps the GPT it decodes from (``lmcourse.nn.gpt``) but not 05's sampling
loop (``lmcourse.nn.sampling``): a copy of that loop's code object, run as a new function past the rules'
refusal of the original, answered 07's ``generate`` (through a model that filters the logits). Each check
runs in a fresh interpreter, as the graded kernel is one."""

import pytest

from tests.marking.withheld_kernel import WithheldKernel

# what 07's setup cell imports, before the withholding
SETUP = """
import lmcourse, lmcourse.marking
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import GPT, GPTConfig, load_gpt, save_gpt
from lmcourse.runtime import is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, train
import lmcourse.marking.decoding, lmcourse.marking.hidden_source
"""
KERNEL = WithheldKernel("07_decoding", SETUP)


def test_the_setup_never_imports_the_sampler():
    done = KERNEL.run("""
        assert "lmcourse.nn.sampling" not in sys.modules, "a module of 07's setup imported lmcourse.nn.sampling"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("how", [
    "import lmcourse.nn.sampling",
    "from lmcourse.nn import sampling",
    "import importlib; importlib.import_module('lmcourse.nn.sampling')",
])
def test_the_sampler_is_refused(how):
    KERNEL.assert_refuses(how)


def test_the_code_copy_route_finds_no_code_and_the_gpt_stays():
    done = KERNEL.run("""
        import types
        import torch
        import lmcourse.nn.gpt as G
        try:
            import lmcourse.nn.sampling as S
            code = getattr(S._generate, "__co" + "de__")
        except ImportError as err:
            print("refused:", err)
        print("the GPT's module holds no sampler:", not hasattr(G, "generate") and not hasattr(G, "_generate"))
        model = G.GPT(G.GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, n_embd=8))
        logits, _ = model(torch.zeros(1, 3, dtype=torch.long))
        print(tuple(logits.shape))
        with lmcourse.marking.decoding.rules()():    # the rules a case runs under are made without it
            pass
    """)
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "not available while notebook 07_decoding" in done.stdout, done.stdout
    assert "the GPT's module holds no sampler: True" in done.stdout, done.stdout
    assert "(1, 3, 5)" in done.stdout, done.stdout
