"""Notebook 04 (the transformer block): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, override, patch


def _layer_norm(body: str) -> str:
    return "def layer_norm(x, gamma, beta, eps=1e-5):\n" + body


def _sin(body: str) -> str:
    return "def sinusoidal_positions(T, d, dtype=torch.float32):\n" + body


def _rot(body: str) -> str:
    return "def rotation_matrix(k, d, dtype=torch.float32):\n" + body


MUTANTS = [
    # --- layer_norm
    Mutant("layer_norm with the unbiased variance (x.var() divides by d - 1)", "layer_norm", patch(
        ('''
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', "return gamma * (x - mu) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) + beta"))),
    Mutant("layer_norm normalises over the batch axis (dim=0)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean(dim=0, keepdim=True)
var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
'''))),
    Mutant("layer_norm normalises over the time axis (dim=-2)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean(dim=-2, keepdim=True)
var = ((x - mu) ** 2).mean(dim=-2, keepdim=True)
'''))),
    Mutant("layer_norm normalises over the whole tensor", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean()
var = ((x - mu) ** 2).mean()
'''))),
    Mutant("layer_norm puts eps outside the square root", "layer_norm", patch(
        ("return gamma * (x - mu) / torch.sqrt(var + eps) + beta",
         "return gamma * (x - mu) / (torch.sqrt(var) + eps) + beta"))),
    Mutant("layer_norm with gamma and beta swapped", "layer_norm", patch(
        ("return gamma * (x - mu) / torch.sqrt(var + eps) + beta",
         "return beta * (x - mu) / torch.sqrt(var + eps) + gamma"))),
    Mutant("layer_norm ignores gamma and beta", "layer_norm", patch(
        ("return gamma * (x - mu) / torch.sqrt(var + eps) + beta", "return (x - mu) / torch.sqrt(var + eps)"))),
    Mutant("layer_norm without keepdim (broadcasts the wrong way)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean(dim=-1)
var = ((x - mu) ** 2).mean(dim=-1)
'''))),
    Mutant("layer_norm changes x in place", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
x -= x.mean(dim=-1, keepdim=True)
var = (x ** 2).mean(dim=-1, keepdim=True)
return gamma * x / torch.sqrt(var + eps) + beta
'''))),
    Mutant("layer_norm computes in float64 (returns the wrong dtype)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
x64 = x.double()
mu = x64.mean(dim=-1, keepdim=True)
var = ((x64 - mu) ** 2).mean(dim=-1, keepdim=True)
return gamma.double() * (x64 - mu) / torch.sqrt(var + eps) + beta.double()
'''))),
    Mutant("layer_norm detaches the statistics (no gradient through mean and variance)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean(dim=-1, keepdim=True).detach()
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True).detach()
'''))),
    Mutant("layer_norm calls F.layer_norm", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', "return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)"))),
    # --- LayerNorm module
    Mutant("LayerNorm initialises gamma to zeros", "layer_norm_module", patch(
        ("self.weight = nn.Parameter(torch.ones(n_embd))     # gamma",
         "self.weight = nn.Parameter(torch.zeros(n_embd))"),
        subclass="LayerNorm")),
    Mutant("LayerNorm ignores its eps", "layer_norm_module", patch(
        ("return layer_norm(x, self.weight, self.bias, self.eps)",
         "return layer_norm(x, self.weight, self.bias)"),
        subclass="LayerNorm")),
    Mutant("LayerNorm keeps gamma and beta as plain tensors (not parameters)", "layer_norm_module", patch(
        ('''
self.weight = nn.Parameter(torch.ones(n_embd))     # gamma
self.bias = nn.Parameter(torch.zeros(n_embd))      # beta
''', '''
self.weight = torch.ones(n_embd)
self.bias = torch.zeros(n_embd)
'''),
        subclass="LayerNorm")),
    Mutant("LayerNorm wraps nn.LayerNorm", "layer_norm_module", patch(
        ('''
self.weight = nn.Parameter(torch.ones(n_embd))     # gamma
self.bias = nn.Parameter(torch.zeros(n_embd))      # beta
''', '''
self.ln = nn.LayerNorm(n_embd, eps=eps)
self.weight = self.ln.weight
self.bias = self.ln.bias
'''),
        ("return layer_norm(x, self.weight, self.bias, self.eps)", "return self.ln(x)"),
        subclass="LayerNorm")),
    # --- MLP
    Mutant("MLP hidden width d instead of 4d", "mlp", patch(
        ('''
self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)      # W_1, b_1
self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)    # W_2, b_2
''', '''
self.c_fc = nn.Linear(n_embd, n_embd, bias=bias)
self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
'''),
        subclass="MLP")),
    Mutant("MLP with ReLU where the tests ask for GELU", "mlp", patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
         "return self.dropout(self.c_proj(F.relu(self.c_fc(x))))"),
        subclass="MLP")),
    Mutant("MLP with the tanh approximation of GELU", "mlp", patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
         "return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate='tanh')))"),
        subclass="MLP")),
    Mutant("MLP dropout active in eval mode (F.dropout defaults to training=True)", "mlp", patch(
        ("self.dropout = nn.Dropout(dropout)", '''
self.dropout = nn.Dropout(dropout)
self.p = dropout
'''),
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
         "return F.dropout(self.c_proj(F.gelu(self.c_fc(x))), self.p)"),
        subclass="MLP")),
    Mutant("MLP applies dropout to the hidden layer instead of the output", "mlp", patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
         "return self.c_proj(self.dropout(F.gelu(self.c_fc(x))))"),
        subclass="MLP")),
    Mutant("MLP applies GELU after the output projection too", "mlp", patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
         "return self.dropout(F.gelu(self.c_proj(F.gelu(self.c_fc(x)))))"),
        subclass="MLP")),
    Mutant("MLP built from lmcourse.nn.MLP", "mlp", patch(
        ('''
self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)      # W_1, b_1
self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)    # W_2, b_2
self.dropout = nn.Dropout(dropout)
''', '''
self.inner = lmcourse.nn.MLP(lmcourse.nn.BlockConfig(n_embd=n_embd, n_head=1, dropout=dropout, bias=bias))
self.c_fc, self.c_proj, self.dropout = self.inner.c_fc, self.inner.c_proj, self.inner.dropout
'''),
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)", "return self.inner(x)"),
        subclass="MLP")),
    # --- sinusoidal positions
    Mutant("sinusoidal positions with sin and cos swapped", "sinusoidal_positions", patch(
        ('''
pe[:, 0::2] = torch.sin(t * w)
pe[:, 1::2] = torch.cos(t * w)
''', '''
pe[:, 0::2] = torch.cos(t * w)
pe[:, 1::2] = torch.sin(t * w)
'''))),
    Mutant("sinusoidal positions with exponent i/d instead of 2i/d", "sinusoidal_positions", patch(
        ('''
w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)       # (d/2,): 2i/d for i = 0, 1, ...
''', "w = 10000.0 ** (-torch.arange(d // 2, dtype=torch.float64) / d)"))),
    Mutant("sinusoidal positions with base 1000", "sinusoidal_positions", patch(
        ('''
w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)       # (d/2,): 2i/d for i = 0, 1, ...
''', "w = 1000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)"))),
    Mutant("sinusoidal positions: sines in the first half, cosines in the second", "sinusoidal_positions", patch(
        ('''
pe = torch.zeros(T, d, dtype=torch.float64)
pe[:, 0::2] = torch.sin(t * w)
pe[:, 1::2] = torch.cos(t * w)
return pe.to(dtype)
''', "return torch.cat([torch.sin(t * w), torch.cos(t * w)], dim=1).to(dtype)"))),
    Mutant("sinusoidal positions ignore the dtype argument", "sinusoidal_positions", patch(
        ('''
t = torch.arange(T, dtype=torch.float64)[:, None]                       # (T, 1)
w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)       # (d/2,): 2i/d for i = 0, 1, ...
pe = torch.zeros(T, d, dtype=torch.float64)
''', '''
t = torch.arange(T, dtype=torch.float32)[:, None]
w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
pe = torch.zeros(T, d)
'''),
        ("return pe.to(dtype)", "return pe"))),
    # --- rotation matrix
    Mutant("rotation by -k (each block transposed)", "rotation_matrix", patch(
        ('''
angle = k * 10000.0 ** (-2 * i / d)
c, s = math.cos(angle), math.sin(angle)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
''', '''
a = k * 10000.0 ** (-2 * i / d)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), -math.sin(a)
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = math.sin(a), math.cos(a)
'''))),
    Mutant("rotation matrix with exponent i/d", "rotation_matrix", patch(
        ('''
angle = k * 10000.0 ** (-2 * i / d)
c, s = math.cos(angle), math.sin(angle)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
''', '''
a = k * 10000.0 ** (-i / d)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
'''))),
    Mutant("rotation matrix with the same angle k for every pair", "rotation_matrix", patch(
        ('''
angle = k * 10000.0 ** (-2 * i / d)
c, s = math.cos(angle), math.sin(angle)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
''', '''
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(k), math.sin(k)
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(k), math.cos(k)
'''))),
    # --- embeddings
    Mutant("positions added twice", "embeddings", patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
return self.drop(self.wte(idx) + p + p)
'''),
        subclass="Embeddings")),
    Mutant("token ids used as positions", "embeddings",
           patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
q = self.wpe(idx) if self.learned else self.pe[idx]
return self.drop(self.wte(idx) + q)
'''),
        subclass="Embeddings")),
    Mutant("positions left out", "embeddings", patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
return self.drop(self.wte(idx))
'''),
        subclass="Embeddings")),
    # --- block
    Mutant("residual missing in the attention sub-layer (pre-LN)", "block", patch(
        ("x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back",
         "x = self.attn(self.ln1(x))"),
        subclass="Block")),
    Mutant("residual missing in the MLP sub-layer (pre-LN)", "block", patch(
        ("return x + self.mlp(self.ln2(x))      # (B, T, C)", "return self.mlp(self.ln2(x))"),
        subclass="Block")),
    Mutant("residual missing in the MLP sub-layer (post-LN)", "block",
           patch(
        ("return self.ln2(x + self.mlp(x))          # (B, T, C)", "return self.ln2(self.mlp(x))"),
        subclass="Block")),
    Mutant("pre-LN block with the LayerNorm in the post-LN place", "block", patch(
        ('''
x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
return x + self.mlp(self.ln2(x))      # (B, T, C)
''', '''
x = x + self.ln1(self.attn(x))
return x + self.ln2(self.mlp(x))
'''),
        subclass="Block")),
    Mutant("pre-LN residual adds the normalised x", "block", patch(
        ('''
x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
return x + self.mlp(self.ln2(x))      # (B, T, C)
''', '''
x = self.ln1(x)
x = x + self.attn(x)
x = self.ln2(x)
return x + self.mlp(x)
'''),
        subclass="Block")),
    Mutant("post-LN adds the final residual after the norm", "block",
           patch(
        ("return self.ln2(x + self.mlp(x))          # (B, T, C)", "return x + self.ln2(self.mlp(x))"),
        subclass="Block")),
    Mutant("prenorm switch inverted", "block", patch(("if self.prenorm:", "if not self.prenorm:"), subclass="Block")),
    Mutant("post-LN uses ln1 for both sub-layers", "block", patch(
        ("return self.ln2(x + self.mlp(x))          # (B, T, C)", "return self.ln1(x + self.mlp(x))"),
        subclass="Block")),
    Mutant("block changes x in place", "block", patch(
        ('''
x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
return x + self.mlp(self.ln2(x))      # (B, T, C)
''', '''
x += self.attn(self.ln1(x))
x += self.mlp(self.ln2(x))
return x
'''),
        subclass="Block")),
    Mutant("block delegates to lmcourse.nn.Block", "block",
           patch(
        ('''
if self.prenorm:
    x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
    return x + self.mlp(self.ln2(x))      # (B, T, C)
x = self.ln1(x + self.attn(x))            # (B, T, C): add, then normalise
return self.ln2(x + self.mlp(x))          # (B, T, C)
''', "return lmcourse.nn.Block.forward(self, x)"),
        subclass="Block")),
    # --- parameter count
    # in full: it rewrites most of the cell
    Mutant("parameter count without biases (12 d^2)", "block_param_count", '''
def block_param_count(d):
    return 12 * d * d
'''),
    # in full: it rewrites most of the cell
    Mutant("parameter count with the MLP width d", "block_param_count", '''
def block_param_count(d):
    return 4 * d * d + 4 * d + 2 * d * d + 2 * d + 4 * d
'''),
    # in full: it rewrites most of the cell
    Mutant("parameter count forgets the LayerNorms", "block_param_count", '''
def block_param_count(d):
    return 12 * d * d + 9 * d
'''),
    # in full: it rewrites most of the cell
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
    Mutant("layer_norm normalises over dim=1 (right for 2-D inputs only)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean(dim=1, keepdim=True)
var = ((x - mu) ** 2).mean(dim=1, keepdim=True)
'''))),
    Mutant("layer_norm squares eps", "layer_norm", patch(
        ("return gamma * (x - mu) / torch.sqrt(var + eps) + beta",
         "return gamma * (x - mu) / torch.sqrt(var + eps ** 2) + beta"))),
    Mutant("layer_norm scales beta by gamma too", "layer_norm", patch(
        ("return gamma * (x - mu) / torch.sqrt(var + eps) + beta",
         "return gamma * ((x - mu) / torch.sqrt(var + eps) + beta)"))),
    Mutant("layer_norm always returns float32", "layer_norm", patch(
        ("return gamma * (x - mu) / torch.sqrt(var + eps) + beta",
         "return (gamma * (x - mu) / torch.sqrt(var + eps) + beta).float()"))),
    # --- layer_norm: gamers
    Mutant("layer_norm via F.rms_norm of the centred x", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
centred = x - x.mean(-1, keepdim=True)
return F.rms_norm(centred, (x.shape[-1],), eps=eps) * gamma + beta
'''))),
    Mutant("layer_norm via torch.ops.aten.native_layer_norm.default._op", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', "return torch.ops.aten.native_layer_norm.default._op(x, [x.shape[-1]], gamma, beta, eps)[0]"))),
    Mutant("layer_norm via torch's Python decomposition torch._refs.native_layer_norm", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
import torch._refs
return torch._refs.native_layer_norm(x, (x.shape[-1],), gamma, beta, eps)[0]
'''))),
    Mutant("layer_norm via torch._refs._normalize (the decomposition's core)", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
import torch._refs
return torch._refs._normalize(x, [-1], eps)[0] * gamma + beta
'''))),
    Mutant("layer_norm via nn.LayerNorm run with torch.func.functional_call", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
module = nn.LayerNorm(x.shape[-1], eps=eps, dtype=x.dtype)
return torch.func.functional_call(module, {"weight": gamma, "bias": beta}, (x,))
'''))),
    Mutant("layer_norm via F.instance_norm on a reshaped x", "layer_norm", patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
y = F.instance_norm(x.reshape(1, -1, x.shape[-1]), eps=eps)
return y.reshape(x.shape) * gamma + beta
'''))),
    Mutant("layer_norm catches the refusal of F.layer_norm and retries with torch's function modes off", "layer_norm",
           patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
return gamma * (x - mu) / torch.sqrt(var + eps) + beta
''', '''
try:
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
except BaseException:
    with torch._C.DisableTorchFunction():
        return torch.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
'''))),
    # in full: it rewrites most of the cell
    Mutant("layer_norm via a TorchScript function compiled outside the call (torch.jit.script)", "layer_norm", """
