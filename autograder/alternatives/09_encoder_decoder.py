"""Valid solutions of notebook 09 written another way. Each must keep every point."""

import textwrap
from pathlib import Path

from lmcourse.authoring.mutants import Alternative, answer_cell

_MASTER = Path(__file__).resolve().parents[1] / "masters" / "09_encoder_decoder.py"


def override(cls: str, *methods: str) -> str:
    """The whole class cell (a submission holds no solution to subclass): the master's answer cell
    up to its first graded method, then ``methods`` written another way."""
    target = {"CrossAttention": "cross_attention", "EncoderBlock": "encoder_block", "DecoderBlock": "decoder_block",
              "EncoderDecoder": "encoder_decoder"}[cls]
    cell = answer_cell(_MASTER, target)
    first = "    def encode" if cls == "EncoderDecoder" else "    def forward"
    body = "\n\n".join(textwrap.indent(textwrap.dedent(m).strip("\n"), "    ") for m in methods)
    return cell[:cell.index(first)] + body + "\n"

ALTERNATIVES = [
    # --- padding_mask
    Alternative("torch.ne", "padding_mask", '''
def padding_mask(ids, pad_id):
    return torch.ne(ids, pad_id)
'''),
    Alternative("the complement of the padding positions", "padding_mask", '''
def padding_mask(ids, pad_id):
    is_pad = ids == pad_id  # (B, S)
    return ~is_pad
'''),
    # --- teacher_forcing
    Alternative("pad_sequence over the shifted rows", "teacher_forcing", '''
def teacher_forcing(targets, bos_id, eos_id, pad_id):
    from torch.nn.utils.rnn import pad_sequence
    rows_in = [torch.tensor([bos_id, *t], dtype=torch.long) for t in targets]
    rows_out = [torch.tensor([*t, eos_id], dtype=torch.long) for t in targets]
    return (pad_sequence(rows_in, batch_first=True, padding_value=pad_id),
            pad_sequence(rows_out, batch_first=True, padding_value=pad_id))
'''),
    Alternative("rows as padded Python lists, one tensor each", "teacher_forcing", '''
def teacher_forcing(targets, bos_id, eos_id, pad_id):
    L = max(map(len, targets))
    rows_in = [[bos_id] + list(t) + [pad_id] * (L - len(t)) for t in targets]
    rows_out = [list(t) + [eos_id] + [pad_id] * (L - len(t)) for t in targets]
    return torch.tensor(rows_in, dtype=torch.long), torch.tensor(rows_out, dtype=torch.long)
'''),
    # --- CrossAttention
    Alternative("softmax written out with an additive -inf mask and einsum", "cross_attention",
                override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    B, T, C = x.shape
    S, nh = memory.shape[1], self.n_head
    hs = C // nh
    q = self.q_proj(x).reshape(B, T, nh, hs)
    k = self.k_proj(memory).reshape(B, S, nh, hs)
    v = self.v_proj(memory).reshape(B, S, nh, hs)
    scores = torch.einsum("bthd,bshd->bhts", q, k) / hs ** 0.5  # (B, nh, T, S)
    if memory_mask is not None:
        add = torch.zeros(B, S, dtype=x.dtype, device=x.device).masked_fill(~memory_mask, float("-inf"))
        scores = scores + add[:, None, None, :]
    w = torch.softmax(scores, dim=-1)
    y = torch.einsum("bhts,bshd->bthd", w, v).reshape(B, T, C)
    return self.c_proj(y)
''')),
    Alternative("a loop over the heads, each with its slice of the projections", "cross_attention",
                override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    C = x.size(-1)
    hs = C // self.n_head
    q, k, v = self.q_proj(x), self.k_proj(memory), self.v_proj(memory)
    outs = []
    for h in range(self.n_head):
        sl = slice(h * hs, (h + 1) * hs)
        scores = q[..., sl] @ k[..., sl].transpose(1, 2) / hs ** 0.5  # (B, T, S)
        if memory_mask is not None:
            scores = scores.masked_fill(~memory_mask[:, None, :], float("-inf"))
        outs.append(torch.softmax(scores, dim=-1) @ v[..., sl])
    return self.c_proj(torch.cat(outs, dim=-1))
''')),
    Alternative("bmm over batch and heads together, the softmax written out with the row maximum subtracted",
                "cross_attention", override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    B, T, C = x.size()
    S = memory.size(1)
    nh, hs = self.n_head, C // self.n_head
    q = self.q_proj(x).view(B, T, nh, hs).transpose(1, 2).reshape(B * nh, T, hs)
    k = self.k_proj(memory).view(B, S, nh, hs).transpose(1, 2).reshape(B * nh, S, hs)
    v = self.v_proj(memory).view(B, S, nh, hs).transpose(1, 2).reshape(B * nh, S, hs)
    s = torch.bmm(q, k.transpose(1, 2)) / (hs ** 0.5)  # (B * nh, T, S)
    if memory_mask is not None:
        keep = memory_mask.repeat_interleave(nh, dim=0)[:, None, :]  # (B * nh, 1, S)
        s = s.masked_fill(keep.logical_not(), float("-inf"))
    s = s - s.amax(dim=-1, keepdim=True)
    e = s.exp()
    w = e / e.sum(dim=-1, keepdim=True)
    y = torch.bmm(w, v).view(B, nh, T, hs).transpose(1, 2).contiguous().view(B, T, C)
    return self.c_proj(y)
''')),
    Alternative("einsum with unflatten, padding scores set to the dtype's smallest number", "cross_attention",
                override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    nh = self.n_head
    q = self.q_proj(x).unflatten(-1, (nh, -1))  # (B, T, nh, hs)
    k = self.k_proj(memory).unflatten(-1, (nh, -1))  # (B, S, nh, hs)
    v = self.v_proj(memory).unflatten(-1, (nh, -1))
    scores = torch.einsum("bthd,bshd->bhts", q, k) / q.shape[-1] ** 0.5
    if memory_mask is not None:
        scores = scores.masked_fill(~memory_mask[:, None, None, :], torch.finfo(scores.dtype).min)
    w = F.softmax(scores, dim=-1)
    return self.c_proj(torch.einsum("bhts,bshd->bthd", w, v).flatten(2))
''')),
    # --- EncoderBlock
    Alternative("ln1 applied twice, once for the queries and once for keys and values", "encoder_block",
                override("EncoderBlock", '''
def forward(self, x, src_mask=None):
    h = x + self.attn(self.ln1(x), self.ln1(x), memory_mask=src_mask)
    out = h + self.mlp(self.ln2(h))
    return out
''')),
    # --- DecoderBlock
    Alternative("named intermediate streams, keyword arguments", "decoder_block", override("DecoderBlock", '''
def forward(self, x, memory, memory_mask=None):
    g = x + self.attn(self.ln1(x))
    g2 = g + self.cross(x=self.ln_cross(g), memory=memory, memory_mask=memory_mask)
    return g2 + self.mlp(self.ln2(g2))
''')),
    # --- EncoderDecoder
    Alternative("log_softmax, gather and a masked mean; positions from the tables' rows", "encoder_decoder",
                override("EncoderDecoder", '''
def encode(self, src):
    m = padding_mask(src, self.config.pad_id)
    x = self.drop(self.src_wte(src) + self.src_wpe.weight[: src.shape[1]])
    for blk in self.encoder:
        x = blk(x, m)
    return self.ln_enc(x), m
''', '''
def decode(self, tgt_in, memory, src_mask):
    x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe.weight[: tgt_in.shape[1]])
    for blk in self.decoder:
        x = blk(x, memory, src_mask)
    return self.lm_head(self.ln_f(x))
''', '''
def forward(self, src, tgt_in, tgt_out=None):
    logits = self.decode(tgt_in, *self.encode(src))
    if tgt_out is None:
        return logits, None
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, T)
    real = (tgt_out != self.config.pad_id).to(nll.dtype)
    return logits, (nll * real).sum() / real.sum()
''')),
    Alternative("notebook 05's loss: logits.view(B * T, V), tgt_out.view(B * T)", "encoder_decoder",
                override("EncoderDecoder", '''
def encode(self, src):
    src_mask = padding_mask(src, self.config.pad_id)
    x = self.drop(self.src_wte(src) + self.src_wpe(torch.arange(src.size(1), device=src.device)))
    for block in self.encoder:
        x = block(x, src_mask)
    return self.ln_enc(x), src_mask
''', '''
def decode(self, tgt_in, memory, src_mask):
    x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(torch.arange(tgt_in.size(1), device=tgt_in.device)))
    for block in self.decoder:
        x = block(x, memory, src_mask)
    return self.lm_head(self.ln_f(x))
''', '''
def forward(self, src, tgt_in, tgt_out=None):
    logits = self.decode(tgt_in, *self.encode(src))
    loss = None
    if tgt_out is not None:
        B, T, V = logits.shape
        loss = F.cross_entropy(logits.view(B * T, V), tgt_out.view(B * T), ignore_index=self.config.pad_id)
    return logits, loss
''')),
    Alternative("positions from a buffer registered in __init__", "encoder_decoder", override("EncoderDecoder", '''
def encode(self, src):
    mask = padding_mask(src, self.config.pad_id)
    h = self.drop(self.src_wte(src) + self.src_wpe(self.src_pos[: src.shape[1]].to(src.device)))
    for i in range(len(self.encoder)):
        h = self.encoder[i](h, mask)
    return self.ln_enc(h), mask
''', '''
def decode(self, tgt_in, memory, src_mask):
    T = tgt_in.shape[1]
    g = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(torch.arange(T, device=tgt_in.device)[None]))
    for i in range(len(self.decoder)):
        g = self.decoder[i](g, memory, src_mask)
    return self.lm_head(self.ln_f(g))
''', '''
def forward(self, src, tgt_in, tgt_out=None):
    logits = self.decode(tgt_in, *self.encode(src))
    if tgt_out is None:
        return logits, None
    return logits, F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=self.config.pad_id)
''').replace("        self.lm_head.weight = self.tgt_wte.weight  # tied: one tensor\n",
               "        self.lm_head.weight = self.tgt_wte.weight  # tied: one tensor\n"
               "        self.register_buffer(\"src_pos\", torch.arange(config.src_block_size))\n")),
    # --- greedy_decode
    Alternative("a preallocated output and a Python list of finished rows", "greedy_decode", '''
def greedy_decode(model, src, bos_id, eos_id, pad_id, max_new_tokens):
    B = src.shape[0]
    with torch.no_grad():
        memory, mask = model.encode(src)
        out = torch.full((B, max_new_tokens + 1), pad_id, dtype=torch.long, device=src.device)
        out[:, 0] = bos_id
        finished = [False] * B
        n = 0
        while n < max_new_tokens and not all(finished):
            nxt = model.decode(out[:, : n + 1], memory, mask)[:, n].argmax(-1)
            for b in range(B):
                if not finished[b]:
                    out[b, n + 1] = nxt[b]
                    finished[b] = int(nxt[b]) == eos_id
            n += 1
    return out[:, 1 : n + 1]
'''),
    Alternative("every row decoded freely, the ids after each row's first <eos> padded at the end", "greedy_decode",
                '''
def greedy_decode(model, src, bos_id, eos_id, pad_id, max_new_tokens):
    with torch.no_grad():
        memory, mask = model.encode(src)
        ids = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        for _ in range(max_new_tokens):
            nxt = model.decode(ids, memory, mask)[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
            if (ids[:, 1:] == eos_id).any(dim=1).all():
                break
    out = ids[:, 1:]
    seen_eos = (out == eos_id).long().cumsum(dim=1)
    after = (seen_eos - (out == eos_id).long()) > 0  # strictly after the first eos
    return out.masked_fill(after, pad_id)
'''),
    Alternative("inference_mode, a while loop and masked_fill", "greedy_decode", '''
def greedy_decode(model, src, bos_id, eos_id, pad_id, max_new_tokens):
    with torch.inference_mode():
        memory, src_mask = model.encode(src)
        seq = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        steps = 0
        while steps < max_new_tokens and not finished.all():
            nxt = model.decode(seq, memory, src_mask)[:, -1, :].max(dim=-1).indices
            nxt = nxt.masked_fill(finished, pad_id)
            seq = torch.cat((seq, nxt.unsqueeze(1)), dim=1)
            finished |= nxt == eos_id
            steps += 1
    return seq[:, 1:].clone()
'''),
    # --- exact_match
    Alternative("a loop with a counter, float division", "exact_match", '''
def exact_match(predictions, targets):
    right = 0
    for i in range(len(targets)):
        if predictions[i] == targets[i]:
            right += 1
    return float(right) / len(targets)
'''),
]
