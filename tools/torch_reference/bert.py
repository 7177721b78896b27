"""Hugging Face BertForMaskedLM re-written in plain PyTorch (eager attention, no pooler).

Module attribute names reproduce HF's parameter names exactly, e.g.
  bert.embeddings.word_embeddings.weight
  bert.encoder.layer.0.attention.self.query.weight
  bert.encoder.layer.0.attention.output.LayerNorm.weight
  bert.encoder.layer.0.intermediate.dense.weight
  bert.encoder.layer.0.output.dense.weight
  cls.predictions.transform.dense.weight
  cls.predictions.bias                      (== cls.predictions.decoder.bias, tied)
cls.predictions.decoder.weight is tied to bert.embeddings.word_embeddings.weight, so
named_parameters() lists each tied tensor once (under the bert.* / cls.predictions.bias name)
while state_dict() also has the cls.predictions.decoder.* aliases, as in HF.

Config: a dict with HF config.json field names (see BertConfig below).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class BertConfig:
    """HF config.json fields used by BertForMaskedLM (defaults = bert-base-uncased)."""
    DEFAULTS = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
                    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)

    def __init__(self, d=None, **kw):
        merged = dict(self.DEFAULTS)
        merged.update(d or {})
        merged.update(kw)
        self.__dict__.update(merged)  # unknown keys (model_type, ...) are kept but unused
        assert self.hidden_size % self.num_attention_heads == 0

    def to_dict(self):
        return {k: getattr(self, k) for k in self.DEFAULTS}


# HF ACT2FN subset. "gelu" is the exact erf form.
ACT2FN = {
    "gelu": lambda x: F.gelu(x),
    "relu": F.relu,
    "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3)))),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class BertEmbeddings(nn.Module):
    """word + position + token_type(all zeros) -> LayerNorm -> dropout."""

    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        seq = input_ids.shape[1]
        position_ids = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(position_ids))  # HF's summation order
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c.num_attention_heads
        self.head_dim = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def _heads(self, x):  # [B, S, H] -> [B, heads, S, head_dim]
        b, s, _ = x.shape
        return x.view(b, s, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden, ext_mask):
        q, k, v = self._heads(self.query(hidden)), self._heads(self.key(hidden)), self._heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + ext_mask  # [B, 1, 1, S]: 0 (keep) or finfo.min (masked)
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.shape[0], ctx.shape[1], -1)


class BertSelfOutput(nn.Module):
    """dense -> dropout -> LayerNorm(x + input)."""

    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, hidden, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, hidden, ext_mask):
        return self.output(self.self(hidden, ext_mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.act = ACT2FN[c.hidden_act]

    def forward(self, hidden):
        return self.act(self.dense(hidden))


class BertOutput(nn.Module):
    """dense(intermediate -> hidden) -> dropout -> LayerNorm(x + input)."""

    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.intermediate_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, hidden, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, hidden, ext_mask):
        attn = self.attention(hidden, ext_mask)
        return self.output(self.intermediate(attn), attn)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])


class BertModel(nn.Module):
    """Embeddings + encoder, no pooler (HF BertModel(add_pooling_layer=False))."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        """Returns the list of hidden states: [embeddings output, layer 1 output, ...]."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        dtype = self.embeddings.word_embeddings.weight.dtype
        # HF get_extended_attention_mask: [B, S] -> [B, 1, 1, S], (1 - mask) * finfo.min
        ext = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        hidden = [self.embeddings(input_ids, token_type_ids)]
        for layer in self.encoder.layer:
            hidden.append(layer(hidden[-1], ext))
        return hidden


class BertPredictionHeadTransform(nn.Module):
    """dense -> act -> LayerNorm."""

    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.transform_act_fn = ACT2FN[c.hidden_act]
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, hidden):
        # .float(): under bf16 autocast the LayerNorm runs in f32, as lazytrain's does
        # (torch 1.13's CPU layer_norm rejects a bf16 input with f32 weights); no-op in f32.
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden)).float())


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        # weight tied to the word embeddings (see BertForMaskedLM.tie_weights); own bias
        self.decoder = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.decoder.bias = self.bias

    def forward(self, hidden):
        return self.decoder(self.transform(hidden))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)

    def forward(self, hidden):
        return self.predictions(hidden)


class BertForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        c = config if isinstance(config, BertConfig) else BertConfig(config)
        self.config = c
        self.bert = BertModel(c)
        self.cls = BertOnlyMLMHead(c)
        # HF post_init(): apply _init_weights to every module (children first), then tie.
        # (Modules were first built with PyTorch's default init, as in HF, so the RNG
        # stream is consumed the same way before the re-initialisation.)
        self.apply(self._init_weights)
        self.tie_weights()

    def _init_weights(self, m):
        std = self.config.initializer_range
        if isinstance(m, nn.Linear):
            m.weight.data.normal_(mean=0.0, std=std)
            if m.bias is not None:
                m.bias.data.zero_()
        elif isinstance(m, nn.Embedding):
            m.weight.data.normal_(mean=0.0, std=std)
            if m.padding_idx is not None:
                m.weight.data[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            m.bias.data.zero_()
            m.weight.data.fill_(1.0)
        elif isinstance(m, BertLMPredictionHead):
            m.bias.data.zero_()

    def tie_weights(self):
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None,
                return_hidden_states=False):
        """Returns dict(logits [B,S,V], loss (if labels), hidden_states (if asked))."""
        hidden = self.bert(input_ids, attention_mask, token_type_ids)
        logits = self.cls(hidden[-1])
        out = {"logits": logits}
        if labels is not None:  # CrossEntropy over the vocab, mean over labels != -100
            out["loss"] = F.cross_entropy(logits.view(-1, self.config.vocab_size), labels.view(-1),
                                          ignore_index=-100)
        if return_hidden_states:
            out["hidden_states"] = hidden
        return out
