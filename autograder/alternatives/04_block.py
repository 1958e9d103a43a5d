"""Valid solutions of notebook 04 written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

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

# Found in the review of notebook 04 (a strong student's own solutions): each keeps every point.
ALTERNATIVES += [
    # --- layer_norm
    Alternative("layer_norm in float64 inside, cast back to x's dtype", "layer_norm", """
def layer_norm(x, gamma, beta, eps=1e-5):
    x64 = x.double()
    mu = x64.mean(-1, keepdim=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdim=True)
    return (gamma.double() * (x64 - mu) / torch.sqrt(var + eps) + beta.double()).to(x.dtype)
"""),
    Alternative("layer_norm with the variance from torch.linalg.vector_norm", "layer_norm", """
def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    var = torch.linalg.vector_norm(centred, dim=-1, keepdim=True) ** 2 / x.shape[-1]
    return centred / torch.sqrt(var + eps) * gamma + beta
"""),
    Alternative("layer_norm with x.std(unbiased=False) squared", "layer_norm", """
def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True, unbiased=False)
    return gamma * centred / (std * std + eps).sqrt() + beta
"""),
    Alternative("layer_norm with eps as a 0-d tensor", "layer_norm", """
def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + torch.tensor(eps)) + beta
"""),
    Alternative("layer_norm as a loop over the positions, stacked back", "layer_norm", """
def layer_norm(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]
    rows = []
    for r in x.reshape(-1, d):
        m = r.sum() / d
        v = ((r - m) ** 2).sum() / d
        rows.append((r - m) / (v + eps) ** 0.5)
    return torch.stack(rows).reshape(x.shape) * gamma + beta
"""),
    # --- LayerNorm module
    Alternative("LayerNorm that also keeps normalized_shape and an eps buffer", "layer_norm_module", """
class LayerNorm(nn.Module):
    def __init__(self, n_embd, eps=1e-5):
        super().__init__()
        self.normalized_shape = (n_embd,)
        self.eps = eps
        self.register_buffer("eps_tensor", torch.tensor(eps))
        self.weight = nn.Parameter(torch.ones(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd))

    def forward(self, x):
        return layer_norm(x, self.weight, self.bias, eps=self.eps)
"""),
    # --- MLP
    Alternative("MLP as an nn.Sequential of the named layers", "mlp", """
class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.net = nn.Sequential(self.c_fc, nn.GELU(), self.c_proj, self.dropout)

    def forward(self, x):
        return self.net(x)
"""),
    Alternative("MLP with the GELU in float64, cast back", "mlp", """
class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = F.gelu(self.c_fc(x).double()).to(x.dtype)
        return self.dropout(self.c_proj(h))
"""),
    Alternative("MLP with einsum on the layers' weights", "mlp", """
class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = torch.einsum("...c,hc->...h", x, self.c_fc.weight)
        if self.c_fc.bias is not None:
            h = h + self.c_fc.bias
        y = torch.einsum("...h,ch->...c", F.gelu(h), self.c_proj.weight)
        if self.c_proj.bias is not None:
            y = y + self.c_proj.bias
        return self.dropout(y)
"""),
    Alternative("MLP with an in-place dropout module", "mlp", """
class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout, inplace=True)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))
"""),
    # --- sinusoidal positions
    Alternative("sinusoidal table from complex numbers (torch.polar), (cos, sin) flipped", "sinusoidal_positions", """
def sinusoidal_positions(T, d, dtype=torch.float32):
    t = torch.arange(T, dtype=torch.float64)
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.polar(torch.ones(T, d // 2, dtype=torch.float64), torch.outer(t, w))
    return torch.view_as_real(z).flip(-1).reshape(T, d).to(dtype)
"""),
    Alternative("sinusoidal table filled pair of columns by pair of columns", "sinusoidal_positions", """
def sinusoidal_positions(T, d, dtype=torch.float32):
    pe = torch.empty(T, d, dtype=torch.float64)
    pos = torch.arange(T, dtype=torch.float64)
    for j in range(0, d, 2):
        w = 1.0 / (10000 ** (j / d))
        pe[:, j] = torch.sin(pos * w)
        pe[:, j + 1] = torch.cos(pos * w)
    return pe.to(dtype=dtype)
"""),
    # --- rotation matrix
    Alternative("rotation matrix read off its own sinusoidal table (row k holds sin and cos of k w_i)",
                "rotation_matrix", """
def rotation_matrix(k, d, dtype=torch.float32):
    row = sinusoidal_positions(k + 1, d, dtype=torch.float64)[k]
    s, c = row[0::2], row[1::2]
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c[i], s[i]
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s[i], c[i]
    return R.to(dtype)
"""),
    Alternative("rotation matrix as the matrix exponential of k times a skew-symmetric generator",
                "rotation_matrix", """
def rotation_matrix(k, d, dtype=torch.float32):
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    G = torch.zeros(d, d, dtype=torch.float64)
    i = torch.arange(0, d, 2)
    G[i, i + 1] = w
    G[i + 1, i] = -w
    return torch.linalg.matrix_exp(k * G).to(dtype)
"""),
    Alternative("rotation matrix computed in the requested dtype", "rotation_matrix", """
def rotation_matrix(k, d, dtype=torch.float32):
    R = torch.zeros(d, d, dtype=dtype)
    for i in range(d // 2):
        a = torch.tensor(k / 10000 ** (2 * i / d), dtype=dtype)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.stack([torch.stack([a.cos(), a.sin()]),
                                                           torch.stack([-a.sin(), a.cos()])])
    return R
"""),
    # --- embeddings
    Alternative("embeddings with positions expanded to (B, T) and indexed", "embeddings", _EMB_INIT + """
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device).unsqueeze(0).expand(B, T)
        p = self.wpe(pos) if self.learned else self.pe[pos]
        return self.drop(self.wte(idx) + p)
"""),
    Alternative("embeddings with F.dropout(training=self.training)", "embeddings", _EMB_INIT + """
        T = idx.shape[-1]
        p = self.wpe.weight[:T] if self.learned else self.pe[:T]
        return F.dropout(self.wte(idx) + p, self.drop.p, self.training)
"""),
    # --- block
    Alternative("block with torch.add and explicit .forward calls", "block", _BLOCK_INIT + """
        if self.prenorm:
            h = torch.add(x, self.attn.forward(self.ln1.forward(x)))
            return torch.add(h, self.mlp.forward(self.ln2.forward(h)))
        h = self.ln1(torch.add(x, self.attn(x)))
        return self.ln2(torch.add(h, self.mlp(h)))
"""),
    Alternative("block with one helper method per sub-layer", "block", _BLOCK_INIT + """
        return self._mlp_part(self._attn_part(x))

    def _attn_part(self, x):
        return x + self.attn(self.ln1(x)) if self.prenorm else self.ln1(x + self.attn(x))

    def _mlp_part(self, x):
        return x + self.mlp(self.ln2(x)) if self.prenorm else self.ln2(x + self.mlp(x))
"""),
    # --- parameter count
    Alternative("parameter count from a list of parameter shapes", "block_param_count", """
def block_param_count(d):
    shapes = [(d, d)] * 4 + [(d,)] * 4 + [(4 * d, d), (4 * d,), (d, 4 * d), (d,)] + [(d,)] * 4
    total = 0
    for shape in shapes:
        n = 1
        for k in shape:
            n *= k
        total += n
    return total
"""),
    Alternative("parameter count as 12 d ** 2 + 13 d", "block_param_count", """
def block_param_count(d):
    return 12 * d ** 2 + 13 * d
"""),
]
