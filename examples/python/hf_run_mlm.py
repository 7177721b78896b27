"""Masked-language-model training with Hugging Face's own classes, compiled by
lazytrain: transformers' examples/pytorch/language-modeling/run_mlm.py flow
(HfArgumentParser, text files through `datasets`, tokenize, group_texts,
DataCollatorForLanguageModeling, transformers.Trainer) with a model made from
a config (no weights are downloaded) and a local tokenizer directory
(AutoTokenizer.from_pretrained of a folder holding BERT's vocab.txt).
`--torch_compile --torch_compile_backend lazytrain` makes the Trainer wrap the
model in torch.compile(model, backend="lazytrain") (docs/torch_compile.md);
without them it trains in torch eager, the reference. (transformers' Trainer
compiles the model it trains; its evaluate() after train() runs the module
underneath, eager, on one device, as with any backend: an evaluate() without
train() compiles the model for evaluation.)

    python examples/python/hf_run_mlm.py --model_type bert \\
      --config_overrides "hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512" \\
      --tokenizer_name ../shared/data/bert-base-uncased \\
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \\
      --max_seq_length 128 --do_train --do_eval --per_device_train_batch_size 16 --max_steps 200 \\
      --learning_rate 1e-3 --use_cpu --report_to none --output_dir out/hf-bert-tiny-wikitext2 \\
      --torch_compile --torch_compile_backend lazytrain

(lazytrain's own classes on the same flow: examples/python/run_mlm.py.)
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
from transformers import (AutoConfig, AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling,
                          HfArgumentParser, Trainer, TrainingArguments, set_seed)

# Registers backend="lazytrain" with Dynamo and with accelerate (which checks the
# Trainer's --torch_compile_backend against its list). After `pip install .`,
# Dynamo finds the backend by its entry point, but accelerate still needs this import.
import lazytrain.debug.metrics
import lazytrain.torch_backend  # noqa: F401


@dataclass
class ModelArguments:
    model_type: str = field(default="bert", metadata={"help": "A masked-LM model type of transformers (bert, roberta, ...)"})
    config_overrides: Optional[str] = field(
        default=None, metadata={"help": "Config values over the type's defaults: \"hidden_size=128,num_hidden_layers=2\""})
    tokenizer_name: Optional[str] = field(
        default=None, metadata={"help": "A local tokenizer folder (e.g. ../shared/data/bert-base-uncased, its vocab.txt)"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A text file to train on"})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A text file to evaluate on"})
    validation_split_percentage: int = field(
        default=5, metadata={"help": "Percent of the train file held out for evaluation when there is no validation file"})
    max_seq_length: Optional[int] = field(default=None, metadata={"help": "Tokens per block (default: min(512, positions))"})
    mlm_probability: float = field(default=0.15, metadata={"help": "Share of the tokens masked for the loss"})
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

    # Datasets: local text files, one example a line (run_mlm.py's "text" loader).
    data_files = {}
    if data_args.train_file is not None:
        data_files["train"] = data_args.train_file
    if data_args.validation_file is not None:
        data_files["validation"] = data_args.validation_file
    raw_datasets = datasets.load_dataset("text", data_files=data_files)
    if "validation" not in raw_datasets:
        split = raw_datasets["train"].train_test_split(test_size=data_args.validation_split_percentage / 100,
                                                       shuffle=False)
        raw_datasets = datasets.DatasetDict(train=split["train"], validation=split["test"])

    # A local folder (nothing is downloaded). Note: transformers 5's tokenizer classes take
    # `vocab=` (and `merges=`), not `vocab_file=`, which they ignore (a 5-token vocabulary).
    if model_args.tokenizer_name is None or not os.path.isdir(model_args.tokenizer_name):
        raise SystemExit(f"--tokenizer_name {model_args.tokenizer_name}: give a local tokenizer folder "
                         "(e.g. ../shared/data/bert-base-uncased); no tokenizer is downloaded")
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name)

    # The model: from a config, with random weights (nothing downloaded).
    config = AutoConfig.for_model(model_args.model_type)
    if model_args.config_overrides:
        config.update_from_string(model_args.config_overrides)
    config.vocab_size = len(tokenizer)
    model = AutoModelForMaskedLM.from_config(config)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Training new {type(model).__name__} from scratch - {n_params / 2**20:.2f}M params", file=sys.stderr)

    max_seq_length = min(data_args.max_seq_length or 512, tokenizer.model_max_length,
                         config.max_position_embeddings)

    def tokenize_function(examples):
        return tokenizer(examples["text"], return_special_tokens_mask=True)

    with training_args.main_process_first(desc="dataset map tokenization"):
        tokenized = raw_datasets.map(tokenize_function, batched=True, num_proc=data_args.preprocessing_num_workers,
                                     remove_columns=["text"], desc="Running tokenizer on every text in dataset")

    # Concatenates the texts and cuts them into blocks of max_seq_length (the remainder is dropped).
    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
        total_length = len(concatenated[list(examples.keys())[0]])
        total_length = (total_length // max_seq_length) * max_seq_length
        return {k: [t[i:i + max_seq_length] for i in range(0, total_length, max_seq_length)]
                for k, t in concatenated.items()}

    with training_args.main_process_first(desc="grouping texts together"):
        lm_datasets = tokenized.map(group_texts, batched=True, num_proc=data_args.preprocessing_num_workers,
                                    desc=f"Grouping texts in chunks of {max_seq_length}")

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
        labels, preds = labels.reshape(-1), preds.reshape(-1)
        mask = labels != -100
        return {"accuracy": float(np.mean(preds[mask] == labels[mask]))}

    data_collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm_probability=data_args.mlm_probability)

    trainer = Trainer(
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
