"""Valid solutions of notebook 05 written another way. Each must keep every point."""

from lmcourse.grading.mutants import Alternative

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
]
