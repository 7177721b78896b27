"""Causal-language-model training with Hugging Face's own classes, compiled by
lazytrain: transformers' examples/pytorch/language-modeling/run_clm.py flow
(HfArgumentParser, text files through `datasets`, tokenize, group_texts with
labels, default_data_collator, transformers.Trainer) with a model made from a
config (no weights are downloaded) and a local tokenizer directory
(AutoTokenizer.from_pretrained of a folder holding GPT-2's vocab.json and
merges.txt).
`--torch_compile --torch_compile_backend lazytrain` makes the Trainer wrap the
model in torch.compile(model, backend="lazytrain") (docs/torch_compile.md);
without them it trains in torch eager, the reference. (transformers' Trainer
compiles the model it trains; its evaluate() after train() runs the module
underneath, eager, on one device, as with any backend: an evaluate() without
train() compiles the model for evaluation.)

    python examples/python/hf_run_clm.py --model_type gpt2 --config_overrides "n_embd=128,n_layer=2,n_head=2" \\
      --tokenizer_name ../shared/data/gpt2 \\
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \\
      --block_size 128 --do_train --do_eval --per_device_train_batch_size 16 --max_steps 200 \\
      --learning_rate 1e-3 --use_cpu --report_to none --output_dir out/hf-gpt2-tiny-wikitext2 \\
      --torch_compile --torch_compile_backend lazytrain

(--model_type llama trains a LlamaForCausalLM the same way; lazytrain's own
classes on the same flow: examples/python/run_clm.py.)
"""
import math
import os
import sys
from dataclasses import dataclass, field
from itertools import chain
from typing import Optional

import datasets
import numpy as np
import transformers
from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer, default_data_collator,
                          HfArgumentParser, Trainer, TrainingArguments, set_seed)

# Registers backend="lazytrain" with Dynamo and with accelerate (which checks the
# Trainer's --torch_compile_backend against its list). After `pip install .`,
# Dynamo finds the backend by its entry point, but accelerate still needs this import.
import lazytrain.debug.metrics
import lazytrain.torch_backend  # noqa: F401


