"""Notebook 12 (instruction tuning, and what a model remembers): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, forged_choice, override, patch

MUTANTS = [
    # --- the chat template
    Mutant("a newline between the instruction and <|assistant|>", "ChatTokenizer", patch(
        ('text = "<|user|>" + instruction + "<|assistant|>"', 'text = "<|user|>" + instruction + "\\n<|assistant|>"'),
        subclass="ChatTokenizer")),
    Mutant("<|end|> added to a prompt without a response", "ChatTokenizer", patch(
        ('if response is not None:\n    text += response + "<|end|>"', 'text += (response or "") + "<|end|>"'),
        subclass="ChatTokenizer")),
    # in full: the whole text through the character tokenizer, markers split into characters
    Mutant("the markers encoded character by character", "ChatTokenizer", override(
        "ChatTokenizer", "def encode(self, text):\n    return self.tok.encode(text)")),
    Mutant("the markers' ids in reverse order", "ChatTokenizer", patch(
        ("ids.append(self.tok.vocab_size + k)", "ids.append(self.tok.vocab_size + len(MARKERS) - 1 - k)"),
        subclass="ChatTokenizer")),
    Mutant("decode drops the markers", "ChatTokenizer", patch(
        ("out.append(MARKERS[i - self.tok.vocab_size])", "continue"), subclass="ChatTokenizer")),
    # --- SFT labels
    Mutant("the prompt not masked (every position a target)", "sft_batch", patch(
        ("for t in range(len(p) - 1, len(s) - 1):", "for t in range(len(s) - 1):"))),
    Mutant("the first response token not a target (mask one too far)", "sft_batch", patch(
        ("for t in range(len(p) - 1, len(s) - 1):", "for t in range(len(p), len(s) - 1):"))),
    Mutant("no end token appended", "sft_batch", patch(
        ("seqs = [list(p) + list(r) + [end_id] for p, r in pairs]", "seqs = [list(p) + list(r) for p, r in pairs]"))),
    Mutant("targets padded with pad_id, not the ignore index", "sft_batch", patch(
        ("targets = torch.full((len(seqs), T), IGNORE_INDEX, dtype=torch.long)",
         "targets = torch.full((len(seqs), T), pad_id, dtype=torch.long)"))),
    Mutant("targets not shifted (each position its own token)", "sft_batch", patch(
        ("targets[b, t] = s[t + 1]", "targets[b, t] = s[t]"))),
    # --- greedy responses
    Mutant("the end token returned with the response", "generate_response", patch(
        ("if nxt == end_id:\n    break\nnew.append(nxt)", "new.append(nxt)\nif nxt == end_id:\n    break"))),
    Mutant("the context not cropped to block_size", "generate_response", patch(
        ("context = torch.tensor([ids[-model.config.block_size:]], dtype=torch.long, device=device)",
         "context = torch.tensor([ids], dtype=torch.long, device=device)"))),
    Mutant("one id past the budget", "generate_response", patch(
        ("while len(new) < max_new_tokens:", "while len(new) <= max_new_tokens:"))),
    Mutant("the prompt returned with the response", "generate_response", patch(("return new", "return ids"))),
    # --- exact match
    Mutant("case not ignored", "exact_match", patch(
        ('return " ".join(text.split()).lower()', 'return " ".join(text.split())'))),
    Mutant("only the ends stripped (inner whitespace kept)", "exact_match", patch(
        ('return " ".join(text.split()).lower()', "return text.strip().lower()"))),
    Mutant("the reference found inside the prediction counts", "exact_match", patch(
        ("return normalise(prediction) == normalise(reference)",
         "return normalise(reference) in normalise(prediction)"))),
    # --- the k-gram index
    Mutant("one window too few (len - k, not len - k + 1)", "KGramIndex", patch(
        ("n = len(generated) - self.k + 1", "n = len(generated) - self.k"), subclass="KGramIndex")),
    Mutant("distinct k-grams counted, not every window", "KGramIndex", patch(
        ("found = sum(generated[i:i + self.k] in self.kgrams for i in range(n))\nreturn found / n",
         "grams = {generated[i:i + self.k] for i in range(n)}\n"
         "return sum(g in self.kgrams for g in grams) / len(grams)"),
        subclass="KGramIndex")),
    Mutant("the text's last k-gram left out of the index", "KGramIndex", patch(
        ("self.kgrams = {text[i:i + k] for i in range(len(text) - k + 1)}",
         "self.kgrams = {text[i:i + k] for i in range(len(text) - k)}"), subclass="KGramIndex")),
    # in full: no index, the text searched for each window
    Mutant("the text searched again for every window", "KGramIndex", '''
class KGramIndex:
    def __init__(self, text, k):
        self.k = k
        self.text = text

    def __contains__(self, kgram):
        return len(kgram) == self.k and kgram in self.text

    def fraction(self, generated):
        n = len(generated) - self.k + 1
        if n <= 0:
            return 0.0
        return sum(generated[i:i + self.k] in self.text for i in range(n)) / n
'''),
    # --- extraction
    Mutant("s - 1 characters compared", "extraction_rate", patch(
        ("hits += tok.decode(row[p:]) == text[p:p + s]", "hits += tok.decode(row[p:]) == text[p:p + s - 1]"))),
    Mutant("the continuation compared one character late", "extraction_rate", patch(
        ("hits += tok.decode(row[p:]) == text[p:p + s]", "hits += tok.decode(row[p:]) == text[p + 1:p + s + 1]"))),
    Mutant("the batch's context not cropped to block_size", "extraction_rate", patch(
        ("logits, _ = model(idx[:, -model.config.block_size:])  # (N, T, V)", "logits, _ = model(idx)"))),
    Mutant("the number of hits, not the share", "extraction_rate", patch(
        ("return hits / len(passages)", "return hits"))),
    # --- deduplication
    Mutant("short paragraphs deduplicated too", "deduplicate", patch(
        ("if len(paragraph) >= min_chars and paragraph in seen:", "if paragraph in seen:"),
        ("if len(paragraph) >= min_chars:\n    seen.add(paragraph)", "seen.add(paragraph)"))),
    Mutant("paragraphs joined by one newline", "deduplicate", patch(
        ('return "\\n\\n".join(kept), removed', 'return "\\n".join(kept), removed'))),
    # in full: every paragraph that occurs more than once dropped, its first occurrence included
    Mutant("every copy dropped, the first included", "deduplicate", '''
from collections import Counter


def deduplicate(text, min_chars):
    paragraphs = text.split("\\n\\n")
    counts = Counter(paragraphs)
    kept = [q for q in paragraphs if len(q) < min_chars or counts[q] == 1]
    return "\\n\\n".join(kept), len(paragraphs) - len(kept)
'''),
    Mutant("paragraphs compared after stripping their whitespace", "deduplicate", patch(
        ('for paragraph in text.split("\\n\\n"):', 'for paragraph in [q.strip() for q in text.split("\\n\\n")]:'))),
    # --- a weak student's slips (worked from the release only)
    Mutant("an empty response treated as none (if response:)", "ChatTokenizer", patch(
        ("if response is not None:", "if response:"), subclass="ChatTokenizer")),
    Mutant("vocab_size without the three markers", "ChatTokenizer", patch(
        ("self.vocab_size = tok.vocab_size + 3", "self.vocab_size = tok.vocab_size"), subclass="ChatTokenizer")),
    Mutant("decode's marker test one id late (> not >=)", "ChatTokenizer", patch(
        ("if i >= self.tok.vocab_size:", "if i > self.tok.vocab_size:"), subclass="ChatTokenizer")),
    Mutant("the prompt lists extended in place", "sft_batch", patch(
        ("seqs = [list(p) + list(r) + [end_id] for p, r in pairs]",
         "seqs = []\nfor p, r in pairs:\n    p.extend(r)\n    seqs.append(p + [end_id])\n"
         "pairs = [(p[:len(p) - len(r)], r) for p, r in pairs]"))),
    Mutant("idx padded with the ignore index, not pad_id", "sft_batch", patch(
        ("idx = torch.full((len(seqs), T), pad_id, dtype=torch.long)",
         "idx = torch.full((len(seqs), T), IGNORE_INDEX, dtype=torch.long)"))),
    Mutant("the greedy id from the first position, not the last", "generate_response", patch(
        ("nxt = int(logits[0, -1].argmax())", "nxt = int(logits[0, 0].argmax())"))),
    Mutant("generate_response without torch.no_grad()", "generate_response", patch(
        ("device = next(model.parameters()).device", "import contextlib\ndevice = next(model.parameters()).device"),
        ("with torch.no_grad():", "with contextlib.nullcontext():"))),
    Mutant("extraction_rate without torch.no_grad()", "extraction_rate", patch(
        ("device = next(model.parameters()).device", "import contextlib\ndevice = next(model.parameters()).device"),
        ("with torch.no_grad():", "with contextlib.nullcontext():"))),
    Mutant("idx in int32, not torch.long", "sft_batch", patch(
        ("idx = torch.full((len(seqs), T), pad_id, dtype=torch.long)",
         "idx = torch.full((len(seqs), T), pad_id, dtype=torch.int32)"))),
    Mutant("the prompt one character too long (p + 1)", "extraction_rate", patch(
        ("idx = torch.tensor([tok.encode(text[:p]) for text in passages], dtype=torch.long, device=device)",
         "idx = torch.tensor([tok.encode(text[:p + 1]) for text in passages], dtype=torch.long, device=device)"))),
    Mutant("only runs of spaces collapsed (tabs and newlines inside kept)", "exact_match", patch(
        ('return " ".join(text.split()).lower()', 'return " ".join(w for w in text.strip().split(" ") if w).lower()'))),
    Mutant("the share over every character, not every window", "KGramIndex", patch(
        ("return found / n", "return found / len(generated)"), subclass="KGramIndex")),
    Mutant("an int 0 for a text shorter than k", "KGramIndex", patch(
        ("if n <= 0:\n    return 0.0", "if n <= 0:\n    return 0"), subclass="KGramIndex")),
    Mutant("the whole row compared, the prompt included", "extraction_rate", patch(
        ("hits += tok.decode(row[p:]) == text[p:p + s]", "hits += tok.decode(row) == text[p:p + s]"))),
    Mutant("a paragraph of exactly min_chars kept as short (> not >=)", "deduplicate", patch(
        ("if len(paragraph) >= min_chars and paragraph in seen:",
         "if len(paragraph) > min_chars and paragraph in seen:"),
        ("if len(paragraph) >= min_chars:\n    seen.add(paragraph)",
         "if len(paragraph) > min_chars:\n    seen.add(paragraph)"))),
    Mutant("paragraphs split on runs of blank lines", "deduplicate", patch(
        ('for paragraph in text.split("\\n\\n"):', 'for paragraph in re.split("\\n\\n+", text):'),
        ("seen = set()", "import re\nseen = set()"))),
    # --- a gaming student's routes to points without the work (worked from the release only)
    # (the visible cases' answers hard-coded: only hidden cases can see it, so it is a graded attempt in
    # tests/grading/test_students_12.py, with the test helpers replaced from an answer cell)
    # in full: the course's static-cache generator, greedy through a top-1 filter, cut at the end token
    Mutant("gaming: lmcourse.nn.static_cache's generator, greedy by a filter", "generate_response", '''
from lmcourse.nn.static_cache import generate_static


def generate_response(model, prompt_ids, end_id, max_new_tokens):
    if max_new_tokens == 0:
        return []
    top1 = lambda logits: logits.masked_fill(logits < logits.max(-1, keepdim=True).values, float("-inf"))
    prompt = torch.tensor([list(prompt_ids)], device=next(model.parameters()).device)
    new = generate_static(model, prompt, max_new_tokens, filters=[top1])[0, len(prompt_ids):].tolist()
    return new[:new.index(end_id)] if end_id in new else new
'''),
    # in full: the same generator for every passage at once
    Mutant("gaming: lmcourse.nn.static_cache's generator for the extraction", "extraction_rate", '''
from lmcourse.nn.static_cache import generate_static


def extraction_rate(model, tok, passages, p, s):
    top1 = lambda logits: logits.masked_fill(logits < logits.max(-1, keepdim=True).values, float("-inf"))
    prompt = torch.tensor([tok.encode(x[:p]) for x in passages], device=next(model.parameters()).device)
    rows = generate_static(model, prompt, s, filters=[top1])[:, p:].tolist()
    return sum(tok.decode(r) == x[p:p + s] for r, x in zip(rows, passages)) / len(passages)
'''),
    # in full: notebook 07's reference sampling loop, greedy through a top-1 filter
    Mutant("gaming: notebook 07's reference generator", "generate_response", '''
def generate_response(model, prompt_ids, end_id, max_new_tokens):
    from lmcourse.reference.decoding import generate

    top1 = lambda logits: logits.masked_fill(logits < logits.max(-1, keepdim=True).values, float("-inf"))
    prompt = torch.tensor([list(prompt_ids)], device=next(model.parameters()).device)
    new = generate(model, prompt, max_new_tokens, filters=[top1])[0, len(prompt_ids):].tolist()
    return new[:new.index(end_id)] if end_id in new else new
'''),
    # in full: notebook 09's given greedy decoder, on an adapter that makes the GPT look like a decoder; graded
    # too, by this name, in tests/grading/test_students_12.py
    Mutant("gaming: lmcourse.nn.seq2seq.greedy_decode on an adapter", "generate_response", '''
from types import SimpleNamespace

from lmcourse.nn.seq2seq import greedy_decode


class AsDecoder:
    def __init__(self, model, prompt_ids, end_id):
        self.model, self.prompt = model, torch.tensor([list(prompt_ids)])
        self.config = SimpleNamespace(tgt_block_size=10 ** 6, pad_id=end_id)

    def encode(self, src):
        return None, None

    def decode(self, out, memory, mask):
        ids = torch.cat([self.prompt, out[:, 1:]], dim=1)[:, -self.model.config.block_size:]
        return self.model(ids)[0]


def generate_response(model, prompt_ids, end_id, max_new_tokens):
    if max_new_tokens == 0:
        return []
    new = greedy_decode(AsDecoder(model, prompt_ids, end_id), torch.zeros(1, 1, dtype=torch.long), 0, end_id,
                        max_new_tokens)[0].tolist()
    return new[:new.index(end_id)] if end_id in new else new
'''),
    # in full: this notebook's own answer imported when the class is called
    Mutant("gaming: the course's answer imported", "ChatTokenizer", '''
class ChatTokenizer:
    def __new__(cls, tok):
        from lmcourse.reference.instruct import ChatTokenizer as Answer

        return Answer(tok)
'''),
    # in full: transformers' tokenizer trie splits the markers out
    Mutant("gaming: transformers' Trie splits the markers", "ChatTokenizer", override("ChatTokenizer", '''
def encode(self, text):
    from transformers.tokenization_python import Trie

    trie = Trie()
    for marker in MARKERS:
        trie.add(marker)
    ids = []
    for piece in trie.split(text):
        ids += [self.tok.vocab_size + MARKERS.index(piece)] if piece in MARKERS else self.tok.encode(piece)
    return ids
''')),
    # in full: notebook 08's given special-token splitter (08's exercise) cuts the markers out
    Mutant("gaming: lmcourse.bpe.split_specials cuts the markers out", "ChatTokenizer", override("ChatTokenizer", '''
def encode(self, text):
    from lmcourse.bpe import split_specials

    ids = []
    for piece, special in split_specials(text, MARKERS):
        ids += [self.tok.vocab_size + MARKERS.index(piece)] if special else self.tok.encode(piece)
    return ids
''')),
    forged_choice("answer_q_heldout", "A"),
    # in full: a float whose every comparison and difference says "equal"
    Mutant("gaming: a share that compares equal to anything", "extraction_rate", '''
class Share(float):
    def __eq__(self, other):
        return True

    def __sub__(self, other):
        return Share(0.0)

    __rsub__ = __sub__

    def __abs__(self):
        return 0.0

    __hash__ = float.__hash__


def extraction_rate(model, tok, passages, p, s):
    return Share(0.5)
'''),
]


ALTERNATIVES = [
    # in full: a regular-expression split that keeps the markers
    Alternative("ChatTokenizer with re.split and a lookup table", "ChatTokenizer", '''
import re


class ChatTokenizer:
    MARKERS = ("<|user|>", "<|assistant|>", "<|end|>")

    def __init__(self, tok):
        self.tok = tok
        n = tok.vocab_size
        self.user_id, self.assistant_id, self.end_id = n, n + 1, n + 2
        self.vocab_size = n + len(self.MARKERS)
        self.marker_ids = {m: n + i for i, m in enumerate(self.MARKERS)}
        self.pattern = re.compile("(" + "|".join(map(re.escape, self.MARKERS)) + ")")

    def render(self, instruction, response=None):
        return "".join(["<|user|>", instruction, "<|assistant|>"] + ([] if response is None else [response, "<|end|>"]))

    def encode(self, text):
        ids = []
        for piece in self.pattern.split(text):
            if piece in self.marker_ids:
                ids.append(self.marker_ids[piece])
            elif piece:
                ids += self.tok.encode(piece)
        return ids

    def decode(self, ids):
        names = {v: k for k, v in self.marker_ids.items()}
        return "".join(names[int(i)] if int(i) in names else self.tok.decode([int(i)]) for i in ids)
'''),
    Alternative("sft_batch with a position mask", "sft_batch", '''
def sft_batch(pairs, end_id, pad_id=0):
    seqs = [torch.tensor(list(p) + list(r) + [end_id]) for p, r in pairs]
    L = max(len(s) for s in seqs)
    full = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    for b, s in enumerate(seqs):
        full[b, :len(s)] = s
    idx, nxt = full[:, :-1].clone(), full[:, 1:].clone()
    t = torch.arange(L - 1)
    n_prompt = torch.tensor([len(p) for p, _ in pairs])[:, None]
    length = torch.tensor([len(s) for s in seqs])[:, None]
    keep = (t >= n_prompt - 1) & (t < length - 1)
    idx = torch.where(t < length - 1, idx, torch.full_like(idx, pad_id))   # the end token is no input
    return idx, torch.where(keep, nxt, torch.full_like(nxt, -100))
'''),
    Alternative("sft_batch from padded lists", "sft_batch", '''
def sft_batch(pairs, end_id, pad_id=0):
    inputs, labels = [], []
    for prompt, response in pairs:
        seq = [*prompt, *response, end_id]
        inputs.append(seq[:-1])
        labels.append([-100] * (len(prompt) - 1) + seq[len(prompt):])
    T = max(map(len, inputs))
    idx = torch.tensor([x + [pad_id] * (T - len(x)) for x in inputs])
    targets = torch.tensor([y + [-100] * (T - len(y)) for y in labels])
    return idx, targets
'''),
    Alternative("generate_response growing a tensor", "generate_response", '''
def generate_response(model, prompt_ids, end_id, max_new_tokens):
    device = next(model.parameters()).device
    x = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).unsqueeze(0)
    start = x.shape[1]
    with torch.no_grad():
        for step in range(max_new_tokens):
            out = model(x[:, -model.config.block_size:])[0]
            token = out[:, -1, :].argmax(dim=-1, keepdim=True)
            if token.item() == end_id:
                break
            x = torch.cat((x, token), dim=1)
    return x[0, start:].tolist()
'''),
    Alternative("exact_match with a regular expression and casefold", "exact_match", '''
import re


def clean(s):
    return re.sub(r"\\s+", " ", s).strip().casefold()


def exact_match(prediction, reference):
    return bool(clean(prediction) == clean(reference))
'''),
    Alternative("KGramIndex of hashes, one window at a time", "KGramIndex", '''
class KGramIndex:
    def __init__(self, text, k):
        self.k = k
        self.seen = set()
        for start in range(0, len(text) - k + 1):
            self.seen.add(hash(text[start:start + k]))

    def __contains__(self, kgram):
        return len(kgram) == self.k and hash(kgram) in self.seen

    def fraction(self, generated):
        windows = [generated[i:i + self.k] for i in range(max(0, len(generated) - self.k + 1))]
        return float(sum(w in self for w in windows) / len(windows)) if windows else 0.0
'''),
    Alternative("extraction_rate one passage at a time", "extraction_rate", '''
def extraction_rate(model, tok, passages, p, s):
    device = next(model.parameters()).device
    count = 0
    for passage in passages:
        ids = tok.encode(passage[:p])
        with torch.no_grad():
            for _ in range(s):
                x = torch.tensor([ids[-model.config.block_size:]], device=device)
                ids.append(int(model(x)[0][0, -1].argmax()))
        if tok.decode(ids[p:]) == passage[p:p + s]:
            count += 1
    return count / len(passages)
'''),
    Alternative("deduplicate with a dict of first positions", "deduplicate", '''
def deduplicate(text, min_chars):
    first = {}
    out = []
    for i, para in enumerate(text.split("\\n\\n")):
        if len(para) < min_chars or first.setdefault(para, i) == i:
            out.append(para)
    return "\\n\\n".join(out), len(text.split("\\n\\n")) - len(out)
'''),
    # --- a strong student's solutions (worked from the release only)
    Alternative("ChatTokenizer scanning for the earliest marker with str.find", "ChatTokenizer", '''
class ChatTokenizer:
    def __init__(self, tok):
        self.tok = tok
        self.user_id, self.assistant_id, self.end_id = range(tok.vocab_size, tok.vocab_size + 3)
        self.vocab_size = self.end_id + 1
        self.marker_of = {"<|user|>": self.user_id, "<|assistant|>": self.assistant_id, "<|end|>": self.end_id}

    def render(self, instruction, response=None):
        prompt = f"<|user|>{instruction}<|assistant|>"
        if response is None:
            return prompt
        return f"{prompt}{response}<|end|>"

    def encode(self, text):
        ids = []
        rest = text
        while rest:
            hits = [(rest.find(m), m) for m in self.marker_of if rest.find(m) >= 0]
            if not hits:
                ids += self.tok.encode(rest)
                break
            at, marker = min(hits)
            ids += self.tok.encode(rest[:at]) if at else []
            ids.append(self.marker_of[marker])
            rest = rest[at + len(marker):]
        return ids

    def decode(self, ids):
        text_of = {v: k for k, v in self.marker_of.items()}
        pieces, run = [], []
        for i in map(int, ids):
            if i in text_of:
                pieces.append(self.tok.decode(run) if run else "")
                pieces.append(text_of[i])
                run = []
            else:
                run.append(i)
        pieces.append(self.tok.decode(run) if run else "")
        return "".join(pieces)
'''),
    Alternative("sft_batch with pad_sequence, the prompt masked after", "sft_batch", '''
from torch.nn.utils.rnn import pad_sequence


def sft_batch(pairs, end_id, pad_id=0):
    full = [torch.tensor([*p, *r, end_id], dtype=torch.long) for p, r in pairs]
    idx = pad_sequence([x[:-1] for x in full], batch_first=True, padding_value=pad_id)
    targets = pad_sequence([x[1:].clone() for x in full], batch_first=True, padding_value=-100)
    for b, (p, _) in enumerate(pairs):
        targets[b, :len(p) - 1] = -100
    return idx, targets
'''),
    Alternative("sft_batch with F.pad and torch.stack", "sft_batch", '''
import torch.nn.functional as F


def sft_batch(pairs, end_id, pad_id=0):
    seqs = [torch.as_tensor(list(p) + list(r) + [end_id]) for p, r in pairs]
    T = max(len(x) for x in seqs) - 1
    idx = torch.stack([F.pad(x[:-1], (0, T - len(x) + 1), value=pad_id) for x in seqs])
    labels = []
    for x, (p, _) in zip(seqs, pairs):
        y = x[1:].clone()
        y[:len(p) - 1] = -100
        labels.append(F.pad(y, (0, T - len(y)), value=-100))
    return idx.long(), torch.stack(labels).long()
'''),
    Alternative("generate_response under a no_grad decorator, max().indices, a window start", "generate_response", '''
@torch.no_grad()
def generate_response(model, prompt_ids, end_id, max_new_tokens):
    dev = next(iter(model.parameters())).device
    bs = model.config.block_size
    seq = torch.tensor(prompt_ids, dtype=torch.long, device=dev)
    out = []
    for _ in range(max_new_tokens):
        window = seq[max(0, len(seq) - bs):]
        logits = model(window[None])[0]
        best = logits[0, -1].max(dim=-1).indices.item()
        if best == end_id:
            return out
        out.append(best)
        seq = torch.cat([seq, seq.new_tensor([best])])
    return out
'''),
    Alternative("generate_response under torch.inference_mode, a list context", "generate_response", '''
def generate_response(model, prompt_ids, end_id, max_new_tokens):
    device = model.lm_head.weight.device
    block = model.config.block_size
    context = [int(i) for i in prompt_ids]
    answer = []
    with torch.inference_mode():
        while len(answer) != max_new_tokens:
            window = context[len(context) - block:] if len(context) > block else context
            scores = model(torch.tensor(window, device=device).view(1, -1))[0][0, -1]
            best = int(torch.argmax(scores))
            if best == end_id:
                break
            context.append(best)
            answer.append(best)
    return answer
'''),
    Alternative("exact_match comparing the lists of words", "exact_match", '''
def exact_match(prediction, reference):
    return prediction.lower().split() == reference.lower().split()
'''),
    Alternative("KGramIndex of a Counter, the share by statistics.fmean", "KGramIndex", '''
from collections import Counter
from statistics import fmean


class KGramIndex:
    def __init__(self, text, k):
        self.k = k
        self.counts = Counter(text[i:i + k] for i in range(len(text) - k + 1))

    def __contains__(self, kgram):
        return self.counts.get(kgram, 0) > 0

    def fraction(self, generated):
        windows = [generated[i:i + self.k] for i in range(len(generated) - self.k + 1)]
        if not windows:
            return 0.0
        return fmean(w in self for w in windows)
'''),
    Alternative("KGramIndex, the share a float32 tensor mean", "KGramIndex", '''
class KGramIndex:
    def __init__(self, text, k):
        self.k = k
        self.grams = frozenset(map(lambda i: text[i:i + k], range(len(text) - k + 1)))

    def __contains__(self, kgram):
        return kgram in self.grams

    def fraction(self, generated):
        hits = [generated[i:i + self.k] in self.grams for i in range(len(generated) - self.k + 1)]
        return torch.tensor(hits, dtype=torch.float32).mean().item() if hits else 0.0
'''),
    Alternative("extraction_rate comparing ids, the share a float32 mean", "extraction_rate", '''
def extraction_rate(model, tok, passages, p, s):
    dev = next(model.parameters()).device
    seq = torch.tensor([tok.encode(x[:p]) for x in passages], device=dev)
    wanted = torch.tensor([tok.encode(x[p:p + s]) for x in passages], device=dev)
    with torch.no_grad():
        for _ in range(s):
            logits = model(seq[:, -model.config.block_size:])[0]
            seq = torch.cat((seq, logits[:, -1, :].argmax(-1)[:, None]), 1)
    return (seq[:, p:] == wanted).all(dim=1).float().mean().item()
'''),
    Alternative("deduplicate counting the removed from the lengths", "deduplicate", '''
def deduplicate(text, min_chars):
    paragraphs = text.split("\\n\\n")
    seen = set()
    kept = []
    for q in paragraphs:
        if len(q) < min_chars:
            kept.append(q)
        elif q not in seen:
            seen.add(q)
            kept.append(q)
    return "\\n\\n".join(kept), len(paragraphs) - len(kept)
'''),
]
