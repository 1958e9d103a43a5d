"""Typical student bugs for notebook 05 (the GPT). Each must lose points."""

from lmcourse.authoring.mutants import Mutant, forged_choice, override_changed

_CONFIG = '''
@dataclass
class GPTConfig:
    vocab_size: int = 65
    block_size: int = 256
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: {dropout_type} = {dropout}
    bias: bool = True
'''

_INIT = '''        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                dropout=config.dropout, bias=config.bias)
        self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
'''

_FORWARD = '''        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))
        return logits, loss
'''


def _gpt(init: str = _INIT, forward: str = _FORWARD) -> str:
    """The solution's GPT with only the methods that differ from the solution replaced."""
    return override_changed("GPT", "(self, config)", init, _INIT, "(self, idx, targets=None)", forward, _FORWARD)


def _init_change(old: str, new: str) -> str:
    assert old in _INIT, old
    return _gpt(init=_INIT.replace(old, new))


def _fwd_change(old: str, new: str) -> str:
    assert old in _FORWARD, old
    return _gpt(forward=_FORWARD.replace(old, new))


_INIT_WEIGHTS = '''
def init_weights(model, n_layer, std=0.02):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=STD)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=SCALED)
'''


def _init_weights(std: str = "std", scaled: str = "std / math.sqrt(2 * n_layer)") -> str:
    return _INIT_WEIGHTS.replace("STD", std).replace("SCALED", scaled)


_GENERATE = '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    block_size = model.config.block_size
    with torch.no_grad():
        for _ in range(max_new_tokens):
            context = idx[:, -block_size:]
            logits, _ = model(context)
            probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat([idx, nxt], dim=1)
    return idx
'''


def _generate(old: str, new: str) -> str:
    assert old in _GENERATE, old
    return _GENERATE.replace(old, new)


_COUNT = '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    d = n_embd
    return {expr}
'''


def _count(expr: str) -> str:
    return _COUNT.format(expr=expr)


