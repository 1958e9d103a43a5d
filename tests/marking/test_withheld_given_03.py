"""03_attention's graded kernel has no course attention: ``lmcourse.nn.attention`` answers 03's exercises
(softmax, scores, masks, scaled dot-product and multi-head attention), so a submission that imports it, or
switches off the in-kernel rules that watched it, must find nothing; nor the course models built on it. Each
check runs in a fresh interpreter, as the graded kernel is one: withholding is for good."""

import pytest

from lmcourse.marking.hidden_source import hidden_source
from lmcourse.marking.notebooks import load
from tests.marking.withheld_kernel import WithheldKernel

# what 03's setup cell imports, the modules its graded cells use, before the withholding
SETUP = """
import math, time, sys
import torch
import torch.nn.functional as F
from torch import nn
import lmcourse, lmcourse.marking
from lmcourse import plot
from lmcourse.runtime import given
import lmcourse.marking.attention, lmcourse.marking.hidden_source, lmcourse.marking.standins
"""
KERNEL = WithheldKernel("03_attention", SETUP)


def test_the_setup_never_imports_the_course_attention():
    # a module of the setup that brought it in would keep it reachable through that module
    done = KERNEL.run("""
        for name in ("lmcourse.nn.attention", "lmcourse.nn.block", "lmcourse.nn.gpt"):
            assert name not in sys.modules, f"a module of 03's setup imported {name}"
        assert not hasattr(lmcourse, "nn") or not hasattr(lmcourse.nn, "attention"), \\
            "lmcourse.nn kept a reference to its attention submodule"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("how", [
    "import lmcourse.nn.attention",
    "from lmcourse.nn import attention",
    "from lmcourse.nn.attention import scaled_dot_product_attention",
    "from lmcourse.nn import CausalSelfAttention",
    "from lmcourse.nn import SelfAttention",
    "import lmcourse.nn; lmcourse.nn.scaled_dot_product_attention",
    "import importlib; importlib.import_module('lmcourse.nn.attention')",
    "__import__('lmcourse.nn.attention')",
    "import lmcourse.nn.block",
    "import lmcourse.nn.gpt",
    "import lmcourse.reference.attention",
])
def test_the_course_attention_is_refused(how):
    KERNEL.assert_refuses(how)


def test_what_the_notebook_still_uses_works():
    spec = load("03_attention")
    hidden = {ex.name: hidden_source(spec, ex.name) for ex in spec.exercises}
    done = KERNEL.run(f"""
        HIDDEN_TEXT = {hidden!r}
        rt = lmcourse.setup(seed=0)
        # section 7's comparison with the course's layer: absent, said in one line
        assert given("lmcourse.nn.attention", "the comparison with the course's attention layer") is None
        # a graded call's rules and the hidden cases load without the course's attention
        ex = lmcourse.marking.attention.NOTEBOOK.exercise("multi_head_attention")
        if ex.rules:
            with ex.rules():
                pass
        for name, text in HIDDEN_TEXT.items():
            assert lmcourse.marking.hidden_source.load_hidden(text, lmcourse.marking.attention.NOTEBOOK.exercise(name))
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout.splitlines(), done.stdout
    assert ("(skipped: lmcourse.nn.attention is not available while this notebook is graded; the comparison with "
            "the course's attention layer)") in done.stdout, done.stdout
