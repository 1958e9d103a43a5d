"""Typical student bugs for notebook 04 (the transformer block). Each must lose points."""

from lmcourse.authoring.mutants import Mutant, override, override_changed


def _layer_norm(body: str) -> str:
    return "def layer_norm(x, gamma, beta, eps=1e-5):\n" + body


_LN_INIT = '''        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd))
'''
_LN_FORWARD = "        return layer_norm(x, self.weight, self.bias, self.eps)\n"


def _ln_module(init: str = _LN_INIT, forward: str = _LN_FORWARD) -> str:
    """The solution's LayerNorm with only the methods that differ from the solution replaced."""
    return override_changed("LayerNorm", "(self, n_embd, eps=1e-5)", init, _LN_INIT, "(self, x)", forward, _LN_FORWARD)


_MLP_INIT = '''        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)
'''
_MLP_FORWARD = "        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))\n"


def _mlp(init: str, forward: str) -> str:
    """The solution's MLP with only the methods that differ from the solution replaced."""
    return override_changed("MLP", "(self, n_embd, dropout=0.0, bias=True)", init, _MLP_INIT,
                            "(self, x)", forward, _MLP_FORWARD)


# the solution's Embeddings and Block (their __init__ is given in the notebook) with a buggy forward:
# a mutant appends the rest of forward's body
_EMB = "\n" + override("Embeddings", '''
def forward(self, idx):
    B, T = idx.shape
    p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
''')

