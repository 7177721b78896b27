"""Causal-language-model training, Hugging Face's examples/pytorch/language-modeling/run_clm.py
on lazytrain: the same arguments and flow (text loading with line breaks kept,
tokenize, group_texts with labels, default_data_collator, Trainer), for GPT-2
and Llama. With the README's GPT-2 arguments it logs the losses and the
perplexity `lazytrain run_clm` logs:

    python examples/python/run_clm.py --tokenizer_name ../shared/data/gpt2 \
      --config_overrides "n_embd=128,n_layer=2,n_head=2" \
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \
      --do_train --do_eval --block_size 128 --per_device_train_batch_size 16 --max_steps 300 \
      --learning_rate 1e-3 --output_dir out/py-gpt2-tiny-wikitext2

Run again on the same directory, it resumes from the newest checkpoint.
"""
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import lazytrain as lt
from lazytrain.data import default_data_collator, group_texts, load_dataset


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=None, metadata={"help": "A model directory to start from"})
    model_type: Optional[str] = field(default="gpt2", metadata={"help": "gpt2 or llama, when training from scratch"})
    config_name: Optional[str] = field(default=None, metadata={"help": "A config.json, or a directory holding one"})
    config_overrides: Optional[str] = field(default=None, metadata={"help": "\"n_embd=128,n_layer=2,n_head=2\""})
    tokenizer_name: Optional[str] = field(default=None, metadata={"help": "A tokenizer directory (GPT-2's BPE files)"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A text file to train on"})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A text file to evaluate on"})
    block_size: Optional[int] = field(default=None, metadata={"help": "Tokens per example (default: min(1024, positions))"})
    keep_linebreaks: bool = field(default=True, metadata={"help": "Keep the line breaks of the text files"})
    max_train_samples: Optional[int] = field(default=None, metadata={"help": "Keep the first n training blocks"})
    max_eval_samples: Optional[int] = field(default=None, metadata={"help": "Keep the first n evaluation blocks"})
    preprocessing_num_workers: Optional[int] = field(default=None, metadata={"help": "Accepted; tokenization uses threads"})


def load_config(model_args):
    if model_args.config_name:
        config = lt.AutoConfig.from_pretrained(model_args.config_name)
    elif model_args.model_name_or_path:
        config = lt.AutoConfig.from_pretrained(model_args.model_name_or_path)
    else:
        config = lt.AutoConfig.for_model(model_args.model_type)
    if model_args.config_overrides:
        config.update_from_string(model_args.config_overrides)
    return config


def main():
    parser = lt.HfArgumentParser((ModelArguments, DataTrainingArguments, lt.TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    # Detecting the last checkpoint, as run_clm.py does.
    last_checkpoint = None
    if os.path.isdir(training_args.output_dir) and training_args.do_train and not training_args.overwrite_output_dir:
        last_checkpoint = lt.get_last_checkpoint(training_args.output_dir)
        if last_checkpoint is None and os.listdir(training_args.output_dir):
            raise SystemExit(f"Output directory ({training_args.output_dir}) already exists and is not empty. "
                             "Use --overwrite_output_dir to overcome.")
        if last_checkpoint is not None and training_args.resume_from_checkpoint is None:
            print(f"Checkpoint detected, resuming training at {last_checkpoint}.", file=sys.stderr)

    lt.set_seed(training_args.seed)

    data_files = {}
    if data_args.train_file is not None:
        data_files["train"] = data_args.train_file
    if data_args.validation_file is not None:
        data_files["validation"] = data_args.validation_file
    raw_datasets = load_dataset("text", data_files=data_files, keep_linebreaks=data_args.keep_linebreaks)

    config = load_config(model_args)
    tokenizer_name = model_args.tokenizer_name or model_args.model_name_or_path
    if tokenizer_name is None:
        raise SystemExit("run_clm.py: --tokenizer_name is required when training from scratch")
    tokenizer = lt.AutoTokenizer.from_pretrained(tokenizer_name)
    if model_args.model_name_or_path:
        model = lt.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, config=config)
        model.train()
    else:
        model = lt.AutoModelForCausalLM.from_config(config)

    tokenized = raw_datasets.map(lambda examples: tokenizer(examples["text"]), batched=True, remove_columns=["text"])
    positions = getattr(config, "n_positions", None) or config.max_position_embeddings
    block_size = data_args.block_size or min(1024, positions)
    lm_datasets = tokenized.map(lambda examples: group_texts(examples, block_size, add_labels=True), batched=True)

    train_dataset = eval_dataset = None
    if training_args.do_train:
        train_dataset = lm_datasets["train"]
        if data_args.max_train_samples is not None:
            train_dataset = train_dataset.select(range(min(len(train_dataset), data_args.max_train_samples)))
    if training_args.do_eval:
        eval_dataset = lm_datasets["validation"]
        if data_args.max_eval_samples is not None:
            eval_dataset = eval_dataset.select(range(min(len(eval_dataset), data_args.max_eval_samples)))

    def preprocess_logits_for_metrics(logits, labels):
        return logits.argmax(dim=-1)

    def compute_metrics(eval_preds):
        preds, labels = eval_preds
        # preds have the same shape as the labels, after the argmax(-1) above, but
        # the prediction at i is for the token at i + 1: shift them.
        labels = labels[:, 1:].reshape(-1)
        preds = preds[:, :-1].reshape(-1)
        mask = labels != -100
        return {"accuracy": float((preds[mask] == labels[mask]).mean())}

    trainer = lt.Trainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=default_data_collator,
        compute_metrics=compute_metrics if training_args.do_eval else None,
        preprocess_logits_for_metrics=preprocess_logits_for_metrics if training_args.do_eval else None,
    )

    if training_args.do_train:
        checkpoint = training_args.resume_from_checkpoint or last_checkpoint
        train_result = trainer.train(resume_from_checkpoint=checkpoint)
        trainer.save_model()
        metrics = train_result.metrics
        metrics["train_samples"] = len(train_dataset)
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)

    if training_args.do_eval:
        metrics = trainer.evaluate()
        metrics["eval_samples"] = len(eval_dataset)
        metrics["perplexity"] = math.exp(metrics["eval_loss"]) if metrics["eval_loss"] < 700 else float("inf")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)

    if training_args.do_train:
        trainer.save_state()
    if trainer.is_world_process_zero():
        report = lt.debug.metrics.metrics_report()
        with open(os.path.join(training_args.output_dir, "metrics_report.txt"), "w", encoding="utf-8") as f:
            f.write(report)
        if training_args.tpu_metrics_debug:
            print(report)


if __name__ == "__main__":
    main()
