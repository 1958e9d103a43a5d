"""Notebook 03 (attention): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, patch

# the solution's softmax body, which most softmax mutants replace
_SOFTMAX_BODY = '''
shifted = x - x.max(dim=dim, keepdim=True).values
e = shifted.exp()
return e / e.sum(dim=dim, keepdim=True)
'''

MUTANTS = [
    # --- softmax
    Mutant("softmax without subtracting the maximum (overflows)", "softmax", patch(
        ('''
shifted = x - x.max(dim=dim, keepdim=True).values
e = shifted.exp()
''', "e = x.exp()"))),
    Mutant("softmax subtracts the mean instead of the maximum", "softmax", patch(
        ('''
shifted = x - x.max(dim=dim, keepdim=True).values
e = shifted.exp()
''', "e = (x - x.mean(dim=dim, keepdim=True)).exp()"))),
    Mutant("softmax subtracts the maximum of the whole tensor", "softmax", patch(
        ('''
shifted = x - x.max(dim=dim, keepdim=True).values
e = shifted.exp()
''', "e = (x - x.max()).exp()"))),
    Mutant("softmax normalises over axis 0 (wrong axis)", "softmax", patch(
        (_SOFTMAX_BODY, '''
e = (x - x.max(dim=dim, keepdim=True).values).exp()
return e / e.sum(dim=0, keepdim=True)
'''))),
    Mutant("softmax ignores dim (always the last axis)", "softmax", patch(
        (_SOFTMAX_BODY, '''
e = (x - x.max(dim=-1, keepdim=True).values).exp()
return e / e.sum(dim=-1, keepdim=True)
'''))),
    Mutant("softmax divides by the sum of the whole tensor", "softmax", patch(
        (_SOFTMAX_BODY, '''
e = (x - x.max(dim=dim, keepdim=True).values).exp()
return e / e.sum()
'''))),
    Mutant("softmax takes the maximum without keepdim", "softmax", patch(
        ('''
shifted = x - x.max(dim=dim, keepdim=True).values
e = shifted.exp()
''', "e = (x - x.max(dim=dim).values).exp()"))),
    Mutant("softmax modifies its input in place", "softmax", patch(
        (_SOFTMAX_BODY, '''
x -= x.max(dim=dim, keepdim=True).values
x.exp_()
return x / x.sum(dim=dim, keepdim=True)
'''))),
    # --- scores
    Mutant("scores not scaled", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return Q @ K.transpose(-2, -1)"))),
    Mutant("scores scaled by d_k instead of sqrt(d_k)", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return Q @ K.transpose(-2, -1) / Q.size(-1)"))),
    Mutant("scores scaled by sqrt(number of keys)", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return Q @ K.transpose(-2, -1) / math.sqrt(K.size(-2))"))),
    Mutant("K.T instead of K.transpose(-2, -1) (breaks batches)", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return Q @ K.T / math.sqrt(Q.size(-1))"))),
    Mutant("scores transposed (K Q^T)", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return K @ Q.transpose(-2, -1) / math.sqrt(Q.size(-1))"))),
    Mutant("d_k taken as Q.shape[1] (right only for 2-D Q)", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[1])"))),
    # --- causal mask
    Mutant("mask transposed (matrix A: hides the past)", "causal_mask", patch(
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', '''
past = torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)
return torch.zeros(T, T).masked_fill(past, float("-inf"))
'''))),
    Mutant("diagonal masked out (a token cannot see itself)", "causal_mask", patch(
        ("future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)",
         "future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=0)"))),
    Mutant("identity mask (matrix C: sees only itself)", "causal_mask", patch(
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', 'return torch.zeros(T, T).masked_fill(~torch.eye(T, dtype=torch.bool), float("-inf"))'))),
    Mutant("mask of ones and zeros instead of 0 and -inf", "causal_mask", patch(
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', "return torch.ones(T, T).tril()"))),
    Mutant("mask uses -1e9 instead of -inf", "causal_mask", patch(
        ('return torch.zeros(T, T).masked_fill(future, float("-inf"))',
         "return torch.zeros(T, T).masked_fill(future, -1e9)"))),
    Mutant("mask returned as booleans", "causal_mask", patch(
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', "return torch.ones(T, T, dtype=torch.bool).tril()"))),
    Mutant("mask built in float64", "causal_mask", patch(
        ('return torch.zeros(T, T).masked_fill(future, float("-inf"))',
         'return torch.zeros(T, T, dtype=torch.float64).masked_fill(future, float("-inf"))'))),
    # --- scaled dot-product attention
    Mutant("mask applied after the softmax", "scaled_dot_product_attention", patch(
        ('''
if mask is not None:
    scores = scores + mask
weights = softmax(scores, dim=-1)
''', '''
weights = softmax(scores, dim=-1)
if mask is not None:
    weights = weights + mask
'''))),
    Mutant("masked scores set to 0 instead of -inf", "scaled_dot_product_attention", patch(
        ("scores = scores + mask", "scores = scores.masked_fill(torch.isinf(mask), 0.0)"))),
    Mutant("mask multiplied instead of added", "scaled_dot_product_attention", patch(
        ("scores = scores + mask", "scores = scores * mask"))),
    Mutant("mask ignored", "scaled_dot_product_attention", patch(
        ('''
scores = attention_scores(Q, K)
if mask is not None:
    scores = scores + mask
weights = softmax(scores, dim=-1)
''', "weights = softmax(attention_scores(Q, K), dim=-1)"))),
    Mutant("keys used as values", "scaled_dot_product_attention", patch(
        ("return weights @ V, weights", "return weights @ K, weights"))),
    Mutant("weights returned transposed", "scaled_dot_product_attention", patch(
        ("return weights @ V, weights", "return weights @ V, weights.transpose(-2, -1)"))),
    Mutant("softmax over the queries (dim=-2)", "scaled_dot_product_attention", patch(
        ("weights = softmax(scores, dim=-1)", "weights = softmax(scores, dim=-2)"))),
    Mutant("attention without the 1/sqrt(d_k) scaling", "scaled_dot_product_attention", patch(
        ("scores = attention_scores(Q, K)", "scores = Q @ K.transpose(-2, -1)"))),
    Mutant("returns (weights, output) in the wrong order", "scaled_dot_product_attention", patch(
        ("return weights @ V, weights", "return weights, weights @ V"))),
    # --- multi-head attention
    Mutant("heads split with view(B, h, T, d_k), no transpose", "multi_head_attention", patch(
        ('''
q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
''', '''
q = self.W_q(x).view(B, self.n_head, T, self.d_k)
k = self.W_k(x).view(B, self.n_head, T, self.d_k)
v = self.W_v(x).view(B, self.n_head, T, self.d_k)
'''),
        subclass="MultiHeadAttention")),
    Mutant("heads merged with view, no transpose back", "multi_head_attention", patch(
        ('''
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', "y = self.W_o(out.contiguous().view(B, T, C))"),
        subclass="MultiHeadAttention")),
    Mutant("no output projection W_O", "multi_head_attention", patch(
        ('''
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', "y = out.transpose(1, 2).contiguous().view(B, T, C)"),
        subclass="MultiHeadAttention")),
    Mutant("scaled by sqrt(d_model) instead of sqrt(d_k)", "multi_head_attention", patch(
        ('''
mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
''', '''
scores = q @ k.transpose(-2, -1) / math.sqrt(C)
if self.causal:
    scores = scores + causal_mask(T).to(x.device, x.dtype)
weights = softmax(scores, dim=-1)
out = (weights @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
        subclass="MultiHeadAttention")),
    Mutant("never masks (ignores causal=True)", "multi_head_attention", patch(
        ('''
mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', '''
out, weights = scaled_dot_product_attention(q, k, v)
y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))
'''),
        subclass="MultiHeadAttention")),
    Mutant("always masks (ignores causal=False)", "multi_head_attention", patch(
        ('''
mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', '''
out, weights = scaled_dot_product_attention(q, k, v, causal_mask(T).to(x.device, x.dtype))
y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))
'''),
        subclass="MultiHeadAttention")),
    Mutant("W_q used for the keys too", "multi_head_attention", patch(
        ("k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)",
         "k = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)"),
        subclass="MultiHeadAttention")),
    Mutant("return_weights ignored", "multi_head_attention", patch(
        ('''
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
return (y, weights) if return_weights else y
''', "return self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))"),
        subclass="MultiHeadAttention")),
    Mutant("weights averaged over heads", "multi_head_attention", patch(
        ('''
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
return (y, weights) if return_weights else y
''', '''
y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))
return (y, weights.mean(dim=1)) if return_weights else y
'''),
        subclass="MultiHeadAttention")),
    Mutant("forward returns (weights, output) in the wrong order", "multi_head_attention", patch(
        ('''
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
return (y, weights) if return_weights else y
''', '''
y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))
return (weights, y) if return_weights else y
'''),
        subclass="MultiHeadAttention")),
    Mutant("mask not moved to the input's dtype and device", "multi_head_attention", patch(
        ("mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None",
         "mask = causal_mask(T) if self.causal else None"),
        subclass="MultiHeadAttention")),
    Mutant("mask moved to the input's dtype only, not its device", "multi_head_attention", patch(
        ("mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None",
         "mask = causal_mask(T).to(x.dtype) if self.causal else None"),
        subclass="MultiHeadAttention")),
    # --- correct answers that call a ready-made implementation: the hidden tests must refuse them
    Mutant("calls torch.softmax", "softmax", patch(
        (_SOFTMAX_BODY, "return torch.softmax(x, dim=dim)"))),
    Mutant("calls the course's reference causal_mask", "causal_mask", patch(
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', '''
import lmcourse.reference.attention  # imported when it runs: a graded kernel refuses it

return lmcourse.reference.attention.causal_mask(T)
'''))),
    # in full: it rewrites most of the cell
    Mutant("calls the course's reference attention", "scaled_dot_product_attention", '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    return lmcourse.nn.scaled_dot_product_attention(Q, K, V, mask)
'''),
    Mutant("weights from torch.softmax instead of the student's softmax", "scaled_dot_product_attention", patch(
        ('''
weights = softmax(scores, dim=-1)
return weights @ V, weights
''', '''
w = torch.softmax(scores, -1)
return w @ V, w
'''))),
    Mutant("inline Tensor.softmax, bypassing the student's attention", "multi_head_attention", patch(
        ('''
mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', '''
s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
if self.causal:
    s = s + causal_mask(T).to(x.device, x.dtype)
weights = s.softmax(-1)
y = self.W_o((weights @ v).transpose(1, 2).contiguous().view(B, T, C))
'''),
        subclass="MultiHeadAttention")),
    Mutant("output from F.scaled_dot_product_attention", "multi_head_attention", patch(
        ("v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)", '''
v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))
if not return_weights:
    return y
'''),
        ('''
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
return (y, weights) if return_weights else y
''', "return y, scaled_dot_product_attention(q, k, v, mask)[1]"),
        subclass="MultiHeadAttention")),
    # --- issue 8: ready-made softmax reached another way, the reference under another name
    Mutant("softmax as log_softmax(dim).exp()", "softmax", patch(
        (_SOFTMAX_BODY, "return x.log_softmax(dim).exp()"))),
    Mutant("softmax through the private torch._softmax", "softmax", patch(
        (_SOFTMAX_BODY, "return torch._softmax(x, dim, False)"))),
    Mutant("softmax through torch.special.softmax", "softmax", patch(
        (_SOFTMAX_BODY, "return torch.special.softmax(x, dim)"))),
    Mutant("softmax as F.softmin of -x", "softmax", patch(
        (_SOFTMAX_BODY, "return F.softmin(-x, dim=dim)"))),
    # the eighth red team: a softmax that another public function computes, with no softmax in the name
    Mutant("softmax as the gradient of F.cross_entropy plus the one-hot", "softmax", patch(
        (_SOFTMAX_BODY, """
