"""Notebook 09 (the encoder-decoder): its mutants and its alternatives.

``MUTANTS``: typical student bugs, and ways of gaming it; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

import ast
import textwrap
from pathlib import Path

from lmcourse.authoring.mutants import Alternative, Mutant, answer_cell, override, patch

_OWN_SOFTMAX = '''
scores = q @ k.transpose(-2, -1) / hs ** 0.5  # (B, nh, T, S)
if mask is not None:
    scores = scores.masked_fill(~mask, float("-inf"))
y = torch.softmax(scores, dim=-1) @ v
'''

_MASK = "mask = None if memory_mask is None else memory_mask[:, None, None, :]  # (B, 1, 1, S): hide keys"

_MASTER = Path(__file__).resolve().parents[1] / "masters" / "09_encoder_decoder.py"


def _beside(source: str, kept: str) -> str:
    """A whole answer of exercise 1 (one cell, two functions): ``source``, one of them written another way,
    after the master's own ``kept``."""
    cell = answer_cell(_MASTER, "teacher_forcing")
    node = next(n for n in ast.parse(cell).body if isinstance(n, ast.FunctionDef) and n.name == kept)
    own = "\n".join(cell.split("\n")[node.lineno - 1:node.end_lineno])
    return own + "\n\n\n" + textwrap.dedent(source).lstrip("\n")


