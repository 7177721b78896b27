"""Hugging Face's run_clm.py flow on the real Trainer: GPT2LMHeadModel training from scratch and
evaluation, offline (the reference for README's `lazytrain run_clm` configuration).

  ~/.cache/lazytrain/venv-peers/bin/python tools/torch_reference/hf_run_clm.py \
      --config_name ../shared/data/gpt2 --config_overrides n_embd=128,n_layer=2,n_head=2 \
      --tokenizer_name ../shared/data/gpt2 \
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \
      --block_size 128 --per_device_train_batch_size 16 --max_steps 300 --learning_rate 1e-3 \
      --do_train --do_eval --use_cpu --report_to none --output_dir /tmp/hf_clm

The pipeline is run_clm.py's: the `datasets` text loader with keep_linebreaks (each line keeps its
"\\n"), GPT-2's byte-level BPE (the fast tokenizer from vocab.json + merges.txt) over every line,
group_texts per 1,000-line `map` batch into block_size blocks with labels = input_ids (shifted in
the model), default_data_collator, AutoModelForCausalLM.from_config after set_seed, the Trainer's
AdamW, linear schedule, clip 1.0, evaluation with next-token eval_accuracy (compute_metrics:
predictions[:, :-1] against labels[:, 1:]) and perplexity = exp(eval_loss). --block_size defaults
to 128 here (run_clm.py: min(1024, the tokenizer's model_max_length)).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_language_modeling as hf  # noqa: E402


def main():
    args, training_args = hf.parse(__doc__.splitlines()[0])
    block = args.block_size or 128
    hf.transformers.set_seed(training_args.seed)
    config = hf.load_config(args)
    tokenizer = hf.transformers.AutoTokenizer.from_pretrained(args.tokenizer_name)
    model = hf.transformers.AutoModelForCausalLM.from_config(config)
    raw = hf.load_text(args, training_args, keep_linebreaks=args.keep_linebreaks)

    def tokenize(examples):
        return tokenizer(examples["text"])

    def group_with_labels(examples):
        out = hf.group_texts(block)(examples)
        out["labels"] = [ids.copy() for ids in out["input_ids"]]
        return out

    with training_args.main_process_first(desc="tokenize and group"):
        tokenized = raw.map(tokenize, batched=True, num_proc=args.preprocessing_num_workers, remove_columns=["text"])
        grouped = tokenized.map(group_with_labels, batched=True, num_proc=args.preprocessing_num_workers)

    def compute_metrics(eval_preds):
        preds, labels = eval_preds
        return hf.accuracy(preds[:, :-1].reshape(-1), labels[:, 1:].reshape(-1))

    trainer = hf.transformers.Trainer(
        model=model, args=training_args, train_dataset=grouped["train"], eval_dataset=grouped["validation"],
        processing_class=tokenizer, data_collator=hf.transformers.default_data_collator, compute_metrics=compute_metrics,
        preprocess_logits_for_metrics=hf.argmax_logits)
    hf.train_and_evaluate(trainer, training_args, grouped["train"], grouped["validation"])


if __name__ == "__main__":
    main()
