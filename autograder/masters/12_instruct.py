# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 12 · Instruction tuning, and what a model remembers
#
# **What you will build.** The lectures end with chat models ("chatbots have extra steps": a pretrained
# language model fine-tuned to answer) and with their harms, among them hallucination and **privacy:
# training-data extraction**. Here you turn notebook 05's GPT into a small instruction follower and then
# measure, on the course's own models, how much of their training text comes back verbatim. You will write
# a chat template with special tokens, the labels of supervised fine-tuning (SFT: the loss on the answer
# only), greedy response generation with exact-match scoring, two memorisation measures (k-gram overlap and
# an extraction test against held-out text) and exact deduplication. Then you measure the value of
# pretraining for following instructions, count confident answers to impossible requests, and compare how
# much a character n-gram model, 05's GPT and two GPTs trained with and without planted duplicates
# regurgitate.
#
# **Prerequisites.** Notebooks 05 (the GPT; its trained model is loaded here), 08 (special tokens), 09 (the
# date task) and 11 (using a pretrained model), and the lectures' last part (chat models; the harms of large
# language models).
#
# **Time.** About 90 minutes to work through. Under the autograder (profile `tiny`) the notebook runs in
# seconds. At `cpu` it loads 05's model from the course cache, or trains one with a third of 05's steps,
# then fine-tunes and trains the memorisation GPTs; the last cell prints the time taken.
# Run notebook 05 first, at the same profile: the figures this notebook quotes were measured with 05's
# model, and the one trained here with a third of the steps is weaker (at `cpu`, validation loss 2.09
# against 1.72), too weak for some of the lessons to show.
#
# **How this notebook works.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one checks
# your answer and says what looks wrong. The autograder runs further hidden tests, which check exactly what
# each exercise states. Rules for every graded cell:
#
# * your answers are your own code: the course's answers (`lmcourse.reference.instruct`) are not there when
#   the notebook is graded; in the generation exercises (3 and 6) the course's generation loops
#   (`lmcourse.nn.sampling.generate`, `lmcourse.nn.static_cache`, the decoders of `lmcourse.nn.seq2seq`) and
#   notebook 09's decoders in `lmcourse.dates` are refused, in the chat template (1) notebook 08's special-token
#   splitting `lmcourse.bpe` is, and the Python code of the `transformers` library is refused everywhere (the
#   tests watch what runs);
# * no exercise calls another one, so a mistake costs once;
# * inputs are never changed in place.

# %% locked="setup"
import time

import matplotlib.pyplot as plt
import torch

import lmcourse
import lmcourse.marking
from lmcourse import instruct, memorisation
from lmcourse.data import data_dir, encode_split, encode_text, load_shakespeare
from lmcourse.nn import GPT, GPTConfig, load_gpt, save_gpt
from lmcourse.recipes import instruct as instruct_recipe
from lmcourse.runtime import is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import train

NOTEBOOK_START = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
R = instruct_recipe.recipe(P.name)   # this profile's data, fine-tuning and memorisation runs
tests = lmcourse.marking.Exam("12_instruct", globals())

# %% [markdown]
# ## 1. The pretrained model
#
# Notebook 05 saved its trained GPT to the course cache; it comes back here with its character vocabulary.
# Without that checkpoint this cell trains one the way 05 does (this profile's sizes, a third of 05's steps
# at `cpu`) and saves it; under the autograder it always trains the tiny one and saves nothing.

# %%
corpus = load_shakespeare(quiet=True)
checkpoint = data_dir() / "checkpoints" / f"05_gpt_{P.name}.pt"
if checkpoint.exists() and not is_autograding():
    backbone, extra = load_gpt(checkpoint, rt.device)
    tok = CharTokenizer(extra["vocabulary"])
    print(f"loaded notebook 05's model from {checkpoint}")