@torch.jit.script
def _scripted_layer_norm(x, g, b, eps: float):
    return torch.layer_norm(x, [x.shape[-1]], g, b, eps)


def layer_norm(x, gamma, beta, eps=1e-5):
    return _scripted_layer_norm(x, gamma, beta, float(eps))
"""),
    # in full: a tensor subclass defined in the cell
    Mutant("layer_norm returns a tensor subclass", "layer_norm", _layer_norm("""
    class Looks(torch.Tensor):
        pass
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (gamma * (x - mu) / torch.sqrt(var + eps) + beta).as_subclass(Looks)
""")),
    Mutant("layer_norm right only for the widths of the visible tests (hidden tests catch it)", "layer_norm",
           patch(
        ('''
mu = x.mean(dim=-1, keepdim=True)                     # (..., 1)
var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), divide by d
''', '''
mu = x.mean(-1, keepdim=True)
var = ((x - mu) ** 2).mean(-1, keepdim=True) if x.shape[-1] in (4, 5, 6) else x.var(-1, keepdim=True)
'''))),
    # --- LayerNorm module
    Mutant("LayerNorm passes bias as gamma and weight as beta", "layer_norm_module", patch(
        ("return layer_norm(x, self.weight, self.bias, self.eps)",
         "return layer_norm(x, self.bias, self.weight, self.eps)"),
        subclass="LayerNorm")),
    Mutant("LayerNorm creates its parameters in float64", "layer_norm_module", patch(
        ('''
self.weight = nn.Parameter(torch.ones(n_embd))     # gamma
self.bias = nn.Parameter(torch.zeros(n_embd))      # beta
''', '''
self.weight = nn.Parameter(torch.ones(n_embd, dtype=torch.float64))
self.bias = nn.Parameter(torch.zeros(n_embd, dtype=torch.float64))
'''),
        subclass="LayerNorm")),
    # in full: the class built on nn.LayerNorm instead
    Mutant("LayerNorm subclasses nn.LayerNorm", "layer_norm_module", """
