"""Masked-language-model training, Hugging Face's examples/pytorch/language-modeling/run_mlm.py
on lazytrain: the same arguments, the same flow (dataclass arguments, text loading,
tokenize, group_texts, DataCollatorForLanguageModeling, Trainer), lazytrain's
classes. With the README main job's arguments it logs the losses and the
perplexity `lazytrain run_mlm` logs (tests/python/test_examples_trainer.py):

    python examples/python/run_mlm.py --model_type bert \\
      --config_name ../shared/data/bert-base-uncased/config.json \\
      --config_overrides "hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512" \\
      --tokenizer_name ../shared/data/bert-base-uncased/vocab.txt \\
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \\
      --max_seq_length 128 --per_device_train_batch_size 16 --per_device_eval_batch_size 16 \\
      --learning_rate 1e-3 --max_steps 300 --logging_steps 50 --seed 42 \\
      --evaluation_strategy steps --eval_steps 100 --save_steps 100 --save_total_limit 2 \\
      --do_train --do_eval --output_dir out/py-bert-tiny-wikitext2

Run again on the same directory, it resumes from the newest checkpoint, as
Hugging Face's script does.
"""
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Optional


import lazytrain as lt
from lazytrain.data import DataCollatorForLanguageModeling, group_texts, load_dataset


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=None, metadata={"help": "A model directory to start from"})
    model_type: Optional[str] = field(default="bert", metadata={"help": "bert or roberta, when training from scratch"})
    config_name: Optional[str] = field(default=None, metadata={"help": "A config.json, or a directory holding one"})
    config_overrides: Optional[str] = field(default=None, metadata={"help": "\"hidden_size=128,num_hidden_layers=2\""})
    tokenizer_name: Optional[str] = field(default=None, metadata={"help": "A tokenizer directory, or BERT's vocab.txt"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A text file to train on"})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A text file to evaluate on"})
    max_seq_length: Optional[int] = field(default=None, metadata={"help": "Block length after tokenization"})
    mlm_probability: float = field(default=0.15, metadata={"help": "Ratio of tokens to mask"})
    line_by_line: bool = field(default=False, metadata={"help": "One example per non-blank line"})
    pad_to_max_length: bool = field(default=False, metadata={"help": "Pad every line to max_seq_length"})
    max_train_samples: Optional[int] = field(default=None, metadata={"help": "Keep the first n training examples"})
    max_eval_samples: Optional[int] = field(default=None, metadata={"help": "Keep the first n evaluation examples"})
    preprocessing_num_workers: Optional[int] = field(default=None, metadata={"help": "Accepted; tokenization uses threads"})


def load_tokenizer(model_args):
    name = model_args.tokenizer_name or model_args.model_name_or_path
    if name is None:
        raise SystemExit("run_mlm.py: --tokenizer_name is required when training from scratch")
    if os.path.isfile(name):  # BERT's vocab.txt alone, as the CLI takes it
        return lt.BertTokenizer(vocab_file=name)
    return lt.AutoTokenizer.from_pretrained(name)


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

    # Detecting the last checkpoint, as run_mlm.py does.
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
    raw_datasets = load_dataset("text", data_files=data_files)

    config = load_config(model_args)
    tokenizer = load_tokenizer(model_args)
    if model_args.model_name_or_path:
        model = lt.AutoModelForMaskedLM.from_pretrained(model_args.model_name_or_path, config=config)
        model.train()
    else:
        model = lt.AutoModelForMaskedLM.from_config(config)

    max_seq_length = data_args.max_seq_length or min(512, config.max_position_embeddings)
    if data_args.line_by_line:
        padding = "max_length" if data_args.pad_to_max_length else False

        def tokenize_function(examples):
            lines = [line for line in examples["text"] if len(line) > 0 and not line.isspace()]
            return tokenizer(lines, padding=padding, truncation=True, max_length=max_seq_length,
                             return_special_tokens_mask=True)

        tokenized = raw_datasets.map(tokenize_function, batched=True, remove_columns=["text"])
        lm_datasets = tokenized
    else:
        def tokenize_function(examples):
            return tokenizer(examples["text"], return_special_tokens_mask=True)

        tokenized = raw_datasets.map(tokenize_function, batched=True, remove_columns=["text"])
        lm_datasets = tokenized.map(lambda examples: group_texts(examples, max_seq_length), batched=True)

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
        labels = labels.reshape(-1)
        preds = preds.reshape(-1)
        mask = labels != -100
        return {"accuracy": float((preds[mask] == labels[mask]).mean())}

    data_collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm_probability=data_args.mlm_probability,
                                                    seed=training_args.seed)
    trainer = lt.Trainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=data_collator,
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