MUTANTS = [
    # --- exercise 1: padding_mask
    Mutant("mask inverted: True at padding", "teacher_forcing",
           patch(("return ids != pad_id", "return ids == pad_id"))),
    Mutant("padding taken to be id 0 whatever pad_id says", "teacher_forcing",
           patch(("return ids != pad_id", "return ids != 0"))),
    Mutant("a float mask (1.0 / 0.0), not bool", "teacher_forcing",
           patch(("return ids != pad_id", "return (ids != pad_id).float()"))),
    Mutant("the mask built on the CPU from a Python list", "teacher_forcing",
           patch(("return ids != pad_id",
                  "return torch.tensor([[i != pad_id for i in row] for row in ids.tolist()])"))),
    # --- exercise 1: teacher_forcing
    Mutant("target not shifted: the decoder reads what it must predict", "teacher_forcing",
           patch(("tgt_in[b, :len(t) + 1] = torch.tensor([bos_id] + list(t))",
                  "tgt_in[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id])"))),
    Mutant("<eos> at the end of the row, not right after the target", "teacher_forcing",
           patch(("tgt_out[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id])", '''
tgt_out[b, :len(t)] = torch.tensor(list(t))
tgt_out[b, -1] = eos_id
'''))),
    Mutant("<bos> also at the start of tgt_out (no shift between the two)", "teacher_forcing",
           patch(("tgt_out[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id])",
                  "tgt_out[b, :len(t) + 1] = torch.tensor([bos_id] + list(t))"))),
    Mutant("padding written as 0 whatever pad_id says", "teacher_forcing",
           patch(("tgt_in = torch.full((len(targets), L + 1), pad_id, dtype=torch.long)",
                  "tgt_in = torch.zeros((len(targets), L + 1), dtype=torch.long)"),
                 ("tgt_out = torch.full((len(targets), L + 1), pad_id, dtype=torch.long)",
                  "tgt_out = torch.zeros((len(targets), L + 1), dtype=torch.long)"))),
    Mutant("no <eos>: the model never learns to stop", "teacher_forcing",
           patch(("tgt_out[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id])",
                  "tgt_out[b, :len(t)] = torch.tensor(list(t))"))),
    Mutant("tgt_in and tgt_out swapped: the shift the wrong way round", "teacher_forcing",
           patch(("tgt_in[b, :len(t) + 1] = torch.tensor([bos_id] + list(t))",
                  "tgt_in[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id])"),
                 ("tgt_out[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id])",
                  "tgt_out[b, :len(t) + 1] = torch.tensor([bos_id] + list(t))"))),
    # gaming: tensor subclasses whose tolist() asks the reference when the test reads them, outside the graded call
    Mutant("tensor subclasses whose tolist() runs the reference later", "teacher_forcing", _beside('''
class _Late(torch.Tensor):
    def tolist(self):
        import lmcourse.reference.encoder_decoder as _r
        args, which = self._late
        return _r.teacher_forcing(*args)[which].tolist()


def teacher_forcing(targets, bos_id, eos_id, pad_id):
    L = max(len(t) for t in targets)
    args = ([list(t) for t in targets], bos_id, eos_id, pad_id)
    outs = []
    for which in (0, 1):
        t = torch.zeros(len(targets), L + 1, dtype=torch.long).as_subclass(_Late)
        t._late = (args, which)
        outs.append(t)
    return tuple(outs)
''', "padding_mask")),
    # --- CrossAttention
    Mutant("keys from the decoder (k_proj applied to x)", "cross_attention",
           patch(("k = self.k_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "k = self.k_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)"))),
    Mutant("keys and values from the decoder: self-attention, not cross-attention", "cross_attention",
           patch(("k = self.k_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "k = self.k_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)"),
                 ("v = self.v_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "v = self.v_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)"),
                 (_MASK,
                  "mask = None"))),
    Mutant("queries from the encoder, keys and values from the decoder (roles swapped)", "cross_attention",
           patch(("q = self.q_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)",
                  "q = self.q_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)"),
                 ("k = self.k_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "k = self.k_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)"),
                 ("v = self.v_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "v = self.v_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)"),
                 (_MASK,
                  "mask = None"),
                 ("return self.c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)",
                  "return self.c_proj(y.transpose(1, 2).reshape(B, S, C))"))),
    Mutant("padding mask on the queries instead of the keys", "cross_attention",
           patch((_MASK,
                  "mask = None if memory_mask is None else memory_mask[:, None, :, None]"))),
    Mutant("a causal mask on the cross-attention", "cross_attention",
           patch((_MASK, '''
mask = torch.ones(T, S, dtype=torch.bool).tril()
if memory_mask is not None:
    mask = mask & memory_mask[:, None, None, :]
'''))),
    Mutant("padding mask ignored", "cross_attention",
           patch((_MASK,
                  "mask = None"))),
    Mutant("mask read the wrong way round (True = hide)", "cross_attention",
           patch((_MASK,
                  "mask = None if memory_mask is None else ~memory_mask[:, None, None, :]"))),
    Mutant("heads merged without moving the head axis back", "cross_attention",
           patch(("return self.c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)",
                  "return self.c_proj(y.reshape(B, T, C))"))),
    Mutant("no output projection W_O", "cross_attention",
           patch(("return self.c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)",
                  "return y.transpose(1, 2).reshape(B, T, C)"))),
    Mutant("scores not divided by sqrt(d_k)", "cross_attention",
           patch(("y, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T, hs)",
                  _OWN_SOFTMAX.replace(" / hs ** 0.5", "")))),
    Mutant("softmax over the query axis", "cross_attention",
           patch(("y, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T, hs)",
                  _OWN_SOFTMAX.replace("dim=-1", "dim=-2")))),
    Mutant("padding scores set to 0 instead of -inf", "cross_attention",
           patch(("y, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T, hs)",
                  _OWN_SOFTMAX.replace('float("-inf")', "0.0")))),
    Mutant("attention weights multiplied by the mask after the softmax (not renormalised)", "cross_attention",
           patch(("y, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T, hs)", '''
w = torch.softmax(q @ k.transpose(-2, -1) / hs ** 0.5, dim=-1)
if mask is not None:
    w = w * mask
y = w @ v
'''))),
    Mutant("one head whatever n_head says", "cross_attention",
           patch(("S, hs = memory.size(1), C // self.n_head", "S, hs = memory.size(1), C // 1"),
                 ("q = self.q_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)",
                  "q = self.q_proj(x).view(B, T, 1, hs).transpose(1, 2)"),
                 ("k = self.k_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "k = self.k_proj(memory).view(B, S, 1, hs).transpose(1, 2)"),
                 ("v = self.v_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)",
                  "v = self.v_proj(memory).view(B, S, 1, hs).transpose(1, 2)"))),
    # gaming: torch's fused attention where the explicit form is asked
    Mutant("F.scaled_dot_product_attention", "cross_attention",
           patch(("y, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T, hs)",
                  "y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)"))),
    # gaming: nn.MultiheadAttention with the weights copied in at every call
    Mutant("nn.MultiheadAttention with the weights copied in", "cross_attention", override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    C = x.size(-1)
    mha = nn.MultiheadAttention(C, self.n_head, bias=self.q_proj.bias is not None, batch_first=True)
    mha = mha.to(dtype=x.dtype, device=x.device)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]))
        mha.out_proj.weight.copy_(self.c_proj.weight)
        if self.q_proj.bias is not None:
            mha.in_proj_bias.copy_(torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]))
            mha.out_proj.bias.copy_(self.c_proj.bias)
    pad = None if memory_mask is None else ~memory_mask
    return mha(x, memory, memory, key_padding_mask=pad, need_weights=False)[0]