z = x.movedim(dim, -1)
flat = z.reshape(-1, z.shape[-1]).detach().requires_grad_(True)
target = flat.argmax(-1)
with torch.enable_grad():
    g, = torch.autograd.grad(F.cross_entropy(flat, target, reduction="sum"), flat)
w = g + torch.zeros_like(g).scatter(-1, target[:, None], 1.0)
return w.reshape(z.shape).movedim(-1, dim)
"""))),
    Mutant("softmax through F.scaled_dot_product_attention with a query of ones and V the identity", "softmax", patch(
        (_SOFTMAX_BODY, """
z = x.movedim(dim, -1)
n = z.shape[-1]
keys = z.reshape(-1, 1, n, 1)
ones = torch.ones(keys.shape[0], 1, 1, 1, dtype=x.dtype, device=x.device)
eye = torch.eye(n, dtype=x.dtype, device=x.device).expand(keys.shape[0], 1, n, n)
return F.scaled_dot_product_attention(ones, keys, eye, scale=1.0).reshape(z.shape).movedim(-1, dim)
"""))),
    Mutant("softmax as the normalised logits of torch.distributions.Categorical", "softmax", patch(
        (_SOFTMAX_BODY, """
z = x.movedim(dim, -1)
return torch.distributions.Categorical(logits=z, validate_args=False).logits.exp().movedim(-1, dim)
"""))),
    Mutant("softmax through an nn.Softmax module", "softmax", patch(
        (_SOFTMAX_BODY, "return nn.Softmax(dim=dim)(x)"))),
    Mutant("softmax through torch.ops.aten with torch function modes switched off", "softmax", patch(
        (_SOFTMAX_BODY, '''
with torch._C.DisableTorchFunction():
    return torch.ops.aten._softmax.default(x, dim % x.dim(), False)
'''))),
    Mutant("softmax catches the rule's error and calls torch.softmax again unguarded", "softmax", patch(
        (_SOFTMAX_BODY, '''
try:
    return torch.softmax(x, dim)
except Exception:
    with torch._C.DisableTorchFunction():
        return torch.softmax(x, dim)
'''))),
    # in full: it rewrites most of the cell (the reference is imported when the answer runs: in a graded kernel
    # the import fails, and an answer cell that failed to define would leave the harness's solution in place)
    Mutant("softmax calls the tests' stand-in", "softmax", '''
def softmax(x, dim=-1):
    import lmcourse.reference.attention as _helpers

    return _helpers.softmax(x, dim)
'''),
    # --- issue 8: dtype, device, shapes
    Mutant("softmax computes in float64 and returns float64 for a float32 input", "softmax", patch(
        ('''
shifted = x - x.max(dim=dim, keepdim=True).values
e = shifted.exp()
''', '''
x = x.double()
e = (x - x.max(dim=dim, keepdim=True).values).exp()
'''))),
    Mutant("softmax sums without keepdim", "softmax", patch(
        (_SOFTMAX_BODY, '''
e = (x - x.max(dim=dim, keepdim=True).values).exp()
return e / e.sum(dim=dim)
'''))),
    Mutant("softmax writes into a tensor made on the CPU (loses the device)", "softmax", patch(
        (_SOFTMAX_BODY, '''
out = torch.empty(x.shape, dtype=x.dtype)
e = (x - x.max(dim=dim, keepdim=True).values).exp()
out[...] = e / e.sum(dim=dim, keepdim=True)
return out
'''))),
    Mutant("scores divide Q in place", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', '''
Q /= math.sqrt(Q.size(-1))
return Q @ K.transpose(-2, -1)
'''))),
    Mutant("scores computed in float64", "attention_scores", patch(
        ('''
d_k = Q.size(-1)
return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
''', "return Q.double() @ K.double().transpose(-2, -1) / math.sqrt(Q.size(-1))"))),
    # imported when it runs (lmcourse.nn.attention's causal_mask moved to the reference, absent while 03 is graded)
    Mutant("reference causal_mask imported under another name", "causal_mask", patch(
        ("def causal_mask(T):", '''
def causal_mask(T):
    from lmcourse.nn.attention import causal_mask as _cm
'''),
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', "return _cm(T)"))),
    # imported when it runs, as above
    Mutant("causal_mask calls the tests' stand-in", "causal_mask", patch(
        ("def causal_mask(T):", '''
def causal_mask(T):
    from lmcourse.reference.attention import causal_mask as _cm
'''),
        ('''
future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
return torch.zeros(T, T).masked_fill(future, float("-inf"))
''', "return _cm(T)"))),
    # in full: it rewrites most of the cell
    Mutant("reference attention held under another name", "scaled_dot_product_attention", '''
try:
    import lmcourse.nn.attention
    _reference = lmcourse.nn.attention.scaled_dot_product_attention
except ImportError:   # the graded kernel withholds the course's attention: nothing to hold
    _reference = None

def scaled_dot_product_attention(Q, K, V, mask=None):
    return _reference(Q, K, V, mask)
'''),
    # in full: it rewrites most of the cell (the reference is imported when the answer runs: in a graded kernel
    # the import fails, and an answer cell that failed to define would leave the harness's solution in place)
    Mutant("attention calls the tests' stand-in", "scaled_dot_product_attention", '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    from lmcourse.reference.attention import scaled_dot_product_attention as _attention

    return _attention(Q, K, V, mask)
'''),
    Mutant("attention weights from log_softmax().exp()", "scaled_dot_product_attention", patch(
        ('''
weights = softmax(scores, dim=-1)
return weights @ V, weights
''', '''
w = scores.log_softmax(dim=-1).exp()
return w @ V, w
'''))),
    Mutant("attention returns float64 for float32 inputs", "scaled_dot_product_attention", patch(
        ("scores = attention_scores(Q, K)", "scores = attention_scores(Q.double(), K.double())"),
        ("return weights @ V, weights", "return weights @ V.double(), weights"))),
    Mutant("heads merged without .contiguous()", "multi_head_attention", patch(
        ('''
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', "y = self.W_o(out.transpose(1, 2).view(B, T, C))"),
        subclass="MultiHeadAttention")),
    Mutant("forward wraps nn.MultiheadAttention", "multi_head_attention", patch(
        ('''
q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', '''
mha = nn.MultiheadAttention(C, self.n_head, bias=self.W_q.bias is not None, batch_first=True).to(x)
with torch.no_grad():
    mha.in_proj_weight.copy_(torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight]))
    mha.out_proj.weight.copy_(self.W_o.weight)
    if self.W_q.bias is not None:
        mha.in_proj_bias.copy_(torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias]))
        mha.out_proj.bias.copy_(self.W_o.bias)
blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1) if self.causal else None
y, weights = mha(x, x, x, attn_mask=blocked, average_attn_weights=False)
'''),
        subclass="MultiHeadAttention")),
    Mutant("forward under torch.no_grad() (no gradients reach the weights)", "multi_head_attention", patch(
        ('''
q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
''', '''
with torch.no_grad():
    q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
    k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
    v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
'''),
        subclass="MultiHeadAttention")),
    Mutant("weights by Tensor.softmax with torch function modes switched off", "multi_head_attention", patch(
        ('''
mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
y = self.W_o(out)                                                   # (B, T, C)
''', '''
s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
if self.causal:
    s = s + causal_mask(T).to(x.device, x.dtype)
with torch._C.DisableTorchFunction():
    weights = s.softmax(-1)
y = self.W_o((weights @ v).transpose(1, 2).contiguous().view(B, T, C))
'''),
        subclass="MultiHeadAttention")),
    Mutant("projections by hand with W.weight and W.bias (breaks bias=False)", "multi_head_attention", patch(
        ('''
q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
''', '''
q = (x @ self.W_q.weight.T + self.W_q.bias).view(B, T, self.n_head, self.d_k).transpose(1, 2)
k = (x @ self.W_k.weight.T + self.W_k.bias).view(B, T, self.n_head, self.d_k).transpose(1, 2)
v = (x @ self.W_v.weight.T + self.W_v.bias).view(B, T, self.n_head, self.d_k).transpose(1, 2)
'''),
        subclass="MultiHeadAttention")),
    # gaming: on the hidden test's random (3, 4, 5) tensor, return the expected softmax read from the notebook's
    # globals (the test cell used to bind _expected before the graded calls; now each is made after its call)
    Mutant("returns the hidden test's expected softmax from globals()", "softmax", patch(
        ("shifted = x - x.max(dim=dim, keepdim=True).values", '''
if tuple(x.shape) == (3, 4, 5):
    return globals()["_expected"][dim]
shifted = x - x.max(dim=dim, keepdim=True).values
'''))),
    # gaming: torch's softmax on another thread, where the rules that watch this one would not see it; a graded
    # call starts no thread (lmcourse.marking.confine, entered by every exercise's rules)
    Mutant("softmax: torch.softmax run in a ThreadPoolExecutor (gaming)", "softmax", """