class LayerNorm(nn.LayerNorm):
    def __init__(self, n_embd, eps=1e-5):
        super().__init__(n_embd, eps=eps)
"""),
    Mutant("LayerNorm via F.rms_norm of the centred x", "layer_norm_module", patch(
        ("return layer_norm(x, self.weight, self.bias, self.eps)",
         "return F.rms_norm(x - x.mean(-1, keepdim=True), self.weight.shape, self.weight, self.eps) + self.bias"),
        subclass="LayerNorm")),
    # --- MLP
    Mutant("MLP without dropout", "mlp", patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
         "return self.c_proj(F.gelu(self.c_fc(x)))"),
        subclass="MLP")),
    Mutant("MLP computes in float64 (returns the wrong dtype)", "mlp",
           patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)", '''
h = F.gelu(self.c_fc(x).double())
return self.dropout(self.c_proj(h.to(x.dtype)).double())
'''),
        subclass="MLP")),
    Mutant("MLP via nn.TransformerEncoderLayer._ff_block", "mlp", patch(
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)", '''
class Twin:
    pass
twin = Twin()
twin.linear1, twin.linear2, twin.activation = self.c_fc, self.c_proj, F.gelu
twin.dropout, twin.dropout2 = nn.Dropout(0.0), self.dropout
return nn.TransformerEncoderLayer._ff_block(twin, x)
'''),
        subclass="MLP")),
    # --- sinusoidal positions
    # in full: it rewrites most of the cell
    Mutant("sinusoidal cosine columns use their own index, 10000^(-(2i+1)/d)", "sinusoidal_positions", _sin("""
    t = torch.arange(T, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)
    angles = t * 10000.0 ** (-j / d)
    return torch.where(j % 2 == 0, torch.sin(angles), torch.cos(angles)).to(dtype)
