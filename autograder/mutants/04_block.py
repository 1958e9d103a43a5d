"""Typical student bugs for notebook 04 (the transformer block). Each must lose points."""

from lmcourse.grading.mutants import Mutant


def _layer_norm(body: str) -> str:
    return "def layer_norm(x, gamma, beta, eps=1e-5):\n" + body


def _ln_module(init: str, forward: str = "        return layer_norm(x, self.weight, self.bias, self.eps)\n") -> str:
    return ("class LayerNorm(nn.Module):\n    def __init__(self, n_embd, eps=1e-5):\n        super().__init__()\n"
            + init + "\n    def forward(self, x):\n" + forward)


def _mlp(init: str, forward: str) -> str:
    return ("class MLP(nn.Module):\n    def __init__(self, n_embd, dropout=0.0, bias=True):\n        super().__init__()\n"
            + init + "\n    def forward(self, x):\n" + forward)


_MLP_INIT = '''        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)
'''

_EMB = '''
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
        B, T = idx.shape
        p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
'''

_BLOCK = '''
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

_PRE_OK = '''        if self.prenorm:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
'''
_POST_OK = '''        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))
'''


def _sin(body: str) -> str:
    return "def sinusoidal_positions(T, d, dtype=torch.float32):\n" + body


def _rot(body: str) -> str:
    return "def rotation_matrix(k, d, dtype=torch.float32):\n" + body


MUTANTS = [
    # --- layer_norm
    Mutant("layer_norm with the unbiased variance (x.var() divides by d - 1)", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) + beta
''')),
    Mutant("layer_norm normalises over the batch axis (dim=0)", "layer_norm", _layer_norm('''
    mu = x.mean(dim=0, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''')),
    Mutant("layer_norm normalises over the time axis (dim=-2)", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-2, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-2, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''')),
    Mutant("layer_norm normalises over the whole tensor", "layer_norm", _layer_norm('''
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''')),
    Mutant("layer_norm puts eps outside the square root", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mu) / (torch.sqrt(var) + eps) + beta
''')),
    Mutant("layer_norm with gamma and beta swapped", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return beta * (x - mu) / torch.sqrt(var + eps) + gamma
''')),
    Mutant("layer_norm ignores gamma and beta", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps)
''')),
    Mutant("layer_norm without keepdim (broadcasts the wrong way)", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-1)
    var = ((x - mu) ** 2).mean(dim=-1)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''')),
    Mutant("layer_norm changes x in place", "layer_norm", _layer_norm('''
    x -= x.mean(dim=-1, keepdim=True)
    var = (x ** 2).mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt(var + eps) + beta
''')),
    Mutant("layer_norm computes in float64 (returns the wrong dtype)", "layer_norm", _layer_norm('''
    x64 = x.double()
    mu = x64.mean(dim=-1, keepdim=True)
    var = ((x64 - mu) ** 2).mean(dim=-1, keepdim=True)
    return gamma.double() * (x64 - mu) / torch.sqrt(var + eps) + beta.double()
''')),
    Mutant("layer_norm detaches the statistics (no gradient through mean and variance)", "layer_norm", _layer_norm('''
    mu = x.mean(dim=-1, keepdim=True).detach()
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True).detach()
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''')),
    Mutant("layer_norm calls F.layer_norm", "layer_norm", _layer_norm('''
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)
''')),
    # --- LayerNorm module
    Mutant("LayerNorm initialises gamma to zeros", "layer_norm_module", _ln_module('''
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd))
''')),
    Mutant("LayerNorm ignores its eps", "layer_norm_module", _ln_module('''
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd))
''', "        return layer_norm(x, self.weight, self.bias)\n")),
    Mutant("LayerNorm keeps gamma and beta as plain tensors (not parameters)", "layer_norm_module", _ln_module('''
        self.eps = eps
        self.weight = torch.ones(n_embd)
        self.bias = torch.zeros(n_embd)
''')),
    Mutant("LayerNorm wraps nn.LayerNorm", "layer_norm_module", _ln_module('''
        self.eps = eps
        self.ln = nn.LayerNorm(n_embd, eps=eps)
        self.weight = self.ln.weight
        self.bias = self.ln.bias
''', "        return self.ln(x)\n")),
    # --- MLP
    Mutant("MLP hidden width d instead of 4d", "mlp", _mlp('''
        self.c_fc = nn.Linear(n_embd, n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)
''', "        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))\n")),
    Mutant("MLP with ReLU where the tests ask for GELU", "mlp", _mlp(_MLP_INIT,
           "        return self.dropout(self.c_proj(F.relu(self.c_fc(x))))\n")),
    Mutant("MLP with the tanh approximation of GELU", "mlp", _mlp(_MLP_INIT,
           "        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate='tanh')))\n")),
    Mutant("MLP dropout active in eval mode (F.dropout defaults to training=True)", "mlp", _mlp('''
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout
''', "        return F.dropout(self.c_proj(F.gelu(self.c_fc(x))), self.p)\n")),
    Mutant("MLP applies dropout to the hidden layer instead of the output", "mlp", _mlp(_MLP_INIT,
           "        return self.c_proj(self.dropout(F.gelu(self.c_fc(x))))\n")),
    Mutant("MLP applies GELU after the output projection too", "mlp", _mlp(_MLP_INIT,
           "        return self.dropout(F.gelu(self.c_proj(F.gelu(self.c_fc(x)))))\n")),
    Mutant("MLP built from lmcourse.nn.MLP", "mlp", _mlp('''
        self.inner = lmcourse.nn.MLP(lmcourse.nn.BlockConfig(n_embd=n_embd, n_head=1, dropout=dropout, bias=bias))
        self.c_fc, self.c_proj, self.dropout = self.inner.c_fc, self.inner.c_proj, self.inner.dropout
