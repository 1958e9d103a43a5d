"""Valid solutions of notebook 05 written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

ALTERNATIVES = [
    # --- GPTConfig
    Alternative("frozen dataclass with dataclasses.field defaults", "gpt_config", '''
import dataclasses


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = dataclasses.field(default=65)  # tokens
    block_size: int = dataclasses.field(default=256)  # context
    n_layer: int = dataclasses.field(default=6)  # blocks
    n_head: int = dataclasses.field(default=6)  # heads
    n_embd: int = dataclasses.field(default=384)  # width
    dropout: float = dataclasses.field(default=0.0)  # dropout
    bias: bool = dataclasses.field(default=True)  # biases
'''),
    Alternative("slots dataclass, string annotations, comments above the fields", "gpt_config", '''
@dataclass(slots=True)
class GPTConfig:
    # |V|, tokens in the vocabulary
    vocab_size: "int" = 65
    # longest context
    block_size: "int" = 256
    # number of blocks
    n_layer: "int" = 6
    # heads per block
    n_head: "int" = 6
    # width of the residual stream
    n_embd: "int" = 384
    # dropout probability
    dropout: "float" = 0.0
    # biases in Linear layers and LayerNorms
    bias: "bool" = True
'''),
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
