"""Notebook 02 (recurrent LMs): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, forged_choice, patch

MUTANTS = [
    # --- elman_step
    Mutant("no nonlinearity (returns a_t)", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)", "return x_t @ W_xh.T + h_prev @ W_hh.T + b_h"))),
    Mutant("bias b_h dropped", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T)"))),
    Mutant("W_xh and W_hh swapped", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.tanh(x_t @ W_hh.T + h_prev @ W_xh.T + b_h)"))),
    Mutant("weights not transposed", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.tanh(x_t @ W_xh + h_prev @ W_hh + b_h)"))),
    Mutant("sigmoid instead of tanh", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.sigmoid(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)"))),
    Mutant("previous state ignored (feed-forward net)", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)", "return torch.tanh(x_t @ W_xh.T + b_h)"))),
    Mutant("calls nn.RNNCell with the weights copied in", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)", '''
cell = nn.RNNCell(W_xh.shape[1], W_xh.shape[0], dtype=x_t.dtype)
with torch.no_grad():
    cell.weight_ih.copy_(W_xh)
    cell.weight_hh.copy_(W_hh)
    cell.bias_ih.copy_(b_h)
    cell.bias_hh.zero_()
return cell(x_t, h_prev)
'''))),
    Mutant("calls torch.rnn_tanh_cell directly", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.rnn_tanh_cell(x_t, h_prev, W_xh, W_hh, b_h)"))),
    Mutant("calls torch._C._VariableFunctions.rnn_tanh_cell", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch._C._VariableFunctions.rnn_tanh_cell(x_t, h_prev, W_xh, W_hh, b_h)"))),
    Mutant("W_hh not transposed (square, so no shape error)", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh + b_h)"))),
    Mutant("elman_step returns float32 (.float())", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.tanh(x_t.float() @ W_xh.float().T + h_prev.float() @ W_hh.float().T + b_h.float())"))),
    Mutant("detaches its result", "elman_step", patch(
        ("return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)",
         "return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h).detach()"))),
    # --- rnn_forward
    Mutant("hidden state not carried across steps (h0 every time)", "rnn_forward", patch(
        ('''
h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
hs = []
for t in range(T):
    h = elman_step(x[:, t], h, W_xh, W_hh, b_h)  # (B, H)
    hs.append(h)
return torch.stack(hs, dim=1)  # (B, T, H)
''', '''
h0 = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
return torch.stack([elman_step(x[:, t], h0, W_xh, W_hh, b_h) for t in range(T)], dim=1)
'''))),
    Mutant("stores h_{t-1} where h_t belongs", "rnn_forward", patch(
        ('''
h = elman_step(x[:, t], h, W_xh, W_hh, b_h)  # (B, H)
hs.append(h)
''', '''
hs.append(h)
h = elman_step(x[:, t], h, W_xh, W_hh, b_h)
'''))),
    Mutant("returns only the last hidden state", "rnn_forward", patch(
        ("return torch.stack(hs, dim=1)  # (B, T, H)", "return h"))),
    Mutant("ignores the given h0 (always starts from zeros)", "rnn_forward", patch(
        ("h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0", "h = x.new_zeros(B, W_hh.shape[0])"))),
    Mutant("reads the sequence backwards", "rnn_forward", patch(
        ("for t in range(T):", "for t in reversed(range(T)):"),
        ("return torch.stack(hs, dim=1)  # (B, T, H)", "return torch.stack(hs[::-1], dim=1)"))),
    Mutant("calls nn.RNN with the weights copied in", "rnn_forward", patch(
        ('''
B, T, _ = x.shape
h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
hs = []
for t in range(T):
    h = elman_step(x[:, t], h, W_xh, W_hh, b_h)  # (B, H)
    hs.append(h)
return torch.stack(hs, dim=1)  # (B, T, H)
''', '''
rnn = nn.RNN(W_xh.shape[1], W_xh.shape[0], batch_first=True, dtype=x.dtype)
with torch.no_grad():
    rnn.weight_ih_l0.copy_(W_xh)
    rnn.weight_hh_l0.copy_(W_hh)
    rnn.bias_ih_l0.copy_(b_h)
    rnn.bias_hh_l0.zero_()
out, _ = rnn(x, None if h0 is None else h0[None])
return out
'''))),
    Mutant("calls torch.rnn_tanh directly", "rnn_forward", patch(
        ('''
B, T, _ = x.shape
h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
hs = []
for t in range(T):
    h = elman_step(x[:, t], h, W_xh, W_hh, b_h)  # (B, H)
    hs.append(h)
return torch.stack(hs, dim=1)  # (B, T, H)
''', '''
h0 = x.new_zeros(x.shape[0], W_hh.shape[0]) if h0 is None else h0
out, _ = torch.rnn_tanh(x, h0[None], [W_xh, W_hh, b_h, torch.zeros_like(b_h)], True, 1, 0.0, False, False, True)
return out
'''))),
    Mutant("start state of shape (B, I)", "rnn_forward", patch(
        ('''
B, T, _ = x.shape
h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
''', '''
B, T, I = x.shape
h = x.new_zeros(B, I) if h0 is None else h0
'''))),
    Mutant("float32 start state (torch.zeros(B, H))", "rnn_forward", patch(
        ("h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0",
         "h = torch.zeros(B, W_hh.shape[0]) if h0 is None else h0"))),
    Mutant("rnn_forward returns float32 (.float())", "rnn_forward", patch(
        ("return torch.stack(hs, dim=1)  # (B, T, H)", "return torch.stack(hs, dim=1).float()"))),
    Mutant("carried state detached between steps", "rnn_forward", patch(
        ("hs.append(h)", '''
hs.append(h)
h = h.detach()
'''))),
    Mutant("outputs detached", "rnn_forward", patch(("hs.append(h)", "hs.append(h.detach())"))),
    # in full: another algorithm (one preallocated tensor written in place)
    Mutant("writes into a preallocated tensor in place", "rnn_forward", '''
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    B, T, _ = x.shape
    hs = x.new_zeros(B, T + 1, W_hh.shape[0])
    if h0 is not None:
        hs[:, 0] = h0
    for t in range(T):
        hs[:, t + 1] = elman_step(x[:, t], hs[:, t], W_xh, W_hh, b_h)
    return hs[:, 1:]
'''),
    # --- RNNLM
    Mutant("predicts from h_{t-1} instead of h_t", "RNNLM", patch(
        ("return self.lm_head(hs), hs[:, -1]  # (B, T, V), (B, H)", '''
prev = torch.cat([torch.zeros_like(hs[:, :1]) if h0 is None else h0[:, None], hs[:, :-1]], dim=1)
return self.lm_head(prev), hs[:, -1]
'''),
        subclass="RNNLM")),
    Mutant("returns h_1 as the last state", "RNNLM", patch(
        ("return self.lm_head(hs), hs[:, -1]  # (B, T, V), (B, H)", "return self.lm_head(hs), hs[:, 0]"),
        subclass="RNNLM")),
    Mutant("forward_state ignores h0", "RNNLM", patch(
        ("hs = rnn_forward(x, h0, self.W_xh, self.W_hh, self.b_h)  # (B, T, H)",
         "hs = rnn_forward(x, None, self.W_xh, self.W_hh, self.b_h)"),
        subclass="RNNLM")),
    Mutant("uses nn.RNN inside the model", "RNNLM", patch(
        ("def __init__(self, vocab_size: int, n_embd: int, n_hidden: int):",
         "def __init__(self, vocab_size, n_embd, n_hidden):"),
        ('''
bound = 1 / math.sqrt(n_hidden)  # nn.RNN draws its weight matrices from U(-bound, bound) too
self.W_xh = nn.Parameter(torch.empty(n_hidden, n_embd).uniform_(-bound, bound))
self.W_hh = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-bound, bound))
self.b_h = nn.Parameter(torch.zeros(n_hidden))  # starts at 0 (nn.RNN draws its two biases at random)
''', '''
self.rnn = nn.RNN(n_embd, n_hidden, batch_first=True)
self.W_xh, self.W_hh, self.b_h = self.rnn.weight_ih_l0, self.rnn.weight_hh_l0, self.rnn.bias_ih_l0
nn.init.zeros_(self.rnn.bias_hh_l0)
self.rnn.bias_hh_l0.requires_grad_(False)
'''),
        ('''
x = self.wte(idx)  # (B, T, n_embd)
hs = rnn_forward(x, h0, self.W_xh, self.W_hh, self.b_h)  # (B, T, H)
''', "hs, _ = self.rnn(self.wte(idx), None if h0 is None else h0[None])"),
        subclass="RNNLM")),
    Mutant("calls torch.rnn_tanh inside the model", "RNNLM", patch(
        ("hs = rnn_forward(x, h0, self.W_xh, self.W_hh, self.b_h)  # (B, T, H)", '''
h0 = x.new_zeros(x.shape[0], self.W_hh.shape[0]) if h0 is None else h0
hs, _ = torch.rnn_tanh(x, h0[None], [self.W_xh, self.W_hh, self.b_h, torch.zeros_like(self.b_h)],
                       True, 1, 0.0, self.training, False, True)
'''),
        subclass="RNNLM")),
    # --- lm_loss
    Mutant("targets not shifted", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return F.cross_entropy(logits.reshape(B * T, V), idx.reshape(B * T))"))),
    Mutant("softmax applied before cross_entropy", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))", '''
probs = F.softmax(logits[:, :-1], dim=-1)
return F.cross_entropy(probs.reshape(-1, V), idx[:, 1:].reshape(-1))
'''))),
    Mutant("sum where the mean is asked", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         'return F.cross_entropy(logits[:, :-1].reshape(-1, V), idx[:, 1:].reshape(-1), reduction="sum")'))),
    Mutant("shifted the wrong way", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return F.cross_entropy(logits[:, 1:].reshape(-1, V), idx[:, :-1].reshape(-1))"))),
    Mutant("averages per sequence, then sums over the batch", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return sum(F.cross_entropy(logits[b, :-1], idx[b, 1:]) for b in range(B))"))),
    Mutant("flattens before shifting", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return F.cross_entropy(logits.reshape(-1, V)[:-1], idx.reshape(-1)[1:])"))),
    Mutant("computes in float32 (.float())", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return F.cross_entropy(logits[:, :-1].float().reshape(-1, V), idx[:, 1:].reshape(-1))"))),
    Mutant("lm_loss calls the tests' reference loss (issue 21: it lives in the package)", "lm_loss", patch(
        ("B, T, V = logits.shape\n", "import lmcourse.reference.rnn as _r\n"),
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return _r.lm_loss(logits, idx)"))),
    # --- perplexity
    Mutant("perplexity as exp of the summed loss", "perplexity", patch(
        ("return math.exp(float(token_losses.double().mean()))", "return math.exp(float(token_losses.sum()))"))),
    Mutant("mean of exp instead of exp of mean", "perplexity", patch(
        ("return math.exp(float(token_losses.double().mean()))",
         "return float(token_losses.double().exp().mean())"))),
    Mutant("base 2 with losses in nats", "perplexity", patch(
        ("return math.exp(float(token_losses.double().mean()))",
         "return 2.0 ** float(token_losses.double().mean())"))),
    # --- sample
    Mutant("sampling with argmax (greedy)", "sample", patch(
        ('''
probs = F.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)  # (V,)
nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
''', "nxt = int(logits[0, -1].argmax())"))),
    Mutant("drawn token not fed back (prompt re-read every step)", "sample", patch(
        ("logits, state = model.forward_state(torch.tensor([prompt_ids], device=device))", ""),
        ("for _ in range(n_new):", '''
for _ in range(n_new):
    logits, _ = model.forward_state(torch.tensor([prompt_ids], device=device))
'''),
        ('''
nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
out.append(nxt)
logits, state = model.forward_state(torch.tensor([[nxt]], device=device), state)
''', "out.append(int(torch.multinomial(probs, 1, generator=generator)))"))),
    Mutant("temperature multiplies the logits", "sample", patch(
        ('''
probs = F.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)  # (V,)
nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
''', '''
probs = F.softmax(logits[0, -1].float().cpu() * temperature, dim=-1)
nxt = int(torch.multinomial(probs, 1, generator=generator))
'''))),
    Mutant("ignores the generator (not reproducible)", "sample", patch(
        ("nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))",
         "nxt = int(torch.multinomial(probs, 1))"))),
    Mutant("samples from the first position's logits", "sample", patch(
        ('''
probs = F.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)  # (V,)
nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
''', '''
probs = F.softmax(logits[0, 0].float().cpu() / temperature, dim=-1)
nxt = int(torch.multinomial(probs, 1, generator=generator))
'''))),
    Mutant("state dropped between steps", "sample", patch(
        ("nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))",
         "nxt = int(torch.multinomial(probs, 1, generator=generator))"),
        ("logits, state = model.forward_state(torch.tensor([[nxt]], device=device), state)",
         "logits, state = model.forward_state(torch.tensor([[nxt]], device=device))"))),
    Mutant("multinomial on raw logits (no softmax)", "sample", patch(
        ('''
probs = F.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)  # (V,)
nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
''', '''
weights = logits[0, -1].float().cpu() / temperature
nxt = int(torch.multinomial(weights, 1, generator=generator))
'''))),
    Mutant("F.nll_loss on raw logits (no log_softmax)", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return F.nll_loss(logits[:, :-1].reshape(-1, V), idx[:, 1:].reshape(-1))"))),
    Mutant("log_softmax over the time axis", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))", '''
logp = F.log_softmax(logits, dim=1)
return F.nll_loss(logp[:, :-1].reshape(-1, V), idx[:, 1:].reshape(-1))
'''))),
    Mutant("mean over the vocabulary too (log-probs of all tokens averaged)", "lm_loss", patch(
        ("return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))",
         "return -F.log_softmax(logits[:, :-1], dim=-1).mean()"))),
    # --- train_step: one SGD step by hand
    Mutant("gradients never cleared (no zero_grad)", "train_step", patch(("model.zero_grad()", ""))),
    Mutant("gradient ascent (p += lr * p.grad)", "train_step", patch(("p -= lr * p.grad", "p += lr * p.grad"))),
    Mutant("update without torch.no_grad (in-place change of a leaf)", "train_step", patch(
        ('''
with torch.no_grad():
    for p in model.parameters():
        if p.grad is not None:
            p -= lr * p.grad
''', '''
for p in model.parameters():
    if p.grad is not None:
        p -= lr * p.grad
'''))),
    Mutant("rebinds the loop variable (p = p - lr * p.grad): nothing changes", "train_step", patch(
        ("p -= lr * p.grad", "p = p - lr * p.grad"))),
    Mutant("out-of-place p.data.sub (result thrown away)", "train_step", patch(
        ('''
with torch.no_grad():
    for p in model.parameters():
        if p.grad is not None:
            p -= lr * p.grad
''', '''
for p in model.parameters():
    if p.grad is not None:
        p.data.sub(lr * p.grad)
'''))),
    Mutant("step before backward (updates with the previous gradient)", "train_step", patch(
        ("model.zero_grad()", '''
model.zero_grad()
loss.backward()
'''))),
    Mutant("zero_grad between backward and the update (steps with zeros)", "train_step", patch(
        ("loss.backward()", '''
loss.backward()
model.zero_grad(set_to_none=False)
'''),
        ("model.zero_grad()", ""))),
    Mutant("zero_grad only before backward (gradients left behind)", "train_step", patch(
        ("model.zero_grad()", ""),
        ('''
logits = model(idx)  # (B, T, V)
''', '''
model.zero_grad()
logits = model(idx)  # (B, T, V)
'''))),
    Mutant("learning rate ignored (p -= p.grad)", "train_step", patch(("p -= lr * p.grad", "p -= p.grad"))),
    Mutant("crashes on a frozen parameter (p.grad is None)", "train_step", patch(
        ('''
if p.grad is not None:
    p -= lr * p.grad
''', "p -= lr * p.grad"))),
    Mutant("returns the loss tensor, not a float", "train_step", patch(("return loss.item()", "return loss"))),
    Mutant("returns the loss after the update", "train_step", patch(
        ("return loss.item()", '''
with torch.no_grad():
    return lm_loss(model(idx), idx).item()
'''))),
    Mutant("forward pass under torch.no_grad too (no graph to back-propagate)", "train_step", patch(
        ('''
logits = model(idx)  # (B, T, V)
loss = lm_loss(logits, idx)
loss.backward()
''', ""),
        ("with torch.no_grad():", '''
with torch.no_grad():
    loss = lm_loss(model(idx), idx)
    loss.backward()
'''))),
    Mutant("loss without the shift (scores the token just read)", "train_step", patch(
        ("loss = lm_loss(logits, idx)",
         "loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), idx.reshape(-1))"))),
    Mutant("uses torch.optim.SGD", "train_step", patch(
        ('''
logits = model(idx)  # (B, T, V)
loss = lm_loss(logits, idx)
''', '''
opt = torch.optim.SGD(model.parameters(), lr=lr)
loss = lm_loss(model(idx), idx)
opt.zero_grad()
'''),
        ('''
with torch.no_grad():
    for p in model.parameters():
        if p.grad is not None:
            p -= lr * p.grad
model.zero_grad()
''', '''
opt.step()
opt.zero_grad()
'''))),
    Mutant("new Parameter objects instead of an in-place update", "train_step", patch(
        ('''
for p in model.parameters():
    if p.grad is not None:
        p -= lr * p.grad
''', '''
for mod in model.modules():
    for name, p in list(mod.named_parameters(recurse=False)):
        if p.grad is not None:
            setattr(mod, name, nn.Parameter(p - lr * p.grad))
'''))),
    # --- adamw_step
    Mutant("AdamW without bias correction", "adamw_step", patch(
        ('m_hat = s["m"] / (1 - beta1 ** s["step"])', 'm_hat = s["m"]'),
        ('v_hat = s["v"] / (1 - beta2 ** s["step"])', 'v_hat = s["v"]'))),
    Mutant("only the first moment bias-corrected", "adamw_step", patch(
        ('v_hat = s["v"] / (1 - beta2 ** s["step"])', 'v_hat = s["v"]'))),
    Mutant("L2-coupled decay, as in Adam (weight_decay * p added to the gradient)", "adamw_step", patch(
        ("p.mul_(1 - lr * weight_decay)\n", ""),
        ('s["m"] = beta1 * s["m"] + (1 - beta1) * p.grad', '''
g = p.grad + weight_decay * p
s["m"] = beta1 * s["m"] + (1 - beta1) * g
'''),
        ('s["v"] = beta2 * s["v"] + (1 - beta2) * p.grad ** 2', 's["v"] = beta2 * s["v"] + (1 - beta2) * g ** 2'))),
    Mutant("decay applied to the gradient instead of the weight", "adamw_step", patch(
        ("p.mul_(1 - lr * weight_decay)\n", ""),
        ('s["step"] += 1', '''
s["step"] += 1
p.grad.mul_(1 - lr * weight_decay)
'''))),
    Mutant("eps inside the square root", "adamw_step", patch(
        ("p -= lr * m_hat / (v_hat.sqrt() + eps)", "p -= lr * m_hat / (v_hat + eps).sqrt()"))),
    Mutant("decay not scaled by the learning rate", "adamw_step", patch(
        ("p.mul_(1 - lr * weight_decay)", "p.mul_(1 - weight_decay)"))),
    Mutant("state rebound inside the function (moments start afresh every step)", "adamw_step", patch(
        ('s = state.setdefault(i, {"step": 0, "m": torch.zeros_like(p), "v": torch.zeros_like(p)})',
         's = {"step": 0, "m": torch.zeros_like(p), "v": torch.zeros_like(p)}'))),
    Mutant("betas swapped (m decays with beta2)", "adamw_step", patch(
        ("beta1, beta2 = betas", "beta2, beta1 = betas"))),
    Mutant("uses torch.optim.AdamW kept in the state", "adamw_step", patch(
        ("beta1, beta2 = betas", '''
if "opt" not in state:
    state["opt"] = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
state["opt"].param_groups[0]["lr"] = lr
state["opt"].step()
return
'''))),
    Mutant("adamw_step crashes on a frozen parameter (p.grad is None)", "adamw_step", patch(
        ('''
if p.grad is None:
    continue
''', ""))),
    # --- lr_schedule
    Mutant("warm-up off by one step (starts at 0)", "lr_schedule", patch(
        ("return max_lr * (step + 1) / warmup_steps", "return max_lr * step / warmup_steps"))),
    Mutant("cosine not reaching the floor (progress over total_steps - warmup_steps)", "lr_schedule", patch(
        ("progress = (step - warmup_steps) / (total_steps - 1 - warmup_steps)",
         "progress = (step - warmup_steps) / (total_steps - warmup_steps)"))),
    Mutant("cosine decays to 0, not to min_lr", "lr_schedule", patch(
        ("return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))",
         "return 0.5 * max_lr * (1 + math.cos(math.pi * progress))"))),
    Mutant("a whole cosine period (back to max_lr at the end)", "lr_schedule", patch(
        ("math.cos(math.pi * progress)", "math.cos(2 * math.pi * progress)"))),
    Mutant("returns a tensor (torch.cos)", "lr_schedule", patch(
        ("return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))",
         "return min_lr + 0.5 * (max_lr - min_lr) * (1 + torch.cos(torch.tensor(math.pi * progress)))"))),
    # --- clip_grad_norm
    Mutant("clips each tensor by its own norm", "clip_grad_norm", patch(
        ('''
if norm > max_norm:
    for g in grads:
        g.mul_(max_norm / norm)
''', '''
for g in grads:
    own = float(g.norm())
    if own > max_norm:
        g.mul_(max_norm / own)
'''))),
    Mutant("clip factor applied when the norm is below the max", "clip_grad_norm", patch(
        ('''
if norm > max_norm:
    for g in grads:
        g.mul_(max_norm / norm)
''', '''
for g in grads:
    g.mul_(max_norm / norm)
'''))),
    Mutant("returns the norm after clipping", "clip_grad_norm", patch(
        ("return norm", "return min(norm, max_norm)"))),
    Mutant("clips by value (each entry clamped to max_norm)", "clip_grad_norm", patch(
        ('''
if norm > max_norm:
    for g in grads:
        g.mul_(max_norm / norm)
''', '''
for g in grads:
    g.clamp_(-max_norm, max_norm)
'''))),
    Mutant("the sum of the tensors' norms for the global norm", "clip_grad_norm", patch(
        ("norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))",
         "norm = sum(float(g.norm()) for g in grads)"))),
    Mutant("calls torch.nn.utils.clip_grad_norm_", "clip_grad_norm", patch(
        ("grads = [p.grad for p in params if p.grad is not None]",
         "return float(torch.nn.utils.clip_grad_norm_(params, max_norm))"))),
    forged_choice("answer_q1", "A"),
    # gaming: on the hidden test's largest case, return the expected loss read from the notebook's globals (the
    # test cell used to bind it, as _want, before the graded call; now it is made after it, so this loses points)
    Mutant("returns the hidden test's expected loss from globals()", "lm_loss", patch(
        ("B, T, V = logits.shape", '''
B, T, V = logits.shape
if (B, T, V) == (5, 17, 29) and not logits.requires_grad:
    return globals()["_want"]
'''))),
    # gaming (issue 22, "Done when"): the reference run on a thread, and a shifted copy of its source; both lose
    # points visibly: the thread is refused by lmcourse.marking.confine inside the graded call, and the copy finds
    # no reference to read (the graded kernel withholds it; confine refuses reading its source in the call)
    # in full: the reference run on a threading.Thread, then joined
    Mutant("elman_step: the reference run on a threading.Thread, then joined (gaming)", "elman_step", """
