"""Typical student bugs for notebook 06 (masked language modelling). Each must lose points."""

from lmcourse.authoring.mutants import Mutant, override_changed

_MASK_TOKENS = '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    device = tokens.device
    special = torch.tensor(sorted(set(int(i) for i in special_ids)), dtype=tokens.dtype, device=device)
    is_special = torch.isin(tokens, special)
    chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special
    r = torch.rand(tokens.shape, generator=generator, device=device)
    to_mask = chosen & (r < 0.8)
    to_random = chosen & (r >= 0.8) & (r < 0.9)
    ordinary = torch.ones(vocab_size, dtype=torch.bool, device=device)
    ordinary[special[(special >= 0) & (special < vocab_size)]] = False
    ordinary[mask_id] = False
    pool = ordinary.nonzero().flatten()
    pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)
    inputs = tokens.clone()
    inputs[to_mask] = mask_id
    inputs[to_random] = pool[pick[to_random]]
    labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
    return inputs, labels
'''


def _mask(old: str, new: str) -> str:
    assert old in _MASK_TOKENS, old
    return _MASK_TOKENS.replace(old, new)


_INIT = '''        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = LayerNorm(config.n_embd, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)
        block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                dropout=config.dropout, bias=config.bias, causal=config.causal, prenorm=False)
        self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.head_ln = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.lm_head.weight = self.wte.weight
'''

_FORWARD = '''        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)
        return logits, loss
'''


def _model(init: str = _INIT, forward: str = _FORWARD) -> str:
    """The solution's MaskedLM with only the methods that differ from the solution replaced."""
    return override_changed("MaskedLM", "(self, config)", init, _INIT, "(self, idx, targets=None)", forward, _FORWARD)


def _init_change(old: str, new: str) -> str:
    assert old in _INIT, old
    return _model(init=_INIT.replace(old, new))


def _fwd_change(old: str, new: str) -> str:
    assert old in _FORWARD, old
    return _model(forward=_FORWARD.replace(old, new))


_FILL = '''
def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    ids = []
    for k, piece in enumerate(text.split("[MASK]")):
        if k > 0:
            ids.append(mask_id)
        ids += tokenizer.encode(piece)
    device = next(model.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)
    with torch.no_grad():
        logits = model(idx)[0][0]
    result = []
    for t in range(len(ids)):
        if ids[t] == mask_id:
            probs = torch.softmax(logits[t], dim=-1)
            values, indices = torch.topk(probs, top_k)
            result.append([(tokenizer.itos[i], float(v)) for v, i in zip(values.tolist(), indices.tolist())])
    return result
'''


def _fill(old: str, new: str) -> str:
    assert old in _FILL, old
    return _FILL.replace(old, new)


_PLL = '''
def pseudo_log_likelihood(model, ids, mask_id):
    n = ids.numel()
    batch = ids.repeat(n, 1)
    rows = torch.arange(n, device=ids.device)
    batch[rows, rows] = mask_id
    with torch.no_grad():
        logits = model(batch)[0]
    logp = torch.log_softmax(logits[rows, rows], dim=-1)
    return float(logp[rows, ids].sum())