@dataclass
class ModelArguments:
    model_type: str = field(default="gpt2", metadata={"help": "A causal-LM model type of transformers (gpt2, llama, ...)"})
    config_overrides: Optional[str] = field(
        default=None, metadata={"help": "Config values over the type's defaults: \"n_embd=128,n_layer=2,n_head=2\""})
    tokenizer_name: Optional[str] = field(
        default=None, metadata={"help": "A local tokenizer folder (e.g. ../shared/data/gpt2: vocab.json, merges.txt)"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A text file to train on"})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A text file to evaluate on"})
    validation_split_percentage: int = field(
        default=5, metadata={"help": "Percent of the train file held out for evaluation when there is no validation file"})
    block_size: Optional[int] = field(default=None, metadata={"help": "Tokens per block (default: min(1024, positions))"})
    keep_linebreaks: bool = field(default=True, metadata={"help": "Keep the line breaks of the text files"})
    max_train_samples: Optional[int] = field(default=None, metadata={"help": "Keep the first n training blocks"})
    max_eval_samples: Optional[int] = field(default=None, metadata={"help": "Keep the first n evaluation blocks"})
    preprocessing_num_workers: Optional[int] = field(default=None, metadata={"help": "Processes for datasets.map"})

    def __post_init__(self):
        if self.train_file is None and self.validation_file is None:
            raise ValueError("Give --train_file and/or --validation_file (local text files)")
        for path in (self.train_file, self.validation_file):
            if path is not None and not os.path.isfile(path):
                raise ValueError(f"{path}: no such file")


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    transformers.utils.logging.set_verbosity_warning()
    set_seed(training_args.seed)

    # Datasets: local text files, one example a line (run_clm.py's "text" loader).
    data_files = {}
    if data_args.train_file is not None:
        data_files["train"] = data_args.train_file
    if data_args.validation_file is not None:
        data_files["validation"] = data_args.validation_file
    raw_datasets = datasets.load_dataset("text", data_files=data_files, keep_linebreaks=data_args.keep_linebreaks)
    if "validation" not in raw_datasets:
        split = raw_datasets["train"].train_test_split(test_size=data_args.validation_split_percentage / 100,
                                                       shuffle=False)
        raw_datasets = datasets.DatasetDict(train=split["train"], validation=split["test"])

    # A local folder (nothing is downloaded). Note: transformers 5's tokenizer classes take
    # `vocab=` (and `merges=`), not `vocab_file=`, which they ignore (a 5-token vocabulary).
    if model_args.tokenizer_name is None or not os.path.isdir(model_args.tokenizer_name):
        raise SystemExit(f"--tokenizer_name {model_args.tokenizer_name}: give a local tokenizer folder "
                         "(e.g. ../shared/data/gpt2); no tokenizer is downloaded")
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name)

    # The model: from a config, with random weights (nothing downloaded).
    config = AutoConfig.for_model(model_args.model_type)
    if model_args.config_overrides:
        config.update_from_string(model_args.config_overrides)
    config.vocab_size = len(tokenizer)
    model = AutoModelForCausalLM.from_config(config)
    if getattr(model, "loss_type", None) is None:
        # transformers derives the loss from the class name and finds none in "GPT2LMHeadModel":
        # its loss_function then calls logger.warning_once at every forward, which Dynamo cannot
        # trace (a graph break: correct, but the step in two graphs). The loss it falls back to, named.
        model.loss_type = "ForCausalLM"
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Training new {type(model).__name__} from scratch - {n_params / 2**20:.2f}M params", file=sys.stderr)

    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 1024)
    block_size = min(data_args.block_size or 1024, tokenizer.model_max_length, positions)

    def tokenize_function(examples):
        return tokenizer(examples["text"])

    with training_args.main_process_first(desc="dataset map tokenization"):
        tokenized = raw_datasets.map(tokenize_function, batched=True, num_proc=data_args.preprocessing_num_workers,
                                     remove_columns=["text"], desc="Running tokenizer on every text in dataset")

    # Concatenates the texts and cuts them into blocks of block_size (the remainder is dropped);
    # the labels are the inputs (the model shifts them).
    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
        total_length = len(concatenated[list(examples.keys())[0]])
        total_length = (total_length // block_size) * block_size
        result = {k: [t[i:i + block_size] for i in range(0, total_length, block_size)] for k, t in concatenated.items()}
        result["labels"] = result["input_ids"].copy()
        return result

    with training_args.main_process_first(desc="grouping texts together"):
        lm_datasets = tokenized.map(group_texts, batched=True, num_proc=data_args.preprocessing_num_workers,
                                    desc=f"Grouping texts in chunks of {block_size}")

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
        if isinstance(logits, tuple):
            logits = logits[0]
        return logits.argmax(dim=-1)

    def compute_metrics(eval_preds):
        preds, labels = eval_preds
        # The prediction at position i is for the token at i + 1.
        labels, preds = labels[:, 1:].reshape(-1), preds[:, :-1].reshape(-1)
        mask = labels != -100
        return {"accuracy": float(np.mean(preds[mask] == labels[mask]))}

    trainer = Trainer(
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
        train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model()
        metrics = train_result.metrics
        metrics["train_samples"] = len(train_dataset)
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()

    if training_args.do_eval:
        metrics = trainer.evaluate()
        metrics["eval_samples"] = len(eval_dataset)
        metrics["perplexity"] = math.exp(metrics["eval_loss"]) if metrics["eval_loss"] < 700 else float("inf")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)

    if training_args.torch_compile_backend == "lazytrain" and trainer.is_world_process_zero():
        # lazytrain's counters: DynamoGraphs (graphs lowered), DynamoFallbackNodes (ops run in torch eager), ...
        with open(os.path.join(training_args.output_dir, "metrics_report.txt"), "w", encoding="utf-8") as f:
            f.write(lazytrain.debug.metrics.metrics_report())


if __name__ == "__main__":
    main()