else:
    tok = CharTokenizer.from_text(corpus.text("train"))
    G = R.gpt_recipe()
    torch.manual_seed(rt.seed)
    backbone = GPT(GPTConfig(vocab_size=tok.vocab_size, **G.model_sizes())).to(rt.device)
    hist = train(backbone, encode_split(corpus, "train", tok), encode_split(corpus, "val", tok),
                 G.train_config(steps=R.backbone_steps, warmup_steps=max(1, R.backbone_steps // 20), seed=rt.seed,
                                quiet=True))
    print(f"no checkpoint from notebook 05 at {checkpoint}: trained one here, {R.backbone_steps} steps, "
          f"validation loss {hist.final_val_loss:.3f}")
    if not is_autograding():
        save_gpt(backbone, checkpoint, vocabulary=list(tok.itos), profile=P.name, val_loss=hist.final_val_loss,
                 steps=R.backbone_steps)
backbone.eval()
print(backbone.config)

# %% [markdown]
# ## 2. A chat template
#
# A chat model reads a conversation written in a fixed **template**: markers say who speaks and where an
# answer ends. Ours has three, each **one token** of its own (as 08's special tokens are), never split into
# characters:
#
# ```
# <|user|>ISO: 3 Mar 1987<|assistant|>1987-03-03<|end|>
# ```
#
# The prompt is everything up to and including `<|assistant|>`; the model writes the response and then
# `<|end|>`, which is how it says it is done. The characters' ids stay what the GPT already knows; the three
# markers get new ids after them, so the model's token table grows by three rows (section 5 does that).
#
# ### Exercise 1 — `ChatTokenizer(tok)`
# `tok` is a character tokenizer (`tok.vocab_size`, `tok.encode(text)` a list of ids, `tok.decode(ids)` a
# string). Set `self.tok = tok`; `self.user_id`, `self.assistant_id`, `self.end_id` the ids of `<|user|>`,
# `<|assistant|>`, `<|end|>`: `tok.vocab_size`, `tok.vocab_size + 1`, `tok.vocab_size + 2` (ints); and
# `self.vocab_size`, the base tokenizer's size and the three markers.
#
# * `render(instruction, response=None)` returns `"<|user|>" + instruction + "<|assistant|>"`, followed by
#   `response + "<|end|>"` when a response is given (nothing else added; an empty response `""` is given: it
#   ends with `<|end|>`, and only `None` means no response);
# * `encode(text)` returns a list of ids: each marker in the text as its one id, every other character
#   through `tok` (a `<`, `|` or `>` that is not part of a whole marker is an ordinary character);
# * `decode(ids)` is the inverse: a marker's id becomes the marker's text, every other id goes through
#   `tok.decode`; `decode(encode(text)) == text` for any text whose characters `tok` knows.

# %% solution="ChatTokenizer"
MARKERS = ("<|user|>", "<|assistant|>", "<|end|>")


class ChatTokenizer:
    """A character tokenizer with the chat template's markers as three tokens of their own."""

    def __init__(self, tok):
        ### BEGIN SOLUTION
        self.tok = tok
        self.user_id = tok.vocab_size
        self.assistant_id = tok.vocab_size + 1
        self.end_id = tok.vocab_size + 2
        self.vocab_size = tok.vocab_size + 3
        ### END SOLUTION

    def render(self, instruction, response=None):
        ### BEGIN SOLUTION
        text = "<|user|>" + instruction + "<|assistant|>"
        if response is not None:
            text += response + "<|end|>"
        return text
        ### END SOLUTION

    def encode(self, text):
        ### BEGIN SOLUTION
        ids, i = [], 0
        while i < len(text):
            for k, marker in enumerate(MARKERS):
                if text.startswith(marker, i):
                    ids.append(self.tok.vocab_size + k)
                    i += len(marker)
                    break
            else:
                ids.extend(self.tok.encode(text[i]))
                i += 1
        return ids
        ### END SOLUTION

    def decode(self, ids):
        ### BEGIN SOLUTION
        out = []
        for i in ids:
            i = int(i)
            if i >= self.tok.vocab_size:
                out.append(MARKERS[i - self.tok.vocab_size])
            else:
                out.append(self.tok.decode([i]))
        return "".join(out)
        ### END SOLUTION


# %% tests="ChatTokenizer_tests" points=3
# The markers' ids after tok's, render's exact text, a marker as one id, and decode(encode(text)) == text.
tests.check("ChatTokenizer")
### BEGIN HIDDEN TESTS
tests.grade("ChatTokenizer")
### END HIDDEN TESTS

# %% [markdown]
# The template on one example, and its tokens:

# %%
chat = ChatTokenizer(tok)
example = chat.render("ISO: 3 Mar 1987", "1987-03-03")
print(example)
print(chat.encode(example))
print("round trip:", chat.decode(chat.encode(example)) == example)

# %% [markdown]
# ## 3. SFT labels: the loss on the answer only
#
# Supervised fine-tuning trains on (instruction, response) pairs with the pretraining loss, next-token
# cross-entropy, but only the **response** is scored: the prompt is given, the model need not learn to write
# it. A sequence $w = p\,r\,\langle\text{end}\rangle$ of $n$ prompt tokens is cut as in pretraining, inputs
# $w_0 \dots w_{L-2}$ and targets $w_1 \dots w_{L-1}$ (position $t$ predicts token $t + 1$). The target at
# position $t$ is kept when token $t + 1$ belongs to the response or is the end token, that is for
# $t \ge n - 1$ (the prompt's **last** position predicts the response's first token); every other target
# is the **ignore index** $-100$, which `F.cross_entropy` skips. The end token is a target like any other:
# that is how the model learns to stop.
#
# Sequences of different lengths go in one batch right-padded: inputs with `pad_id`, targets with $-100$.
# The model is causal, so no real position sees the pads after it, and no pad is a target: **padding
# changes nothing**.
#
# ### Exercise 2 — `sft_batch(pairs, end_id, pad_id=0)`
# `pairs` is a list of `(prompt_ids, response_ids)`, lists of ids (every prompt has at least one). Each
# sequence is `prompt_ids + response_ids + [end_id]`. Return `(idx, targets)`, two `torch.long` tensors of
# shape `(B, T)` with `T` the length of the longest sequence minus one: `idx[b]` the sequence without its
# last token, then `pad_id`; `targets[b, t]` the sequence's token `t + 1` for
# `len(prompt) - 1 <= t < len(sequence) - 1`, and `-100` everywhere else. Leave the lists unchanged.

# %% solution="sft_batch"
IGNORE_INDEX = -100


def sft_batch(pairs, end_id, pad_id=0):
    """(idx, targets), (B, T) long: the loss on the response and the end token only, right-padded."""
    ### BEGIN SOLUTION
    seqs = [list(p) + list(r) + [end_id] for p, r in pairs]
    T = max(len(s) for s in seqs) - 1
    idx = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    targets = torch.full((len(seqs), T), IGNORE_INDEX, dtype=torch.long)
    for b, (s, (p, _)) in enumerate(zip(seqs, pairs)):
        idx[b, :len(s) - 1] = torch.tensor(s[:-1])
        for t in range(len(p) - 1, len(s) - 1):
            targets[b, t] = s[t + 1]
    return idx, targets
    ### END SOLUTION


# %% tests="sft_batch_tests" points=3
# Inputs shifted from targets; targets only from the prompt's last position on, end token included; pads -100.
tests.check("sft_batch")
### BEGIN HIDDEN TESTS
tests.grade("sft_batch")
### END HIDDEN TESTS

# %% [markdown]
# **Question.** Why is the loss masked on the prompt's tokens?
#
# * **A.** The prompt's tokens are special tokens, which cross-entropy cannot score.
# * **B.** The prompt is given at inference, never written by the model: scoring it would spend the
#   fine-tuning on reproducing instructions (and their distribution) instead of on the answers, and the
#   loss would no longer measure how well the model answers.
# * **C.** Masking the prompt makes the batch shorter, which is the only reason.
# * **D.** Without the mask the model could not see the prompt while it answers.
#
# Set `answer_q_mask` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_mask"
### BEGIN SOLUTION
answer_q_mask = "B"
### END SOLUTION

# %% tests="q_mask_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_mask")
### BEGIN HIDDEN TESTS
tests.grade("q_mask")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Responses, and exact match
#
# To answer, the model continues the prompt greedily: at each step the id with the largest logit at the last
# position (the first one on a tie, as `argmax` gives), until it writes `<|end|>` or the budget runs out.
#
# ### Exercise 3 — `generate_response(model, prompt_ids, end_id, max_new_tokens)`
# `model(idx)` returns `(logits, loss)` as 05's GPT does, for `idx` of shape `(1, T)` with
# `T <= model.config.block_size`: feed it the last `block_size` ids, on the model's device. Return the new
# ids as a list of ints: stop when the next id is `end_id` (not returned) or after `max_new_tokens` ids
# (`max_new_tokens=0`: an empty list). Do not change `prompt_ids`. Run the model under `torch.no_grad()`.

# %% solution="generate_response"
def generate_response(model, prompt_ids, end_id, max_new_tokens):
    """Greedy ids after the prompt, until end_id (left out) or max_new_tokens of them."""
    ### BEGIN SOLUTION
    device = next(model.parameters()).device
    ids = list(prompt_ids)
    new = []
    with torch.no_grad():
        while len(new) < max_new_tokens:
            context = torch.tensor([ids[-model.config.block_size:]], dtype=torch.long, device=device)
            logits, _ = model(context)  # (1, T, V)
            nxt = int(logits[0, -1].argmax())
            if nxt == end_id:
                break
            new.append(nxt)
            ids.append(nxt)
    return new
    ### END SOLUTION


# %% tests="generate_response_tests" points=3
# Greedy on the last block_size ids; stop at end_id (left out) or after max_new_tokens; only the new ids.
tests.check("generate_response")
### BEGIN HIDDEN TESTS
tests.grade("generate_response")
### END HIDDEN TESTS

# %% [markdown]
# A response is right when it is the reference answer, up to trivial differences. The normalisation is part
# of the metric and must be stated: here, whitespace at both ends is dropped, every run of whitespace inside
# becomes one space, and case is ignored. Then the whole strings must be equal: `"1987-03-03 and more"` is
# not `"1987-03-03"`.
#
# ### Exercise 4 — `exact_match(prediction, reference)`
# Return `True` when the two strings are equal after that normalisation of both, else `False` (a `bool`).

# %% solution="exact_match"
def exact_match(prediction, reference):
    """Equal after stripping, collapsing inner whitespace and lower-casing both."""
    ### BEGIN SOLUTION
    def normalise(text):
        return " ".join(text.split()).lower()
    return normalise(prediction) == normalise(reference)
    ### END SOLUTION


# %% tests="exact_match_tests" points=1
# Strip the ends, one space for each run of whitespace, lower case; then the whole strings are equal.
tests.check("exact_match")
### BEGIN HIDDEN TESTS
tests.grade("exact_match")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Instruction tuning, measured
#
# The instructions are made from the course's own material, offline (`lmcourse.instruct`):
#
# * **ISO dates** from notebook 09's task: `"ISO: Mar 3 '87"` → `"1987-03-03"`; the held-out instructions
#   use dates that no fine-tuning instruction has, in any spelling;
# * **continuing a line** of a training play: `"Continue: "` and a line's first characters → its next
#   characters; the held-out lines are not in the fine-tuning data, but 05's GPT read them in pretraining.
#
# Three models answer the held-out instructions: the **base** model (05's GPT with the three new rows in its
# token table, not fine-tuned), the **SFT** model (the same, fine-tuned) and the same network fine-tuned
# **from random initialisation** for the same steps: what pretraining is worth, measured again. Pairs that do
# not fit the model's context are left out.

# %%
date_train, date_test = instruct.date_instructions("train", R.n_dates), instruct.date_instructions("test", R.n_test)
lines = instruct.continue_instructions(corpus.documents, corpus.splits["train"], R.n_lines, R.n_test,
                                       R.prompt_chars, R.answer_chars)
block = backbone.config.block_size
sft_pairs = instruct.fitting(chat, date_train + lines["train"], block)
held_out = {"ISO dates": [p for p in date_test if len(instruct.fitting(chat, [p], block)) == 1],
            "continue a line": [p for p in lines["test"] if len(instruct.fitting(chat, [p], block)) == 1]}
print(f"{len(sft_pairs)} fine-tuning pairs; held out: " + ", ".join(f"{k} {len(v)}" for k, v in held_out.items()))

models = {"base": instruct.with_chat_tokens(backbone, chat.vocab_size)}
for name in ("SFT", "SFT from random init"):
    torch.manual_seed(rt.seed)
    net = instruct.with_chat_tokens(backbone, chat.vocab_size)
    if name != "SFT":
        net = GPT(net.config).to(rt.device)
    _t = time.perf_counter()
    instruct.fit_sft(net, sft_pairs, sft_batch, chat.end_id, R.sft_config(seed=rt.seed), seed=rt.seed)
    models[name] = net.eval()
    print(f"{name}: {R.sft_steps} steps in {time.perf_counter() - _t:.0f} s")

scores, prefixes = {}, {}
for name, net in models.items():
    for kind, pairs in held_out.items():
        answers = instruct.respond(generate_response, net, chat, [q for q, _ in pairs], R.max_new_tokens)
        scores[name, kind] = sum(exact_match(a, r) for a, (_, r) in zip(answers, pairs)) / max(1, len(pairs))
        # softer: the share of the reference's characters right from the start, up to the first mistake
        prefixes[name, kind] = sum(instruct.prefix_share(a, r) for a, (_, r) in zip(answers, pairs)) / max(
            1, len(pairs))
    print(f"{name:22} " + "  ".join(f"{kind}: {scores[name, kind]:.1%} exact, {prefixes[name, kind]:.1%} of the "
                                    "characters right before a mistake" for kind in held_out))

# %% [markdown]
# Measured at the `cpu` profile (05's GPT after its own `cpu` run, one seed, 200 held-out instructions of each
# kind): the base model 0 % on both; SFT 69.5 % of the held-out dates, the same network fine-tuned from random
# initialisation 12 %. Pretraining is worth most of the score even on a format no play was written in: the
# pretrained network already reads digits and month names and has only the mapping to learn. Continuing a
# held-out line scored 0 % for all three: twelve characters exactly right is too strict for a model of this
# size, though the SFT model's continuations below read as English. The softer measure, the share of the
# reference's characters right before the first mistake, says the same more finely: on dates SFT 86.1 %,
# from random initialisation 54.3 %, base 0 %; on lines SFT 5.5 %, from random initialisation 4.3 %, base
# 2.0 %. A line's first character or two come back, rarely more: pretraining on the plays helps continue
# them only a little at this size.
#
# A few of the SFT model's answers next to the references:

# %%
for pairs in held_out.values():
    answers = instruct.respond(generate_response, models["SFT"], chat, [q for q, _ in pairs[:4]], R.max_new_tokens)
    for (q, r), a in zip(pairs[:4], answers):
        print(f"{q!r:42} -> {a!r:18} (reference {r!r})")

# %% [markdown]
# ### Hallucination, counted
#
# The SFT data holds only dates that exist, so the format invites a date whatever is asked. Ask for dates
# that do not exist (30 February, 31 April, 29 February of a common year) and count the **confident wrong
# answers**: responses that are a well-formed ISO date. Every one of them is wrong; the right answer would
# be to say the date does not exist, which the model was never shown.

# %%
impossible = instruct.impossible_date_instructions(R.n_impossible)
answers = instruct.respond(generate_response, models["SFT"], chat, [q for q, _ in impossible], R.max_new_tokens)
confident = sum(instruct.is_iso_date(a) for a in answers)
possible = instruct.respond(generate_response, models["SFT"], chat, [q for q, _ in held_out["ISO dates"]],
                            R.max_new_tokens)
print(f"impossible dates answered with an ISO date: {confident} of {len(impossible)}; "
      f"real held-out dates answered with an ISO date: {sum(map(instruct.is_iso_date, possible))} of {len(possible)}")
for (q, why), a in list(zip(impossible, answers))[:4]:
    print(f"{q!r:30} -> {a!r}   ({why})")

# %% [markdown]
# ## 6. What a model remembers
#
# A language model trained to predict its training text can write parts of it back **verbatim**: Carlini et
# al. (2021) extracted names, addresses and code from GPT-2 by sampling and checking against the training
# data. Two measures:
#
# * **k-gram overlap**: the share of a generated text's k-grams (its $L - k + 1$ windows of $k$ characters)
#   that occur verbatim in the training text. Looking each one up by scanning millions of characters is far
#   too slow: index the training text's k-grams **once** (a set of them, or of their hashes) and look up.
# * **extraction** (Carlini et al. 2023): take a passage, give the model its first $p$ characters, continue
#   greedily for $s$ characters, and count the passage as extracted when those are exactly the next $s$
#   characters of the passage. The rate on **training** passages means little alone: a model also continues
#   text it never saw when the text is predictable. The baseline is the same rate on **held-out** passages;
#   memorisation is the gap.
#
# ### Exercise 5 — `KGramIndex(text, k)`
# Set `self.k = k` and build the index of `text`'s k-grams in `__init__`. `kgram in index`
# (`__contains__`) is `True` exactly when the string is one of `text`'s k-grams. `fraction(generated)`
# returns the share (a `float`) of `generated`'s k-grams, every window with repeats counted, that are in
# the index; `0.0` when `generated` is shorter than `k`. After `__init__` the index must not search the text
# again (a test seals the text once the index is built). It indexes a few hundred thousand characters below,
# so build it in one pass.

# %% solution="KGramIndex"
class KGramIndex:
    """Every k-gram of a text, indexed once; membership and the share of a text's k-grams found."""

    def __init__(self, text, k):
        ### BEGIN SOLUTION
        self.k = k
        self.kgrams = {text[i:i + k] for i in range(len(text) - k + 1)}
        ### END SOLUTION

    def __contains__(self, kgram):
        ### BEGIN SOLUTION
        return kgram in self.kgrams
        ### END SOLUTION

    def fraction(self, generated):
        ### BEGIN SOLUTION
        n = len(generated) - self.k + 1
        if n <= 0:
            return 0.0
        found = sum(generated[i:i + self.k] in self.kgrams for i in range(n))
        return found / n
        ### END SOLUTION


# %% tests="KGramIndex_tests" points=3
# k-grams found verbatim, every window counted, 0.0 with none; the index built once in __init__.
tests.check("KGramIndex")
### BEGIN HIDDEN TESTS
tests.grade("KGramIndex")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 6 — `extraction_rate(model, tok, passages, p, s)`
# `passages` is a list of strings of at least `p + s` characters, `tok` a character tokenizer (one id per
# character). Encode every passage's first `p` characters (each prompt has `p` ids, so they make one batch),
# continue them greedily for `s` steps together (the largest logit at the last position, the model seeing the
# last `block_size` ids, on its device, under `torch.no_grad()`), decode each row's `s` new ids and compare
# with `passage[p:p + s]`. Return the share of passages whose continuation matches exactly, a `float`.

# %% solution="extraction_rate"
def extraction_rate(model, tok, passages, p, s):
    """The share of passages whose next s characters come back, greedily, after their first p."""
    ### BEGIN SOLUTION
    device = next(model.parameters()).device
    idx = torch.tensor([tok.encode(text[:p]) for text in passages], dtype=torch.long, device=device)  # (N, p)
    with torch.no_grad():
        for _ in range(s):
            logits, _ = model(idx[:, -model.config.block_size:])  # (N, T, V)
            idx = torch.cat([idx, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    hits = 0
    for row, text in zip(idx.tolist(), passages):
        hits += tok.decode(row[p:]) == text[p:p + s]
    return hits / len(passages)
    ### END SOLUTION


# %% tests="extraction_rate_tests" points=3
# The first p characters continued greedily for s steps; a hit when they equal passage[p:p + s]; a float share.
tests.check("extraction_rate")
### BEGIN HIDDEN TESTS
tests.grade("extraction_rate")
### END HIDDEN TESTS

# %% [markdown]
# **Question.** Why is the extraction rate on training passages compared with the same rate on held-out
# passages?
#
# * **A.** Held-out passages are shorter, so the comparison corrects for length.
# * **B.** Because the model was trained on the held-out passages too.
# * **C.** The held-out rate is always zero, so it checks that the code works.
# * **D.** A model also continues text it never saw when that text is predictable (stage directions,
#   common phrases); the held-out rate measures that, and only the excess on training passages is
#   memorisation.
#
# Set `answer_q_heldout` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_heldout"
### BEGIN SOLUTION
answer_q_heldout = "D"
### END SOLUTION

# %% tests="q_heldout_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_heldout")
### BEGIN HIDDEN TESTS
tests.grade("q_heldout")
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Duplicates
#
# Web text repeats: boilerplate, quotations, mirrored pages. Memorisation grows with how often a sequence was
# seen (Carlini et al. 2023), and deduplicating the training data reduces it (Kandpal et al. 2022; Lee et
# al. 2022). Exact deduplication at the level of spans: here a span is a **paragraph**, the pieces of
# `text.split("\n\n")` as they are (not stripped: after three newlines the next paragraph starts with one).
#
# ### Exercise 7 — `deduplicate(text, min_chars)`
# Go through the paragraphs in order; keep each the first time it occurs and drop every later paragraph
# equal to an earlier one (exactly, as strings), except that a paragraph shorter than `min_chars`
# characters is always kept (short lines such as `Exit.` repeat by nature). Return a tuple
# `(deduplicated, removed)`: the kept paragraphs joined with `"\n\n"`, and the number dropped (an `int`).

# %% solution="deduplicate"
def deduplicate(text, min_chars):
    """Exact repeats of paragraphs of at least min_chars characters dropped; (text, number dropped)."""
    ### BEGIN SOLUTION
    seen = set()
    kept = []
    removed = 0
    for paragraph in text.split("\n\n"):
        if len(paragraph) >= min_chars and paragraph in seen:
            removed += 1
            continue
        if len(paragraph) >= min_chars:
            seen.add(paragraph)
        kept.append(paragraph)
    return "\n\n".join(kept), removed
    ### END SOLUTION


# %% tests="deduplicate_tests" points=2
# Paragraphs are text.split("\n\n"); later exact copies of one of min_chars or more dropped; (text, count).
tests.check("deduplicate")
### BEGIN HIDDEN TESTS
tests.grade("deduplicate")
### END HIDDEN TESTS

# %% [markdown]
# **Question.** You deduplicate a training set exactly, by paragraph. What should that change, and what
# not?
#
# * **A.** It removes every memorised passage, so the model can no longer write any training text back.
# * **B.** Nothing: a model sees each sequence once anyway.
# * **C.** Repeated paragraphs are seen once instead of many times, so they are memorised less (their
#   extraction rate falls towards that of text seen once); text that occurs once is untouched, so neither its
#   memorisation nor what the model learns from it should change much, and near-duplicates (one character
#   apart) stay.
# * **D.** It makes the held-out extraction rate rise to the training rate.
#
# Set `answer_q_dedup` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_dedup"
### BEGIN SOLUTION
answer_q_dedup = "C"
### END SOLUTION

# %% tests="q_dedup_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_dedup")
### BEGIN HIDDEN TESTS
tests.grade("q_dedup")
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Memorisation across the course's models
#
# The training text is the first `R.mem_chars` characters of the training plays. Into it we **plant**
# duplicates: `R.n_planted` passages of that text, each inserted `R.copies` more times as a paragraph of its
# own. Two GPTs of this profile's size train for the same steps, one on the text with the planted copies and
# one on the same text deduplicated with your `deduplicate`. The extraction test (your `extraction_rate`,
# `p = R.prefix`, `s = R.suffix`) runs on three kinds of passages: the **planted** ones, ordinary
# **training** passages (seen once) and **held-out** passages of the validation plays. Notebook 01's
# n-gram counting, done on characters (`memorisation.CharNgram`: the most frequent next character after
# the last `n - 1`, backing off to shorter contexts), and 05's GPT (trained on all the training plays, where
# the planted passages occur once) take the same test.

# %%
mem_text = corpus.text("train")[:R.mem_chars]
chars = R.prefix + R.suffix
planted = memorisation.passages(mem_text, R.n_planted, chars, seed=1)
kinds = {"planted": planted,
         "training": memorisation.passages(mem_text, R.n_passages, chars, seed=2, avoid=planted),
         "held-out": memorisation.passages(corpus.text("val"), R.n_passages, chars, seed=3)}
with_copies = memorisation.plant_duplicates(mem_text, planted, R.copies, seed=rt.seed)
deduplicated, n_removed = deduplicate(with_copies, min_chars=chars)
print(f"{len(mem_text):,} characters; with {R.n_planted} x {R.copies} planted copies {len(with_copies):,}; "
      f"deduplicated {len(deduplicated):,} ({n_removed} paragraphs removed)")

mem_models = {}
for name, text in (("GPT, planted duplicates", with_copies), ("GPT, deduplicated", deduplicated)):
    torch.manual_seed(rt.seed)
    net = GPT(GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())).to(rt.device)
    _t = time.perf_counter()
    h = train(net, encode_text(text, tok), encode_text(corpus.text("val")[:R.mem_chars // 4], tok),
              R.train_config(seed=rt.seed, quiet=True))
    mem_models[name] = net.eval()
    print(f"{name}: {R.steps} steps in {time.perf_counter() - _t:.0f} s, validation loss {h.final_val_loss:.3f}")

rates = {}
for n in R.ngram_orders:
    ngram = memorisation.CharNgram(with_copies, n)
    rates[f"{n}-gram, planted"] = {k: ngram.extraction_rate(v, R.prefix, R.suffix) for k, v in kinds.items()}
for name, net in [("05's GPT", backbone), *mem_models.items()]:
    rates[name] = {k: extraction_rate(net, tok, v, R.prefix, R.suffix) for k, v in kinds.items()}
print(f"{'':26}" + "".join(f"{k:>10}" for k in kinds))
for name, r in rates.items():
    print(f"{name:26}" + "".join(f"{r[k]:10.1%}" for k in kinds))
memorisation.plot_rates(rates, f"extraction, p = {R.prefix}, s = {R.suffix} characters (profile {P.name})")
plt.show()

# %% [markdown]
# Measured at the `cpu` profile (40 passages planted 60 more times each into 150,000 characters, 600 steps):
# the GPT trained with the planted copies continues 90.0 % of the planted passages exactly, 1.0 % of the
# ordinary training passages and none held out; trained on the deduplicated text, which keeps one copy of each
# repeated paragraph, the same network continues 2.5 % of the planted passages (one of 40) and none of the
# others. The 12-character n-gram continues 97.5 % of the planted and 58.5 % of the ordinary training
# passages, the 8-character one 67.5 % and 2.5 %, neither any held out; 05's GPT, which read each passage once
# among 4.3 million characters, none. Duplication, not training as such, is what makes a small model write
# its text back.
#
# And the k-gram overlap of what the two GPTs write when they sample freely (temperature 1, from a newline),
# against the text each was trained on, with a held-out passage of the same length as the baseline (its
# k-grams found in the training text by chance or by common phrases):

# %%
from lmcourse.nn.sampling import generate  # noqa: E402

index = KGramIndex(with_copies, R.kgram)
held_sample = corpus.text("val")[R.mem_chars // 4:R.mem_chars // 4 + R.sample_chars]
print(f"held-out text: {index.fraction(held_sample):.1%} of its {R.kgram}-grams are in the training text")
for name, net in mem_models.items():
    g = torch.Generator(device=rt.device).manual_seed(rt.seed)
    start = torch.tensor([tok.encode("\n")], device=rt.device)
    sample = tok.decode(generate(net, start, R.sample_chars, generator=g)[0, 1:].tolist())
    print(f"{name}: {index.fraction(sample):.1%} of its sample's {R.kgram}-grams are in the training text")

# %% [markdown] answer="q_findings" points=3
# **Question (free text).** From your numbers (quote them, with your profile): how much did fine-tuning the
# pretrained model beat the base model and the model fine-tuned from random initialisation on each kind of
# held-out instruction, and why does continuing a line separate them most? How many impossible dates got a
# confident ISO answer, and what would the fine-tuning data need to change that? Which models extract more
# training than held-out text, and what did deduplication do to the planted passages' rate?
#
# ### BEGIN SOLUTION
# A good answer reads its own tables. Fine-tuning teaches the format (an ISO date, then <|end|>): the base
# model, which never saw the markers, does not stop or answer in form, so its exact match stays near zero.
# The pretrained SFT model is far ahead of the random-init one on dates (at `cpu`: 69.5 % against 12 %):
# pretraining gave it characters, digits and month names, so only the mapping is left to learn. Continuing
# a held-out line needs the line itself, which only pretraining could give; at `cpu` exact match on twelve
# characters is 0 % for every model (too strict for this size), and a good answer says that its numbers
# cannot separate them there, though the pretrained model's continuations read as English.
# Every impossible date answered with an ISO date is a confident wrong answer; fine-tuning on dates that
# exist only teaches that a date always comes; examples of impossible requests answered with a refusal
# would be needed (and checked on held-out impossible requests). The high-order character n-gram model
# extracts almost every training passage and few held-out ones (a long context seen once has one
# continuation); the GPTs extract more planted than ordinary training passages when the passages were
# repeated, and deduplication brings the planted rate down towards the ordinary training rate, while the
# held-out baseline stays where it was. It says which differences are within noise (how many passages, one
# seed), and that the tiny profile's numbers mean nothing.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You wrote a chat template with special tokens, the labels that put SFT's loss on the answer, greedy
# responses and exact match, and measured instruction tuning against pretraining; then you measured what
# models remember, against held-out text, and what duplicates do to it. These are the course's last
# lectures: a chat model is a pretrained language model plus these extra steps, and what it remembers of its
# training data is one of its harms.

# %%
print(f"the whole notebook: {time.perf_counter() - NOTEBOOK_START:.0f} s at profile {P.name}")