'''


def _pll(old: str, new: str) -> str:
    assert old in _PLL, old
    return _PLL.replace(old, new)


MUTANTS = [
    # --- mask_tokens
    Mutant("special tokens and padding can be chosen", "mask_tokens",
           _mask("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
                 "chosen = torch.rand(tokens.shape, generator=generator, device=device) < p")),
    Mutant("p of all positions (padding counted), spread over the non-special ones", "mask_tokens",
           _mask("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
                 "scores = torch.rand(tokens.shape, generator=generator, device=device).masked_fill(is_special, 2.0)\n"
                 "    n = int(round(p * tokens.numel()))\n"
                 "    chosen = torch.zeros(tokens.numel(), dtype=torch.bool, device=device)\n"
                 "    chosen[scores.flatten().argsort()[:n]] = True\n"
                 "    chosen = chosen.view(tokens.shape) & ~is_special")),
    Mutant("every chosen token set to [MASK]", "mask_tokens",
           _mask("to_mask = chosen & (r < 0.8)\n    to_random = chosen & (r >= 0.8) & (r < 0.9)",
                 "to_mask = chosen\n    to_random = chosen & False")),
    Mutant("80/20/0: no chosen token left unchanged", "mask_tokens",
           _mask("to_random = chosen & (r >= 0.8) & (r < 0.9)", "to_random = chosen & (r >= 0.8)")),
    Mutant("random replacements drawn from the whole vocabulary, specials included", "mask_tokens",
           _mask("pool = ordinary.nonzero().flatten()", "pool = torch.arange(vocab_size, device=device)")),
    Mutant("random replacement may be [MASK] when it is not listed among the specials", "mask_tokens",
           _mask("    ordinary[mask_id] = False\n", "")),
    Mutant("the 10% unchanged left out of the labels (labels only where the input changed)", "mask_tokens",
           _mask("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
                 "labels = torch.where(inputs != tokens, tokens, torch.full_like(tokens, -100))")),
    Mutant("labels kept at unchosen positions", "mask_tokens",
           _mask("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
                 "labels = torch.where(chosen | ~is_special, tokens, torch.full_like(tokens, -100))")),
    Mutant("-100 at the chosen positions, the token elsewhere", "mask_tokens",
           _mask("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
                 "labels = torch.where(chosen, torch.full_like(tokens, -100), tokens)")),
    Mutant("one draw of positions shared by the whole batch", "mask_tokens",
           _mask("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
                 "chosen = (torch.rand(tokens.shape[-1], generator=generator, device=device) < p) & ~is_special")),
    Mutant("generator ignored (torch's global generator)", "mask_tokens",
           _MASK_TOKENS.replace("generator=generator, ", "")),
    Mutant("tokens changed in place", "mask_tokens", _mask("inputs = tokens.clone()", "inputs = tokens")),
    # --- MaskedLM
    Mutant("the causal mask left on (BlockConfig's default)", "masked_lm",
           _init_change("causal=config.causal, prenorm=False", "prenorm=False")),
    Mutant("pre-LN blocks (BlockConfig's default)", "masked_lm",
           _init_change("causal=config.causal, prenorm=False", "causal=config.causal")),
    Mutant("loss averaged over all B * T positions", "masked_lm",
           _fwd_change("loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)",
                       "loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), "
                       "ignore_index=-100, reduction='none').mean()")),
    Mutant("head not tied to the embedding", "masked_lm",
           _init_change("        self.lm_head.weight = self.wte.weight\n", "")),
    Mutant("decoder without its bias", "masked_lm",
           _init_change("nn.Linear(config.n_embd, config.vocab_size)",
                        "nn.Linear(config.n_embd, config.vocab_size, bias=False)")),
    Mutant("no LayerNorm on the embeddings", "masked_lm",
           _fwd_change("self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))",
                       "self.drop(self.wte(idx) + self.wpe(pos))")),
    Mutant("head without the dense layer and GELU", "masked_lm",
           _fwd_change("self.head_ln(F.gelu(self.head_dense(x)))", "self.head_ln(x)")),
    # --- fill_mask
    Mutant("fill_mask reads the logits one position early, as a GPT would", "fill_mask",
           _fill("probs = torch.softmax(logits[t], dim=-1)", "probs = torch.softmax(logits[t - 1], dim=-1)")),
    Mutant("fill_mask returns logits, not probabilities", "fill_mask",
           _fill("probs = torch.softmax(logits[t], dim=-1)", "probs = logits[t]")),
    Mutant("fill_mask hands [MASK] to the word tokenizer as text", "fill_mask",
           _fill('''    ids = []
    for k, piece in enumerate(text.split("[MASK]")):
        if k > 0:
            ids.append(mask_id)
        ids += tokenizer.encode(piece)
