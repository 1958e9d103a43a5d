"""The static check of "how" (lmcourse.grading.how): names read through imports and by what they are,
methods on any value, names built at run time flagged, not resolved."""

from lmcourse.grading.how import Refused, check, from_rules
from lmcourse.marking import notebooks

SOFTMAX = Refused(names=("torch.nn.modules.activation.MultiheadAttention", "tiktoken"), parts=("softmax",))


def test_refused_names_through_aliases_reexports_and_methods():
    assert check("import torch.nn.functional as F\ny = F.softmax", SOFTMAX)[0] == [
        "refused: torch.nn.functional.softmax"]
    assert check("def f(x):\n    return x.softmax(-1)", SOFTMAX)[0] == ["refused: torch.Tensor.softmax"]
    assert check("from torch import nn\nm = nn.MultiheadAttention(4, 2)", SOFTMAX)[0]
    assert check("import tiktoken", SOFTMAX)[0] == ["refused: tiktoken"]
    assert sorted(check("import torch\nf = getattr(torch, 'softmax')", SOFTMAX)[0]) == [
        "refused: 'softmax'", "refused: torch.softmax"]


def test_own_code_passes_and_computed_names_are_flagged_only():
    assert check("def f(x):\n    e = x.exp()\n    return e / e.sum(-1, keepdim=True)", SOFTMAX) == ([], [])
    hits, flags = check("import torch\nf = getattr(torch, 'soft' + 'max')", SOFTMAX)
    assert hits == [] and flags and "built at run time" in flags[0]


def test_lists_read_from_todays_rules():
    refused = from_rules(notebooks.load("02_rnn").exercise("rnn_forward").rules())
    assert "torch.nn.modules.rnn.RNN" in refused.names and "rnn_tanh" in refused.parts
    assert check("from torch import nn\nm = nn.RNN(3, 4)", refused)[0]