''', "        return self.inner(x)\n")),
    # --- sinusoidal positions
    Mutant("sinusoidal positions with sin and cos swapped", "sinusoidal_positions", _sin('''
    t = torch.arange(T, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.cos(t * w)
    pe[:, 1::2] = torch.sin(t * w)
    return pe.to(dtype)
''')),
    Mutant("sinusoidal positions with exponent i/d instead of 2i/d", "sinusoidal_positions", _sin('''
    t = torch.arange(T, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(d // 2, dtype=torch.float64) / d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe.to(dtype)
''')),
    Mutant("sinusoidal positions with base 1000", "sinusoidal_positions", _sin('''
    t = torch.arange(T, dtype=torch.float64)[:, None]
    w = 1000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe.to(dtype)
''')),
    Mutant("sinusoidal positions: sines in the first half, cosines in the second", "sinusoidal_positions", _sin('''
    t = torch.arange(T, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.cat([torch.sin(t * w), torch.cos(t * w)], dim=1).to(dtype)
''')),
    Mutant("sinusoidal positions ignore the dtype argument", "sinusoidal_positions", _sin('''
    t = torch.arange(T, dtype=torch.float32)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(T, d)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe
''')),
    # --- rotation matrix
    Mutant("rotation by -k (each block transposed)", "rotation_matrix", _rot('''
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = k * 10000.0 ** (-2 * i / d)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), -math.sin(a)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = math.sin(a), math.cos(a)
    return R.to(dtype)
''')),
    Mutant("rotation matrix with exponent i/d", "rotation_matrix", _rot('''
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = k * 10000.0 ** (-i / d)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
    return R.to(dtype)
''')),
    Mutant("rotation matrix with the same angle k for every pair", "rotation_matrix", _rot('''
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(k), math.sin(k)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(k), math.cos(k)
    return R.to(dtype)
''')),
    # --- embeddings
    Mutant("positions added twice", "embeddings", _EMB + '''        return self.drop(self.wte(idx) + p + p)
'''),
    Mutant("token ids used as positions", "embeddings", _EMB + '''        q = self.wpe(idx) if self.learned else self.pe[idx]
        return self.drop(self.wte(idx) + q)
'''),
    Mutant("positions left out", "embeddings", _EMB + '''        return self.drop(self.wte(idx))
'''),
    # --- block
    Mutant("residual missing in the attention sub-layer (pre-LN)", "block", _BLOCK + '''        if self.prenorm:
            x = self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
''' + _POST_OK),
    Mutant("residual missing in the MLP sub-layer (pre-LN)", "block", _BLOCK + '''        if self.prenorm:
            x = x + self.attn(self.ln1(x))
            return self.mlp(self.ln2(x))
''' + _POST_OK),
    Mutant("residual missing in the MLP sub-layer (post-LN)", "block", _BLOCK + _PRE_OK + '''        x = self.ln1(x + self.attn(x))
        return self.ln2(self.mlp(x))
'''),
    Mutant("pre-LN block with the LayerNorm in the post-LN place", "block", _BLOCK + '''        if self.prenorm:
            x = x + self.ln1(self.attn(x))
            return x + self.ln2(self.mlp(x))
''' + _POST_OK),
    Mutant("pre-LN residual adds the normalised x", "block", _BLOCK + '''        if self.prenorm:
            x = self.ln1(x)
            x = x + self.attn(x)
            x = self.ln2(x)
            return x + self.mlp(x)
''' + _POST_OK),
    Mutant("post-LN adds the final residual after the norm", "block", _BLOCK + _PRE_OK + '''        x = self.ln1(x + self.attn(x))
        return x + self.ln2(self.mlp(x))
'''),
    Mutant("prenorm switch inverted", "block", _BLOCK + '''        if not self.prenorm:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
''' + _POST_OK),
    Mutant("post-LN uses ln1 for both sub-layers", "block", _BLOCK + _PRE_OK + '''        x = self.ln1(x + self.attn(x))
        return self.ln1(x + self.mlp(x))
'''),
    Mutant("block changes x in place", "block", _BLOCK + '''        if self.prenorm:
            x += self.attn(self.ln1(x))
            x += self.mlp(self.ln2(x))
            return x
''' + _POST_OK),
    Mutant("block delegates to lmcourse.nn.Block", "block", _BLOCK + '''        return lmcourse.nn.Block.forward(self, x)
'''),
    # --- parameter count
    Mutant("parameter count without biases (12 d^2)", "block_param_count", '''
def block_param_count(d):
    return 12 * d * d
'''),
    Mutant("parameter count with the MLP width d", "block_param_count", '''
def block_param_count(d):
    return 4 * d * d + 4 * d + 2 * d * d + 2 * d + 4 * d
'''),
    Mutant("parameter count forgets the LayerNorms", "block_param_count", '''
def block_param_count(d):
    return 12 * d * d + 9 * d
'''),
    Mutant("parameter count as a float", "block_param_count", '''
def block_param_count(d):
    return 12.0 * d ** 2 + 13.0 * d
'''),
]