_BLOCK = "\n" + override("Block", "def forward(self, x):")

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
    Mutant("token ids used as positions", "embeddings",
           _EMB + '''        q = self.wpe(idx) if self.learned else self.pe[idx]
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
    Mutant("residual missing in the MLP sub-layer (post-LN)", "block",
           _BLOCK + _PRE_OK + '''        x = self.ln1(x + self.attn(x))
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
    Mutant("post-LN adds the final residual after the norm", "block",
           _BLOCK + _PRE_OK + '''        x = self.ln1(x + self.attn(x))
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
    Mutant("block delegates to lmcourse.nn.Block", "block",
           _BLOCK + '''        return lmcourse.nn.Block.forward(self, x)
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

# Found in the review of notebook 04 (three students and a red team): slips of a weak student,
# and gamers' ways round the rules. Each loses points; all but the hidden-only ones are caught
# by a visible test.
MUTANTS += [
    # --- layer_norm: slips
    Mutant("layer_norm normalises over dim=1 (right for 2-D inputs only)", "layer_norm", _layer_norm("""
    mu = x.mean(dim=1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
""")),
    Mutant("layer_norm squares eps", "layer_norm", _layer_norm("""
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps ** 2) + beta
""")),
    Mutant("layer_norm scales beta by gamma too", "layer_norm", _layer_norm("""
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return gamma * ((x - mu) / torch.sqrt(var + eps) + beta)
""")),
    Mutant("layer_norm always returns float32", "layer_norm", _layer_norm("""
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (gamma * (x - mu) / torch.sqrt(var + eps) + beta).float()
""")),
    # --- layer_norm: gamers
    Mutant("layer_norm via F.rms_norm of the centred x", "layer_norm", _layer_norm("""
    centred = x - x.mean(-1, keepdim=True)
    return F.rms_norm(centred, (x.shape[-1],), eps=eps) * gamma + beta
""")),
    Mutant("layer_norm via torch.ops.aten.native_layer_norm.default._op", "layer_norm", _layer_norm("""
    return torch.ops.aten.native_layer_norm.default._op(x, [x.shape[-1]], gamma, beta, eps)[0]
""")),
    Mutant("layer_norm via torch's Python decomposition torch._refs.native_layer_norm", "layer_norm", _layer_norm("""
    import torch._refs
    return torch._refs.native_layer_norm(x, (x.shape[-1],), gamma, beta, eps)[0]
""")),
    Mutant("layer_norm via torch._refs._normalize (the decomposition's core)", "layer_norm", _layer_norm("""
    import torch._refs
    return torch._refs._normalize(x, [-1], eps)[0] * gamma + beta
""")),
    Mutant("layer_norm via nn.LayerNorm run with torch.func.functional_call", "layer_norm", _layer_norm("""
    module = nn.LayerNorm(x.shape[-1], eps=eps, dtype=x.dtype)
    return torch.func.functional_call(module, {"weight": gamma, "bias": beta}, (x,))
""")),
    Mutant("layer_norm via F.instance_norm on a reshaped x", "layer_norm", _layer_norm("""
    y = F.instance_norm(x.reshape(1, -1, x.shape[-1]), eps=eps)
    return y.reshape(x.shape) * gamma + beta
""")),
    Mutant("layer_norm catches the refusal of F.layer_norm and retries with torch's function modes off", "layer_norm",
           _layer_norm("""
    try:
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
    except BaseException:
        with torch._C.DisableTorchFunction():
            return torch.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
""")),
    Mutant("layer_norm via a TorchScript function compiled outside the call (torch.jit.script)", "layer_norm", """
@torch.jit.script
def _scripted_layer_norm(x, g, b, eps: float):
    return torch.layer_norm(x, [x.shape[-1]], g, b, eps)


def layer_norm(x, gamma, beta, eps=1e-5):
    return _scripted_layer_norm(x, gamma, beta, float(eps))
"""),
    Mutant("layer_norm returns a tensor subclass", "layer_norm", _layer_norm("""
    class Looks(torch.Tensor):
        pass
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (gamma * (x - mu) / torch.sqrt(var + eps) + beta).as_subclass(Looks)
""")),
    Mutant("layer_norm right only for the widths of the visible tests (hidden tests catch it)", "layer_norm",
           _layer_norm("""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True) if x.shape[-1] in (4, 5, 6) else x.var(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
""")),
    # --- LayerNorm module
    Mutant("LayerNorm passes bias as gamma and weight as beta", "layer_norm_module", _ln_module("""
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd))
""", "        return layer_norm(x, self.bias, self.weight, self.eps)\n")),
    Mutant("LayerNorm creates its parameters in float64", "layer_norm_module", _ln_module("""
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd, dtype=torch.float64))
        self.bias = nn.Parameter(torch.zeros(n_embd, dtype=torch.float64))
""")),
    Mutant("LayerNorm subclasses nn.LayerNorm", "layer_norm_module", """
class LayerNorm(nn.LayerNorm):
    def __init__(self, n_embd, eps=1e-5):
        super().__init__(n_embd, eps=eps)
"""),
    Mutant("LayerNorm via F.rms_norm of the centred x", "layer_norm_module", _ln_module("""
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd))
""",
"        return F.rms_norm(x - x.mean(-1, keepdim=True), self.weight.shape, self.weight, self.eps) + self.bias\n")),
    # --- MLP
    Mutant("MLP without dropout", "mlp", _mlp(_MLP_INIT, """        return self.c_proj(F.gelu(self.c_fc(x)))
""")),
    Mutant("MLP computes in float64 (returns the wrong dtype)", "mlp",
           _mlp(_MLP_INIT, """        h = F.gelu(self.c_fc(x).double())
        return self.dropout(self.c_proj(h.to(x.dtype)).double())
""")),
    Mutant("MLP via nn.TransformerEncoderLayer._ff_block", "mlp", _mlp(_MLP_INIT, """        class Twin:
            pass
        twin = Twin()
        twin.linear1, twin.linear2, twin.activation = self.c_fc, self.c_proj, F.gelu
        twin.dropout, twin.dropout2 = nn.Dropout(0.0), self.dropout
        return nn.TransformerEncoderLayer._ff_block(twin, x)
""")),
    # --- sinusoidal positions
    Mutant("sinusoidal cosine columns use their own index, 10000^(-(2i+1)/d)", "sinusoidal_positions", _sin("""
    t = torch.arange(T, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)
    angles = t * 10000.0 ** (-j / d)
    return torch.where(j % 2 == 0, torch.sin(angles), torch.cos(angles)).to(dtype)
""")),
    Mutant("sinusoidal positions start at t = 1", "sinusoidal_positions", _sin("""
    t = torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe.to(dtype)
""")),
    Mutant("sinusoidal table computed in float32 whatever the dtype", "sinusoidal_positions", _sin("""
    t = torch.arange(T, dtype=torch.float32)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(T, d)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe.to(dtype)
""")),
    Mutant("sinusoidal tables precomputed with the reference outside the call (hidden tests catch it)",
           "sinusoidal_positions", """
import lmcourse.nn.block as _block
_TABLES = {d: _block.sinusoidal_positions(256, d, dtype=torch.float64) for d in range(2, 130, 2)}


def sinusoidal_positions(T, d, dtype=torch.float32):
    return _TABLES[d][:T].clone().to(dtype)
"""),
    # --- rotation matrix
    Mutant("rotation matrix with the pair index off by one, 10000^(-2(i+1)/d)", "rotation_matrix", _rot("""
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = k * 10000.0 ** (-2 * (i + 1) / d)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
    return R.to(dtype)
""")),
    Mutant("rotation matrix with exponent (2i+1)/d", "rotation_matrix", _rot("""
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = k * 10000.0 ** (-(2 * i + 1) / d)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
    return R.to(dtype)
""")),
    Mutant("rotation matrix with its blocks one channel off the diagonal pairs", "rotation_matrix", _rot("""
    R = torch.eye(d, dtype=torch.float64)
    for i in range(d // 2 - 1):
        a = k * 10000.0 ** (-2 * i / d)
        R[2 * i + 1, 2 * i + 1], R[2 * i + 1, 2 * i + 2] = math.cos(a), math.sin(a)
        R[2 * i + 2, 2 * i + 1], R[2 * i + 2, 2 * i + 2] = -math.sin(a), math.cos(a)
    return R.to(dtype)
""")),
    # --- embeddings
    Mutant("embeddings without dropout", "embeddings", _EMB + """        return self.wte(idx) + p
"""),
    Mutant("embeddings with dropout on the positions only", "embeddings",
           _EMB + """        return self.wte(idx) + self.drop(p)
"""),
    Mutant("embeddings with the positions reversed", "embeddings",
           _EMB + """        return self.drop(self.wte(idx) + p.flip(0))
"""),
    Mutant("embeddings take T from the batch axis (idx.shape[0])", "embeddings", override("Embeddings", """
    def forward(self, idx):
        T = idx.shape[0]
        p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
        return self.drop(self.wte(idx) + p)
""")),
    Mutant("embeddings add the whole block_size position table", "embeddings",
           _EMB + """        table = self.wpe.weight if self.learned else self.pe
        return self.drop(self.wte(idx) + table)
"""),
    Mutant("embeddings recompute the sinusoidal table with lmcourse.nn", "embeddings",
           _EMB + """        if not self.learned:
            p = lmcourse.nn.sinusoidal_positions(T, self.wte.weight.shape[1])
        return self.drop(self.wte(idx) + p)
"""),
    # --- block
    Mutant("pre-LN uses ln1 for both sub-layers", "block", _BLOCK + """        if self.prenorm:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln1(x))
""" + _POST_OK),
    Mutant("pre-LN with a LayerNorm on the output as well", "block", _BLOCK + """        if self.prenorm:
            x = x + self.attn(self.ln1(x))
            return self.ln2(x + self.mlp(self.ln2(x)))
""" + _POST_OK),
    Mutant("pre-LN MLP reads the block's input x instead of h", "block", _BLOCK + """        if self.prenorm:
            h = x + self.attn(self.ln1(x))
            return h + self.mlp(self.ln2(x))
""" + _POST_OK),
    Mutant("attention and MLP in parallel (x + attn(ln1 x) + mlp(ln2 x))", "block", _BLOCK + """        if self.prenorm:
            return x + self.attn(self.ln1(x)) + self.mlp(self.ln2(x))
""" + _POST_OK),
    Mutant("block detaches the attention output (no gradient reaches the attention)", "block",
           _BLOCK + """        if self.prenorm:
            x = x + self.attn(self.ln1(x)).detach()
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x).detach())
        return self.ln2(x + self.mlp(x))
"""),
    Mutant("block via torch._transformer_encoder_layer_fwd (the encoder layer's fused kernel)", "block", _BLOCK + """
        T, a, m = x.shape[1], self.attn, self.mlp
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1) if a.causal else None
        return torch._transformer_encoder_layer_fwd(
            x, x.shape[-1], a.n_head, a.c_attn.weight, a.c_attn.bias, a.c_proj.weight, a.c_proj.bias, True,
            self.prenorm, self.ln1.eps, self.ln1.weight, self.ln1.bias, self.ln2.weight, self.ln2.bias,
            m.c_fc.weight, m.c_fc.bias, m.c_proj.weight, m.c_proj.bias, mask)
"""),
    Mutant("block runs a TorchScript-compiled nn.TransformerEncoderLayer built in __init__", "block",
           override("Block", """
    def __init__(self, n_embd, n_head, block_size, prenorm=True, causal=True, dropout=0.0, bias=True):
        super().__init__(n_embd, n_head, block_size, prenorm=prenorm, causal=causal, dropout=dropout, bias=bias)
        self.causal = causal
        self.twin = torch.jit.script(nn.TransformerEncoderLayer(
            n_embd, n_head, dim_feedforward=4 * n_embd, dropout=0.0, activation="gelu", batch_first=True,
            norm_first=prenorm).train())
""", """
    def forward(self, x):
        r = self.twin
        if r.linear1.weight.dtype != x.dtype:
            r.to(x.dtype)
        with torch.no_grad():
            for dst, src in [(r.self_attn.in_proj_weight, self.attn.c_attn.weight),
                             (r.self_attn.in_proj_bias, self.attn.c_attn.bias),
                             (r.self_attn.out_proj.weight, self.attn.c_proj.weight),
                             (r.self_attn.out_proj.bias, self.attn.c_proj.bias),
                             (r.linear1.weight, self.mlp.c_fc.weight), (r.linear1.bias, self.mlp.c_fc.bias),
                             (r.linear2.weight, self.mlp.c_proj.weight), (r.linear2.bias, self.mlp.c_proj.bias),
                             (r.norm1.weight, self.ln1.weight), (r.norm1.bias, self.ln1.bias),
                             (r.norm2.weight, self.ln2.weight), (r.norm2.bias, self.ln2.bias)]:
                dst.copy_(src)
        T = x.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1) if self.causal else None
        return r(x, src_mask=mask, is_causal=self.causal)
""")),
    # --- parameter count
    Mutant("parameter count: LayerNorms without beta (2d)", "block_param_count", """
def block_param_count(d):
    return 4 * d * d + 4 * d + 8 * d * d + 5 * d + 2 * d
"""),
    Mutant("parameter count: attention without its biases", "block_param_count", """
def block_param_count(d):
    return 4 * d * d + 8 * d * d + 5 * d + 4 * d
"""),
    Mutant("parameter count: the MLP's output bias forgotten", "block_param_count", """
def block_param_count(d):
    return 4 * d * d + 4 * d + 8 * d * d + 4 * d + 4 * d
"""),
    Mutant("parameter count hard-coded for the visible widths (hidden tests catch it)", "block_param_count", """
def block_param_count(d):
    return {4: 244, 768: 12 * 768 ** 2 + 13 * 768}.get(d, 12 * d * d)
"""),
    # --- TorchScript (switched off by the setup cell, so compiled references run as Python)
    Mutant('MLP runs a TorchScript-compiled lmcourse.nn.MLP that shares its layers', 'mlp', override('MLP', """
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__(n_embd, dropout=dropout, bias=bias)
        ref = lmcourse.nn.MLP(lmcourse.nn.BlockConfig(n_embd=n_embd, n_head=1, dropout=dropout, bias=bias))
        ref.c_fc, ref.c_proj, ref.dropout = self.c_fc, self.c_proj, self.dropout
        self._twin = [torch.jit.script(ref)]
""", """
    def forward(self, x):
        return self._twin[0](x)
""")),
    Mutant('embeddings through a TorchScript-compiled lmcourse.nn.LearnedPositionEmbedding', 'embeddings',
           override('Embeddings', """
    def __init__(self, vocab_size, n_embd, block_size, learned=True, dropout=0.0):
        super().__init__(vocab_size, n_embd, block_size, learned=learned, dropout=dropout)
        if learned:
            ref = lmcourse.nn.LearnedPositionEmbedding(
                lmcourse.nn.BlockConfig(n_embd=n_embd, n_head=1, block_size=block_size))
            ref.wpe = self.wpe
            self._pos = [torch.jit.script(ref)]
""", """
    def forward(self, idx):
        T = idx.shape[1]
        p = self._pos[0](T) if self.learned else self.pe[:T]
        return self.drop(self.wte(idx) + p)
""")),
    Mutant('parameter count through a TorchScript-compiled lmcourse.nn.block_param_count', 'block_param_count', """
_bpc = torch.jit.script(lmcourse.nn.block_param_count)
def block_param_count(d):
    return _bpc(d)
"""),
]
