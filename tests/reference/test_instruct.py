"""Notebook 12's reference answers and its library (lmcourse.instruct, lmcourse.memorisation): each against a
plainer computation or a library's."""

from __future__ import annotations

import datetime as dt
import random

import pytest
import torch
import torch.nn.functional as F

from lmcourse import instruct, memorisation
from lmcourse.bpe import split_specials
from lmcourse.nn import GPT, GPTConfig
from lmcourse.reference import instruct as ref
from lmcourse.tokenizers import CharTokenizer

ALPHABET = "abcdefgh ij.\n<|>"


def small_gpt(vocab, block=16, seed=0):
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=vocab, block_size=block, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    return GPT(cfg).double().eval()


# ------------------------------------------------------------------ the chat template

def test_chat_encoding_is_08s_special_token_split():
    tok = CharTokenizer.from_text(ALPHABET)
    chat = ref.ChatTokenizer(tok)
    rng = random.Random(0)
    pieces = list(ALPHABET) + list(ref.SPECIAL_TOKENS) + ["<|", "|>", "<|e"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        want = []
        for part, special in split_specials(text, ref.SPECIAL_TOKENS):
            want += [tok.vocab_size + ref.SPECIAL_TOKENS.index(part)] if special else tok.encode(part)
        assert chat.encode(text) == want, text
        assert chat.decode(chat.encode(text)) == text


def test_the_template_and_the_markers_ids():
    chat = ref.ChatTokenizer(CharTokenizer.from_text(ALPHABET))
    assert chat.render("ab") == "<|user|>ab<|assistant|>"
    assert chat.render("ab", "c") == "<|user|>ab<|assistant|>c<|end|>"
    assert (chat.user_id, chat.assistant_id, chat.end_id, chat.vocab_size) == (17, 18, 19, 20)
    assert chat.encode(chat.render("", "")) == [17, 18, 19]


# ------------------------------------------------------------------ SFT labels

PAIRS = [([1, 2, 3], [4, 5]), ([6], [7, 8, 2, 1, 3]), ([3, 3, 4, 5, 1, 2], [9])]


def test_sft_targets_are_the_response_and_the_end_token():
    idx, targets = ref.sft_batch(PAIRS, end_id=10, pad_id=0)
    assert idx.dtype == targets.dtype == torch.long and idx.shape == targets.shape == (3, 7)
    for b, (p, r) in enumerate(PAIRS):
        seq = p + r + [10]
        kept = targets[b][targets[b] != ref.IGNORE_INDEX].tolist()
        assert kept == r + [10]                                   # the response and the end token, nothing else
        assert idx[b, :len(seq) - 1].tolist() == seq[:-1]
        positions = (targets[b] != ref.IGNORE_INDEX).nonzero().flatten().tolist()
        assert positions[0] == len(p) - 1                         # the prompt's last position predicts r[0]


def test_padding_changes_nothing_in_the_loss():
    model = small_gpt(11)
    with torch.no_grad():
        idx, targets = ref.sft_batch(PAIRS, end_id=10, pad_id=0)
        idx7, targets7 = ref.sft_batch(PAIRS, end_id=10, pad_id=7)
        batch = F.cross_entropy(model(idx)[0].flatten(0, 1), targets.flatten(), reduction="sum")
        batch7 = F.cross_entropy(model(idx7)[0].flatten(0, 1), targets7.flatten(), reduction="sum")
        alone = 0.0
        for p, r in PAIRS:
            seq = torch.tensor([p + r + [10]])
            logp = torch.log_softmax(model(seq[:, :-1])[0][0], -1)
            alone -= sum(logp[t, seq[0, t + 1]] for t in range(len(p) - 1, seq.shape[1] - 1))
    torch.testing.assert_close(batch, batch7, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(batch, alone, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------ generation, exact match

def test_greedy_response_stops_at_the_end_token_or_the_budget():
    model = small_gpt(11, block=6, seed=3)
    prompt = [1, 2, 3, 4, 5, 6, 7]
    full = ref.generate_response(model, prompt, end_id=-1, max_new_tokens=9)   # no end token: the budget
    assert len(full) == 9
    ids = list(prompt)
    with torch.no_grad():
        for want in full:                                         # the argmax of the last 6 ids, each step
            assert int(model(torch.tensor([ids[-6:]]))[0][0, -1].argmax()) == want
            ids.append(want)
    end = full[4]
    first = full.index(end)
    assert ref.generate_response(model, prompt, end, 9) == full[:first]
    assert ref.generate_response(model, prompt, -1, 0) == []


@pytest.mark.parametrize("pred, gold, same", [("1987-03-03", " 1987-03-03\n", True), ("Iago", "IAGO", True),
                                              ("to   be", "to be", True), ("1987-03-03x", "1987-03-03", False),
                                              ("ab", "a b", False)])
def test_exact_match_normalisation(pred, gold, same):
    assert ref.exact_match(pred, gold) is same


# ------------------------------------------------------------------ memorisation

def test_kgram_fraction_is_a_brute_force_search():
    rng = random.Random(1)
    text = "".join(rng.choice("ab c") for _ in range(3000))
    for k in (1, 4, 9):
        index = ref.KGramIndex(text, k)
        for _ in range(20):
            gen = "".join(rng.choice("ab cd") for _ in range(rng.randrange(30)))
            windows = [gen[i:i + k] for i in range(len(gen) - k + 1)]
            want = sum(w in text for w in windows) / len(windows) if windows else 0.0
            assert index.fraction(gen) == pytest.approx(want, abs=1e-15)


def test_kgram_index_of_the_corpus():
    from lmcourse.data import load_shakespeare

    corpus_text = load_shakespeare(quiet=True).text("train")[:400_000]
    index = ref.KGramIndex(corpus_text, 32)
    passage = corpus_text[123_456:123_756]
    assert index.fraction(passage) == 1.0
    assert index.fraction("".join(reversed(passage))) < 0.05


def test_extraction_rate_is_per_passage_greedy():
    tok = CharTokenizer.from_text("abcdefghij", ())
    model = small_gpt(tok.vocab_size, block=8, seed=4)
    rng = random.Random(2)
    passages = []
    for j in range(8):
        prompt = "".join(rng.choice("abcdefghij") for _ in range(6))
        cont = tok.decode(ref.generate_response(model, tok.encode(prompt), -1, 5))
        passages.append(prompt + (cont if j % 2 else cont[:2] + ("a" if cont[2] != "a" else "b") + cont[3:]))
    assert ref.extraction_rate(model, tok, passages, 6, 5) == 0.5
    assert ref.extraction_rate(model, tok, passages, 6, 2) == 1.0


def test_deduplicate_removes_planted_repeats_only():
    rng = random.Random(3)
    paragraphs = [f"paragraph {i} " + "x" * rng.randrange(20) for i in range(30)]
    text = "\n\n".join(paragraphs)
    planted = memorisation.plant_duplicates(text, [paragraphs[3], paragraphs[7]], copies=5, seed=0)
    out, removed = ref.deduplicate(planted, min_chars=5)
    assert removed == 10 and sorted(out.split("\n\n")) == sorted(paragraphs)
    assert ref.deduplicate(out, 5) == (out, 0)
    assert ref.deduplicate("Exit.\n\nExit.", 6) == ("Exit.\n\nExit.", 0)


# ------------------------------------------------------------------ the library

def test_grown_token_table_keeps_the_old_tokens():
    model = small_gpt(11).float()
    grown = instruct.with_chat_tokens(model, 14)
    idx = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        old, new = model(idx)[0], grown(idx)[0]
    assert new.shape[-1] == 14 and grown.lm_head.weight is grown.wte.weight
    torch.testing.assert_close(new[..., :11], old)


def test_instruction_data():
    train, test = instruct.date_instructions("train", 300), instruct.date_instructions("test", 300)
    assert {r for _, r in train}.isdisjoint({r for _, r in test})
    for q, why in instruct.impossible_date_instructions(50):
        assert q.startswith("ISO: ") and "has no day" in why
        day, month, year = int(why.split()[-3]), instruct.MONTHS.index(why.split()[0]) + 1, int(why.split()[-1])
        with pytest.raises(ValueError):
            dt.date(year, month, day)
    assert instruct.is_iso_date("1987-03-03") and not instruct.is_iso_date("1987-3-3")
    chat = ref.ChatTokenizer(CharTokenizer.from_text("".join(q + r for q, r in train)))
    fit = instruct.fitting(chat, train, 32)
    assert fit and all(len(p) + len(r) <= 32 for p, r in fit)


def test_a_long_ngram_extracts_its_training_text():
    rng = random.Random(4)
    # random letters: a context of 13 characters is almost always seen once, one of 1 character thousands of times
    text = "\n".join("".join(rng.choice("abcdefghijklmnopqrst") for _ in range(40)) for _ in range(200))
    seen = memorisation.passages(text, 20, 30, seed=0)
    assert memorisation.CharNgram(text, 14).extraction_rate(seen, 15, 15) > 0.8
    assert memorisation.CharNgram(text, 2).extraction_rate(seen, 15, 15) < 0.2


def test_answers():
    assert (ref.answer_q_mask, ref.answer_q_heldout, ref.answer_q_dedup) == ("B", "D", "C")


def test_prefix_share_counts_the_characters_right_before_the_first_mistake():
    assert instruct.prefix_share("to be or", "to be or") == 1.0
    assert instruct.prefix_share("to bx or", "to be or") == 4 / 8
    assert instruct.prefix_share("", "to be") == 0.0 and instruct.prefix_share("to be, or not", "to be") == 1.0
    assert instruct.prefix_share("", "") == 1.0 and instruct.prefix_share("x", "") == 0.0
