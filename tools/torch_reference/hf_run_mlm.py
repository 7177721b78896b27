"""Hugging Face's run_mlm.py flow on the real Trainer: BERT masked-LM training from scratch and
evaluation, offline (the reference for lazytrain's main job, README "The two commands").

  ~/.cache/lazytrain/venv-peers/bin/python tools/torch_reference/hf_run_mlm.py \
      --config_name ../shared/data/bert-base-uncased \
      --config_overrides hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512 \
      --tokenizer_name ../shared/data/bert-base-uncased \
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \
      --max_seq_length 128 --per_device_train_batch_size 16 --per_device_eval_batch_size 16 \
      --learning_rate 1e-3 --max_steps 300 --logging_steps 50 --seed 42 \
      --eval_strategy steps --eval_steps 100 --save_steps 100 --save_total_limit 2 \
      --do_train --do_eval --use_cpu --report_to none --output_dir /tmp/hf_mlm

The pipeline is run_mlm.py's (not line by line): the `datasets` text loader (blank lines kept),
the fast tokenizer over every line with special tokens ([CLS] ... [SEP]) and special-token masks,
group_texts per 1,000-line `map` batch into max_seq_length blocks, DataCollatorForLanguageModeling
(mlm_probability 0.15: 80% [MASK], 10% random, 10% kept), AutoModelForMaskedLM.from_config after
set_seed, the Trainer's AdamW, linear schedule, clip 1.0, evaluation with eval_accuracy over the
labelled tokens (compute_metrics) and perplexity = exp(eval_loss). (`evaluate`'s accuracy is
written out: hf_language_modeling.accuracy.) --max_seq_length defaults to 128 here (run_mlm.py:
the tokenizer's model_max_length, 512 for bert-base-uncased).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_language_modeling as hf  # noqa: E402


def main():
    args, training_args = hf.parse(__doc__.splitlines()[0])
    block = args.max_seq_length or 128
    hf.transformers.set_seed(training_args.seed)
    config = hf.load_config(args)
    tokenizer = hf.transformers.AutoTokenizer.from_pretrained(args.tokenizer_name)
    model = hf.transformers.AutoModelForMaskedLM.from_config(config)
    raw = hf.load_text(args, training_args, keep_linebreaks=True)

    def tokenize(examples):
        return tokenizer(examples["text"], return_special_tokens_mask=True)

    with training_args.main_process_first(desc="tokenize and group"):
        tokenized = raw.map(tokenize, batched=True, num_proc=args.preprocessing_num_workers, remove_columns=["text"])
        grouped = tokenized.map(hf.group_texts(block), batched=True, num_proc=args.preprocessing_num_workers)

    def compute_metrics(eval_preds):
        preds, labels = eval_preds
        labels = labels.reshape(-1)
        preds = preds.reshape(-1)
        keep = labels != -100
        return hf.accuracy(preds[keep], labels[keep])

    collator = hf.transformers.DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm_probability=args.mlm_probability)
    trainer = hf.transformers.Trainer(
        model=model, args=training_args, train_dataset=grouped["train"], eval_dataset=grouped["validation"],
        processing_class=tokenizer, data_collator=collator, compute_metrics=compute_metrics,
        preprocess_logits_for_metrics=hf.argmax_logits)
    hf.train_and_evaluate(trainer, training_args, grouped["train"], grouped["validation"])


if __name__ == "__main__":
    main()