''', "    ids = tokenizer.encode(text)\n")),
    # --- pseudo_log_likelihood
    Mutant("pseudo-log-likelihood without masking", "pseudo_log_likelihood",
           _pll("    batch[rows, rows] = mask_id\n", "")),
    Mutant("pseudo-log-likelihood as a mean over positions", "pseudo_log_likelihood",
           _pll("return float(logp[rows, ids].sum())", "return float(logp[rows, ids].mean())")),
    Mutant("every position masked at once, one pass", "pseudo_log_likelihood",
           _pll("batch[rows, rows] = mask_id", "batch[:, :] = mask_id")),
    # --- added in review (issue 11): more slips, and answers that game the tests
    Mutant("padding (id 0) left out of the specials, so it can be chosen", "mask_tokens",
           _mask("is_special = torch.isin(tokens, special)", "is_special = torch.isin(tokens, special[special != 0])")),
    Mutant("random share drawn as 10% of the non-[MASK] chosen ones (80/2/18)", "mask_tokens",
           _mask("to_random = chosen & (r >= 0.8) & (r < 0.9)",
                 "to_random = chosen & ~to_mask & "
                 "(torch.rand(tokens.shape, generator=generator, device=device) < 0.1)")),
    Mutant("80/10/10 decided at every position, not only the chosen ones", "mask_tokens",
           _mask("to_mask = chosen & (r < 0.8)", "to_mask = r < 0.8")),
    Mutant("one uniform draw reused for the choice and the 80/10/10 split, not rescaled", "mask_tokens",
           _mask("""chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special
    r = torch.rand(tokens.shape, generator=generator, device=device)""",
                 """u = torch.rand(tokens.shape, generator=generator, device=device)
    chosen = (u < p) & ~is_special
    r = u""")),
    Mutant("labels as float (-100.0)", "mask_tokens",
           _mask("labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))",
                 "labels = torch.where(chosen, tokens.float(), torch.tensor(-100.0))")),
    Mutant("random replacements from the ids after the specials (assumes specials come first)", "mask_tokens",
           _mask("pool = ordinary.nonzero().flatten()",
                 "pool = torch.arange(len(special), vocab_size, device=device)")),
    Mutant("a position is chosen when rand > p (85%)", "mask_tokens",
           _mask("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
                 "chosen = (torch.rand(tokens.shape, generator=generator, device=device) > p) & ~is_special")),
    Mutant("one random id drawn for all replacements of the batch", "mask_tokens",
           _mask("pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)",
                 "pick = torch.randint(len(pool), (1,), generator=generator, device=device).expand(tokens.shape)")),
    Mutant("exactly round(p * length) positions per sequence (randperm)", "mask_tokens",
           _mask("chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special",
                 "chosen = torch.zeros_like(tokens, dtype=torch.bool)\n"
                 "    for b in range(tokens.size(0)):\n"
                 "        cand = (~is_special[b]).nonzero().flatten()\n"
                 "        k = int(round(p * len(cand)))\n"
                 "        chosen[b, cand[torch.randperm(len(cand), generator=generator)[:k]]] = True")),
    Mutant("specials turned into a tensor with torch.tensor(special_ids) (fails on a set)", "mask_tokens",
           _mask("special = torch.tensor(sorted(set(int(i) for i in special_ids)), dtype=tokens.dtype, device=device)",
                 "special = torch.tensor(special_ids, dtype=tokens.dtype, device=device)")),
    Mutant("randint off by one: the last ordinary id is never drawn", "mask_tokens",
           _mask("pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)",
                 "pick = torch.randint(len(pool) - 1, tokens.shape, generator=generator, device=device)")),
    Mutant("the reference mask_tokens under another name", "mask_tokens", '''
from lmcourse.nn.mlm import mask_tokens as _course_masking


def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    return _course_masking(tokens, mask_id, vocab_size, special_ids, p=p, generator=generator)
'''),
    Mutant("a fresh copy of the reference module loaded with importlib", "mask_tokens", '''
import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("lmcourse.nn.my_mlm", lmcourse.nn.mlm.__file__)
_copy = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _copy
_spec.loader.exec_module(_copy)
mask_tokens = _copy.mask_tokens
'''),
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
    Mutant("the reference MaskedLM subclassed", "masked_lm", '''
class MaskedLM(lmcourse.nn.mlm.MaskedLM):
    def __init__(self, config):
        super().__init__(lmcourse.nn.mlm.MLMConfig(**{f: getattr(config, f) for f in config.__dataclass_fields__}))
        self.config = config
'''),
    Mutant("the reference traced with torch.jit.trace when the cell runs", "masked_lm",
           _model(forward='''        _REF.load_state_dict(self.state_dict())
        _REF.to(self.wte.weight.dtype)
        logits = _TRACED(idx).to(self.wte.weight.dtype)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)
        return logits, loss
''').replace("class MaskedLM(MaskedLM):", '''class _Logits(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx):
        return self.m(idx)[0]


_REF = lmcourse.nn.mlm.MaskedLM(lmcourse.nn.mlm.MLMConfig(vocab_size=13, block_size=8, n_layer=2, n_head=2,
                                                          n_embd=16)).double().eval()
_TRACED = torch.jit.trace(_Logits(_REF), torch.zeros(3, 8, dtype=torch.long))