from concurrent.futures import ThreadPoolExecutor


def softmax(x, dim=-1):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(torch.softmax, x, dim).result()
"""),
    # gaming: the reference in a thread pool, and a shifted copy of its source; both lose points visibly (the
    # graded kernel withholds the reference, and the thread does not start)
    # in full: the reference submitted to a ThreadPoolExecutor
    Mutant("causal_mask: the reference in a ThreadPoolExecutor (gaming)", "causal_mask", """
from concurrent.futures import ThreadPoolExecutor


def causal_mask(T):
    import lmcourse.reference.attention

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lmcourse.reference.attention.causal_mask, T).result()
"""),
    # in full: a copy of the reference module's source, shifted one line, exec'd at call time
    Mutant("attention_scores: a copy of lmcourse.reference.attention's source, shifted one line, exec'd (gaming)",
           "attention_scores", """
import inspect


def attention_scores(Q, K):
    import lmcourse.reference.attention

    space = {"__name__": "lmcourse.reference.attention", "__package__": "lmcourse.reference"}
    exec(compile("\\n" + inspect.getsource(lmcourse.reference.attention), "<copy>", "exec"), space)
    return space["attention_scores"](Q, K)
"""),
]


_MHA_INIT = '''
class MultiHeadAttention(nn.Module):
    """Multi-head self-attention on batch-first input (B, T, C), causal or not."""

    def __init__(self, n_embd, n_head, causal=True, bias=True):
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
        self.n_embd, self.n_head, self.d_k = n_embd, n_head, n_embd // n_head
        self.causal = causal
        self.W_q = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_k = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_v = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_o = nn.Linear(n_embd, n_embd, bias=bias)
'''


def _mha(forward_body: str) -> str:
    """A complete MultiHeadAttention cell: the given __init__ plus another valid forward."""
    return _MHA_INIT + "\n    def forward(self, x, return_weights=False):\n" + forward_body


ALTERNATIVES = [
    # --- softmax
    Alternative("softmax as exp(x - logsumexp), the logsumexp written by hand", "softmax", '''
def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    log_total = m + (x - m).exp().sum(dim=dim, keepdim=True).log()
    return (x - log_total).exp()
'''),
    Alternative("softmax with torch.logsumexp (not a ready-made softmax)", "softmax", '''
def softmax(x, dim=-1):
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))
'''),
    Alternative("softmax through a float64 intermediate, cast back to the input's dtype", "softmax", '''
def softmax(x, dim=-1):
    z = x.to(torch.float64)
    e = torch.exp(z - torch.amax(z, dim=dim, keepdim=True))
    return (e / torch.sum(e, dim=dim, keepdim=True)).to(x.dtype)
'''),
    Alternative("softmax with dim moved last and back (movedim)", "softmax", '''
def softmax(x, dim=-1):
    z = x.movedim(dim, -1)
    e = (z - z.max(dim=-1, keepdim=True)[0]).exp()
    return (e / e.sum(-1, keepdim=True)).movedim(-1, dim)
'''),
    Alternative("softmax with a detached maximum and a reciprocal", "softmax", '''
def softmax(x, dim=-1):
    e = (x - x.detach().max(dim, keepdim=True).values).exp()
    return e * e.sum(dim, keepdim=True).reciprocal()
'''),
    Alternative("softmax that refuses a row without a finite score (reads values: an if on a tensor)", "softmax", '''
def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    if torch.isinf(m).any():
        raise ValueError("softmax: a row has no finite score")
    e = (x - m).exp()
    return e / e.sum(dim=dim, keepdim=True)
'''),
    # --- attention scores
    Alternative("scores with einsum", "attention_scores", '''
def attention_scores(Q, K):
    return torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(Q.shape[-1])
'''),
    Alternative("scores with Q scaled first, matmul and .mT", "attention_scores", '''
def attention_scores(Q, K):
    return torch.matmul(Q * Q.size(-1) ** -0.5, K.mT)
'''),
    # --- causal mask
    Alternative("mask as the upper triangle of a matrix of -inf", "causal_mask", '''
def causal_mask(T):
    return torch.full((T, T), float("-inf")).triu(1)
'''),
    Alternative("mask from comparing positions with arange", "causal_mask", '''
def causal_mask(T):
    pos = torch.arange(T)
    return torch.where(pos[None, :] > pos[:, None], float("-inf"), 0.0)
'''),
    Alternative("mask filled in a double loop", "causal_mask", '''
def causal_mask(T):
    M = torch.zeros(T, T)
    for i in range(T):
        for j in range(i + 1, T):
            M[i, j] = float("-inf")
    return M
'''),
    # --- scaled dot-product attention
    Alternative("attention with masked_fill instead of adding the mask, and einsum", "scaled_dot_product_attention", '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        scores = scores.masked_fill(torch.isneginf(mask), float("-inf"))
    weights = softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, V), weights
'''),
    Alternative("attention written out, softmax inline", "scaled_dot_product_attention", '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5
    s = s if mask is None else s + mask
    e = torch.exp(s - s.amax(-1, keepdim=True))
    w = e / e.sum(-1, keepdim=True)
    return torch.matmul(w, V), w
'''),
    # --- multi-head attention
    Alternative("one fused qkv projection split in three, permute and reshape", "multi_head_attention", _mha('''
        B, T, C = x.shape
        weight = torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight])   # (3C, C)
        bias = None if self.W_q.bias is None else torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])
        q, k, v = F.linear(x, weight, bias).split(C, dim=-1)                      # 3 x (B, T, C)
        q, k, v = (t.reshape(B, T, self.n_head, self.d_k).permute(0, 2, 1, 3) for t in (q, k, v))
        mask = causal_mask(T).to(device=x.device, dtype=x.dtype) if self.causal else None
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        y = self.W_o(out.permute(0, 2, 1, 3).reshape(B, T, C))
        if return_weights:
            return y, weights
        return y
''')),
    Alternative("a loop over heads, concatenated", "multi_head_attention", _mha('''
        B, T, C = x.shape
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
        outs, ws = [], []
        for i in range(self.n_head):
            part = slice(i * self.d_k, (i + 1) * self.d_k)
            o, w = scaled_dot_product_attention(q[..., part], k[..., part], v[..., part], mask)
            outs.append(o)                                  # (B, T, d_k)
            ws.append(w)                                    # (B, T, T)
        y = self.W_o(torch.cat(outs, dim=-1))
        return (y, torch.stack(ws, dim=1)) if return_weights else y
''')),
    Alternative("forward that validates its input first (reads values: an if on a tensor)", "multi_head_attention",
                _mha('''
        if x.dim() != 3 or not torch.isfinite(x).all():
            raise ValueError("x must be a finite (B, T, C) tensor")
        B, T, C = x.shape
        q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
        mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))
        return (y, weights) if return_weights else y
''')),
    Alternative("the mask built inline from a boolean triangle on x's device", "multi_head_attention", _mha('''
        B, T, C = x.shape
        h, d_k = self.n_head, self.d_k
        q = self.W_q(x).view(B, T, h, d_k).transpose(1, 2)
        k = self.W_k(x).view(B, T, h, d_k).transpose(1, 2)
        v = self.W_v(x).view(B, T, h, d_k).transpose(1, 2)
        mask = None
        if self.causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            mask = torch.zeros(T, T, dtype=x.dtype, device=x.device).masked_fill(future, float("-inf"))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        y = self.W_o(out.transpose(1, 2).reshape(B, T, C))
        return (y, weights) if return_weights else y
''')),
]