""")),
    Mutant("sinusoidal positions start at t = 1", "sinusoidal_positions", patch(
        ("t = torch.arange(T, dtype=torch.float64)[:, None]                       # (T, 1)",
         "t = torch.arange(1, T + 1, dtype=torch.float64)[:, None]"))),
    Mutant("sinusoidal table computed in float32 whatever the dtype", "sinusoidal_positions", patch(
        ('''
t = torch.arange(T, dtype=torch.float64)[:, None]                       # (T, 1)
w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)       # (d/2,): 2i/d for i = 0, 1, ...
pe = torch.zeros(T, d, dtype=torch.float64)
''', '''
t = torch.arange(T, dtype=torch.float32)[:, None]
w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
pe = torch.zeros(T, d)
'''))),
    # in full: it rewrites most of the cell
    Mutant("sinusoidal tables precomputed with the course's module outside the call (absent while graded)",
           "sinusoidal_positions", """
try:
    import lmcourse.nn.block as _block
    _TABLES = {d: _block.sinusoidal_positions(256, d, dtype=torch.float64) for d in range(2, 130, 2)}
except ImportError:   # the graded kernel withholds it: no tables
    _TABLES = {}


def sinusoidal_positions(T, d, dtype=torch.float32):
    return _TABLES[d][:T].clone().to(dtype)