''')),
    # gaming: the stand-in of the later tests, called on another thread so the rules do not see it
    Mutant("the course's cross-attention run on a thread", "cross_attention", override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    import threading

    import lmcourse.reference.encoder_decoder as _r
    out = {}
    worker = threading.Thread(target=lambda: out.update(y=_r.CrossAttention.forward(self, x, memory, memory_mask)))
    worker.start()
    worker.join()
    return out["y"]
''')),
    # gaming: a copy of the course's source compiled at call time, one line lower (new code objects)
    Mutant("exec(inspect.getsource(...)) of the course's cross-attention, shifted one line", "cross_attention",
           override("CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    import inspect
    import textwrap

    import lmcourse.reference.encoder_decoder as _r
    source = "\\n" + textwrap.dedent(inspect.getsource(_r.CrossAttention.forward))
    namespace = dict(vars(_r))
    exec(compile(source, "copy.py", "exec"), namespace)
    return namespace["forward"](self, x, memory, memory_mask)
''')),
    # gaming: zeros returned, the real output written into them later, when the test reads att.q_proj to build its
    # expected value (the reference's forward then runs outside the graded call)
    Mutant("zeros filled in later by the reference, when the test reads q_proj", "cross_attention", override(
        "CrossAttention", '''
def forward(self, x, memory, memory_mask=None):
    out = x.new_zeros(x.shape) + 0 * sum(p.sum() for p in self.parameters())
    self.__dict__.setdefault("_pending", []).append((out, x.clone(), memory.clone(), memory_mask))
    return out
''', '''
def __getattr__(self, name):
    if name == "q_proj" and self.__dict__.get("_pending"):
        import lmcourse.reference.encoder_decoder as _r
        pending, self.__dict__["_pending"] = self.__dict__["_pending"], []
        for out, x, memory, mask in pending:
            with torch.no_grad():
                out.copy_(_r.CrossAttention.forward(self, x, memory, mask))
    return super().__getattr__(name)
''')),
    # --- EncoderBlock
    Mutant("encoder self-attention without the padding mask", "encoder_block",
           patch(("x = x + self.attn(a, a, src_mask)  # (B, S, C)", "x = x + self.attn(a, a)"))),
    Mutant("residual added to the normalised input", "encoder_block",
           patch(("x = x + self.attn(a, a, src_mask)  # (B, S, C)", "x = a + self.attn(a, a, src_mask)"))),
    Mutant("post-LN encoder block", "encoder_block",
           patch(('''
a = self.ln1(x)
x = x + self.attn(a, a, src_mask)  # (B, S, C)
return x + self.mlp(self.ln2(x))  # (B, S, C)
''', '''
x = self.ln1(x + self.attn(x, x, src_mask))
return self.ln2(x + self.mlp(x))
'''))),
    Mutant("keys and values from the un-normalised x", "encoder_block",
           patch(("x = x + self.attn(a, a, src_mask)  # (B, S, C)", "x = x + self.attn(a, x, src_mask)"))),
    Mutant("the MLP reads the stream without ln2", "encoder_block",
           patch(("return x + self.mlp(self.ln2(x))  # (B, S, C)", "return x + self.mlp(x)"))),
    # gaming: torch's fused encoder-layer kernel (nn.TransformerEncoderLayer's fast path), tied to the parameters
    Mutant("torch._transformer_encoder_layer_fwd, its output tied to the parameters", "encoder_block",
           override("EncoderBlock", '''
def forward(self, x, src_mask=None):
    a = self.attn
    w_in = torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight])
    b_in = torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias])
    mask = None if src_mask is None else ~src_mask
    with torch.no_grad():
        y = torch._transformer_encoder_layer_fwd(
            x, x.shape[-1], a.n_head, w_in, b_in, a.c_proj.weight, a.c_proj.bias, True, True, self.ln1.eps,
            self.ln1.weight, self.ln1.bias, self.ln2.weight, self.ln2.bias, self.mlp.c_fc.weight,
            self.mlp.c_fc.bias, self.mlp.c_proj.weight, self.mlp.c_proj.bias, mask, None if mask is None else 1)
    return y + 0 * sum(p.sum() for p in self.parameters())