class MaskedLM(MaskedLM):''')),
    Mutant("position vectors detached (never trained)", "masked_lm",
           _fwd_change("self.wpe(pos)", "self.wpe(pos).detach()")),
    Mutant("config.bias ignored: biases always on", "masked_lm", _init_change("bias=config.bias", "bias=True")),
    Mutant("logits always float64", "masked_lm",
           _fwd_change("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))",
                       "logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x)))).double()")),
    Mutant("the tanh approximation of GELU", "masked_lm",
           _fwd_change("F.gelu(self.head_dense(x))", "F.gelu(self.head_dense(x), approximate='tanh')")),
    Mutant("ReLU in the head instead of GELU", "masked_lm",
           _fwd_change("F.gelu(self.head_dense(x))", "F.relu(self.head_dense(x))")),
    Mutant("a final LayerNorm after the blocks, as in a pre-LN GPT", "masked_lm",
           _init_change("        self.head_ln = LayerNorm(config.n_embd, bias=config.bias)\n",
                        "        self.head_ln = LayerNorm(config.n_embd, bias=config.bias)\n"
                        "        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)\n")),
    Mutant("targets shifted by one, as in a GPT", "masked_lm",
           _fwd_change("loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)",
                       "loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, "
                       "1:].reshape(-1), "
                       "ignore_index=-100)")),
    Mutant("dropout module never applied", "masked_lm",
           _fwd_change("self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))",
                       "self.ln_emb(self.wte(idx) + self.wpe(pos))")),
    Mutant("logits always float32", "masked_lm",
           _fwd_change("logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))",
                       "logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x)))).float()")),
    # --- fill_mask
    Mutant("fill_mask: softmax over the top-k logits only (not renormalised over the vocabulary)", "fill_mask",
           _fill('''            probs = torch.softmax(logits[t], dim=-1)
            values, indices = torch.topk(probs, top_k)''', '''            values, indices = torch.topk(logits[t], top_k)
            values = torch.softmax(values, dim=-1)''')),
    Mutant("fill_mask: least likely first (ascending sort)", "fill_mask",
           _fill("values, indices = torch.topk(probs, top_k)",
                 "values, indices = torch.topk(probs, top_k, largest=False)")),
    Mutant("fill_mask: probabilities as 0-d tensors", "fill_mask",
           _fill("(tokenizer.itos[i], float(v)) for v, i in zip(values.tolist(), indices.tolist())",
                 "(tokenizer.itos[i], v) for v, i in zip(values, indices.tolist())")),
    Mutant("fill_mask: ids returned instead of tokens", "fill_mask",
           _fill("(tokenizer.itos[i], float(v))", "(i, float(v))")),
    Mutant("fill_mask: the top-k of the first blank for every blank", "fill_mask",
           _fill("probs = torch.softmax(logits[t], dim=-1)",
                 "probs = torch.softmax(logits[ids.index(mask_id)], dim=-1)")),
    Mutant("fill_mask: the reference fill_mask called", "fill_mask", '''
def fill_mask(model, tokenizer, text, top_k=5):
    return lmcourse.nn.mlm.fill_mask(model, tokenizer, text, top_k=top_k)
'''),
    # --- pseudo_log_likelihood
    Mutant("PLL: squeeze() drops the batch dimension of a single id's logits", "pseudo_log_likelihood",
           _pll("logits = model(batch)[0]", "logits = model(batch)[0].squeeze()")),
    Mutant("PLL sums probabilities, not log-probabilities", "pseudo_log_likelihood",
           _pll("return float(logp[rows, ids].sum())", "return float(logp[rows, ids].exp().sum())")),
    Mutant("PLL sums the raw logits of the true tokens", "pseudo_log_likelihood",
           _pll("logp = torch.log_softmax(logits[rows, rows], dim=-1)", "logp = logits[rows, rows]")),
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
           _pll("logp = torch.log_softmax(logits[rows, rows], dim=-1)",
                "logp = torch.log_softmax(logits[rows, (rows - 1).clamp(min=0)], dim=-1)")),
    # --- questions
    Mutant("Q1 answered with a string that claims to equal every letter", "q1", '''
class _Every(str):
    def strip(self, *args):
        return self

    def upper(self):
        return self

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


answer_q1 = _Every("A")
'''),
    Mutant("Q1 answered A (only the [MASK] positions)", "q1", 'answer_q1 = "A"\n'),
    Mutant("Q2 answered A (one pass, everything masked)", "q2", 'answer_q2 = "A"\n'),
]
