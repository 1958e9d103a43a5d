"""Valid solutions of notebook 02 (recurrent LMs) written another way. Each keeps every point."""

from lmcourse.authoring.mutants import Alternative

_RNNLM_HEAD = '''
class RNNLM(nn.Module):
    def __init__(self, vocab_size, n_embd, n_hidden):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        bound = 1 / math.sqrt(n_hidden)
        self.W_xh = nn.Parameter(torch.empty(n_hidden, n_embd).uniform_(-bound, bound))
        self.W_hh = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-bound, bound))
        self.b_h = nn.Parameter(torch.zeros(n_hidden))
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, h0=None):
        return self.forward_state(idx, h0)[0]

    def forward_state(self, idx, h0=None):
'''

_SAMPLE_HEAD = '''
@torch.no_grad()
def sample(model, prompt_ids, n_new, generator, temperature=1.0):
    device = next(model.parameters()).device
'''

ALTERNATIVES = [
    # --- elman_step
    Alternative("einsum instead of @ and .T", "elman_step", '''
def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    a = torch.einsum("bi,hi->bh", x_t, W_xh) + torch.einsum("bj,hj->bh", h_prev, W_hh) + b_h
    return torch.tanh(a)
'''),
    Alternative("F.linear for both products", "elman_step", '''
def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    return torch.tanh(F.linear(x_t, W_xh, b_h) + F.linear(h_prev, W_hh))
'''),
    Alternative("one product with [x_t, h_prev] and [W_xh, W_hh] concatenated", "elman_step", '''
def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    xh = torch.cat([x_t, h_prev], dim=1)      # (B, I + H)
    W = torch.cat([W_xh, W_hh], dim=1)        # (H, I + H)
    return (xh @ W.T + b_h).tanh()
'''),
    Alternative("column vectors, as in the lecture (W x, then transpose back)", "elman_step", '''
def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    a = W_xh @ x_t.T + W_hh @ h_prev.T + b_h[:, None]   # (H, B)
    return torch.tanh(a).T
'''),
    # --- rnn_forward
    Alternative("preallocated output, written once per step (h carried in its own variable)", "rnn_forward", '''
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    B, T, _ = x.shape
    H = W_hh.shape[0]
    h = torch.zeros(B, H, dtype=x.dtype, device=x.device) if h0 is None else h0
    out = x.new_empty(B, T, H)
    for t in range(T):
        h = elman_step(x[:, t], h, W_xh, W_hh, b_h)
        out[:, t] = h
    return out
'''),
    Alternative("torch.cat of unsqueezed steps, over x.unbind(1)", "rnn_forward", '''
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    h = h0 if h0 is not None else x.new_zeros(x.size(0), W_hh.size(0))
    steps = []
    for x_t in x.unbind(dim=1):
        h = elman_step(x_t, h, W_xh, W_hh, b_h)
        steps.append(h.unsqueeze(1))
    return torch.cat(steps, dim=1)
'''),
    Alternative("input projection for all steps at once, recurrence inline", "rnn_forward", '''
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    B, T, _ = x.shape
    xw = x @ W_xh.T + b_h                     # (B, T, H): the part that does not need h
    h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
    hs = []
    for t in range(T):
        h = torch.tanh(xw[:, t] + h @ W_hh.T)
        hs.append(h)
    return torch.stack(hs, dim=1)
'''),
    Alternative("time-major loop (transpose, stack on dim 0, transpose back)", "rnn_forward", '''
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    xs = x.transpose(0, 1)                    # (T, B, I)
    h = torch.zeros_like(xs[0, :, :1].expand(-1, W_hh.shape[0])) if h0 is None else h0
    hs = []
    for x_t in xs:
        h = elman_step(x_t, h, W_xh, W_hh, b_h)
        hs.append(h)
    return torch.stack(hs).transpose(0, 1)
'''),
    # --- RNNLM
    Alternative("one-hot rows times E instead of an embedding lookup", "RNNLM", _RNNLM_HEAD + '''
        E = self.wte.weight
        x = F.one_hot(idx, E.shape[0]).to(E.dtype) @ E          # (B, T, n_embd)
        hs = rnn_forward(x, h0, self.W_xh, self.W_hh, self.b_h)
        return self.lm_head(hs), hs[:, -1]
'''),
    Alternative("F.linear for the output layer and select for h_T", "RNNLM", _RNNLM_HEAD + '''
        hs = rnn_forward(self.wte(idx), h0, self.W_xh, self.W_hh, self.b_h)
        logits = F.linear(hs, self.lm_head.weight, self.lm_head.bias)
        return logits, hs.select(1, hs.shape[1] - 1)
'''),
    # --- lm_loss
    Alternative("log_softmax and gather", "lm_loss", '''
def lm_loss(logits, idx):
    logp = torch.log_softmax(logits[:, :-1], dim=-1)              # (B, T-1, V)
    picked = logp.gather(-1, idx[:, 1:].unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    return -picked.mean()
'''),
    Alternative("F.nll_loss on F.log_softmax", "lm_loss", '''
def lm_loss(logits, idx):
    V = logits.size(-1)
    return F.nll_loss(F.log_softmax(logits[:, :-1], dim=-1).reshape(-1, V), idx[:, 1:].reshape(-1))
'''),
    Alternative("cross_entropy with the class axis second (N, V, d)", "lm_loss", '''
def lm_loss(logits, idx):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), idx[:, 1:])
'''),
    Alternative("sum over rows in a loop, divided by the number of predictions", "lm_loss", '''
def lm_loss(logits, idx):
    B, T, V = logits.shape
    total = sum(F.cross_entropy(logits[b, :-1], idx[b, 1:], reduction="sum") for b in range(B))
    return total / (B * (T - 1))
'''),
    Alternative("logsumexp minus the target's logit", "lm_loss", '''
def lm_loss(logits, idx):
    lg = logits[:, :-1]
    target = lg.gather(-1, idx[:, 1:, None]).squeeze(-1)
    return (torch.logsumexp(lg, dim=-1) - target).mean()
'''),
    # --- perplexity
    Alternative("torch.exp of the mean, then .item()", "perplexity", '''
def perplexity(token_losses):
    return torch.exp(token_losses.double().mean()).item()
'''),
    Alternative("float32 mean as the losses come (no conversion to float64)", "perplexity", '''
def perplexity(token_losses):
    return float(torch.exp(token_losses.mean()))
'''),
    Alternative("sum / count with math.exp", "perplexity", '''
def perplexity(token_losses):
    losses = token_losses.tolist()
    return math.exp(math.fsum(losses) / len(losses))
'''),
    Alternative("base 2 of the mean in bits", "perplexity", '''
def perplexity(token_losses):
    bits = float(token_losses.double().mean()) / math.log(2)
    return 2.0 ** bits
'''),
    # --- sample
    Alternative("prompt fed one token at a time", "sample", _SAMPLE_HEAD + '''
    state = None
    for t in prompt_ids:
        logits, state = model.forward_state(torch.tensor([[t]], device=device), state)
    out = []
    while len(out) < n_new:
        probs = torch.softmax(logits[0, -1] / temperature, dim=-1).cpu()
        nxt = torch.multinomial(probs, 1, generator=generator).item()
        out.append(nxt)
        logits, state = model.forward_state(torch.tensor([[nxt]], device=device), state)
    return out
'''),
    Alternative("float64 probabilities, last logits kept as a row", "sample", _SAMPLE_HEAD + '''
    logits, state = model.forward_state(torch.tensor(prompt_ids, device=device).unsqueeze(0))
    last = logits[:, -1]
    out = []
    for _ in range(n_new):
        probs = F.softmax(last.double().cpu() / temperature, dim=-1)[0]
        nxt = int(torch.multinomial(probs, num_samples=1, replacement=True, generator=generator)[0])
        out.append(nxt)
        logits, state = model.forward_state(torch.tensor([[nxt]], device=device), state)
        last = logits[:, -1]
    return out
'''),
    # --- train_step
    Alternative("p.add_(p.grad, alpha=-lr) and p.grad = None", "train_step", '''
def train_step(model, idx, lr):
    loss = lm_loss(model(idx), idx)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
                p.grad = None
    return float(loss)
'''),
    Alternative("p.data.sub_ and grad.zero_() (no no_grad block needed on .data)", "train_step", '''
def train_step(model, idx, lr):
    logits = model(idx)
    loss = lm_loss(logits, idx)
    loss.backward()
    for p in model.parameters():
        if p.grad is not None:
            p.data.sub_(lr * p.grad.data)
            p.grad.zero_()
    return loss.item()
'''),
    Alternative("zero_grad before the forward pass and after the update", "train_step", '''
def train_step(model, idx, lr):
    model.zero_grad(set_to_none=True)
    loss = lm_loss(model(idx), idx)
    loss.backward()
    with torch.no_grad():
        for p in [q for q in model.parameters() if q.grad is not None]:
            p -= lr * p.grad
    model.zero_grad(set_to_none=False)
    return loss.detach().item()
'''),
    Alternative("torch.autograd.grad instead of backward (no .grad ever set)", "train_step", '''
def train_step(model, idx, lr):
    params = [p for p in model.parameters() if p.requires_grad]
    loss = lm_loss(model(idx), idx)
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, g in zip(params, grads):
            p.sub_(lr * g)
    return loss.item()
'''),
    Alternative("loss written out with F.cross_entropy, named parameters", "train_step", '''
def train_step(model, idx, lr):
    logits = model(idx)
    V = logits.shape[-1]
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), idx[:, 1:].reshape(-1))
    loss.backward()
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.grad is None:
                continue
            p.copy_(p - lr * p.grad)
    for p in model.parameters():
        p.grad = None
    return loss.item()
'''),
]