''')),
    # gaming: zeros returned, the real output written in later by the reference block when the test reads self.attn
    Mutant("zeros filled in later by the reference block, when the test reads attn", "encoder_block",
           override("EncoderBlock", '''
def forward(self, x, src_mask=None):
    out = x.new_zeros(x.shape) + 0 * sum(p.sum() for p in self.parameters())
    self.__dict__.setdefault("_pending", []).append((out, x.clone(), src_mask))
    return out
''', '''
def __getattr__(self, name):
    if name == "attn" and self.__dict__.get("_pending"):
        import lmcourse.reference.encoder_decoder as _r
        pending, self.__dict__["_pending"] = self.__dict__["_pending"], []
        for out, x, mask in pending:
            with torch.no_grad():
                out.copy_(_r.EncoderBlock.forward(self, x, mask))
    return super().__getattr__(name)
''')),
    # --- DecoderBlock
    Mutant("cross-attention without the source padding mask", "decoder_block",
           patch(("x = x + self.cross(self.ln_cross(x), memory, memory_mask)  # (B, T, C): reads the source",
                  "x = x + self.cross(self.ln_cross(x), memory)"))),
    Mutant("cross-attention keys from the decoder (the source never read)", "decoder_block",
           patch(("x = x + self.cross(self.ln_cross(x), memory, memory_mask)  # (B, T, C): reads the source",
                  "x = x + self.cross(self.ln_cross(x), self.ln_cross(x))"))),
    Mutant("the encoder's output normalised again by ln_cross", "decoder_block",
           patch(("x = x + self.cross(self.ln_cross(x), memory, memory_mask)  # (B, T, C): reads the source",
                  "x = x + self.cross(self.ln_cross(x), self.ln_cross(memory), memory_mask)"))),
    Mutant("cross-attention before the causal self-attention", "decoder_block",
           patch(('''
x = x + self.attn(self.ln1(x))  # (B, T, C): causal, each position reads its past
x = x + self.cross(self.ln_cross(x), memory, memory_mask)  # (B, T, C): reads the source
''', '''
x = x + self.cross(self.ln_cross(x), memory, memory_mask)
x = x + self.attn(self.ln1(x))
'''))),
    Mutant("no self-attention sub-layer", "decoder_block",
           patch(("x = x + self.attn(self.ln1(x))  # (B, T, C): causal, each position reads its past", ""))),
    Mutant("cross-attention reads the stream without its LayerNorm", "decoder_block",
           patch(("x = x + self.cross(self.ln_cross(x), memory, memory_mask)  # (B, T, C): reads the source",
                  "x = x + self.cross(x, memory, memory_mask)"))),
    # --- EncoderDecoder
    Mutant("loss counting padding", "encoder_decoder",
           patch(('''
loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                       ignore_index=self.config.pad_id)
''', "loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))"))),
    Mutant("loss against tgt_in: the target not shifted", "encoder_decoder",
           patch(('''
loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                       ignore_index=self.config.pad_id)
''', '''
loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_in.reshape(-1),
                       ignore_index=self.config.pad_id)