import threading


def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    out = []
    worker = threading.Thread(
        target=lambda: out.append(lmcourse.reference.rnn.elman_step(x_t, h_prev, W_xh, W_hh, b_h)))
    worker.start()
    worker.join()
    return out[0]
"""),
    # in full: a copy of the reference module's source, shifted one line, exec'd at call time
    Mutant("rnn_forward: a copy of lmcourse.reference.rnn's source, shifted one line, exec'd (gaming)",
           "rnn_forward", """
import inspect


def rnn_forward(x, h0, W_xh, W_hh, b_h):
    space = {"__name__": "lmcourse.reference.rnn", "__package__": "lmcourse.reference"}
    exec(compile("\\n" + inspect.getsource(lmcourse.reference.rnn), "<copy>", "exec"), space)
    return space["rnn_forward"](x, h0, W_xh, W_hh, b_h)
"""),
]


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
    # --- adamw_step
    Alternative("torch.optim.AdamW's own moves (lerp_, addcmul_, addcdiv_), state keyed by the tensor", "adamw_step",
                '''
@torch.no_grad()
def adamw_step(params, state, lr, betas, eps, weight_decay):
    beta1, beta2 = betas
    for p in params:
        if p.grad is None:
            continue
        if p not in state:
            state[p] = [0, torch.zeros_like(p), torch.zeros_like(p)]
        st = state[p]
        st[0] += 1
        st[1].lerp_(p.grad, 1 - beta1)
        st[2].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
        denom = (st[2].sqrt() / math.sqrt(1 - beta2 ** st[0])).add_(eps)
        p.mul_(1 - lr * weight_decay)
        p.addcdiv_(st[1], denom, value=-lr / (1 - beta1 ** st[0]))
'''),
    Alternative("one step count for the whole state, moments in lists", "adamw_step", '''
def adamw_step(params, state, lr, betas, eps, weight_decay):
    b1, b2 = betas
    if not state:
        state.update(t=0, m=[None] * len(params), v=[None] * len(params))
    state["t"] += 1
    t = state["t"]
    with torch.no_grad():
        for i, p in enumerate(params):
            g = p.grad
            if g is None:
                continue
            m = state["m"][i] if state["m"][i] is not None else torch.zeros_like(p)
            v = state["v"][i] if state["v"][i] is not None else torch.zeros_like(p)
            state["m"][i] = m = b1 * m + (1 - b1) * g
            state["v"][i] = v = b2 * v + (1 - b2) * g * g
            update = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)
            p.copy_(p * (1 - lr * weight_decay) - lr * update)
'''),
    # --- lr_schedule
    Alternative("the cosine from the warm-up's end, with numpy", "lr_schedule", '''
def lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps):
    import numpy as np
    if warmup_steps > 0 and step < warmup_steps:
        return float(max_lr * (step + 1) / warmup_steps)
    t = step - warmup_steps
    span = total_steps - 1 - warmup_steps
    return float(min_lr + (max_lr - min_lr) * (np.cos(np.pi * t / span) + 1) / 2)
'''),
    Alternative("cos² of half the angle", "lr_schedule", '''
def lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return (step + 1) / warmup_steps * max_lr
    p = min(1.0, (step - warmup_steps) / (total_steps - 1 - warmup_steps))
    return min_lr + (max_lr - min_lr) * math.cos(math.pi * p / 2) ** 2
'''),
    # --- clip_grad_norm
    Alternative("norm of the norms, factor clamped at 1 (torch's way, eps 1e-6)", "clip_grad_norm", '''
def clip_grad_norm(params, max_norm):
    grads = [p.grad for p in params if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    factor = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(factor)
    return total.item()
'''),
    Alternative("a 0-d tensor returned, gradients replaced by scaled copies", "clip_grad_norm", '''
def clip_grad_norm(params, max_norm):
    with_grad = [p for p in params if p.grad is not None]
    norm = torch.cat([p.grad.flatten() for p in with_grad]).norm()
    if norm > max_norm:
        for p in with_grad:
            p.grad = p.grad * (max_norm / norm)
    return norm
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