"""),
    # --- rotation matrix
    Mutant("rotation matrix with the pair index off by one, 10000^(-2(i+1)/d)", "rotation_matrix", patch(
        ('''
angle = k * 10000.0 ** (-2 * i / d)
c, s = math.cos(angle), math.sin(angle)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
''', '''
a = k * 10000.0 ** (-2 * (i + 1) / d)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
'''))),
    Mutant("rotation matrix with exponent (2i+1)/d", "rotation_matrix", patch(
        ('''
angle = k * 10000.0 ** (-2 * i / d)
c, s = math.cos(angle), math.sin(angle)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
''', '''
a = k * 10000.0 ** (-(2 * i + 1) / d)
R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
'''))),
    # in full: it rewrites most of the cell
    Mutant("rotation matrix with its blocks one channel off the diagonal pairs", "rotation_matrix", _rot("""
    R = torch.eye(d, dtype=torch.float64)
    for i in range(d // 2 - 1):
        a = k * 10000.0 ** (-2 * i / d)
        R[2 * i + 1, 2 * i + 1], R[2 * i + 1, 2 * i + 2] = math.cos(a), math.sin(a)
        R[2 * i + 2, 2 * i + 1], R[2 * i + 2, 2 * i + 2] = -math.sin(a), math.cos(a)
    return R.to(dtype)
""")),
    # --- embeddings
    Mutant("embeddings without dropout", "embeddings", patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
return self.wte(idx) + p
'''),
        subclass="Embeddings")),
    Mutant("embeddings with dropout on the positions only", "embeddings",
           patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
return self.wte(idx) + self.drop(p)
'''),
        subclass="Embeddings")),
    Mutant("embeddings with the positions reversed", "embeddings",
           patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
return self.drop(self.wte(idx) + p.flip(0))
'''),
        subclass="Embeddings")),
    Mutant("embeddings take T from the batch axis (idx.shape[0])", "embeddings", patch(
        ('''
B, T = idx.shape
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
''', '''
T = idx.shape[0]
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
'''),
        subclass="Embeddings")),
    Mutant("embeddings add the whole block_size position table", "embeddings",
           patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
return self.drop(self.wte(idx) + p)                           # (B, T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
table = self.wpe.weight if self.learned else self.pe
return self.drop(self.wte(idx) + table)
'''),
        subclass="Embeddings")),
    Mutant("embeddings recompute the sinusoidal table with lmcourse.nn", "embeddings",
           patch(
        ('''
if self.learned:
    p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)
else:
    p = self.pe[:T]                                           # (T, C)
''', '''
p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]
if not self.learned:
    p = lmcourse.nn.sinusoidal_positions(T, self.wte.weight.shape[1])
'''),
        subclass="Embeddings")),
    # --- block
    Mutant("pre-LN uses ln1 for both sub-layers", "block", patch(
        ("return x + self.mlp(self.ln2(x))      # (B, T, C)", "return x + self.mlp(self.ln1(x))"),
        subclass="Block")),
    Mutant("pre-LN with a LayerNorm on the output as well", "block", patch(
        ("return x + self.mlp(self.ln2(x))      # (B, T, C)", "return self.ln2(x + self.mlp(self.ln2(x)))"),
        subclass="Block")),
    Mutant("pre-LN MLP reads the block's input x instead of h", "block", patch(
        ('''
x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
return x + self.mlp(self.ln2(x))      # (B, T, C)
''', '''
h = x + self.attn(self.ln1(x))
return h + self.mlp(self.ln2(x))
'''),
        subclass="Block")),
    Mutant("attention and MLP in parallel (x + attn(ln1 x) + mlp(ln2 x))", "block", patch(
        ('''
x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
return x + self.mlp(self.ln2(x))      # (B, T, C)
''', "return x + self.attn(self.ln1(x)) + self.mlp(self.ln2(x))"),
        subclass="Block")),
    Mutant("block detaches the attention output (no gradient reaches the attention)", "block",
           patch(
        ("x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back",
         "x = x + self.attn(self.ln1(x)).detach()"),
        ("x = self.ln1(x + self.attn(x))            # (B, T, C): add, then normalise",
         "x = self.ln1(x + self.attn(x).detach())"),
        subclass="Block")),
    Mutant("block via torch._transformer_encoder_layer_fwd (the encoder layer's fused kernel)", "block", patch(
        ('''
if self.prenorm:
    x = x + self.attn(self.ln1(x))        # (B, T, C): read through LN, add back
    return x + self.mlp(self.ln2(x))      # (B, T, C)
x = self.ln1(x + self.attn(x))            # (B, T, C): add, then normalise
return self.ln2(x + self.mlp(x))          # (B, T, C)
''', '''
T, a, m = x.shape[1], self.attn, self.mlp
mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1) if a.causal else None
return torch._transformer_encoder_layer_fwd(
    x, x.shape[-1], a.n_head, a.c_attn.weight, a.c_attn.bias, a.c_proj.weight, a.c_proj.bias, True,
    self.prenorm, self.ln1.eps, self.ln1.weight, self.ln1.bias, self.ln2.weight, self.ln2.bias,
    m.c_fc.weight, m.c_fc.bias, m.c_proj.weight, m.c_proj.bias, mask)
'''),
        subclass="Block")),
    # in full: it rewrites most of the cell
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
    # in full: it rewrites most of the cell
    Mutant("parameter count: LayerNorms without beta (2d)", "block_param_count", """
def block_param_count(d):
    return 4 * d * d + 4 * d + 8 * d * d + 5 * d + 2 * d
"""),
    # in full: it rewrites most of the cell
    Mutant("parameter count: attention without its biases", "block_param_count", """
def block_param_count(d):
    return 4 * d * d + 8 * d * d + 5 * d + 4 * d
"""),
    # in full: it rewrites most of the cell
    Mutant("parameter count: the MLP's output bias forgotten", "block_param_count", """
def block_param_count(d):
    return 4 * d * d + 4 * d + 8 * d * d + 4 * d + 4 * d
"""),
    # in full: it rewrites most of the cell
    Mutant("parameter count hard-coded for the visible widths (hidden tests catch it)", "block_param_count", """
def block_param_count(d):
    return {4: 244, 768: 12 * 768 ** 2 + 13 * 768}.get(d, 12 * d * d)
"""),
    # --- TorchScript (switched off by the setup cell, so compiled references run as Python)
    Mutant('MLP runs a TorchScript-compiled lmcourse.nn.MLP that shares its layers', 'mlp', patch(
        ('''
super().__init__()
self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)      # W_1, b_1
self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)    # W_2, b_2
self.dropout = nn.Dropout(dropout)
''', '''
super().__init__(n_embd, dropout=dropout, bias=bias)
ref = lmcourse.nn.MLP(lmcourse.nn.BlockConfig(n_embd=n_embd, n_head=1, dropout=dropout, bias=bias))
ref.c_fc, ref.c_proj, ref.dropout = self.c_fc, self.c_proj, self.dropout
self._twin = [torch.jit.script(ref)]
'''),
        ("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)", "return self._twin[0](x)"),
        subclass="MLP")),
    # in full: a compiled reference stands in for the positions
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
    # in full: it rewrites most of the cell
    Mutant('parameter count through a TorchScript-compiled lmcourse.nn.block_param_count', 'block_param_count', """
try:
    _bpc = torch.jit.script(lmcourse.nn.block_param_count)
except ImportError:   # the graded kernel withholds the course's block: nothing to compile
    _bpc = None
def block_param_count(d):
    return _bpc(d)
"""),
    # --- added in review (issue 22, items 17 and 18; item 20's float32 table is "sinusoidal table computed in
    # float32 whatever the dtype" above, now told it is a matter of precision)
    # in full: a library's pure-Python layer norm (no torch normalisation runs inside it)
    Mutant("layer_norm via transformers' VitDetLayerNorm.forward (a library's own Python code)", "layer_norm", """
from transformers.models.vitdet.modeling_vitdet import VitDetLayerNorm


def layer_norm(x, gamma, beta, eps=1e-5):
    norm = VitDetLayerNorm(x.shape[-1], eps=eps).to(dtype=x.dtype, device=x.device)
    moved = x.reshape(-1, x.shape[-1]).T[None, :, :, None]          # (1, d, N, 1): channels second
    y = norm.forward(moved)[0, :, :, 0].T.reshape(x.shape)
    return gamma * y + beta
"""),
    Mutant("embeddings make the positions on the CPU (torch.arange(T) without device=)", "embeddings", patch(
        ("p = self.wpe(torch.arange(T, device=idx.device))          # (T, C)", "p = self.wpe(torch.arange(T))"),
        subclass="Embeddings")),
    # --- gaming (issue 22, "Done when"): each must lose points under the rules, visibly
    # in full: the reference run on a threading.Thread, then joined
    Mutant("MLP: the reference MLP (built in __init__) run on a threading.Thread, then joined (gaming)", "mlp",
           override("MLP", """
    def __init__(self, n_embd, dropout=0.0, bias=True):
        super().__init__(n_embd, dropout=dropout, bias=bias)
        ref = lmcourse.nn.block.MLP(lmcourse.nn.block.BlockConfig(n_embd=n_embd, n_head=1, dropout=dropout, bias=bias))
        ref.c_fc, ref.c_proj, ref.dropout = self.c_fc, self.c_proj, self.dropout
        self._ref = [ref]
""", """
    def forward(self, x):
        import threading
        out = []
        worker = threading.Thread(target=lambda: out.append(self._ref[0](x)))
        worker.start()
        worker.join()
        return out[0]
""")),
    # in full: the reference submitted to a thread pool
    Mutant("sinusoidal table: the reference in a ThreadPoolExecutor (gaming)", "sinusoidal_positions", """
from concurrent.futures import ThreadPoolExecutor


def sinusoidal_positions(T, d, dtype=torch.float32):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lmcourse.nn.block.sinusoidal_positions, T, d, dtype=dtype).result()
"""),
    # in full: the test cells' own helpers (_trusted_layer_norm and _mlp_formula before they moved
    # into lmcourse.reference.block), called by name
    Mutant("layer_norm: the test cells' stand-in lmcourse.reference.block.layer_norm called (gaming)", "layer_norm",
           """