'''))),
    Mutant("no positions on the target side", "encoder_decoder",
           patch(("x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(pos))  # (B, T, C)",
                  "x = self.drop(self.tgt_wte(tgt_in))"))),
    Mutant("the encoder's output without ln_enc", "encoder_decoder",
           patch(("return self.ln_enc(x), src_mask", "return x, src_mask"))),
    Mutant("encoder blocks without the padding mask", "encoder_decoder",
           patch(("x = block(x, src_mask)  # (B, S, C)", "x = block(x)"))),
    Mutant("decoder blocks read the memory without the padding mask", "encoder_decoder",
           patch(("x = block(x, memory, src_mask)  # (B, T, C)", "x = block(x, memory, None)"))),
    Mutant("the source mask built with padding id 0 whatever config.pad_id says", "encoder_decoder",
           patch(("src_mask = padding_mask(src, self.config.pad_id)  # (B, S)",
                  "src_mask = padding_mask(src, 0)  # (B, S)"))),
    Mutant("the loss ignores id 0 whatever config.pad_id says", "encoder_decoder",
           patch(("ignore_index=self.config.pad_id)", "ignore_index=0)"))),
    Mutant("head not tied to the target embedding", "encoder_decoder",
           patch(("self.lm_head.weight = self.tgt_wte.weight  # tied: one tensor", ""))),
    Mutant("the decoder embeds its input with the source table", "encoder_decoder",
           patch(("x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(pos))  # (B, T, C)",
                  "x = self.drop(self.src_wte(tgt_in) + self.tgt_wpe(pos))"))),
    Mutant("no dropout on the target's embeddings (self.drop on the source side only)", "encoder_decoder",
           patch(("x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(pos))  # (B, T, C)",
                  "x = self.tgt_wte(tgt_in) + self.tgt_wpe(pos)"))),
    Mutant("dropout on the encoder's output instead of its embeddings", "encoder_decoder",
           patch(("x = self.drop(self.src_wte(src) + self.src_wpe(pos))  # (B, S, C)",
                  "x = self.src_wte(src) + self.src_wpe(pos)"),
                 ("return self.ln_enc(x), src_mask", "return self.drop(self.ln_enc(x)), src_mask"))),
    Mutant("no final LayerNorm before the head", "encoder_decoder",
           patch(("return self.lm_head(self.ln_f(x))  # (B, T, V)", "return self.lm_head(x)"))),
    # the prose asks for the ids' device: a test on PyTorch's 'meta' device shows a tensor made on the CPU
    Mutant("source positions made with torch.arange(S) on the CPU, not on src's device", "encoder_decoder",
           patch(("pos = torch.arange(src.size(1), device=src.device)  # (S,)", "pos = torch.arange(src.size(1))"))),
    Mutant("target positions made with torch.arange(T) on the CPU, not on tgt_in's device", "encoder_decoder",
           patch(("pos = torch.arange(tgt_in.size(1), device=tgt_in.device)  # (T,)",
                  "pos = torch.arange(tgt_in.size(1))"))),
    # in full: the reference stands in for the solution
    Mutant("the reference EncoderDecoder subclassed", "encoder_decoder", '''
try:
    import lmcourse.nn.seq2seq as _s
except ImportError:   # the graded kernel withholds the course's model: the subclass stands on nothing
    _s = None


class EncoderDecoder(_s.EncoderDecoder if _s else nn.Module):
    """The course's model under the notebook's name."""
'''),
    # --- greedy_decode
    Mutant("encoder re-run at every step", "greedy_decode",
           patch(("logits = model.decode(ids, memory, src_mask)  # (B, t, V)",
                  "logits = model.decode(ids, *model.encode(src))"))),
    Mutant("no stop when every row has ended: always max_new_tokens", "greedy_decode",
           patch(('''
if bool(done.all()):
    break
''', ""))),
    Mutant("tokens after <eos> not replaced by padding", "greedy_decode",
           patch(("nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)", ""))),
    Mutant("<bos> kept in the output", "greedy_decode", patch(("return ids[:, 1:]", "return ids"))),
    Mutant("the first position's logits, not the last", "greedy_decode",
           patch(("nxt = logits[:, -1].argmax(dim=-1)  # (B,)", "nxt = logits[:, 0].argmax(dim=-1)"))),
    Mutant("stops as soon as one row has ended", "greedy_decode",
           patch(("if bool(done.all()):", "if bool(done.any()):"))),
    Mutant("decoder fed only the last token (no prefix, no cache)", "greedy_decode",
           patch(("logits = model.decode(ids, memory, src_mask)  # (B, t, V)",
                  "logits = model.decode(ids[:, -1:], memory, src_mask)"))),
    Mutant("<bos> written as 1 (torch.ones) whatever bos_id says", "greedy_decode",
           patch(("ids = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)",
                  "ids = torch.ones((src.size(0), 1), dtype=torch.long, device=src.device)  # (B, 1)"))),
    Mutant("padding after <eos> written as 0 whatever pad_id says", "greedy_decode",
           patch(("nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)", "nxt = nxt.masked_fill(done, 0)"))),
    Mutant("the <bos> column made on the CPU, not on src's device", "greedy_decode",
           patch(("ids = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)",
                  "ids = torch.full((src.size(0), 1), bos_id, dtype=torch.long)  # (B, 1)"))),
    Mutant("the done flags made on the CPU, not on src's device", "greedy_decode",
           patch(("done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)  # (B,)",
                  "done = torch.zeros(src.size(0), dtype=torch.bool)  # (B,)"))),
    # gaming: the encoder re-run at every step, the test model's counter set back afterwards
    Mutant("encoder re-run at every step, model.encodes set back to 1", "greedy_decode", patch(
        ("logits = model.decode(ids, memory, src_mask)  # (B, t, V)", "logits = model.decode(ids, *model.encode(src))"),
        ("return ids[:, 1:]", """
model.encodes = 1
return ids[:, 1:]
"""))),
    # in full: notebook 07's generation loop with a top-1 filter does the decoding
    Mutant("lmcourse.reference.decoding.generate with a top-1 filter", "greedy_decode", '''
