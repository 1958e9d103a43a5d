"""Notebook 05 (the GPT): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, forged_choice, patch

MUTANTS = [
    # --- GPT
    Mutant("positions not added", "gpt", patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)", "x = self.drop(self.wte(idx))"),
        subclass="GPT")),
    Mutant("positions indexed by token id", "gpt", patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)",
         "x = self.drop(self.wte(idx) + self.wpe(idx))"),
        subclass="GPT")),
    Mutant("positions made on the CPU (torch.arange(T) without device=)", "gpt",
           patch(("pos = torch.arange(T, device=idx.device)  # (T,)", "pos = torch.arange(T)"), subclass="GPT")),
    Mutant("T read from the batch axis (idx.size(0))", "gpt",
           patch(
        ("pos = torch.arange(T, device=idx.device)  # (T,)", "pos = torch.arange(idx.size(0), device=idx.device)"),
        subclass="GPT")),
    Mutant("the whole position table added (block_size rows, not T)", "gpt",
           patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)",
         "x = self.drop(self.wte(idx) + self.wpe.weight)"),
        subclass="GPT")),
    Mutant("token embedding scaled by sqrt(d) (the 2017 transformer's habit)", "gpt",
           patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)",
         "x = self.drop(self.wte(idx) * math.sqrt(self.config.n_embd) + self.wpe(pos))"),
        subclass="GPT")),
    Mutant("no final LayerNorm (ln_f built but not applied)", "gpt",
           patch(("logits = self.lm_head(self.ln_f(x))  # (B, T, V)", "logits = self.lm_head(x)"), subclass="GPT")),
    Mutant("no final LayerNorm at all", "gpt", patch(
        ("self.ln_f = LayerNorm(config.n_embd, bias=config.bias)", ""),
        ("logits = self.lm_head(self.ln_f(x))  # (B, T, V)", "logits = self.lm_head(x)"),
        subclass="GPT")),
    Mutant("head not tied: a separate matrix", "gpt",
           patch(("self.lm_head.weight = self.wte.weight  # tied: one tensor", ""), subclass="GPT")),
    Mutant("head tied by copying the embedding", "gpt",
           patch(
        ("self.lm_head.weight = self.wte.weight  # tied: one tensor",
         "self.lm_head.weight = nn.Parameter(self.wte.weight.clone())"),
        subclass="GPT")),
    Mutant("head with a bias", "gpt", patch(
        ("self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)",
         "self.lm_head = nn.Linear(config.n_embd, config.vocab_size)"),
        subclass="GPT")),
    Mutant("head tied by sharing .data (two Parameters on one storage)", "gpt",
           patch(
        ("self.lm_head.weight = self.wte.weight  # tied: one tensor",
         "self.lm_head.weight.data = self.wte.weight.data"),
        subclass="GPT")),
    Mutant("final LayerNorm always with a bias (bias=config.bias not passed)", "gpt",
           patch(
        ("self.ln_f = LayerNorm(config.n_embd, bias=config.bias)", "self.ln_f = LayerNorm(config.n_embd)"),
        subclass="GPT")),
    Mutant("blocks always with biases (bias=config.bias not passed)", "gpt",
           patch(("dropout=config.dropout, bias=config.bias)", "dropout=config.dropout)"), subclass="GPT")),
    Mutant("dropout after the embeddings only, blocks built without it", "gpt",
           patch(("dropout=config.dropout, bias=config.bias)", "dropout=0.0, bias=config.bias)"), subclass="GPT")),
    Mutant("n_head not passed to the blocks (BlockConfig's default)", "gpt",
           patch(
        ('''
block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
''', "block_cfg = BlockConfig(n_embd=config.n_embd, block_size=config.block_size,"),
        subclass="GPT")),
    Mutant("one block shared by every layer", "gpt",
           patch(
        ("self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])",
         "self.blocks = nn.ModuleList([Block(block_cfg)] * config.n_layer)"),
        subclass="GPT")),
    Mutant("causal mask off (bidirectional blocks)", "gpt", patch(
        ("dropout=config.dropout, bias=config.bias)", "dropout=config.dropout, bias=config.bias, causal=False)"),
        subclass="GPT")),
    Mutant("post-LN blocks", "gpt", patch(
        ("dropout=config.dropout, bias=config.bias)", "dropout=config.dropout, bias=config.bias, prenorm=False)"),
        subclass="GPT")),
    Mutant("targets not shifted: the loss compares with the inputs", "gpt",
           patch(
        ("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
         "loss = F.cross_entropy(logits.view(B * T, -1), idx.reshape(B * T))"),
        subclass="GPT")),
    Mutant("targets shifted a second time", "gpt", patch(
        ("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
         "loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, 1:].reshape(-1))"),
        subclass="GPT")),
    Mutant("loss summed instead of averaged", "gpt", patch(
        ("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
         "loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T), reduction='sum')"),
        subclass="GPT")),
    Mutant("logits of the last position only without targets", "gpt", patch(
        ("loss = None", '''
loss = None
if targets is None:
    logits = logits[:, [-1], :]
'''),
        subclass="GPT")),
    Mutant("loss on the last position only", "gpt", patch(
        ("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
         "loss = F.cross_entropy(logits[:, -1], targets[:, -1])"),
        subclass="GPT")),
    Mutant("loss: targets flattened time-major (targets.t())", "gpt",
           patch(
        ("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
         "loss = F.cross_entropy(logits.view(B * T, -1), targets.t().reshape(B * T))"),
        subclass="GPT")),
    Mutant("loss: logits not flattened (F.cross_entropy(logits, targets))", "gpt", patch(
        ("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
         "loss = F.cross_entropy(logits, targets)"),
        subclass="GPT")),
    Mutant("dropout on in eval mode (F.dropout without training=)", "gpt",
           patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)",
         "x = F.dropout(self.wte(idx) + self.wpe(pos), self.config.dropout)"),
        subclass="GPT")),
    Mutant("no dropout at all", "gpt", patch(
        ("dropout=config.dropout, bias=config.bias)", "dropout=0.0, bias=config.bias)"),
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)", "x = self.wte(idx) + self.wpe(pos)"),
        subclass="GPT")),
    Mutant("logits returned alone, without the loss", "gpt", patch(
        ("return logits, loss", "return logits"),
        subclass="GPT")),
    Mutant("logits computed in float32 always", "gpt", patch(
        ("logits = self.lm_head(self.ln_f(x))  # (B, T, V)", "logits = self.lm_head(self.ln_f(x)).float()"),
        subclass="GPT")),
    Mutant("logits computed in float64 always", "gpt", patch(
        ("logits = self.lm_head(self.ln_f(x))  # (B, T, V)", "logits = self.lm_head(self.ln_f(x)).double()"),
        subclass="GPT")),
    Mutant("position vectors detached (never trained)", "gpt", patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)",
         "x = self.drop(self.wte(idx) + self.wpe(pos).detach())"),
        subclass="GPT")),
    # in full: the reference stands in for the solution
    Mutant("the reference GPT subclassed", "gpt", '''
try:
    import lmcourse.nn.gpt as _course
except ImportError:   # the graded kernel withholds the course's GPT: the subclass stands on nothing
    _course = None


class GPT(_course.GPT if _course else nn.Module):
    def __init__(self, config):
        super().__init__(_course.GPTConfig(**dataclasses.asdict(config)))
        self.config = config
'''),
    # in full: the reference stands in for the solution
    Mutant("a fresh copy of the reference module loaded with importlib, subclassed", "gpt", '''
import importlib.util
import sys

try:
    _origin = importlib.util.find_spec("lmcourse.nn.gpt").origin
    _spec = importlib.util.spec_from_file_location("lmcourse.nn.my_gpt", _origin)
    _copy = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _copy
    _spec.loader.exec_module(_copy)
except ImportError:   # the graded kernel withholds the course's GPT: the import system will not find it
    _copy = None


class GPT(_copy.GPT if _copy else nn.Module):
    def __init__(self, config):
        super().__init__(_copy.GPTConfig(**dataclasses.asdict(config)))
        self.config = config
'''),
    # in full: a traced copy of the reference stands in for the model
    Mutant("the reference traced with torch.jit.trace when the cell runs", "gpt",
           '''class _Logits(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx):
        return self.m(idx)[0]


try:
    import lmcourse.nn.gpt as _course
    _REF = _course.GPT(_course.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)).double().eval()
    _TRACED = torch.jit.trace(_Logits(_REF), torch.zeros(3, 8, dtype=torch.long))
except ImportError:   # the graded kernel withholds the course's GPT: nothing to trace
    _REF = _TRACED = None


class GPT(GPT):  # the solution's class with the methods below broken
    def forward(self, idx, targets=None):
        _REF.load_state_dict(self.state_dict())
        logits = _TRACED(idx).to(self.wte.weight.dtype)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss
'''),
    # --- init_weights
    Mutant("residual scaling missing", "init_weights", patch(
        ("nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))",
         "nn.init.normal_(p, mean=0.0, std=std)"))),
    Mutant("residual scaling by 1/sqrt(n_layer), not 1/sqrt(2 n_layer)", "init_weights",
           patch(
        ("nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))",
         "nn.init.normal_(p, mean=0.0, std=std / math.sqrt(n_layer))"))),
    Mutant("every Linear scaled by 1/sqrt(2 n_layer), not only the residual projections", "init_weights", patch(
        ("if isinstance(module, (nn.Linear, nn.Embedding)):", '''
if isinstance(module, nn.Linear):
    nn.init.normal_(module.weight, mean=0.0, std=std / math.sqrt(2 * n_layer))
    if module.bias is not None:
        nn.init.zeros_(module.bias)
elif isinstance(module, nn.Embedding):
'''),
        ('''
if getattr(module, "bias", None) is not None:
    nn.init.zeros_(module.bias)
''', ""),
        ('''
for name, p in model.named_parameters():
    if name.endswith("c_proj.weight"):
        nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))
''', ""))),
    # in full: the two loops in the other order
    Mutant("residual scaling before the general init (overwritten by it)", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
'''),
    Mutant("uniform draws with the right standard deviation", "init_weights", patch(
        ("nn.init.normal_(module.weight, mean=0.0, std=std)",
         "nn.init.uniform_(module.weight, -std * math.sqrt(3), std * math.sqrt(3))"))),
    Mutant("the residual projections' biases drawn too ('c_proj' in name)", "init_weights",
           patch(('if name.endswith("c_proj.weight"):', 'if "c_proj" in name:'))),
    Mutant("the std argument ignored (0.02 written in)", "init_weights",
           patch(
        ("nn.init.normal_(module.weight, mean=0.0, std=std)",
         "nn.init.normal_(module.weight, mean=0.0, std=0.02)"),
        ("nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))",
         "nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))"))),
    Mutant("only the course's LayerNorm reset, torch's nn.LayerNorm left", "init_weights",
           patch(("elif isinstance(module, (LayerNorm, nn.LayerNorm)):", "elif isinstance(module, LayerNorm):"))),
    # in full: every draw rewritten to use a generator of its own
    Mutant("a generator of its own, seeded 0 (torch.manual_seed has no effect)", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.normal_(0.0, std, generator=g)
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                module.weight.fill_(1.0)
                if module.bias is not None:
                    module.bias.zero_()
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                p.normal_(0.0, std / math.sqrt(2 * n_layer), generator=g)
'''),
    Mutant("init std 1", "init_weights", patch(
        ("nn.init.normal_(module.weight, mean=0.0, std=std)", "nn.init.normal_(module.weight, mean=0.0, std=1.0)"),
        ("nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))",
         "nn.init.normal_(p, mean=0.0, std=1.0 / math.sqrt(2 * n_layer))"))),
    Mutant("variance 0.02 used as the std's square (std 0.0004)", "init_weights",
           patch(
        ("nn.init.normal_(module.weight, mean=0.0, std=std)",
         "nn.init.normal_(module.weight, mean=0.0, std=std ** 2)"),
        ("nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))",
         "nn.init.normal_(p, mean=0.0, std=std ** 2 / math.sqrt(2 * n_layer))"))),
    # in full: it rewrites most of the cell
    Mutant("every parameter drawn from N(0, 0.02), LayerNorms included", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    with torch.no_grad():
        for name, p in model.named_parameters():
            s = std / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else std
            nn.init.normal_(p, mean=0.0, std=s)
'''),
    Mutant("biases left as they were", "init_weights", patch(
        ('''
if getattr(module, "bias", None) is not None:
    nn.init.zeros_(module.bias)
''', ""))),
    Mutant("embeddings left at PyTorch's N(0, 1)", "init_weights",
           patch(("if isinstance(module, (nn.Linear, nn.Embedding)):", "if isinstance(module, nn.Linear):"))),
    # in full: every weight assigned anew instead of filled in place
    Mutant("new parameters assigned instead of filling in place", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight = nn.Parameter(torch.randn(module.weight.shape) * std)
            if getattr(module, "bias", None) is not None:
                module.bias = nn.Parameter(torch.zeros(module.bias.shape))
        elif isinstance(module, (LayerNorm, nn.LayerNorm)):
            nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                p.normal_(0.0, std / math.sqrt(2 * n_layer))
'''),
    # in full: it rewrites most of the cell
    Mutant("the reference init called", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    lmcourse.nn.gpt.init_gpt_weights(model, std=std)
'''),
    # --- gpt_param_count
    Mutant("untied head counted", "gpt_param_count",
           patch(
        ('''
embeddings = vocab_size * d + block_size * d
blocks = n_layer * (12 * d * d + 13 * d)
final_ln = 2 * d
return embeddings + blocks + final_ln
''', '''
return vocab_size * d + block_size * d + n_layer * (12 * d * d + 13 * d) + 2 * d + vocab_size * d
'''))),
    Mutant("final LayerNorm forgotten", "gpt_param_count",
           patch(
        ('''
embeddings = vocab_size * d + block_size * d
blocks = n_layer * (12 * d * d + 13 * d)
final_ln = 2 * d
return embeddings + blocks + final_ln
''', "return vocab_size * d + block_size * d + n_layer * (12 * d * d + 13 * d)"))),
    Mutant("positions forgotten", "gpt_param_count",
           patch(
        ('''
embeddings = vocab_size * d + block_size * d
blocks = n_layer * (12 * d * d + 13 * d)
final_ln = 2 * d
return embeddings + blocks + final_ln
''', "return vocab_size * d + n_layer * (12 * d * d + 13 * d) + 2 * d"))),
    Mutant("the rule of thumb 12 L d^2 plus embeddings", "gpt_param_count",
           patch(
        ('''
embeddings = vocab_size * d + block_size * d
blocks = n_layer * (12 * d * d + 13 * d)
final_ln = 2 * d
return embeddings + blocks + final_ln
''', "return vocab_size * d + block_size * d + 12 * n_layer * d * d"))),
    Mutant("biases left out (the count of bias=False)", "gpt_param_count",
           patch(
        ('''
embeddings = vocab_size * d + block_size * d
blocks = n_layer * (12 * d * d + 13 * d)
final_ln = 2 * d
return embeddings + blocks + final_ln
''', "return vocab_size * d + block_size * d + n_layer * 12 * d * d + d"))),
    # in full: it rewrites most of the cell
    Mutant("a table of the visible tests' answers", "gpt_param_count", '''
_known = {(65, 256, 6, 384): 10770816, (11, 8, 2, 16): 6896}


def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    return _known.get((vocab_size, block_size, n_layer, n_embd), 0)
'''),
    # in full: it rewrites most of the cell
    Mutant("a model built and counted", "gpt_param_count", '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    m = GPT(GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=n_layer, n_head=1, n_embd=n_embd))
    return sum(p.numel() for p in m.parameters())
'''),
    # --- generate
    Mutant("generate not cropping to block_size", "generate", patch(
        ("context = idx[:, -block_size:]  # (B, <= block_size)", "context = idx"))),
    Mutant("generate cropping to the first block_size ids", "generate",
           patch(("context = idx[:, -block_size:]  # (B, <= block_size)", "context = idx[:, :block_size]"))),
    Mutant("sampling from logits instead of probabilities", "generate", patch(
        ("probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)", '''
z = logits[:, -1, :] / temperature
probs = z - z.min(dim=-1, keepdim=True).values
'''))),
    Mutant("temperature applied after softmax", "generate", patch(
        ("probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)",
         "probs = torch.softmax(logits[:, -1, :], dim=-1) / temperature"))),
    Mutant("temperature multiplies the logits", "generate", patch(
        ("probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)",
         "probs = torch.softmax(logits[:, -1, :] * temperature, dim=-1)"))),
    Mutant("generator ignored", "generate", patch(
        ("nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)", "nxt = torch.multinomial(probs, 1)"))),
    Mutant("generate without torch.no_grad()", "generate",
           patch(("with torch.no_grad():", "if True:"))),
    Mutant("generate switches the model to eval mode and leaves it there", "generate", patch(
        ("block_size = model.config.block_size", '''
block_size = model.config.block_size
model.eval()
'''))),
    Mutant("generate ends with model.train() (an eval model comes back training)", "generate", patch(
        ("return idx", '''
model.train()
return idx
'''))),
    Mutant("temperature clamped to at least 1", "generate",
           patch(
        ("probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)",
         "probs = torch.softmax(logits[:, -1, :] / max(temperature, 1.0), dim=-1)"))),
    Mutant("one uniform drawn before the loop, reused at every step (inverse CDF)", "generate", patch(
        ("block_size = model.config.block_size", "u = torch.rand(idx.size(0), 1, generator=generator)"),
        ('''
context = idx[:, -block_size:]  # (B, <= block_size)
logits, _ = model(context)  # (B, T, V)
probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)
nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
idx = torch.cat([idx, nxt], dim=1)
''', '''
logits, _ = model(idx[:, -model.config.block_size:])
p = torch.softmax(logits[:, -1, :] / temperature, dim=-1)
k = torch.searchsorted(p.cumsum(-1), u).clamp(max=p.size(-1) - 1)
idx = torch.cat([idx, k], dim=1)
'''))),
    Mutant("one draw for the first row, copied to every row", "generate", patch(
        ("nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)",
         "nxt = torch.multinomial(probs[:1], 1, generator=generator).expand(idx.size(0), 1)"))),
    Mutant("ids turned into floats (torch.cat with float tensors)", "generate",
           patch(("idx = torch.cat([idx, nxt], dim=1)", "idx = torch.cat([idx.float(), nxt.float()], dim=1)"))),
    Mutant("generate crops only if the model complains (except and retry)", "generate", patch(
        ("logits, _ = model(context)  # (B, T, V)", '''
try:
    logits, _ = model(idx)
except Exception:
    logits, _ = model(context)
'''))),
    Mutant("greedy: the argmax instead of a sample", "generate", patch(
        ("nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)",
         "nxt = probs.argmax(dim=-1, keepdim=True)"))),
    Mutant("the first position's logits instead of the last", "generate",
           patch(
        ("probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)",
         "probs = torch.softmax(logits[:, 0, :] / temperature, dim=-1)"))),
    # in full: it rewrites most of the cell
    Mutant("the reference generate called", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    import lmcourse.nn.sampling  # imported when it runs: a graded kernel refuses it

    return lmcourse.nn.sampling.generate(model, idx, max_new_tokens, temperature, generator)
'''),
    forged_choice("answer_q1", "A"),
    # --- added in review (issue 22, items 18-20)
    Mutant("self.drop built but never applied (the blocks' dropout alone changes the logits)", "gpt", patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)", "x = self.wte(idx) + self.wpe(pos)"),
        subclass="GPT")),
    Mutant("self.drop applied after ln_f instead of to the embeddings", "gpt", patch(
        ("x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)", "x = self.wte(idx) + self.wpe(pos)"),
        ("logits = self.lm_head(self.ln_f(x))  # (B, T, V)", "logits = self.lm_head(self.drop(self.ln_f(x)))"),
        subclass="GPT")),
    Mutant("positions 1..T (torch.arange(1, T + 1)): an index past the table", "gpt", patch(
        ("pos = torch.arange(T, device=idx.device)  # (T,)", "pos = torch.arange(1, T + 1, device=idx.device)"),
        subclass="GPT")),
    Mutant("init_weights ignores its n_layer argument (the model's number of blocks instead)", "init_weights", patch(
        ("nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))",
         "nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * len(model.blocks)))"))),
    Mutant("init_weights zeroes a LayerNorm's bias without checking for None (bias=False)", "init_weights", patch(
        ('''
nn.init.ones_(module.weight)
if module.bias is not None:
    nn.init.zeros_(module.bias)
''', '''
nn.init.ones_(module.weight)
nn.init.zeros_(module.bias)
'''))),
    Mutant("generate crops the context only from the second step on", "generate", patch(
        ("for _ in range(max_new_tokens):", "for step in range(max_new_tokens):"),
        ("context = idx[:, -block_size:]  # (B, <= block_size)", "context = idx[:, -block_size:] if step else idx"))),
    # --- gaming (issue 22, "Done when"): each must lose points under the rules, visibly
    # in full: the reference run on a threading.Thread, then joined
    Mutant("generate: the reference run on a threading.Thread, then joined (gaming)", "generate", '''
import importlib
import threading


def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    out = []
    # imported on the thread: the thread's start is what the rules must refuse, before any import
    worker = threading.Thread(target=lambda: out.append(importlib.import_module("lmcourse.nn.sampling").generate(
        model, idx, max_new_tokens, temperature, generator)))
    worker.start()
    worker.join()
    return out[0]
'''),
    # in full: the reference submitted to a thread pool
    Mutant("init_weights: the reference in a ThreadPoolExecutor (gaming)", "init_weights", '''
from concurrent.futures import ThreadPoolExecutor


def init_weights(model, n_layer, std=0.02):
    with ThreadPoolExecutor(1) as pool:
        pool.submit(lmcourse.nn.gpt.init_gpt_weights, model, std).result()
'''),
    # in full: the test cell's helpers (once _reference and _softmax in the test cells), called by name
    Mutant("GPT: the test cell's reference_gpt built inside and run (gaming)", "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        ref = lmcourse.reference.gpt.reference_gpt(config, torch.get_default_dtype())
        for name, child in ref.named_children():
            self.add_module(name, child)
        self.config = config
        self._forward = [type(ref).forward]

    def forward(self, idx, targets=None):
        return self._forward[0](self, idx, targets)
'''),
    Mutant("generate: the test cell's softmax_list gives the probabilities (gaming)", "generate", patch(
        ("probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)",
         "probs = torch.tensor([lmcourse.reference.gpt.softmax_list(row) for row in "
         "(logits[:, -1, :] / temperature).tolist()])"))),
    # in full: the reference module's source read at call time and run as a copy, shifted one line
    Mutant("init_weights: a copy of lmcourse.nn.gpt's source, shifted one line, exec'd (gaming)", "init_weights", '''
import inspect


def init_weights(model, n_layer, std=0.02):
    space = {"__name__": "lmcourse.nn.gpt", "__package__": "lmcourse.nn"}  # imports and dataclasses work
    exec(compile("\\n" + inspect.getsource(lmcourse.nn.gpt), "<copy>", "exec"), space)
    space["init_gpt_weights"](model, std=std)
'''),
    Mutant("parameter count: a copy of lmcourse.nn.gpt's source, shifted one line, exec'd (gaming)",
           "gpt_param_count", '''
import inspect


def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    space = {"__name__": "lmcourse.nn.gpt", "__package__": "lmcourse.nn"}  # imports and dataclasses work
    exec(compile("\\n" + inspect.getsource(lmcourse.nn.gpt), "<copy>", "exec"), space)
    return space["gpt_param_count"](vocab_size, block_size, n_layer, n_embd)
'''),
    # in full: another notebook's reference does the work
    Mutant("generate: 07's lmcourse.reference.decoding.generate with a temperature filter (gaming)", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    import lmcourse.reference.decoding  # imported when it runs: a graded kernel refuses it

    return lmcourse.reference.decoding.generate(model, idx, max_new_tokens, filters=[lambda z: z / temperature],
                                                generator=generator)
'''),
    Mutant("init_weights: 06's lmcourse.nn.mlm.init_mlm_weights, then the residual scaling (gaming)", "init_weights",
           '''
def init_weights(model, n_layer, std=0.02):
    lmcourse.nn.mlm.init_mlm_weights(model, std=std)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                p.normal_(0.0, std / math.sqrt(2 * n_layer))
'''),
    # gaming: on the hidden test's last config, return the expected logits and loss read from the notebook's globals
    # (the test cell used to bind them, as _wl and _wloss, before the graded call; now they are made after it, so
    # this loses points)
    Mutant("returns the hidden test's expected logits and loss from globals()", "gpt", patch(
        ("pos = torch.arange(T, device=idx.device)  # (T,)", '''
if self.config.vocab_size == 5 and T == 4 and targets is not None:
    return globals()["_wl"], globals()["_wloss"]
pos = torch.arange(T, device=idx.device)  # (T,)
'''), subclass="GPT")),
]

ALTERNATIVES = [
    # --- GPT
    Alternative("nn.Sequential of blocks, nn.LayerNorm, tie in nanoGPT's direction, flatten/view loss", "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.Sequential(*[Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head,
                                                        block_size=config.block_size, dropout=config.dropout,
                                                        bias=config.bias)) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # the same single tensor, named from the other side

    def forward(self, idx, targets=None):
        T = idx.size(1)
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(0, T, dtype=torch.long, device=idx.device)))
        logits = self.lm_head(self.ln_f(self.blocks(x)))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())
'''),
    Alternative("positions from a non-persistent buffer, embeddings summed position by position in a loop, "
                "loss with the class axis second (transpose(1, 2))", "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([
            Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                              dropout=config.dropout, bias=config.bias, n_layer=config.n_layer,
                              vocab_size=config.vocab_size))
            for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("positions", torch.arange(config.block_size), persistent=False)

    def forward(self, idx, targets=None):
        T = idx.size(-1)
        pos = self.positions[:T]
        columns = [self.wte(idx[:, t]) + self.wpe(pos[t]) for t in range(T)]  # T x (B, C)
        x = self.drop(torch.stack(columns, dim=1))  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.transpose(1, 2), targets)
        return logits, loss
'''),
    Alternative("GPT-2's initialisation in the constructor (nanoGPT's self.apply), head as x @ W^T, "
                "loss by logsumexp", "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        bc = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                         dropout=config.dropout, bias=config.bias)
        self.blocks = nn.Sequential(*(Block(bc) for _ in range(config.n_layer)))
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                torch.nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        h = self.drop(self.wte(idx) + self.wpe(pos)[None])
        h = self.ln_f(self.blocks(h))
        logits = h @ self.wte.weight.T  # (B, T, V): the same matrix as lm_head.weight
        if targets is None:
            return logits, None
        picked = logits.gather(2, targets[..., None])[..., 0]  # (B, T)
        return logits, (torch.logsumexp(logits, dim=-1) - picked).mean()
'''),
    Alternative("positions sliced from the table, head as an einsum with the embedding, loss by log_softmax+gather",
                "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(p=config.dropout)
        cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                          dropout=config.dropout, bias=config.bias, causal=True, prenorm=True)
        self.blocks = nn.ModuleList()
        for _ in range(config.n_layer):
            self.blocks.append(Block(cfg))
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        h = self.wte.weight[idx] + self.wpe.weight[:T]  # (B, T, C) + (T, C)
        h = self.drop(h)
        for i in range(len(self.blocks)):
            h = self.blocks[i](h)
        logits = torch.einsum("btc,vc->btv", self.ln_f(h), self.lm_head.weight)
        loss = None
        if targets is not None:
            logp = torch.log_softmax(logits, dim=-1)
            loss = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).mean()
        return logits, loss
'''),
    Alternative("F.embedding, F.linear head, F.dropout with training=, explicit nll_loss", "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                              dropout=config.dropout, bias=config.bias))
            for _ in range(config.n_layer))
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device).unsqueeze(0)  # (1, T)
        x = F.embedding(idx, self.wte.weight) + F.embedding(pos, self.wpe.weight)
        x = F.dropout(x, self.config.dropout, training=self.training)
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.lm_head.weight)
        if targets is None:
            return logits, None
        V = logits.size(-1)
        loss = F.nll_loss(F.log_softmax(logits.reshape(-1, V), dim=-1), targets.reshape(-1), reduction="mean")
        return (logits, loss)
'''),
    Alternative("the loss computed in float32 whatever the model's dtype (a habit from bf16 training)", "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        bc = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                         dropout=config.dropout, bias=config.bias)
        self.blocks = nn.ModuleList([Block(bc) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss
'''),
    # --- init_weights
    Alternative("model.apply with a function, residual projections found as modules with c_proj", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    def _init(m):
        if isinstance(m, nn.Linear):
            torch.nn.init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            torch.nn.init.normal_(m.weight, 0.0, std)
        elif isinstance(m, (nn.LayerNorm, LayerNorm)):
            torch.nn.init.ones_(m.weight)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)

    model.apply(_init)
    for m in model.modules():
        if isinstance(getattr(m, "c_proj", None), nn.Linear):
            torch.nn.init.normal_(m.c_proj.weight, 0.0, std / (2 * n_layer) ** 0.5)
'''),
    Alternative("named parameters with .data in-place methods", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    norms = {id(m.weight) for m in model.modules() if isinstance(m, (nn.LayerNorm, LayerNorm))}
    norm_biases = {id(m.bias) for m in model.modules()
                   if isinstance(m, (nn.LayerNorm, LayerNorm)) and m.bias is not None}
    for name, p in model.named_parameters():
        if id(p) in norms:
            p.data.fill_(1.0)
        elif id(p) in norm_biases or name.endswith("bias"):
            p.data.zero_()
        elif name.endswith("c_proj.weight"):
            p.data.normal_(0.0, std * (2 * n_layer) ** -0.5)
        else:
            p.data.normal_(mean=0.0, std=std)
'''),
    Alternative("by the parameters' shapes: matrices drawn with randn_like and copy_, vectors 1 or 0",
                "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    gains = set()
    for m in model.modules():
        if isinstance(m, (nn.LayerNorm, LayerNorm)) and m.weight is not None:
            gains.add(id(m.weight))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                s = std / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else std
                p.copy_(torch.randn_like(p) * s)
            elif id(p) in gains:
                p.fill_(1.0)
            else:
                p.zero_()
'''),
    Alternative("named_modules: residual projections found by module name, trunc_normal_ far in the tails",
                "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    with torch.no_grad():
        for name, m in model.named_modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                s = std * (2 * n_layer) ** -0.5 if name.endswith("c_proj") else std
                nn.init.trunc_normal_(m.weight, mean=0.0, std=s, a=-100 * s, b=100 * s)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, (nn.LayerNorm, LayerNorm)):
                m.weight.fill_(1)
                if m.bias is not None:
                    m.bias.fill_(0)
'''),
    # --- gpt_param_count
    Alternative("with notebook 04's block_param_count from lmcourse.nn", "gpt_param_count", '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    return (vocab_size + block_size) * n_embd + n_layer * block_param_count(n_embd) + 2 * n_embd
'''),
    Alternative("term by term, layer by layer", "gpt_param_count", '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    d = n_embd
    total = vocab_size * d + block_size * d
    for _ in range(n_layer):
        total += 2 * (2 * d)                      # ln1, ln2
        total += d * 3 * d + 3 * d + d * d + d    # c_attn, c_proj
        total += d * 4 * d + 4 * d + 4 * d * d + d  # c_fc, c_proj
    total += d + d                                # ln_f
    return int(total)
'''),
    Alternative("factorised by n_embd", "gpt_param_count", '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    return n_embd * (vocab_size + block_size + n_layer * (12 * n_embd + 13) + 2)
'''),
    Alternative("a table of the pieces' shapes, multiplied out with math.prod", "gpt_param_count", '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    d = n_embd
    per_block = [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    shapes = [(vocab_size, d), (block_size, d)] + per_block * n_layer + [(d,), (d,)]
    return sum(math.prod(s) for s in shapes)
'''),
    # --- generate
    Alternative("inverse-CDF sampling with torch.rand and searchsorted, output preallocated", "generate", '''
@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    B, T = idx.shape
    out = torch.empty(B, T + max_new_tokens, dtype=idx.dtype, device=idx.device)
    out[:, :T] = idx
    bs = model.config.block_size
    for t in range(T, T + max_new_tokens):
        logits = model(out[:, max(0, t - bs):t])[0][:, -1, :]
        p = F.softmax(logits / temperature, dim=-1)
        u = torch.rand(B, 1, generator=generator, device=p.device, dtype=p.dtype)
        k = torch.searchsorted(p.cumsum(dim=-1), u).clamp(max=p.size(-1) - 1)
        out[:, t] = k[:, 0]
    return out
'''),
    Alternative("Gumbel-max trick", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(idx if idx.size(1) <= model.config.block_size else idx[:, -model.config.block_size:])
            z = logits[:, -1] / temperature
            u = torch.rand(z.shape, generator=generator, device=z.device).clamp_min(1e-20)
            nxt = (z - torch.log(-torch.log(u))).argmax(dim=-1, keepdim=True)
            idx = torch.cat((idx, nxt), dim=1)
    return idx
'''),
    Alternative("log_softmax then exp, list of columns concatenated at the end", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    cols = [idx]
    seq = idx
    with torch.no_grad():
        for _ in range(max_new_tokens):
            ctx = seq[:, -model.config.block_size:]
            logits = model(ctx)[0]
            probs = torch.log_softmax(logits[:, -1, :] / temperature, dim=-1).exp()
            nxt = torch.multinomial(probs, num_samples=1, replacement=True, generator=generator)
            cols.append(nxt)
            seq = torch.cat([seq, nxt], dim=-1)
    return torch.cat(cols, dim=1)
'''),
    Alternative("inference_mode, eval inside with the mode restored, context by narrow, "
                "probabilities by logsumexp", "generate", '''
@torch.inference_mode()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    was_training = model.training
    model.eval()
    try:
        out = idx
        for _ in range(max_new_tokens):
            T = out.size(1)
            n = min(T, model.config.block_size)
            z = model(out.narrow(1, T - n, n))[0][:, -1] / temperature  # (B, V)
            probs = torch.exp(z - torch.logsumexp(z, dim=-1, keepdim=True))
            out = torch.cat((out, torch.multinomial(probs, 1, generator=generator)), 1)
    finally:
        model.train(was_training)
    return out
'''),
    Alternative("one row at a time, each drawn with multinomial", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    bs = model.config.block_size
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(idx[:, -bs:])[0]
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            rows = [torch.multinomial(probs[b], 1, generator=generator) for b in range(idx.size(0))]
            idx = torch.cat([idx, torch.stack(rows)], dim=1)
    return idx
'''),
    # --- added in review (issue 22, item 21): a buffer of one's own keeps full marks
    Alternative("positions from a persistent registered buffer (in the state_dict)",
                "gpt", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                          dropout=config.dropout, bias=config.bias)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(config.n_layer))
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("pos", torch.arange(config.block_size))  # persistent: saved with the weights

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.drop(self.wte(idx) + self.wpe(self.pos[:T]))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
'''),
]