MUTANTS = [
    # --- GPTConfig
    Mutant("dropout defaults to nanoGPT's 0.2", "gpt_config", _CONFIG.format(dropout_type="float", dropout="0.2")),
    Mutant("dropout typed and defaulted as the int 0", "gpt_config", _CONFIG.format(dropout_type="int", dropout="0")),
    Mutant("a plain class, not a dataclass", "gpt_config", '''
class GPTConfig:
    def __init__(self, vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384, dropout=0.0, bias=True):
        self.vocab_size, self.block_size, self.n_layer, self.n_head = vocab_size, block_size, n_layer, n_head
        self.n_embd, self.dropout, self.bias = n_embd, dropout, bias
'''),
    Mutant("fields in another order (n_embd before n_layer)", "gpt_config", '''
@dataclass
class GPTConfig:
    vocab_size: int = 65
    block_size: int = 256
    n_embd: int = 384
    n_layer: int = 6
    n_head: int = 6
    dropout: float = 0.0
    bias: bool = True
'''),
    Mutant("dropout annotated as int (default 0.0)", "gpt_config", _CONFIG.format(dropout_type="int", dropout="0.0")),
    Mutant("keyword-only fields (kw_only=True)", "gpt_config",
           _CONFIG.replace("@dataclass", "@dataclass(kw_only=True)").format(
        dropout_type="float", dropout="0.0")),
    # --- GPT
    Mutant("positions not added", "gpt", _fwd_change("self.wte(idx) + self.wpe(pos)", "self.wte(idx)")),
    Mutant("positions indexed by token id", "gpt", _fwd_change("self.wpe(pos)", "self.wpe(idx)")),
    Mutant("positions made on the CPU (torch.arange(T) without device=)", "gpt",
           _fwd_change("torch.arange(T, device=idx.device)", "torch.arange(T)")),
    Mutant("T read from the batch axis (idx.size(0))", "gpt",
           _fwd_change("torch.arange(T, device=idx.device)", "torch.arange(idx.size(0), device=idx.device)")),
    Mutant("the whole position table added (block_size rows, not T)", "gpt",
           _fwd_change("self.wpe(pos)", "self.wpe.weight")),
    Mutant("token embedding scaled by sqrt(d) (the 2017 transformer's habit)", "gpt",
           _fwd_change("self.wte(idx) + self.wpe(pos)",
                       "self.wte(idx) * math.sqrt(self.config.n_embd) + self.wpe(pos)")),
    Mutant("no final LayerNorm (ln_f built but not applied)", "gpt",
           _fwd_change("self.lm_head(self.ln_f(x))", "self.lm_head(x)")),
    Mutant("no final LayerNorm at all", "gpt", _gpt(
        init=_INIT.replace("        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)\n", ""),
        forward=_FORWARD.replace("self.lm_head(self.ln_f(x))", "self.lm_head(x)"))),
    Mutant("head not tied: a separate matrix", "gpt",
           _init_change("        self.lm_head.weight = self.wte.weight\n", "")),
    Mutant("head tied by copying the embedding", "gpt",
           _init_change("self.lm_head.weight = self.wte.weight",
                        "self.lm_head.weight = nn.Parameter(self.wte.weight.clone())")),
    Mutant("head with a bias", "gpt", _init_change("config.vocab_size, bias=False)", "config.vocab_size)")),
    Mutant("head tied by sharing .data (two Parameters on one storage)", "gpt",
           _init_change("self.lm_head.weight = self.wte.weight", "self.lm_head.weight.data = self.wte.weight.data")),
    Mutant("final LayerNorm always with a bias (bias=config.bias not passed)", "gpt",
           _init_change("LayerNorm(config.n_embd, bias=config.bias)", "LayerNorm(config.n_embd)")),
    Mutant("blocks always with biases (bias=config.bias not passed)", "gpt",
           _init_change("dropout=config.dropout, bias=config.bias)", "dropout=config.dropout)")),
    Mutant("dropout after the embeddings only, blocks built without it", "gpt",
           _init_change("dropout=config.dropout, bias", "dropout=0.0, bias")),
    Mutant("n_head not passed to the blocks (BlockConfig's default)", "gpt",
           _init_change("n_head=config.n_head, ", "")),
    Mutant("one block shared by every layer", "gpt",
           _init_change("nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])",
                        "nn.ModuleList([Block(block_cfg)] * config.n_layer)")),
    Mutant("causal mask off (bidirectional blocks)", "gpt", _init_change("bias=config.bias)\n        self.blocks",
                                                                           "bias=config.bias, causal=False)\n"
                                                                           "        self.blocks")),
    Mutant("post-LN blocks", "gpt", _init_change("bias=config.bias)\n        self.blocks",
                                                 "bias=config.bias, prenorm=False)\n        self.blocks")),
    Mutant("targets not shifted: the loss compares with the inputs", "gpt",
           _fwd_change("targets.reshape(B * T)", "idx.reshape(B * T)")),
    Mutant("targets shifted a second time", "gpt", _fwd_change(
        "F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
        "F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, 1:].reshape(-1))")),
    Mutant("loss summed instead of averaged", "gpt", _fwd_change("targets.reshape(B * T))",
                                                                 "targets.reshape(B * T), reduction='sum')")),
    Mutant("logits of the last position only without targets", "gpt", _fwd_change(
        "        loss = None\n",
        "        loss = None\n        if targets is None:\n            logits = logits[:, [-1], :]\n")),
    Mutant("loss on the last position only", "gpt", _fwd_change(
        "F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
        "F.cross_entropy(logits[:, -1], targets[:, -1])")),
    Mutant("loss: targets flattened time-major (targets.t())", "gpt",
           _fwd_change("targets.reshape(B * T)", "targets.t().reshape(B * T)")),
    Mutant("loss: logits not flattened (F.cross_entropy(logits, targets))", "gpt", _fwd_change(
        "F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))", "F.cross_entropy(logits, targets)")),
    Mutant("dropout on in eval mode (F.dropout without training=)", "gpt",
           _fwd_change("self.drop(self.wte(idx) + self.wpe(pos))",
                       "F.dropout(self.wte(idx) + self.wpe(pos), self.config.dropout)")),
    Mutant("no dropout at all", "gpt", _gpt(
        init=_INIT.replace("dropout=config.dropout, bias", "dropout=0.0, bias"),
        forward=_FORWARD.replace("self.drop(self.wte(idx) + self.wpe(pos))", "self.wte(idx) + self.wpe(pos)"))),
    Mutant("logits returned alone, without the loss", "gpt", _fwd_change("        return logits, loss\n",
                                                                         "        return logits\n")),
    Mutant("logits computed in float32 always", "gpt", _fwd_change("logits = self.lm_head(self.ln_f(x))",
                                                                   "logits = self.lm_head(self.ln_f(x)).float()")),
    Mutant("logits computed in float64 always", "gpt", _fwd_change("logits = self.lm_head(self.ln_f(x))",
                                                                   "logits = self.lm_head(self.ln_f(x)).double()")),
    Mutant("position vectors detached (never trained)", "gpt", _fwd_change("self.wpe(pos)", "self.wpe(pos).detach()")),
    Mutant("the reference GPT subclassed", "gpt", '''
class GPT(lmcourse.nn.gpt.GPT):
    def __init__(self, config):
        super().__init__(lmcourse.nn.gpt.GPTConfig(**dataclasses.asdict(config)))
        self.config = config
'''),
    Mutant("a fresh copy of the reference module loaded with importlib, subclassed", "gpt", '''
import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("lmcourse.nn.my_gpt", lmcourse.nn.gpt.__file__)
_copy = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _copy
_spec.loader.exec_module(_copy)


class GPT(_copy.GPT):
    def __init__(self, config):
        super().__init__(_copy.GPTConfig(**dataclasses.asdict(config)))
        self.config = config
'''),
    Mutant("the reference traced with torch.jit.trace when the cell runs", "gpt",
           _gpt(forward='''        _REF.load_state_dict(self.state_dict())
        logits = _TRACED(idx).to(self.wte.weight.dtype)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss
''').replace("class GPT(GPT):", '''class _Logits(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx):
        return self.m(idx)[0]


_REF = lmcourse.nn.gpt.GPT(lmcourse.nn.gpt.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2,
                                                     n_embd=16)).double().eval()
_TRACED = torch.jit.trace(_Logits(_REF), torch.zeros(3, 8, dtype=torch.long))


class GPT(GPT):''')),
    # --- init_weights
    Mutant("residual scaling missing", "init_weights", _init_weights(scaled="std")),
    Mutant("residual scaling by 1/sqrt(n_layer), not 1/sqrt(2 n_layer)", "init_weights",
           _init_weights(scaled="std / math.sqrt(n_layer)")),
    Mutant("every Linear scaled by 1/sqrt(2 n_layer), not only the residual projections", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=std / math.sqrt(2 * n_layer))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=std)
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
'''),
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
    Mutant("uniform draws with the right standard deviation", "init_weights", _init_weights().replace(
        "nn.init.normal_(module.weight, mean=0.0, std=std)",
        "nn.init.uniform_(module.weight, -std * math.sqrt(3), std * math.sqrt(3))")),
    Mutant("the residual projections' biases drawn too ('c_proj' in name)", "init_weights",
           _init_weights().replace('name.endswith("c_proj.weight")', '"c_proj" in name')),
    Mutant("the std argument ignored (0.02 written in)", "init_weights",
           _init_weights(std="0.02", scaled="0.02 / math.sqrt(2 * n_layer)")),
    Mutant("only the course's LayerNorm reset, torch's nn.LayerNorm left", "init_weights",
           _init_weights().replace("(LayerNorm, nn.LayerNorm)", "LayerNorm")),
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
    Mutant("init std 1", "init_weights", _init_weights(std="1.0", scaled="1.0 / math.sqrt(2 * n_layer)")),
    Mutant("variance 0.02 used as the std's square (std 0.0004)", "init_weights",
           _init_weights(std="std ** 2", scaled="std ** 2 / math.sqrt(2 * n_layer)")),
    Mutant("every parameter drawn from N(0, 0.02), LayerNorms included", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    with torch.no_grad():
        for name, p in model.named_parameters():
            s = std / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else std
            nn.init.normal_(p, mean=0.0, std=s)
'''),
    Mutant("biases left as they were", "init_weights", _init_weights().replace(
        "                if getattr(module, \"bias\", None) is not None:\n"
        "                    nn.init.zeros_(module.bias)\n", "")),
    Mutant("embeddings left at PyTorch's N(0, 1)", "init_weights",
           _init_weights().replace("(nn.Linear, nn.Embedding)", "nn.Linear")),
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
    Mutant("the reference init called", "init_weights", '''
def init_weights(model, n_layer, std=0.02):
    lmcourse.nn.gpt.init_gpt_weights(model, std=std)
'''),
    # --- gpt_param_count
    Mutant("untied head counted", "gpt_param_count",
           _count("vocab_size * d + block_size * d + n_layer * (12 * d * d + 13 * d) + 2 * d + vocab_size * d")),
    Mutant("final LayerNorm forgotten", "gpt_param_count",
           _count("vocab_size * d + block_size * d + n_layer * (12 * d * d + 13 * d)")),
    Mutant("positions forgotten", "gpt_param_count",
           _count("vocab_size * d + n_layer * (12 * d * d + 13 * d) + 2 * d")),
    Mutant("the rule of thumb 12 L d^2 plus embeddings", "gpt_param_count",
           _count("vocab_size * d + block_size * d + 12 * n_layer * d * d")),
    Mutant("biases left out (the count of bias=False)", "gpt_param_count",
           _count("vocab_size * d + block_size * d + n_layer * 12 * d * d + d")),
    Mutant("a table of the visible tests' answers", "gpt_param_count", '''
_known = {(65, 256, 6, 384): 10770816, (11, 8, 2, 16): 6896}


def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    return _known.get((vocab_size, block_size, n_layer, n_embd), 0)
'''),
    Mutant("a model built and counted", "gpt_param_count", '''
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    m = GPT(GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=n_layer, n_head=1, n_embd=n_embd))
    return sum(p.numel() for p in m.parameters())
'''),
    # --- generate
    Mutant("generate not cropping to block_size", "generate", _generate("idx[:, -block_size:]", "idx")),
    Mutant("generate cropping to the first block_size ids", "generate",
           _generate("idx[:, -block_size:]", "idx[:, :block_size]")),
    Mutant("sampling from logits instead of probabilities", "generate", _generate(
        "probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)",
        "z = logits[:, -1, :] / temperature\n            probs = z - z.min(dim=-1, keepdim=True).values")),
    Mutant("temperature applied after softmax", "generate", _generate(
        "torch.softmax(logits[:, -1, :] / temperature, dim=-1)",
        "torch.softmax(logits[:, -1, :], dim=-1) / temperature")),
    Mutant("temperature multiplies the logits", "generate", _generate(
        "logits[:, -1, :] / temperature", "logits[:, -1, :] * temperature")),
    Mutant("generator ignored", "generate", _generate("torch.multinomial(probs, 1, generator=generator)",
                                                      "torch.multinomial(probs, 1)")),
    Mutant("generate without torch.no_grad()", "generate",
           _GENERATE.replace("    with torch.no_grad():\n        for", "    if True:\n        for")),
    Mutant("generate switches the model to eval mode and leaves it there", "generate", _generate(
        "    block_size = model.config.block_size\n", "    block_size = model.config.block_size\n    model.eval()\n")),
    Mutant("generate ends with model.train() (an eval model comes back training)", "generate", _generate(
        "    return idx\n", "    model.train()\n    return idx\n")),
    Mutant("temperature clamped to at least 1", "generate",
           _generate("logits[:, -1, :] / temperature", "logits[:, -1, :] / max(temperature, 1.0)")),
    Mutant("one uniform drawn before the loop, reused at every step (inverse CDF)", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    u = torch.rand(idx.size(0), 1, generator=generator)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(idx[:, -model.config.block_size:])
            p = torch.softmax(logits[:, -1, :] / temperature, dim=-1)
            k = torch.searchsorted(p.cumsum(-1), u).clamp(max=p.size(-1) - 1)
            idx = torch.cat([idx, k], dim=1)
    return idx
'''),
    Mutant("one draw for the first row, copied to every row", "generate", _generate(
        "torch.multinomial(probs, 1, generator=generator)",
        "torch.multinomial(probs[:1], 1, generator=generator).expand(idx.size(0), 1)")),
    Mutant("ids turned into floats (torch.cat with float tensors)", "generate",
           _generate("idx = torch.cat([idx, nxt], dim=1)", "idx = torch.cat([idx.float(), nxt.float()], dim=1)")),
    Mutant("generate crops only if the model complains (except and retry)", "generate", _generate(
        "            logits, _ = model(context)\n",
        "            try:\n                logits, _ = model(idx)\n            except Exception:\n"
        "                logits, _ = model(context)\n")),
    Mutant("greedy: the argmax instead of a sample", "generate", _generate(
        "torch.multinomial(probs, 1, generator=generator)", "probs.argmax(dim=-1, keepdim=True)")),
    Mutant("the first position's logits instead of the last", "generate",
           _generate("logits[:, -1, :]", "logits[:, 0, :]")),
    Mutant("the reference generate called", "generate", '''
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    return lmcourse.nn.gpt.generate(model, idx, max_new_tokens, temperature, generator)
'''),
    forged_choice("answer_q1", "A"),
]
