"""Valid answers to notebook 03 (attention) written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

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
