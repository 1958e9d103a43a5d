"""lmcourse.marking.rules: the one call a test cell makes to state an exercise's rules."""

import pytest

from lmcourse.checks import CheckFailed
from lmcourse.marking.rules import LIBRARIES, rules
from lmcourse.reference import ngram


def test_a_reference_is_refused_under_any_name():
    alias = ngram.pad_sentence

    def student(words, n):
        return alias(words, n)

    r = rules(ngram.pad_sentence, reason="write it yourself")
    with pytest.raises(CheckFailed, match="your code called pad_sentence: write it yourself"), r():
        student(["a"], 2)
    with r():       # the same rules enter again, and an honest answer passes
        assert ngram.mle_prob(ngram.ContextTable.from_counts({("a",): 2}), (), "a") == 1.0


def test_a_caught_refusal_still_fails_on_exit():
    def sneaky():
        try:
            ngram.mle_prob(None, (), "a")
        except CheckFailed:
            pass

    with pytest.raises(CheckFailed, match="mle_prob"), rules(ngram.mle_prob)():
        sneaky()


def test_more_code_is_refused_with_its_own_reason_in_the_one_profile_function():
    import sys

    r = rules(ngram.pad_sentence, reason="write it yourself", extra=(((ngram.mle_prob,), "not the table's helper"),))
    with pytest.raises(CheckFailed, match="your code called mle_prob: not the table's helper"), r():
        ngram.mle_prob(None, (), "a")
    with pytest.raises(CheckFailed, match="your code called pad_sentence: write it yourself"), r():
        ngram.pad_sentence(["a"], 2)

    def caught():
        try:
            ngram.mle_prob(None, (), "a")
        except CheckFailed:
            pass

    with pytest.raises(CheckFailed, match="not the table's helper"), r():     # caught, it still fails on exit
        caught()
    # one profile function watches, nothing chained before it: each one chained costs every event a Python call
    from lmcourse.marking import notebooks

    for entered in (r, notebooks.load("07_decoding").exercise("cached_forward").rules):
        assert sys.getprofile() is None
        with entered():
            watching = sys.getprofile()
        cells = dict(zip(watching.__code__.co_freevars, watching.__closure__))
        assert cells["previous"].cell_contents is None


def test_substitute_binds_the_stand_ins_and_restores_the_names():
    namespace = {"pad_sentence": "the student's"}
    r = rules(ngram.count_ngrams, substitute={"pad_sentence": ngram.pad_sentence, "extra": 1}, namespace=namespace)
    with r():
        assert namespace == {"pad_sentence": ngram.pad_sentence, "extra": 1}
    assert namespace == {"pad_sentence": "the student's"}
    with pytest.raises(TypeError, match="namespace=globals()"):
        rules(ngram.count_ngrams, substitute={"pad_sentence": ngram.pad_sentence})


def test_torch_names_are_refused_however_reached():
    torch = pytest.importorskip("torch")
    with pytest.raises(CheckFailed, match="softmax"), rules(torch=("softmax",))():
        torch.tensor([1.0, 2.0]).log_softmax(0).exp()
    with rules(torch=("softmax",))():
        torch.tensor([1.0, 2.0]).exp()


def test_a_test_cells_expected_value_helper_is_refused_like_the_reference():
    """The helpers that compute 06's and 07's expected values live in the package
    and are part of REFERENCE, so a graded answer that calls them by name is refused."""
    torch = pytest.importorskip("torch")
    import lmcourse.reference.decoding as ref07
    import lmcourse.reference.mlm as ref06

    def top_p_filter(logits, p):        # a student's answer that asks the test for the answer
        return torch.tensor([ref07.expected_top_p(row, p) for row in logits.tolist()])

    def pseudo_log_likelihood(model, ids, mask_id):
        return ref06.expected_pll(model, ids, mask_id)

    r07 = rules(*ref07.REFERENCE, modules=ref07.MODULES, packages=ref07.PACKAGES, reason="07's rule")
    with pytest.raises(CheckFailed, match="your code called expected_top_p: 07's rule"), r07():
        top_p_filter(torch.zeros(1, 3), 0.5)
    with pytest.raises(CheckFailed, match="your code called expected_pll"), rules(*ref06.REFERENCE)():
        pseudo_log_likelihood(None, torch.tensor([1]), 0)
    assert top_p_filter(torch.zeros(1, 3), 0.5).shape == (1, 3)     # outside the rules it runs


def test_another_notebooks_reference_is_a_closed_back_door():
    """05's generate answered by 07's reference, init_weights by 06's."""
    torch = pytest.importorskip("torch")
    import lmcourse.nn.mlm
    import lmcourse.reference.decoding
    import lmcourse.reference.gpt as ref05

    model = lmcourse.nn.GPT(lmcourse.nn.GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, n_embd=4))
    r = rules(*(f for f in ref05.REFERENCE if f is not lmcourse.nn.GPT), reason="05's rule")  # the model runs
    with pytest.raises(CheckFailed, match="generate"), r():
        lmcourse.reference.decoding.generate(model, torch.zeros(1, 1, dtype=torch.long), 2)
    with pytest.raises(CheckFailed, match="init_mlm_weights"), r():
        lmcourse.nn.mlm.init_mlm_weights(model)


