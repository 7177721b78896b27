"""Hugging Face GPT2LMHeadModel re-written in plain PyTorch (eager attention).

Attribute names reproduce HF's parameter names exactly:
  transformer.wte.weight, transformer.wpe.weight
  transformer.h.0.ln_1.weight, transformer.h.0.attn.c_attn.weight (Conv1D: [in, out]),
  transformer.h.0.attn.c_proj.weight, transformer.h.0.ln_2.weight,
  transformer.h.0.mlp.c_fc.weight, transformer.h.0.mlp.c_proj.weight, transformer.ln_f.weight
lm_head.weight is tied to transformer.wte.weight (listed once by named_parameters()).
Config: a dict with HF config.json field names (see GPT2Config.DEFAULTS).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class GPT2Config:
    DEFAULTS = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, n_inner=None,
                    activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
                    layer_norm_epsilon=1e-5, initializer_range=0.02)

    def __init__(self, d=None):
        merged = dict(self.DEFAULTS)
        merged.update(d or {})
        self.__dict__.update(merged)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    """HF's Conv1D: a linear layer with the weight stored transposed, [nx, nf]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight).view(x.size()[:-1] + (self.weight.size(1),))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.head_dim, self.n_embd = c.n_head, c.n_embd // c.n_head, c.n_embd
        self.c_attn = Conv1D(3 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)
        self.attn_dropout = nn.Dropout(c.attn_pdrop)
        self.resid_dropout = nn.Dropout(c.resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(c.n_positions, c.n_positions, dtype=torch.bool)).view(
            1, 1, c.n_positions, c.n_positions), persistent=False)

    def _split(self, x):
        return x.view(x.size()[:-1] + (self.n_head, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, hidden, attention_mask):
        q, k, v = self.c_attn(hidden).split(self.n_embd, dim=2)
        q, k, v = self._split(q), self._split(k), self._split(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        s = q.size(-2)
        causal = self.bias[:, :, :s, :s]
        w = torch.where(causal, w.to(w.dtype), torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        if attention_mask is not None:
            w = w + attention_mask
        w = F.softmax(w, dim=-1).type(v.dtype)
        w = self.attn_dropout(w)
        out = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        out = out.view(out.size()[:-2] + (self.n_embd,))
        return self.resid_dropout(self.c_proj(out))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c.n_inner if c.n_inner is not None else 4 * c.n_embd
        self.c_fc = Conv1D(inner, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, inner)
        self.dropout = nn.Dropout(c.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(gelu_new(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = GPT2MLP(c)

    def forward(self, x, attention_mask):
        x = x + self.attn(self.ln_1(x), attention_mask)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_positions, c.n_embd)
        self.drop = nn.Dropout(c.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, input_ids, attention_mask=None):
        b, s = input_ids.shape
        if attention_mask is not None:
            attention_mask = attention_mask.view(b, -1)[:, None, None, :].to(self.wte.weight.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.wte.weight.dtype).min
        x = self.drop(self.wte(input_ids) + self.wpe(torch.arange(s).unsqueeze(0)))
        hidden_states = [x]
        for block in self.h:
            x = block(x, attention_mask)
            hidden_states.append(x)
        return self.ln_f(x), hidden_states


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        c = GPT2Config(config)
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied
        # HF _init_weights, then the GPT-2 paper's scaled init of the residual projections.
        for m in self.modules():
            if isinstance(m, (nn.Linear, Conv1D)):
                m.weight.data.normal_(mean=0.0, std=c.initializer_range)
                if getattr(m, "bias", None) is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.data.normal_(mean=0.0, std=c.initializer_range)
            elif isinstance(m, nn.LayerNorm):
                m.bias.data.zero_()
                m.weight.data.fill_(1.0)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                p.data.normal_(mean=0.0, std=c.initializer_range / math.sqrt(2 * c.n_layer))

    def forward(self, input_ids, attention_mask=None, labels=None):
        hidden, hidden_states = self.transformer(input_ids, attention_mask)
        logits = self.lm_head(hidden)
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)).float(), shift_labels.view(-1))
        return {"loss": loss, "logits": logits, "hidden_states": hidden_states}