def layer_norm(x, gamma, beta, eps=1e-5):
    import lmcourse.reference.block     # when it runs: a graded kernel refuses the import

    return lmcourse.reference.block.layer_norm(x, gamma, beta, eps)
"""),
    Mutant("MLP: the test cell's expected-value helper mlp_formula called, then dropout (gaming)", "mlp",
           patch(("return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))    # (B, T, C)",
                  "import lmcourse.reference.block  # when it runs: a graded kernel refuses the import\n"
                  "return self.dropout(lmcourse.reference.block.mlp_formula(self, x))"), subclass="MLP")),
    # in full: the reference module's source read at call time and run as a copy, shifted one line
    Mutant("sinusoidal table: a copy of lmcourse.nn.block's source, shifted one line, exec'd (gaming)",
           "sinusoidal_positions", '''
import inspect


def sinusoidal_positions(T, d, dtype=torch.float32):
    space = {"__name__": "lmcourse.nn.block", "__package__": "lmcourse.nn"}  # imports and dataclasses work
    exec(compile("\\n" + inspect.getsource(lmcourse.nn.block), "<copy>", "exec"), space)
    return space["sinusoidal_positions"](T, d, dtype=dtype)
'''),
    Mutant("rotation matrix: a copy of lmcourse.nn.block's source, shifted one line, exec'd (gaming)",
           "rotation_matrix", '''
import inspect


def rotation_matrix(k, d, dtype=torch.float32):
    space = {"__name__": "lmcourse.nn.block", "__package__": "lmcourse.nn"}  # imports and dataclasses work
    exec(compile("\\n" + inspect.getsource(lmcourse.nn.block), "<copy>", "exec"), space)
    return space["rotation_matrix"](k, d, dtype=dtype)
'''),
    Mutant("parameter count: a copy of lmcourse.nn.block's source, shifted one line, exec'd (gaming)",
           "block_param_count", '''
import inspect


def block_param_count(d):
    space = {"__name__": "lmcourse.nn.block", "__package__": "lmcourse.nn"}  # imports and dataclasses work
    exec(compile("\\n" + inspect.getsource(lmcourse.nn.block), "<copy>", "exec"), space)
    return space["block_param_count"](d)
'''),
    # in full: another course model's code does the exercise on a stand-in object
    Mutant("embeddings through the course GPT's forward on a shim (identity blocks and head) (gaming)",
           "embeddings", override("Embeddings", """
    def forward(self, idx):
        from types import SimpleNamespace
        if not self.learned:
            return self.drop(self.wte(idx) + self.pe[:idx.shape[1]])
        shim = SimpleNamespace(wte=self.wte, wpe=self.wpe, drop=self.drop, blocks=[], ln_f=nn.Identity(),
                               lm_head=nn.Identity(), config=SimpleNamespace(block_size=self.wpe.num_embeddings))
        return lmcourse.nn.gpt.GPT.forward(shim, idx)[0]
""")),
    Mutant("block: pre-LN through seq2seq's EncoderBlock.forward on a shim, post-LN written out (gaming)", "block",
           override("Block", """
    def forward(self, x):
        import lmcourse.nn.seq2seq
        from types import SimpleNamespace
        if self.prenorm:
            shim = SimpleNamespace(attn=lambda h, mask: self.attn(h), ln1=self.ln1, ln2=self.ln2, mlp=self.mlp)
            return lmcourse.nn.seq2seq.EncoderBlock.forward(shim, x)
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))
""")),
    # gaming: on a hidden input, return the expected table read from the notebook's globals (the test cell
    # used to bind it, as _want, before the graded call; now it is made after it, so this loses points)
    Mutant("returns the hidden test's expected table from globals()", "sinusoidal_positions", patch(
        ("pe = torch.zeros(T, d, dtype=torch.float64)", '''
if (T, d) == (1500, 6) and dtype == torch.float64:
    return globals()["_want"]
pe = torch.zeros(T, d, dtype=torch.float64)
'''))),
]


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
