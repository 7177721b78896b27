#!/usr/bin/env -S /usr/bin/python3
"""Tiny BERT and RoBERTa checkpoints saved as Hugging Face's save_pretrained writes them.

  /usr/bin/python3 tools/make_golden_hf_checkpoint.py [OUT_DIR]     (default: tests/golden)

Writes, for the reference models of tools/torch_reference (HF parameter names):
  hf_bert_tiny/{config.json,model.safetensors}         BertForMaskedLM, seed 0
  hf_roberta_tiny/{config.json,model.safetensors}      RobertaForMaskedLM, seed 0
  hf_bert_tiny_legacy/{config.json,model.safetensors}  the same BERT weights as an older/BertForPreTraining
                                                       file stores them (see LEGACY below)

Which keys transformers 4.x writes with save_pretrained(safe_serialization=True):
  * model.state_dict() holds every parameter under every name, tied ones included
    (cls.predictions.decoder.weight is bert.embeddings.word_embeddings.weight,
    cls.predictions.decoder.bias is cls.predictions.bias; lm_head.decoder.* likewise).
  * safetensors refuses aliased tensors, so save_pretrained groups the state dict by
    storage and, in each group, first deletes the names that match the class's
    _tied_weights_keys (BertForMaskedLM: ["predictions.decoder.bias",
    "cls.predictions.decoder.weight"]; RobertaForMaskedLM: ["lm_head.decoder.weight",
    "lm_head.decoder.bias"]) as long as one name remains, then any remaining duplicate
    (transformers/modeling_utils.py, PreTrainedModel.save_pretrained, the
    "Safetensors does not allow tensor aliasing" block). Kept: bert.embeddings.
    word_embeddings.weight and cls.predictions.bias (roberta.embeddings.word_embeddings.weight,
    lm_head.bias).
  * BertEmbeddings' position_ids / token_type_ids buffers are registered with
    persistent=False since transformers 4.31 (PR #24505 "Clean load keys"), so they are
    not in the state dict; the *ForMaskedLM classes build BertModel(add_pooling_layer=False),
    so there is no pooler. This script's models have no buffers at all.
  * The file: safetensors.torch.save_file(state_dict, metadata={"format": "pt"}), i.e. the
    reference serializer's layout (tools/safetensors_io.py: 8-byte LE header length, compact
    JSON with __metadata__ first, tensors by descending dtype alignment then name, padding
    with spaces to a multiple of 8).
Every parameter gets N(0, 0.01) noise on top of HF's initialisation, so no tensor is all
zeros or ones and a byte comparison tells every tensor apart.
"""
import collections
import json
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "torch_reference"))
from safetensors_io import save_file  # noqa: E402
from bert import BertForMaskedLM  # noqa: E402
from roberta import RobertaForMaskedLM  # noqa: E402

COMMON = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
              hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02,
              position_embedding_type="absolute")
BERT = dict(COMMON, model_type="bert", architectures=["BertForMaskedLM"], max_position_embeddings=64, type_vocab_size=2,
            layer_norm_eps=1e-12, pad_token_id=0)
ROBERTA = dict(COMMON, model_type="roberta", architectures=["RobertaForMaskedLM"], max_position_embeddings=20,
               type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)
TIED_WEIGHTS_KEYS = {"bert": ["predictions.decoder.bias", "cls.predictions.decoder.weight"],
                     "roberta": ["lm_head.decoder.weight", "lm_head.decoder.bias"]}


def model_of(config, seed):
    torch.manual_seed(seed)
    model = (BertForMaskedLM if config["model_type"] == "bert" else RobertaForMaskedLM)(config)
    with torch.no_grad():
        for _, p in model.named_parameters():  # each tied tensor once
            p.add_(torch.randn_like(p) * 0.01)
    return model


def hf_safe_state_dict(model, tied_weights_keys):
    """state_dict() minus aliases, as save_pretrained(safe_serialization=True) removes them."""
    state_dict = dict(model.state_dict())
    groups = collections.defaultdict(list)
    for name, t in state_dict.items():
        groups[(t.data_ptr(), t.numel(), t.dtype)].append(name)
    for names in (n for n in groups.values() if len(n) > 1):
        found = 0
        for name in sorted(names):
            if any(re.search(pat, name) for pat in tied_weights_keys) and name in state_dict:
                found += 1
                if found < len(names):
                    del state_dict[name]
        found = 0
        for name in names:
            if name in state_dict:
                found += 1
                if found > 1:
                    del state_dict[name]
    return {k: v.detach().contiguous() for k, v in state_dict.items()}


def write(out_dir, name, config, tensors):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    save_file(tensors, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:  # as PretrainedConfig.to_json_file
        f.write(json.dumps(dict(config, torch_dtype="float32"), indent=2, sort_keys=True) + "\n")
    print(f"wrote {d}: {len(tensors)} tensors")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden")
    torch.set_num_threads(1)
    bert = model_of(BERT, 0)
    write(out_dir, "hf_bert_tiny", BERT, hf_safe_state_dict(bert, TIED_WEIGHTS_KEYS["bert"]))
    write(out_dir, "hf_roberta_tiny", ROBERTA,
          hf_safe_state_dict(model_of(ROBERTA, 0), TIED_WEIGHTS_KEYS["roberta"]))
    # LEGACY: what files converted from older checkpoints (e.g. a BertForPreTraining
    # pytorch_model.bin of transformers < 4.31) hold besides the weights above: the tied
    # decoder copies, the persistent position_ids buffer, the pooler and the
    # next-sentence head. Loading it and saving again must give hf_bert_tiny exactly.
    legacy = {k: v.detach().clone() for k, v in bert.state_dict().items()}
    legacy["bert.embeddings.position_ids"] = torch.arange(BERT["max_position_embeddings"]).expand((1, -1)).contiguous()
    g = torch.Generator().manual_seed(1)
    h = BERT["hidden_size"]
    legacy["bert.pooler.dense.weight"] = torch.randn(h, h, generator=g) * 0.02
    legacy["bert.pooler.dense.bias"] = torch.zeros(h)
    legacy["cls.seq_relationship.weight"] = torch.randn(2, h, generator=g) * 0.02
    legacy["cls.seq_relationship.bias"] = torch.zeros(2)
    write(out_dir, "hf_bert_tiny_legacy", dict(BERT, architectures=["BertForPreTraining"]), legacy)


if __name__ == "__main__":
    main()
