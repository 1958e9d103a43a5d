"""Notebook 06 (masked language modelling): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, patch

MUTANTS = [
    # --- mask_tokens
    Mutant("p hard-coded to 0.15 (the p given is ignored)", "mask_tokens", patch(
        ("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
         "chosen = (torch.rand(tokens.shape, generator=generator, device=device) < 0.15) & ~is_special"))),
    Mutant("special tokens and padding can be chosen", "mask_tokens",
           patch(
        ("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
         "chosen = torch.rand(tokens.shape, generator=generator, device=device) < p"))),
    Mutant("p of all positions (padding counted), spread over the non-special ones", "mask_tokens",
           patch(
        ("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special", '''
scores = torch.rand(tokens.shape, generator=generator, device=device).masked_fill(is_special, 2.0)
n = int(round(p * tokens.numel()))
chosen = torch.zeros(tokens.numel(), dtype=torch.bool, device=device)
chosen[scores.flatten().argsort()[:n]] = True
chosen = chosen.view(tokens.shape) & ~is_special
'''))),
    Mutant("every chosen token set to [MASK]", "mask_tokens",
           patch(
        ('''
to_mask = chosen & (r < 0.8)
to_random = chosen & (r >= 0.8) & (r < 0.9)
''', '''
to_mask = chosen
to_random = chosen & False
'''))),
    Mutant("80/20/0: no chosen token left unchanged", "mask_tokens",
           patch(("to_random = chosen & (r >= 0.8) & (r < 0.9)", "to_random = chosen & (r >= 0.8)"))),
    Mutant("random replacements drawn from the whole vocabulary, specials included", "mask_tokens",
           patch(
        ("pool = ordinary.nonzero().flatten()  # (n_ordinary,)", "pool = torch.arange(vocab_size, device=device)"))),
    Mutant("random replacement may be [MASK] when it is not listed among the specials", "mask_tokens",
           patch(("ordinary[mask_id] = False", ""))),
    Mutant("the 10% unchanged left out of the labels (labels only where the input changed)", "mask_tokens",
           patch(
        ("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
         "labels = torch.where(inputs != tokens, tokens, torch.full_like(tokens, -100))"))),
    Mutant("labels kept at unchosen positions", "mask_tokens",
           patch(
        ("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
         "labels = torch.where(chosen | ~is_special, tokens, torch.full_like(tokens, -100))"))),
    Mutant("-100 at the chosen positions, the token elsewhere", "mask_tokens",
           patch(
        ("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
         "labels = torch.where(chosen, torch.full_like(tokens, -100), tokens)"))),
    Mutant("one draw of positions shared by the whole batch", "mask_tokens",
           patch(
        ("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
         "chosen = (torch.rand(tokens.shape[-1], generator=generator, device=device) < p) & ~is_special"))),
    Mutant("generator ignored (torch's global generator)", "mask_tokens",
           patch(
        ('''
chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special
r = torch.rand(tokens.shape, generator=generator, device=device)  # (B, T): what a chosen one becomes
''', '''
chosen = (torch.rand(tokens.shape, device=device) < p) & ~is_special
r = torch.rand(tokens.shape, device=device)
'''),
        ("pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)  # (B, T)",
         "pick = torch.randint(len(pool), tokens.shape, device=device)"))),
    Mutant("tokens changed in place", "mask_tokens", patch(("inputs = tokens.clone()", "inputs = tokens"))),
    # --- MaskedLM
    Mutant("the causal mask left on (BlockConfig's default)", "masked_lm",
           patch(
        ("dropout=config.dropout, bias=config.bias, causal=config.causal, prenorm=False)",
         "dropout=config.dropout, bias=config.bias, prenorm=False)"),
        subclass="MaskedLM")),
    Mutant("pre-LN blocks (BlockConfig's default)", "masked_lm",
           patch(
        ("dropout=config.dropout, bias=config.bias, causal=config.causal, prenorm=False)",
         "dropout=config.dropout, bias=config.bias, causal=config.causal)"),
        subclass="MaskedLM")),
    Mutant("loss averaged over all B * T positions", "masked_lm",
           patch(
        ("loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)", '''
loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100, reduction='none').mean()
'''),
        subclass="MaskedLM")),
    Mutant("head not tied to the embedding", "masked_lm",
           patch(("self.lm_head.weight = self.wte.weight  # tied: one tensor", ""), subclass="MaskedLM")),
    Mutant("decoder without its bias", "masked_lm",
           patch(
        ("self.lm_head = nn.Linear(config.n_embd, config.vocab_size)",
         "self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)"),
        subclass="MaskedLM")),
    Mutant("no LayerNorm on the embeddings", "masked_lm",
           patch(
        ("x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))  # (B, T, C)",
         "x = self.drop(self.wte(idx) + self.wpe(pos))"),
        subclass="MaskedLM")),
    Mutant("head without the dense layer and GELU", "masked_lm",
           patch(
        ("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))  # (B, T, V)",
         "logits = self.lm_head(self.head_ln(x))"),
        subclass="MaskedLM")),
    # --- fill_mask
    Mutant("fill_mask reads the logits one position early, as a GPT would", "fill_mask",
           patch(
        ("probs = torch.softmax(logits[t], dim=-1)  # (V,)", "probs = torch.softmax(logits[t - 1], dim=-1)"))),
    Mutant("fill_mask returns logits, not probabilities", "fill_mask",
           patch(("probs = torch.softmax(logits[t], dim=-1)  # (V,)", "probs = logits[t]"))),
    Mutant("fill_mask hands [MASK] to the word tokenizer as text", "fill_mask",
           patch(
        ('''
ids = []
for k, piece in enumerate(text.split("[MASK]")):
    if k > 0:
        ids.append(mask_id)
    ids += tokenizer.encode(piece)
''', "ids = tokenizer.encode(text)"))),
    # --- pseudo_log_likelihood
    Mutant("pseudo-log-likelihood without masking", "pseudo_log_likelihood",
           patch(("batch[rows, rows] = mask_id", ""))),
    Mutant("pseudo-log-likelihood as a mean over positions", "pseudo_log_likelihood",
           patch(("return float(logp[rows, ids].sum())", "return float(logp[rows, ids].mean())"))),
    Mutant("every position masked at once, one pass", "pseudo_log_likelihood",
           patch(("batch[rows, rows] = mask_id", "batch[:, :] = mask_id"))),
    # gaming: on the hidden test's 5-id case, return the expected PLL read from the notebook's globals (the test
    # cell used to bind it, as _want, before the graded call; now no expected value exists in the kernel)
    Mutant("returns the hidden test's expected PLL from globals()", "pseudo_log_likelihood", patch(
        ("n = ids.numel()", '''
n = ids.numel()
if n == 5 and mask_id == 6:
    return globals()["_want"]
'''))),
    # --- added in review (issue 11): more slips, and answers that game the tests
    Mutant("padding (id 0) left out of the specials, so it can be chosen", "mask_tokens",
           patch(
        ("is_special = torch.isin(tokens, special)  # (B, T)",
         "is_special = torch.isin(tokens, special[special != 0])"))),
    Mutant("random share drawn as 10% of the non-[MASK] chosen ones (80/2/18)", "mask_tokens",
           patch(
        ("to_random = chosen & (r >= 0.8) & (r < 0.9)", '''
to_random = chosen & ~to_mask & (torch.rand(tokens.shape, generator=generator, device=device) < 0.1)
'''))),
    Mutant("80/10/10 decided at every position, not only the chosen ones", "mask_tokens",
           patch(("to_mask = chosen & (r < 0.8)", "to_mask = r < 0.8"))),
    Mutant("one uniform draw reused for the choice and the 80/10/10 split, not rescaled", "mask_tokens",
           patch(
        ('''
chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special
r = torch.rand(tokens.shape, generator=generator, device=device)  # (B, T): what a chosen one becomes
''', '''
u = torch.rand(tokens.shape, generator=generator, device=device)
chosen = (u < p) & ~is_special
r = u
'''))),
    Mutant("labels as float (-100.0)", "mask_tokens",
           patch(
        ("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
         "labels = torch.where(chosen, tokens.float(), torch.tensor(-100.0))"))),
    Mutant("random replacements from the ids after the specials (assumes specials come first)", "mask_tokens",
           patch(
        ("pool = ordinary.nonzero().flatten()  # (n_ordinary,)",
         "pool = torch.arange(len(special), vocab_size, device=device)"))),
    Mutant("a position is chosen when rand > p (85%)", "mask_tokens",
           patch(
        ("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
         "chosen = (torch.rand(tokens.shape, generator=generator, device=device) > p) & ~is_special"))),
    Mutant("one random id drawn for all replacements of the batch", "mask_tokens",
           patch(
        ("pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)  # (B, T)",
         "pick = torch.randint(len(pool), (1,), generator=generator, device=device).expand(tokens.shape)"))),
    Mutant("exactly round(p * length) positions per sequence (randperm)", "mask_tokens",
           patch(
        ("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special", '''
chosen = torch.zeros_like(tokens, dtype=torch.bool)
for b in range(tokens.size(0)):
    cand = (~is_special[b]).nonzero().flatten()
    k = int(round(p * len(cand)))
    chosen[b, cand[torch.randperm(len(cand), generator=generator)[:k]]] = True
'''))),
    Mutant("specials turned into a tensor with torch.tensor(special_ids) (fails on a set)", "mask_tokens",
           patch(
        ('''
special = torch.tensor(sorted(set(int(i) for i in special_ids)), dtype=tokens.dtype, device=device)
''', "special = torch.tensor(special_ids, dtype=tokens.dtype, device=device)"))),
    Mutant("randint off by one: the last ordinary id is never drawn", "mask_tokens",
           patch(
        ("pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)  # (B, T)",
         "pick = torch.randint(len(pool) - 1, tokens.shape, generator=generator, device=device)"))),
    # in full: it rewrites most of the cell
    Mutant("the reference mask_tokens under another name", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    from lmcourse.nn.mlm import mask_tokens as _course_masking  # imported when it runs: a graded kernel refuses it

    return _course_masking(tokens, mask_id, vocab_size, special_ids, p=p, generator=generator)
'''),
    # in full: it rewrites most of the cell
    Mutant("a fresh copy of the reference module loaded with importlib", "mask_tokens", '''
import importlib.util
import sys

try:
    _origin = importlib.util.find_spec("lmcourse.reference.mlm").origin
    _spec = importlib.util.spec_from_file_location("lmcourse.reference.my_mlm", _origin)
    _copy = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _copy
    _spec.loader.exec_module(_copy)
except ImportError as refused:   # the graded kernel withholds 06's reference: the import system will not find it
    _copy, _refused = None, refused


def mask_tokens(*args, **kwargs):
    if _copy is None:
        raise _refused
    return _copy.mask_tokens(*args, **kwargs)
'''),
    # in full: it rewrites most of the cell
    Mutant("transformers' DataCollatorForLanguageModeling, seeded from the generator", "mask_tokens", '''
import tokenizers as _tk
import transformers as _tf


def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = set(int(s) for s in special_ids)
    vocab = {("[MASK]" if i == mask_id else f"<s{i}>" if i in specials else f"w{i}"): i for i in range(vocab_size)}
    first = next(iter(vocab))
    fast = _tf.PreTrainedTokenizerFast(tokenizer_object=_tk.Tokenizer(_tk.models.WordLevel(vocab, unk_token=first)),
                                       mask_token="[MASK]", pad_token=first, unk_token=first)
    seed = int(torch.randint(2**31, (1,), generator=generator))
    collator = _tf.DataCollatorForLanguageModeling(fast, mlm_probability=p, seed=seed)
    special_mask = torch.isin(tokens, torch.tensor(sorted(specials), dtype=tokens.dtype)).long()
    return collator.torch_mask_tokens(tokens.clone(), special_tokens_mask=special_mask)
'''),
    # --- MaskedLM
    # in full: the reference stands in for the solution
    Mutant("the reference MaskedLM subclassed", "masked_lm", '''
def MaskedLM(config):
    import lmcourse.reference.mlm  # the reference read when the model is built: a graded kernel refuses it

    class _Sub(lmcourse.reference.mlm.MaskedLM):
        def __init__(self, config):
            super().__init__(lmcourse.nn.MLMConfig(**{f: getattr(config, f) for f in config.__dataclass_fields__}))
            self.config = config

    return _Sub(config)
'''),
    # in full: a traced copy of the reference stands in for the model
    Mutant("the reference traced with torch.jit.trace when the cell runs", "masked_lm",
           '''class _Logits(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx):
        return self.m(idx)[0]


_TRACE = {}


def _traced():
    import lmcourse.reference.mlm  # the reference read when the model first runs: a graded kernel refuses it

    if not _TRACE:
        ref = lmcourse.reference.mlm.MaskedLM(lmcourse.nn.MLMConfig(vocab_size=13, block_size=8, n_layer=2, n_head=2,
                                                                    n_embd=16)).double().eval()
        _TRACE["ref"], _TRACE["traced"] = ref, torch.jit.trace(_Logits(ref), torch.zeros(3, 8, dtype=torch.long))
    return _TRACE["ref"], _TRACE["traced"]


class MaskedLM(MaskedLM):  # the solution's class with the methods below broken
    def forward(self, idx, targets=None):
        _REF, _TRACED = _traced()
        _REF.load_state_dict(self.state_dict())
        _REF.to(self.wte.weight.dtype)
        logits = _TRACED(idx).to(self.wte.weight.dtype)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)
        return logits, loss
'''),
    Mutant("position vectors detached (never trained)", "masked_lm",
           patch(
        ("x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))  # (B, T, C)",
         "x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos).detach()))"),
        subclass="MaskedLM")),
    Mutant("config.bias ignored: biases always on", "masked_lm", patch(
        ("self.ln_emb = LayerNorm(config.n_embd, bias=config.bias)",
         "self.ln_emb = LayerNorm(config.n_embd, bias=True)"),
        ("dropout=config.dropout, bias=config.bias, causal=config.causal, prenorm=False)",
         "dropout=config.dropout, bias=True, causal=config.causal, prenorm=False)"),
        ('''
self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
self.head_ln = LayerNorm(config.n_embd, bias=config.bias)
''', '''
self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=True)
self.head_ln = LayerNorm(config.n_embd, bias=True)
'''),
        subclass="MaskedLM")),
    Mutant("logits always float64", "masked_lm",
           patch(
        ("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))  # (B, T, V)",
         "logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x)))).double()"),
        subclass="MaskedLM")),
    Mutant("the tanh approximation of GELU", "masked_lm",
           patch(
        ("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))  # (B, T, V)",
         "logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x), approximate='tanh')))"),
        subclass="MaskedLM")),
    Mutant("ReLU in the head instead of GELU", "masked_lm",
           patch(
        ("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))  # (B, T, V)",
         "logits = self.lm_head(self.head_ln(F.relu(self.head_dense(x))))"),
        subclass="MaskedLM")),
    Mutant("a final LayerNorm after the blocks, as in a pre-LN GPT", "masked_lm",
           patch(
        ("self.head_ln = LayerNorm(config.n_embd, bias=config.bias)", '''
self.head_ln = LayerNorm(config.n_embd, bias=config.bias)
self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
'''),
        subclass="MaskedLM")),
    Mutant("targets shifted by one, as in a GPT", "masked_lm",
           patch(
        ("loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)", '''
loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, 1:].reshape(-1), ignore_index=-100)
'''),
        subclass="MaskedLM")),
    Mutant("dropout module never applied", "masked_lm",
           patch(
        ("x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))  # (B, T, C)",
         "x = self.ln_emb(self.wte(idx) + self.wpe(pos))"),
        subclass="MaskedLM")),
    Mutant("logits always float32", "masked_lm",
           patch(
        ("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))  # (B, T, V)",
         "logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x)))).float()"),
        subclass="MaskedLM")),
    # --- fill_mask
    Mutant("fill_mask: softmax over the top-k logits only (not renormalised over the vocabulary)", "fill_mask",
           patch(
        ('''
probs = torch.softmax(logits[t], dim=-1)  # (V,)
values, indices = torch.topk(probs, top_k)
''', '''
values, indices = torch.topk(logits[t], top_k)
values = torch.softmax(values, dim=-1)
'''))),
    Mutant("fill_mask: least likely first (ascending sort)", "fill_mask",
           patch(
        ("values, indices = torch.topk(probs, top_k)",
         "values, indices = torch.topk(probs, top_k, largest=False)"))),
    Mutant("fill_mask: probabilities as 0-d tensors", "fill_mask",
           patch(
        ('''
result.append([(tokenizer.itos[i], float(v)) for v, i in zip(values.tolist(), indices.tolist())])
''', "result.append([(tokenizer.itos[i], v) for v, i in zip(values, indices.tolist())])"))),
    Mutant("fill_mask: ids returned instead of tokens", "fill_mask",
           patch(
        ('''
result.append([(tokenizer.itos[i], float(v)) for v, i in zip(values.tolist(), indices.tolist())])
''', "result.append([(i, float(v)) for v, i in zip(values.tolist(), indices.tolist())])"))),
    Mutant("fill_mask: the top-k of the first blank for every blank", "fill_mask",
           patch(
        ("probs = torch.softmax(logits[t], dim=-1)  # (V,)",
         "probs = torch.softmax(logits[ids.index(mask_id)], dim=-1)"))),
    # in full: it rewrites most of the cell
    Mutant("fill_mask: the reference fill_mask called", "fill_mask", '''
def fill_mask(model, tokenizer, text, top_k=5):
    import lmcourse.reference.mlm  # imported when it runs: a graded kernel refuses it

    return lmcourse.reference.mlm.fill_mask(model, tokenizer, text, top_k=top_k)
'''),
    # --- pseudo_log_likelihood
    Mutant("PLL: squeeze() drops the batch dimension of a single id's logits", "pseudo_log_likelihood",
           patch(("logits = model(batch)[0]  # (n, n, V)", "logits = model(batch)[0].squeeze()"))),
    Mutant("PLL sums probabilities, not log-probabilities", "pseudo_log_likelihood",
           patch(("return float(logp[rows, ids].sum())", "return float(logp[rows, ids].exp().sum())"))),
    Mutant("PLL sums the raw logits of the true tokens", "pseudo_log_likelihood",
           patch(
        ("logp = torch.log_softmax(logits[rows, rows], dim=-1)  # (n, V): position i of copy i",
         "logp = logits[rows, rows]"))),
    # in full: it rewrites most of the cell
    Mutant("PLL: ids masked in place, one position after another (loop)", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    total = 0.0
    for i in range(len(ids)):
        true = int(ids[i])
        ids[i] = mask_id
        with torch.no_grad():
            logits = model(ids[None])[0]
        total += float(torch.log_softmax(logits[0, i], dim=-1)[true])
    return total
'''),
    # in full: it rewrites most of the cell
    Mutant("PLL: the masked positions accumulate (loop without resetting)", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    x = ids.clone()
    total = 0.0
    for i in range(len(ids)):
        x[i] = mask_id
        with torch.no_grad():
            logits = model(x[None])[0]
        total += float(torch.log_softmax(logits[0, i], dim=-1)[ids[i]])
    return total
'''),
    Mutant("PLL: the log-probability read one position early", "pseudo_log_likelihood",
           patch(
        ("logp = torch.log_softmax(logits[rows, rows], dim=-1)  # (n, V): position i of copy i",
         "logp = torch.log_softmax(logits[rows, (rows - 1).clamp(min=0)], dim=-1)"))),
    # --- questions
    # --- added in review (issue 22, items 7 and 11)
    Mutant("specials taken as the ids below len(special_ids) (assumes they come first)", "mask_tokens", patch(
        ("is_special = torch.isin(tokens, special)  # (B, T)", "is_special = tokens < len(special)"))),
    Mutant("labels = tokens.clone(): a label at every position, not -100 where nothing was chosen", "mask_tokens",
           patch(("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))", "labels = tokens.clone()"))),
    # --- gaming (issue 22, "Done when"): each must lose points under the rules, visibly
    # in full: the reference run on a threading.Thread, then joined
    Mutant("fill_mask: the reference run on a threading.Thread, then joined (gaming)", "fill_mask", '''
import importlib
import threading


def fill_mask(model, tokenizer, text, top_k=5):
    out = []
    # imported on the thread: the thread's start is what the rules must refuse, before any import
    worker = threading.Thread(target=lambda: out.append(
        importlib.import_module("lmcourse.reference.mlm").fill_mask(model, tokenizer, text, top_k)))
    worker.start()
    worker.join()
    return out[0]
'''),
    # in full: the reference's source read at call time and run as a copy, shifted one line
    Mutant("mask_tokens: a copy of the reference's source, shifted one line, exec'd (gaming)", "mask_tokens", '''
import inspect


def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    import lmcourse.reference.mlm  # imported when it runs: a graded kernel refuses it

    ref = lmcourse.reference.mlm
    source = "\\n" + inspect.getsource(ref.ordinary_ids) + inspect.getsource(ref.mask_tokens)
    space = {"torch": torch, "Tensor": torch.Tensor, "IGNORE_INDEX": -100}
    exec(compile(source, "<copy>", "exec"), space)
    return space["mask_tokens"](tokens, mask_id, vocab_size, special_ids, p, generator)
'''),
    # in full: the test cells' expected-value helper called by name
    Mutant("pseudo_log_likelihood: the test cells' helper expected_pll called (gaming)", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    import lmcourse.reference.mlm  # imported when it runs: a graded kernel refuses it

    return lmcourse.reference.mlm.expected_pll(model, ids, mask_id)
'''),
    Mutant("Q1 answered with a string that claims to equal every letter", "q1", patch(
        ('answer_q1 = "C"', '''
class _Every(str):
    def strip(self, *args):
        return self

    def upper(self):
        return self

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


answer_q1 = _Every("A")
'''))),
    Mutant("Q1 answered A (only the [MASK] positions)", "q1", patch(('answer_q1 = "C"', 'answer_q1 = "A"'))),
    Mutant("Q2 answered A (one pass, everything masked)", "q2", patch(('answer_q2 = "B"', 'answer_q2 = "A"'))),
]

ALTERNATIVES = [
    # --- mask_tokens
    Alternative("Bernoulli draws as transformers' collator makes them, replacements by index into a list",
                "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = set(int(i) for i in special_ids)
    is_special = torch.zeros_like(tokens, dtype=torch.bool)
    for s in specials:
        is_special |= tokens == s
    probs = torch.full(tokens.shape, float(p), device=tokens.device).masked_fill(is_special, 0.0)
    chosen = torch.bernoulli(probs, generator=generator).bool()
    replaced = torch.bernoulli(torch.full(tokens.shape, 0.8, device=tokens.device), generator=generator).bool() & chosen
    randomised = torch.bernoulli(torch.full(tokens.shape, 0.5, device=tokens.device),
                                 generator=generator).bool() & chosen & ~replaced
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in specials and i != mask_id],
                            dtype=tokens.dtype, device=tokens.device)
    random_words = ordinary[torch.randint(len(ordinary), tokens.shape, generator=generator, device=tokens.device)]
    inputs = tokens.clone()
    inputs[replaced] = mask_id
    inputs[randomised] = random_words[randomised]
    labels = tokens.clone()
    labels[~chosen] = -100
    return inputs, labels
'''),
    Alternative("a loop over the sequences of the batch", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = sorted(set(int(i) for i in special_ids) | {int(mask_id)})
    ordinary = torch.ones(vocab_size, dtype=torch.bool)
    ordinary[[s for s in specials if 0 <= s < vocab_size]] = False
    ordinary_ids = torch.arange(vocab_size)[ordinary].to(tokens.device)
    special_t = torch.tensor(sorted(set(int(i) for i in special_ids)), device=tokens.device, dtype=tokens.dtype)
    inputs = torch.empty_like(tokens)
    labels = torch.empty_like(tokens)
    for b in range(tokens.size(0)):
        row = tokens[b]
        u = torch.rand(row.shape, generator=generator, device=tokens.device)
        chosen = (u < p) & ~torch.isin(row, special_t)
        v = torch.rand(row.shape, generator=generator, device=tokens.device)
        j = torch.randint(0, ordinary_ids.numel(), row.shape, generator=generator, device=tokens.device)
        new = torch.where(v < 0.8, torch.full_like(row, mask_id), torch.where(v < 0.9, ordinary_ids[j], row))
        inputs[b] = torch.where(chosen, new, row)
        labels[b] = torch.where(chosen, row, torch.full_like(row, -100))
    return inputs, labels
'''),
    Alternative("one uniform draw split into three bands, replacements by multinomial over ordinary ids",
                "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    weights = torch.ones(vocab_size, dtype=torch.float64)
    for s in list(special_ids) + [mask_id]:
        if 0 <= int(s) < vocab_size:
            weights[int(s)] = 0.0
    normal = torch.ones_like(tokens, dtype=torch.bool)
    for s in special_ids:
        normal &= tokens != int(s)
    u = torch.rand(tokens.shape, generator=generator, dtype=torch.float64, device=tokens.device)
    chosen = normal & (u < p)
    # u / p is uniform on [0, 1) again among the chosen positions
    band = u / p
    as_mask = chosen & (band < 0.8)
    as_random = chosen & (band >= 0.8) & (band < 0.9)
    draws = torch.multinomial(weights, tokens.numel(), replacement=True, generator=generator)
    draws = draws.view(tokens.shape).to(tokens.device, tokens.dtype)
    inputs = torch.where(as_mask, torch.tensor(mask_id, dtype=tokens.dtype, device=tokens.device), tokens)
    inputs = torch.where(as_random, draws, inputs)
    labels = tokens.masked_fill(~chosen, -100)
    return inputs, labels
'''),
    # --- MaskedLM
    Alternative("nn.Sequential of blocks, nn.LayerNorm and nn.GELU modules, tie from the other side, loss over "
                "selected rows", "masked_lm", '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.drop = nn.Dropout(p=config.dropout)
        self.blocks = nn.Sequential(*[Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head,
                                                        block_size=config.block_size, dropout=config.dropout,
                                                        bias=config.bias, causal=config.causal, prenorm=False))
                                      for _ in range(config.n_layer)])
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.act = nn.GELU()
        self.head_ln = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=True)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        T = idx.size(1)
        h = self.blocks(self.drop(self.ln_emb(self.wte(idx) + self.wpe.weight[:T])))
        logits = self.lm_head(self.head_ln(self.act(self.head_dense(h))))
        if targets is None:
            return logits, None
        keep = targets != -100
        return logits, F.cross_entropy(logits[keep], targets[keep])
'''),
    Alternative("decoder as an einsum with the embedding plus the bias, loss by log_softmax and gather", "masked_lm",
                '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = LayerNorm(config.n_embd, config.bias)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList()
        for _ in range(config.n_layer):
            cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                              dropout=config.dropout, bias=config.bias)
            cfg.causal, cfg.prenorm = config.causal, False
            self.blocks.append(Block(cfg))
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, config.bias)
        self.head_ln = LayerNorm(config.n_embd, config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        positions = torch.arange(idx.shape[1], device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(positions)
        x = self.drop(self.ln_emb(x))
        for blk in self.blocks:
            x = blk(x)
        z = self.head_ln(torch.nn.functional.gelu(self.head_dense(x)))
        logits = torch.einsum("btc,vc->btv", z, self.wte.weight) + self.lm_head.bias
        if targets is None:
            return logits, None
        logp = torch.log_softmax(logits, dim=-1)
        keep = targets != -100
        safe = torch.where(keep, targets, torch.zeros_like(targets))
        nll = -logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
        return logits, (nll * keep).sum() / keep.sum()
'''),
    # --- fill_mask
    Alternative("regex split, log_softmax().exp(), argsort descending, model called on the batch of one", "fill_mask",
                '''
import re


def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    pieces = re.split(r"\\[MASK\\]", text)
    ids = tokenizer.encode(pieces[0])
    for piece in pieces[1:]:
        ids = ids + [mask_id] + tokenizer.encode(piece)
    param = next(iter(model.parameters()))
    with torch.no_grad():
        out = model(torch.as_tensor(ids, device=param.device).unsqueeze(0))
    logits = out[0].squeeze(0)
    blanks = [t for t, i in enumerate(ids) if i == mask_id]
    answers = []
    for t in blanks:
        probs = logits[t].log_softmax(-1).exp()
        order = probs.argsort(descending=True)[:top_k]
        answers.append([(tokenizer.itos[int(i)], probs[i].item()) for i in order])
    return answers
'''),
    Alternative("softmax over all blanks at once in float64, one topk", "fill_mask", '''
def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    parts = text.split("[MASK]")
    ids = []
    for i, part in enumerate(parts):
        ids.extend(tokenizer.encode(part))
        if i < len(parts) - 1:
            ids.append(mask_id)
    x = torch.tensor(ids, device=next(model.parameters()).device)[None]
    logits, _ = model(x)
    where = (x[0] == mask_id).nonzero(as_tuple=True)[0]
    probs = torch.softmax(logits[0, where].detach().double(), dim=-1)
    if len(where) == 0:
        return []
    top = probs.topk(top_k, dim=-1)
    return [[(tokenizer.itos[j], p) for p, j in zip(vals, idxs)] for vals, idxs in
            zip(top.values.tolist(), top.indices.tolist())]
'''),
    # --- pseudo_log_likelihood
    Alternative("a loop over positions, one forward pass each", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    total = 0.0
    for i in range(len(ids)):
        x = ids.clone()
        x[i] = mask_id
        with torch.no_grad():
            logits, _ = model(x.unsqueeze(0))
        total += torch.log_softmax(logits[0, i], dim=-1)[ids[i]].item()
    return total
'''),
    Alternative("masked copies with torch.where and an identity matrix, logsumexp by hand in float64",
                "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    n = len(ids)
    eye = torch.eye(n, dtype=torch.bool, device=ids.device)
    batch = torch.where(eye, torch.full((n, n), mask_id, dtype=ids.dtype, device=ids.device), ids.expand(n, n))
    with torch.no_grad():
        logits = model(batch)[0].double()
    diag = torch.einsum("iiv->iv", logits)
    picked = diag.gather(1, ids.view(n, 1)).squeeze(1)
    return (picked - torch.logsumexp(diag, dim=1)).sum().item()
'''),
    # --- added in review (issue 11): other ways a student writes each answer
    Alternative("randperm per sequence: a binomial count of positions, then a random subset of that size; "
                "80/10/10 by multinomial", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = {int(s) for s in special_ids}
    ordinary = [i for i in range(vocab_size) if i not in specials and i != mask_id]
    inputs, labels = tokens.clone(), torch.full_like(tokens, -100)
    for b in range(tokens.size(0)):
        free = torch.tensor([t for t, x in enumerate(tokens[b].tolist()) if x not in specials], dtype=torch.long)
        if len(free) == 0:
            continue
        k = int(torch.binomial(torch.tensor([float(len(free))]), torch.tensor([float(p)]), generator=generator))
        where = free[torch.randperm(len(free), generator=generator)[:k]]
        labels[b, where] = tokens[b, where]
        if k == 0:
            continue
        what = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), k, replacement=True, generator=generator)
        rnd = torch.randint(len(ordinary), (k,), generator=generator)
        for j, t in enumerate(where.tolist()):
            if int(what[j]) == 0:
                inputs[b, t] = mask_id
            elif int(what[j]) == 1:
                inputs[b, t] = ordinary[int(rnd[j])]
    return inputs, labels
'''),
    Alternative("all draws at once, then a Python loop over every token", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = set(int(s) for s in special_ids)
    ordinary = [i for i in range(vocab_size) if i not in specials and i != mask_id]
    u = torch.rand(tokens.shape, generator=generator).tolist()
    v = torch.rand(tokens.shape, generator=generator).tolist()
    w = torch.randint(len(ordinary), tokens.shape, generator=generator).tolist()
    ins, labs = [], []
    for row, ur, vr, wr in zip(tokens.tolist(), u, v, w):
        ins.append([])
        labs.append([])
        for tok, a, b, c in zip(row, ur, vr, wr):
            if tok in specials or a >= p:
                ins[-1].append(tok)
                labs[-1].append(-100)
            else:
                ins[-1].append(mask_id if b < 0.8 else ordinary[c] if b < 0.9 else tok)
                labs[-1].append(tok)
    return (torch.tensor(ins, dtype=tokens.dtype, device=tokens.device),
            torch.tensor(labs, dtype=tokens.dtype, device=tokens.device))
'''),
    Alternative("randint(10) bands for 80/10/10, masked_fill and torch.where, specials as a boolean lookup table",
                "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    table = torch.zeros(max([vocab_size, mask_id + 1] + [int(s) + 1 for s in special_ids]), dtype=torch.bool,
                        device=tokens.device)
    for s in special_ids:
        table[int(s)] = True
    special = table[tokens]
    chosen = torch.bernoulli(torch.full(tokens.shape, p, dtype=torch.float64, device=tokens.device),
                             generator=generator).bool() & ~special
    band = torch.randint(0, 10, tokens.shape, generator=generator, device=tokens.device)
    allowed = ~table[:vocab_size].clone()
    allowed[mask_id] = False
    pool = torch.arange(vocab_size, device=tokens.device)[allowed]
    random_ids = pool[torch.randint(0, pool.numel(), tokens.shape, generator=generator, device=tokens.device)]
    inputs = tokens.masked_fill(chosen & (band < 8), mask_id)
    inputs = torch.where(chosen & (band == 8), random_ids, inputs)
    labels = tokens.masked_fill(~chosen, -100)
    return inputs, labels
'''),
    Alternative("F.embedding on the weights, logits by matmul with the transposed embedding, loss on (B, V, T) "
                "logits", "masked_lm", '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        c = config
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.block_size, c.n_embd)
        self.ln_emb = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            Block(BlockConfig(n_embd=c.n_embd, n_head=c.n_head, block_size=c.block_size, dropout=c.dropout,
                              bias=c.bias, causal=c.causal, prenorm=False)) for _ in range(c.n_layer))
        self.head_dense = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.head_ln = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        T = idx.shape[-1]
        x = F.embedding(idx, self.wte.weight) + F.embedding(torch.arange(T, device=idx.device), self.wpe.weight)
        x = self.drop(self.ln_emb(x))
        for block in self.blocks:
            x = block(x)
        z = self.head_ln(nn.functional.gelu(self.head_dense(x), approximate="none"))
        logits = z @ self.lm_head.weight.T + self.lm_head.bias
        loss = None if targets is None else F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100)
        return logits, loss
'''),
    Alternative("nll_loss on log_softmax, head as an nn.Sequential-free chain with an nn.GELU module", "masked_lm", '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = LayerNorm(config.n_embd, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)
        layers = []
        for _ in range(config.n_layer):
            layers.append(Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                            dropout=config.dropout, bias=config.bias, causal=config.causal,
                                            prenorm=False)))
        self.blocks = nn.ModuleList(layers)
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.head_ln = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        b, t = idx.size()
        h = self.wte(idx) + self.wpe(torch.arange(0, t, dtype=torch.long, device=idx.device))[None, :, :]
        h = self.drop(self.ln_emb(h))
        for layer in self.blocks:
            h = layer(h)
        logits = self.lm_head(self.head_ln(self.gelu(self.head_dense(h))))
        if targets is None:
            return logits, None
        logp = F.log_softmax(logits.view(b * t, -1), dim=-1)
        return logits, F.nll_loss(logp, targets.view(b * t), ignore_index=-100)
'''),
    Alternative("torch.sort descending, ids built word by word, inference_mode, model.eval()", "fill_mask", '''
def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    pieces = text.split("[MASK]")
    ids = tokenizer.encode(pieces[0])
    for piece in pieces[1:]:
        ids.append(mask_id)
        ids.extend(tokenizer.encode(piece))
    device = next(model.parameters()).device
    model.eval()
    with torch.inference_mode():
        logits, _ = model(torch.tensor(ids, dtype=torch.long, device=device).view(1, -1))
        out = []
        for pos, i in enumerate(ids):
            if i != mask_id:
                continue
            p = F.softmax(logits[0, pos].double(), dim=0)
            vals, order = torch.sort(p, descending=True)
            out.append(list(zip([tokenizer.itos[j] for j in order[:top_k].tolist()], vals[:top_k].tolist())))
    return out
'''),
    Alternative("masked copies by fill_diagonal_, the sum by cross_entropy with reduction='sum'",
                "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    n = ids.shape[0]
    copies = ids.expand(n, n).clone()
    copies.fill_diagonal_(mask_id)
    with torch.no_grad():
        logits = model(copies)[0]
    at_blank = logits[torch.arange(n), torch.arange(n)]
    return -F.cross_entropy(at_blank, ids, reduction="sum").item()
'''),
    Alternative("a loop with masked_fill and a Categorical distribution's log_prob", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    positions = torch.arange(len(ids), device=ids.device)
    pll = 0.0
    model.eval()
    for i in range(len(ids)):
        x = ids.masked_fill(positions == i, mask_id)
        with torch.no_grad():
            logits = model(x.unsqueeze(0))[0][0, i]
        pll += float(torch.distributions.Categorical(logits=logits).log_prob(ids[i]))
    return pll
'''),
    # --- questions
    Alternative("answers in lower case with spaces", "q1", 'answer_q1 = " c "\n'),
    Alternative("answer in lower case", "q2", 'answer_q2 = "b"\n'),
]