def test_torch_names_and_modules_are_both_enforced():
    """rules(torch=..., modules=...) once entered only the torch rule (an elif): a module's code
    named by the test ran unrefused."""
    import torch

    from lmcourse.reference import ngram as answers

    r = rules(answers.count_ngrams, torch=("softmax",), modules=("lmcourse.reference.ngram",), reason="your own code")
    with pytest.raises(CheckFailed, match="pad_sentence"), r():
        answers.pad_sentence(["a"], 2)
    with pytest.raises(CheckFailed, match="softmax"), r():
        torch.softmax(torch.zeros(2), 0)
    with r():
        torch.zeros(2).exp()


def test_a_librarys_own_implementation_is_refused_wherever_it_lives():
    """04's layer_norm through transformers' pure-Python VitDetLayerNorm.forward
    (no torch normalisation runs inside it) is refused by the default rule on library code, not
    by a tamper flag; an import inside the graded call (transformers' finder on sys.meta_path
    asked about a new module) is not."""
    torch = pytest.importorskip("torch")
    vitdet = pytest.importorskip("transformers.models.vitdet.modeling_vitdet")
    import lmcourse.reference.block as ref04

    norm = vitdet.VitDetLayerNorm(4, eps=1e-5)

    def layer_norm(x, gamma, beta, eps=1e-5):       # a student's answer that hands the work to transformers
        return norm.forward(x.transpose(-1, 0)).transpose(-1, 0) * gamma + beta

    r = rules(*ref04.REFERENCE, torch=ref04.NORMS, kernels=ref04.NORMS, reason="04's rule")
    assert "transformers" in LIBRARIES
    with pytest.raises(CheckFailed, match=r"transformers' VitDetLayerNorm.forward .*04's rule"), r():
        layer_norm(torch.randn(4, 3), torch.ones(4), torch.zeros(4))
    with rules(libraries=())():     # the rule can be lifted, and the answer is right without it
        layer_norm(torch.randn(4, 3), torch.ones(4), torch.zeros(4))
    with r(), pytest.raises(ImportError):       # a module found nowhere: every finder was asked
        import lmcourse_has_no_such_module  # noqa: F401


def test_a_refused_library_call_caught_by_the_student_still_fails_on_exit():
    torch = pytest.importorskip("torch")
    vitdet = pytest.importorskip("transformers.models.vitdet.modeling_vitdet")
    norm = vitdet.VitDetLayerNorm(4)

    def sneaky():
        try:
            norm(torch.zeros(1, 4, 2, 2))
        except CheckFailed:
            pass

    with pytest.raises(CheckFailed, match="VitDetLayerNorm.forward"), rules()():
        sneaky()


def test_notebook_08s_rules_refuse_a_tokenizer_librarys_compiled_core():
    """08 red team, finding E: tiktoken's Rust CoreBPE, imported at the top of the answer cell and built
    inside the graded call from the merges, under 08's own rules (the rules' packages); the honest
    answer's builtins (dict, list, bytes methods) and the regex pre-tokenizer still run."""
    tk = pytest.importorskip("tiktoken._tiktoken")
    from lmcourse import bpe
    from lmcourse.marking.bpe import RULES as r

    def encode(text, merges):
        vocab = {i: bytes([i]) for i in range(256)}
        for i, (a, b) in enumerate(merges):
            vocab[256 + i] = vocab[a] + vocab[b]
        core = tk.CoreBPE({v: k for k, v in vocab.items()}, {}, bpe.GPT2_PATTERN)
        return list(core.encode_ordinary(text))

    with pytest.raises(CheckFailed, match="tiktoken's compiled CoreBPE.encode_ordinary: write the tokenizer"), r():
        encode("abc", [(98, 99)])
    with r():
        ids = [97, 98, 99]
        assert dict.fromkeys(zip(ids, ids[1:]), 1) == {(97, 98): 1, (98, 99): 1}
        assert [m.group() for m in bpe._PRETOKEN_RE.finditer("a bc")] == ["a", " bc"]


def test_a_library_function_is_refused_after_an_equal_copy_of_it_ran(tmp_path, monkeypatch):
    """The watch keeps one verdict per code object: a copy of a library's function compiled from its
    source (an equal code object, in another file) runs first, then the library's own function is still
    refused; and a package's compiled method is refused after plain types' methods ran."""
    source = "def scale(x):\n    return [2 * v for v in x]\n"
    (tmp_path / "fakelib_for_rules").mkdir()
    (tmp_path / "fakelib_for_rules" / "__init__.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakelib_for_rules

    ns: dict = {}
    exec(compile(source, "<a copy>", "exec"), ns)
    copy = ns["scale"]
    assert copy.__code__ == fakelib_for_rules.scale.__code__ and copy.__code__ is not fakelib_for_rules.scale.__code__
    with pytest.raises(CheckFailed, match="fakelib_for_rules' scale"), rules(libraries=("fakelib_for_rules",))():
        assert copy([1]) == [2]                 # the student's copy: their own code
        fakelib_for_rules.scale([1])            # the library's
    tk = pytest.importorskip("tiktoken._tiktoken")
    from lmcourse import bpe
    from lmcourse.marking.bpe import RULES as r

    core = tk.CoreBPE({bytes([i]): i for i in range(256)}, {}, bpe.GPT2_PATTERN)
    with pytest.raises(CheckFailed, match="tiktoken's compiled CoreBPE.encode_ordinary"), r():
        for _ in range(3):
            {}.get(1), [].append(1), b"a".join([b"b"])     # plain types, judged clean once
        core.encode_ordinary("abc")
