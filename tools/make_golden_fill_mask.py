#!/usr/bin/env -S /usr/bin/python3
"""Golden fill-mask runs of a tiny BERT and a tiny RoBERTa -> tests/golden/fill_mask_{bert,roberta}/ (model
directories as `lazytrain run_mlm` writes them) and tests/golden/fill_mask_{bert,roberta}.safetensors
(what tools/torch_reference/fill_mask.py --save_golden writes: input ids, mask-position logits,
top-k ids and scores, and the pipeline's output as JSON).

  /usr/bin/python3 tools/make_golden_fill_mask.py [GOLDEN_DIR]     (default tests/golden)

Needs Debian's python3-sentencepiece (RoBERTa's tokenizer is a SentencePiece model, trained here on
the few lines of CORPUS with the settings of `lazytrain train_tokenizer`, except BPE
and no NFKC normalization, which keep spm.model small). Weights are seeded and drawn
with initializer_range 0.5, so that the probabilities are far from uniform and the top-k ranking is
well separated: the first seed whose neighbouring top-k logits all differ by more than 1e-3.
"""
import json
import os
import shutil
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "torch_reference"))
from bert import BertForMaskedLM  # noqa: E402
from roberta import RobertaForMaskedLM  # noqa: E402
from safetensors_io import save_file  # noqa: E402
import fill_mask  # noqa: E402

TOP_K = 5
UNK = {"bert": 1, "roberta": 3}
WORDS = ("paris is the capital of france . , ! ? ' berlin germany rome italy london city a big small "
         "river country in europe my name dog cat run ##s ##ing play it was and he she they un ##known "
         "old new town north south lake house").split()
CORPUS = [
    "Paris is the capital of France.", "Berlin is the capital of Germany.", "Rome is the capital of Italy.",
    "London is a big city in Europe.", "The river runs through the old town.", "My dog and my cat play in the house.",
    "She was playing in the small town.", "He runs north to the lake.", "They play in the south of the country.",
    "It was an unknown river in a new country.", "The cat runs and the dog plays.", "Europe is old and Paris is new.",
]
TEXTS = {
    "bert": ["Paris is the [MASK] of France.", "The dog [MASK] in the house!",
             "[MASK] is the capital of Germany, and Rome is the capital of Italy.", "The [MASK] of [MASK] is Paris."],
    "roberta": ["Paris is the <mask> of France.", "The dog <mask> in the house!",
                "<mask> is the capital of Germany, and Rome is the capital of Italy.", "The <mask> of <mask> is Paris."],
}
COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, hidden_act="gelu",
              hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.5,
              position_embedding_type="absolute")


def write_bert(model_dir):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    with open(os.path.join(model_dir, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in vocab))
    return dict(COMMON, model_type="bert", vocab_size=len(vocab), max_position_embeddings=64, type_vocab_size=2,
                layer_norm_eps=1e-12, pad_token_id=0)


def write_roberta(model_dir):
    import sentencepiece
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # relative names: spm.model records its input and prefix, and stays the same file
        try:
            with open("corpus.txt", "w", encoding="utf-8") as f:
                f.write("\n".join(CORPUS) + "\n")
            # The arguments of src/data/sentencepiece_tokenizer.cpp's train_sentencepiece.
            sentencepiece.SentencePieceTrainer.train(
                input="corpus.txt", model_prefix="spm", model_type="bpe", vocab_size=330,
                character_coverage=0.9995, num_threads=1, bos_id=0, bos_piece="<s>", pad_id=1, pad_piece="<pad>",
                eos_id=2, eos_piece="</s>", unk_id=3, unk_piece="<unk>", user_defined_symbols="<mask>",
                byte_fallback=True, minloglevel=2,
                normalization_rule_name="identity")  # no NFKC table: a 240 KB smaller spm.model
        finally:
            os.chdir(cwd)
        for name in ("spm.model", "spm.vocab"):
            shutil.copy(os.path.join(tmp, name), os.path.join(model_dir, name))
    with open(os.path.join(model_dir, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        f.write('{"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "mask_token": "<mask>", '
                '"pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"}\n')
    vocab_size = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model_dir, "spm.model")).get_piece_size()
    return dict(COMMON, model_type="roberta", vocab_size=vocab_size, max_position_embeddings=40, type_vocab_size=1,
                layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)


def separation(entry):
    """The smallest difference between neighbouring top-k logits of an input's masks."""
    top = entry["mask_logits"].gather(-1, entry["top_ids"])
    return (top[:, :-1] - top[:, 1:]).min().item()


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden")
    torch.set_num_threads(2)
    for model_type, write_tokenizer, cls in (("bert", write_bert, BertForMaskedLM),
                                             ("roberta", write_roberta, RobertaForMaskedLM)):
        model_dir = os.path.join(golden, f"fill_mask_{model_type}")
        shutil.rmtree(model_dir, ignore_errors=True)
        os.makedirs(model_dir)
        config = write_tokenizer(model_dir)
        with open(os.path.join(model_dir, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        for seed in range(100):  # the first seed whose top-k logits are well separated
            torch.manual_seed(seed)
            model = cls(config)
            save_file({n: p.detach() for n, p in model.named_parameters()},
                      os.path.join(model_dir, "model.safetensors"), metadata={"format": "pt"})
            model, tok, _ = fill_mask.load_model_dir(model_dir)  # as a user's directory is loaded (eval mode)
            entries = fill_mask.fill_mask(model, tok, TEXTS[model_type], TOP_K)
            if min(separation(e) for e in entries) > 1e-3:
                break
        else:
            sys.exit(f"{model_type}: no seed below 100 separates the top-{TOP_K} logits by 1e-3")
        for text, e in zip(TEXTS[model_type], entries):
            assert UNK[model_type] not in e["input_ids"].tolist(), f"{model_type}: {text!r} has an unknown token"
        out = os.path.join(golden, f"fill_mask_{model_type}.safetensors")
        fill_mask.save_golden(out, TEXTS[model_type], TOP_K, model_type, entries)
        print(f"wrote {model_dir}/ (vocab {config['vocab_size']}, seed {seed}) and {out}")
        fill_mask.print_readable(TEXTS[model_type], entries)


if __name__ == "__main__":
    main()
