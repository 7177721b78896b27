"""Hugging Face RobertaForMaskedLM re-written in plain PyTorch, on top of bert.py's encoder.

Differences from BERT, as transformers' modeling_roberta.py has them:
  * position ids count non-padding tokens from padding_idx + 1
    (create_position_ids_from_input_ids: cumsum(input_ids != pad) * mask + pad),
    and the position embedding has padding_idx = pad_token_id;
  * the MLM head is `lm_head`: dense -> gelu -> layer_norm -> decoder (tied to the
    word embeddings) + lm_head.bias;
  * parameter names start with roberta. (no pooler).
Config defaults follow transformers.RobertaConfig (pad 1, bos 0, eos 2, layer_norm_eps 1e-5 from
roberta-base's config.json, type_vocab_size 1, max_position_embeddings 514).
"""
import torch
import torch.nn.functional as F
from torch import nn

from bert import ACT2FN, BertConfig, BertEncoder, BertForMaskedLM


class RobertaConfig(BertConfig):
    DEFAULTS = dict(BertConfig.DEFAULTS, vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                    layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)


def create_position_ids_from_input_ids(input_ids, padding_idx):
    mask = input_ids.ne(padding_idx).int()
    incremental = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental.long() + padding_idx


class RobertaEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size, padding_idx=c.pad_token_id)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)
        self.padding_idx = c.pad_token_id

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        token_type_ids = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(position_ids))
        return self.dropout(self.LayerNorm(x))


class RobertaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = RobertaEmbeddings(c)
        self.encoder = BertEncoder(c)

    def forward(self, input_ids, attention_mask):
        dtype = self.embeddings.word_embeddings.weight.dtype
        ext = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        hidden = [self.embeddings(input_ids)]
        for layer in self.encoder.layer:
            hidden.append(layer(hidden[-1], ext))
        return hidden


class RobertaLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.layer_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))  # registered before the decoder: named lm_head.bias
        self.decoder = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.decoder.bias = self.bias
        self.act = ACT2FN[c.hidden_act]

    def forward(self, hidden):
        return self.decoder(self.layer_norm(self.act(self.dense(hidden)).float()))


class RobertaForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        c = config if isinstance(config, RobertaConfig) else RobertaConfig(config)
        self.config = c
        self.roberta = RobertaModel(c)
        self.lm_head = RobertaLMHead(c)
        self.apply(self._init_weights)
        self.lm_head.decoder.weight = self.roberta.embeddings.word_embeddings.weight

    # HF's _init_weights, shared with BERT (the head-bias branch does not apply here).
    _init_weights = BertForMaskedLM._init_weights

    def forward(self, input_ids, attention_mask, labels=None):
        hidden = self.roberta(input_ids, attention_mask)
        logits = self.lm_head(hidden[-1])
        out = {"logits": logits, "hidden_states": hidden}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.view(-1, self.config.vocab_size), labels.view(-1), ignore_index=-100)
        return out
