"""Valid solutions of notebook 04 written another way. Each must keep every point."""

from lmcourse.grading.mutants import Alternative

_EMB_INIT = '''
class Embeddings(nn.Module):
    def __init__(self, vocab_size, n_embd, block_size, learned=True, dropout=0.0):
        super().__init__()
        self.learned = learned
        self.wte = nn.Embedding(vocab_size, n_embd)
        if learned:
            self.wpe = nn.Embedding(block_size, n_embd)
        else:
            self.register_buffer("pe", sinusoidal_positions(block_size, n_embd), persistent=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, idx):
'''

_BLOCK_INIT = '''
class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, prenorm=True, causal=True, dropout=0.0, bias=True):
        super().__init__()
        self.prenorm = prenorm
        self.ln1 = LayerNorm(n_embd)
        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, n_head=n_head, block_size=block_size,
                                                        dropout=dropout, bias=bias, causal=causal))
        self.ln2 = LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout=dropout, bias=bias)

    def forward(self, x):
'''

ALTERNATIVES = [
    # --- layer_norm
    Alternative("layer_norm with torch.var(unbiased=False)", "layer_norm", '''
def layer_norm(x, gamma, beta, eps=1e-5):
    mu = torch.mean(x, dim=-1, keepdim=True)
    var = torch.var(x, dim=-1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta
'''),
    Alternative("layer_norm with var_mean(correction=0) and rsqrt", "layer_norm", '''
def layer_norm(x, gamma, beta, eps=1e-5):
    var, mu = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
    return torch.addcmul(beta, (x - mu) * torch.rsqrt(var + eps), gamma)
'''),
    Alternative("layer_norm as mean of squares minus squared mean", "layer_norm", '''
def layer_norm(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]
    mu = x.sum(-1, keepdim=True) / d
    var = (x * x).sum(-1, keepdim=True) / d - mu * mu
    x_hat = (x - mu) / (var + eps) ** 0.5
    return x_hat * gamma + beta
'''),
    Alternative("layer_norm with einsum sums", "layer_norm", '''
def layer_norm(x, gamma, beta, eps=1e-5):
    d = x.size(-1)
    mu = torch.einsum("...d->...", x)[..., None] / d
    centred = x - mu
    var = torch.einsum("...d,...d->...", centred, centred)[..., None] / d
    return torch.einsum("...d,d->...d", centred / (var + eps).sqrt(), gamma) + beta
'''),
    # --- LayerNorm module
    Alternative("LayerNorm with register_parameter and keyword arguments", "layer_norm_module", '''
class LayerNorm(nn.Module):
    def __init__(self, n_embd, eps=1e-5):
        super().__init__()
        self.register_parameter("weight", nn.Parameter(torch.ones(n_embd)))
        self.register_parameter("bias", nn.Parameter(torch.zeros(n_embd)))
        self.eps = float(eps)

    def forward(self, x):
        return layer_norm(x, gamma=self.weight, beta=self.bias, eps=self.eps)
'''),
    Alternative("LayerNorm with the normalisation inline", "layer_norm_module", '''
class LayerNorm(nn.Module):
    def __init__(self, n_embd, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.full((n_embd,), 1.0))
        self.bias = nn.Parameter(torch.full((n_embd,), 0.0))

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - mu) / (var + self.eps).sqrt() + self.bias
'''),
    # --- MLP
    Alternative("MLP with the erf formula of GELU and F.dropout(training=self.training)", "mlp", '''
class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__()
        hidden = 4 * n_embd
        self.c_fc = nn.Linear(n_embd, hidden, bias=bias)
        self.c_proj = nn.Linear(hidden, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout

    def forward(self, x):
        h = self.c_fc(x)
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        return F.dropout(self.c_proj(h), p=self.p, training=self.training)
'''),
    Alternative("MLP with an nn.GELU module, step by step", "mlp", '''
class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.act = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        hidden = self.act(self.c_fc(x))
        out = self.c_proj(hidden)
        return self.dropout(out)
'''),
    # --- sinusoidal positions
    Alternative("sinusoidal table by stacking (sin, cos) pairs and interleaving with a reshape",
                "sinusoidal_positions", '''
def sinusoidal_positions(T, d, dtype=torch.float32):
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d // 2, dtype=torch.float64)
    angles = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2 * i / d)   # (T, d/2)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(T, d).to(dtype)
'''),
    Alternative("sinusoidal table with Python loops and math", "sinusoidal_positions", '''
def sinusoidal_positions(T, d, dtype=torch.float32):
    rows = []
    for t in range(T):
        row = []
        for i in range(d // 2):
            angle = t / 10000 ** (2 * i / d)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=dtype).reshape(T, d)
'''),
    Alternative("sinusoidal table with exp(-log(10000) 2i/d), computed in the requested dtype",
                "sinusoidal_positions", '''
def sinusoidal_positions(T, d, dtype=torch.float32):
    work = torch.float64 if dtype in (torch.float16, torch.bfloat16) else dtype
    position = torch.arange(0, T, dtype=work)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=work) * (-math.log(10000.0) / d))
    pe = torch.empty(T, d, dtype=work)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe.to(dtype)
'''),
    # --- rotation matrix
    Alternative("rotation matrix with torch.block_diag", "rotation_matrix", '''
def rotation_matrix(k, d, dtype=torch.float32):
    blocks = []
    for i in range(d // 2):
        a = torch.tensor(k * 10000.0 ** (-2 * i / d), dtype=torch.float64)
        blocks.append(torch.stack([torch.stack([a.cos(), a.sin()]), torch.stack([-a.sin(), a.cos()])]))
    return torch.block_diag(*blocks).to(dtype)
'''),
    Alternative("rotation matrix vectorised with index assignment", "rotation_matrix", '''
def rotation_matrix(k, d, dtype=torch.float32):
    w = 1.0 / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(k * w), torch.sin(k * w)
    even = torch.arange(0, d, 2)
    R = torch.zeros(d, d, dtype=torch.float64)
    R[even, even] = c
    R[even, even + 1] = s
    R[even + 1, even] = -s
    R[even + 1, even + 1] = c
    return R.to(dtype)
'''),
    Alternative("rotation matrix as a Kronecker sum of 2x2 rotations", "rotation_matrix", '''
def rotation_matrix(k, d, dtype=torch.float32):
    n = d // 2
    w = 10000.0 ** (-2 * torch.arange(n, dtype=torch.float64) / d)
    c, s = torch.cos(k * w), torch.sin(k * w)
    R = torch.kron(torch.diag(c), torch.eye(2, dtype=torch.float64))
    R = R + torch.kron(torch.diag(s), torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64))
    return R.to(dtype)
'''),
    # --- embeddings
    Alternative("embeddings with the position table sliced and unsqueezed", "embeddings", _EMB_INIT + '''
        T = idx.size(1)
        table = self.wpe.weight if self.learned else self.pe
        x = self.wte(idx) + table[:T].unsqueeze(0)
        return self.drop(x)
'''),
    # --- block
    Alternative("block with named sub-layer results", "block", _BLOCK_INIT + '''
        if self.prenorm:
            a = self.attn(self.ln1(x))
            h = x + a
            m = self.mlp(self.ln2(h))
            return h + m
        a = self.attn(x)
        h = self.ln1(x + a)
        m = self.mlp(h)
        return self.ln2(h + m)
'''),
    Alternative("block as a loop over (norm, sub-layer) pairs", "block", _BLOCK_INIT + '''
        for norm, layer in ((self.ln1, self.attn), (self.ln2, self.mlp)):
            x = x + layer(norm(x)) if self.prenorm else norm(x + layer(x))
        return x
'''),
    # --- parameter count
    Alternative("parameter count part by part", "block_param_count", '''
def block_param_count(d):
    linear = lambda n_in, n_out: n_in * n_out + n_out      # weight and bias
    attention = 4 * linear(d, d)
    mlp = linear(d, 4 * d) + linear(4 * d, d)
    layer_norms = 2 * (d + d)
    return attention + mlp + layer_norms
'''),
    Alternative("parameter count as the factored polynomial", "block_param_count", '''
def block_param_count(d):
    return int(d * (12 * d + 13))
'''),
]