class _AsLM:
    def __init__(self, model, memory, mask):
        self.model, self.memory, self.mask = model, memory, mask
        self.config = type("cfg", (), {"block_size": 10 ** 9})()

    def __call__(self, ids):
        return self.model.decode(ids, self.memory, self.mask), None


def greedy_decode(model, src, bos_id, eos_id, pad_id, max_new_tokens):
    from lmcourse.reference import decoding  # imported when it runs: a graded kernel refuses it

    with torch.no_grad():
        memory, mask = model.encode(src)
        start = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        ids = decoding.generate(_AsLM(model, memory, mask), start, max_new_tokens,
                                filters=[lambda l: decoding.top_k_filter(l, 1)])[:, 1:]
    ended = (ids == eos_id).cumsum(1)
    ids = ids.masked_fill((ended - (ids == eos_id).long()) > 0, pad_id)
    n = max_new_tokens
    if bool((ended[:, -1] > 0).all()):
        n = int((ended > 0).all(0).nonzero()[0]) + 1
    return ids[:, :n]
'''),
    # in full: encode and decode once (what the test counted), then a tensor subclass whose tolist() and shape run
    # the tests' helper when the test reads them, outside the graded call
    Mutant("a lazy tensor subclass whose tolist() runs expected_greedy later", "greedy_decode", '''
class _Ids(torch.Tensor):
    def tolist(self):
        return self._answer().tolist()

    @property
    def shape(self):
        return self._answer().shape

    def _answer(self):
        import lmcourse.reference.encoder_decoder as _r
        if "_done" not in self.__dict__:
            self.__dict__["_done"] = _r.expected_greedy(*self._args).as_subclass(torch.Tensor)
        return self.__dict__["_done"]


def greedy_decode(model, src, bos_id, eos_id, pad_id, max_new_tokens):
    with torch.no_grad():
        memory, mask = model.encode(src)
        model.decode(torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device), memory, mask)
    out = torch.zeros(src.shape[0], 1, dtype=torch.long).as_subclass(_Ids)
    out._args = (model, src.clone(), bos_id, eos_id, pad_id, max_new_tokens)
    return out
'''),
    # gaming: a test cell's helper called by name
    # (the reference is imported when the answer runs: in a graded kernel the import fails, and an answer cell that
    # failed to define would leave the harness's solution in place, where a real submission keeps its stub)
    Mutant("the tests' expected-value helper called by name", "greedy_decode", '''
def greedy_decode(model, src, bos_id, eos_id, pad_id, max_new_tokens):
    import lmcourse.reference.encoder_decoder as _r

    return _r.expected_greedy(model, src, bos_id, eos_id, pad_id, max_new_tokens)
'''),
    # --- exact_match
    Mutant("a count, not a fraction", "exact_match",
           patch(("return sum(p == t for p, t in zip(predictions, targets)) / len(targets)",
                  "return sum(p == t for p, t in zip(predictions, targets))"))),
    Mutant("case ignored", "exact_match",
           patch(("return sum(p == t for p, t in zip(predictions, targets)) / len(targets)",
                  "return sum(p.lower() == t.lower() for p, t in zip(predictions, targets)) / len(targets)"))),
    Mutant("character accuracy instead of exact match", "exact_match",
           patch(("return sum(p == t for p, t in zip(predictions, targets)) / len(targets)", '''
pairs = [(a, b) for p, t in zip(predictions, targets) for a, b in zip(p, t)]
return sum(a == b for a, b in pairs) / sum(len(t) for t in targets)
'''))),
    Mutant("spaces stripped before comparing", "exact_match",
           patch(("return sum(p == t for p, t in zip(predictions, targets)) / len(targets)",
                  "return sum(p.strip() == t.strip() for p, t in zip(predictions, targets)) / len(targets)"))),
    # gaming: the stand-in the later tests use, called by name
    Mutant("the tests' stand-in padding_mask called by name", "teacher_forcing", patch(
        ("return ids != pad_id", '''
import lmcourse.reference.encoder_decoder as _r  # imported when it runs, as above

return _r.padding_mask(ids, pad_id)
'''))),
    # gaming: on a hidden case, return the expected ids read from the notebook's globals (the test cell used to bind
    # them, as _w2, before the graded call; now they are made after it, so this loses points)
    Mutant("returns the hidden test's expected greedy ids from globals()", "greedy_decode", patch(
        ("memory, src_mask = model.encode(src)  # once", """
memory, src_mask = model.encode(src)  # once
if eos_id == 5 and max_new_tokens == 12:
    return globals()["_w2"].clone()
"""))),
]



def _whole_class(cls: str, *methods: str) -> str:
    """The whole class cell (a submission holds no solution to subclass, as the mutants' ``override``
    does): the master's answer cell up to its first graded method, then ``methods`` written another way."""
    target = {"CrossAttention": "cross_attention", "EncoderBlock": "encoder_block", "DecoderBlock": "decoder_block",
              "EncoderDecoder": "encoder_decoder"}[cls]
    cell = answer_cell(_MASTER, target)
    first = "    def encode" if cls == "EncoderDecoder" else "    def forward"
    body = "\n\n".join(textwrap.indent(textwrap.dedent(m).strip("\n"), "    ") for m in methods)
    return cell[:cell.index(first)] + body + "\n"

ALTERNATIVES = [
    # --- exercise 1: padding_mask and teacher_forcing, one of them written another way beside the other
    Alternative("torch.ne", "teacher_forcing", _beside('''
def padding_mask(ids, pad_id):
    return torch.ne(ids, pad_id)
''', "teacher_forcing")),
    Alternative("the complement of the padding positions", "teacher_forcing", _beside('''
def padding_mask(ids, pad_id):
    is_pad = ids == pad_id  # (B, S)
    return ~is_pad
''', "teacher_forcing")),
    Alternative("pad_sequence over the shifted rows", "teacher_forcing", _beside('''
def teacher_forcing(targets, bos_id, eos_id, pad_id):
    from torch.nn.utils.rnn import pad_sequence
    rows_in = [torch.tensor([bos_id, *t], dtype=torch.long) for t in targets]
    rows_out = [torch.tensor([*t, eos_id], dtype=torch.long) for t in targets]
    return (pad_sequence(rows_in, batch_first=True, padding_value=pad_id),
            pad_sequence(rows_out, batch_first=True, padding_value=pad_id))
''', "padding_mask")),
    Alternative("rows as padded Python lists, one tensor each", "teacher_forcing", _beside('''
def teacher_forcing(targets, bos_id, eos_id, pad_id):
    L = max(map(len, targets))
    rows_in = [[bos_id] + list(t) + [pad_id] * (L - len(t)) for t in targets]
    rows_out = [list(t) + [eos_id] + [pad_id] * (L - len(t)) for t in targets]
    return torch.tensor(rows_in, dtype=torch.long), torch.tensor(rows_out, dtype=torch.long)
''', "padding_mask")),
    # --- CrossAttention
    Alternative("softmax written out with an additive -inf mask and einsum", "cross_attention",
                _whole_class("CrossAttention", '''
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
                _whole_class("CrossAttention", '''
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
                "cross_attention", _whole_class("CrossAttention", '''
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
                _whole_class("CrossAttention", '''
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
                _whole_class("EncoderBlock", '''
def forward(self, x, src_mask=None):
    h = x + self.attn(self.ln1(x), self.ln1(x), memory_mask=src_mask)
    out = h + self.mlp(self.ln2(h))
    return out
''')),
    # --- DecoderBlock
    Alternative("named intermediate streams, keyword arguments", "decoder_block", _whole_class("DecoderBlock", '''
def forward(self, x, memory, memory_mask=None):
    g = x + self.attn(self.ln1(x))
    g2 = g + self.cross(x=self.ln_cross(g), memory=memory, memory_mask=memory_mask)
    return g2 + self.mlp(self.ln2(g2))
''')),
    # --- EncoderDecoder
    Alternative("log_softmax, gather and a masked mean; positions from the tables' rows", "encoder_decoder",
                _whole_class("EncoderDecoder", '''
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
                _whole_class("EncoderDecoder", '''
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
    Alternative("positions from a buffer registered in __init__", "encoder_decoder", _whole_class("EncoderDecoder", '''
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
