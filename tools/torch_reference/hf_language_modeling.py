"""What hf_run_mlm.py and hf_run_clm.py share: Hugging Face's run_mlm.py / run_clm.py flow on the
real `transformers` Trainer and `datasets` text loader, offline from ../shared/data.

The command line is HfArgumentParser over TrainingArguments (every Trainer flag, Hugging Face's
names) plus the scripts' model and data arguments (--config_name, --config_overrides,
--tokenizer_name, --train_file, --validation_file, --max_seq_length / --block_size,
--mlm_probability, --preprocessing_num_workers). Run from the peers venv (bench/setup_peers.sh:
torch 2.13.0 CPU, transformers 5.23.0, datasets 5.2.0).
"""
import dataclasses
import math
import os
import sys
from itertools import chain

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything comes from ../shared/data
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data")


@dataclasses.dataclass
class ModelDataArguments:
    """run_mlm.py's / run_clm.py's ModelArguments and DataTrainingArguments that these runs use."""
    config_name: str = dataclasses.field(metadata={"help": "a config.json, or the folder holding it"})
    tokenizer_name: str = dataclasses.field(metadata={"help": "a folder with the tokenizer's files (vocab.txt or vocab.json + merges.txt)"})
    config_overrides: str = dataclasses.field(default=None, metadata={"help": "e.g. n_embd=128,n_layer=2"})
    train_file: str = dataclasses.field(default=os.path.join(DATA, "wikitext-2", "valid.txt"))
    validation_file: str = dataclasses.field(default=os.path.join(DATA, "wikitext-2", "test.txt"))
    max_seq_length: int = dataclasses.field(default=None, metadata={"help": "run_mlm: the block length"})
    block_size: int = dataclasses.field(default=None, metadata={"help": "run_clm: the block length"})
    mlm_probability: float = dataclasses.field(default=0.15)
    keep_linebreaks: bool = dataclasses.field(default=True, metadata={"help": "run_clm: the text loader keeps each line's \\n"})
    preprocessing_num_workers: int = dataclasses.field(default=None)


def parse(description):
    """(ModelDataArguments, TrainingArguments) from the command line; exits with one line on bad input."""
    parser = transformers.HfArgumentParser((ModelDataArguments, transformers.TrainingArguments), description=description)
    args, training_args = parser.parse_args_into_dataclasses()
    for name in ("config_name", "tokenizer_name", "train_file", "validation_file"):
        path = getattr(args, name)
        if not os.path.exists(path):
            parser.error(f"--{name}: no such file or folder '{path}'")
    return args, training_args


def load_config(args):
    """AutoConfig from --config_name, then --config_overrides (PretrainedConfig.update_from_string)."""
    config = transformers.AutoConfig.from_pretrained(args.config_name)
    if args.config_overrides:
        try:
            config.update_from_string(args.config_overrides)
        except ValueError as e:
            raise SystemExit(f"--config_overrides '{args.config_overrides}': {e}") from None
    return config


def load_text(args, training_args, keep_linebreaks):
    """The `datasets` text loader over --train_file / --validation_file (blank lines kept, as it keeps them)."""
    files = {"train": args.train_file, "validation": args.validation_file}
    return datasets.load_dataset("text", data_files=files, keep_linebreaks=keep_linebreaks,
                                 cache_dir=os.path.join(training_args.output_dir, "datasets_cache"))


def group_texts(block):
    """run_mlm.py's / run_clm.py's group_texts: concatenates each column of a `map` batch (1,000
    examples) and cuts it into blocks of `block` tokens, the batch's remainder dropped."""
    def group(examples):
        joined = {k: list(chain(*examples[k])) for k in examples.keys()}
        total = (len(joined[next(iter(examples.keys()))]) // block) * block
        return {k: [t[i:i + block] for i in range(0, total, block)] for k, t in joined.items()}
    return group


def train_and_evaluate(trainer, training_args, train_dataset, eval_dataset):
    """The scripts' tail: train, save the model, log and save train metrics (train_samples), evaluate,
    add perplexity = exp(eval_loss) and eval_samples, log and save them (train_results.json,
    eval_results.json, all_results.json, trainer_state.json). Returns (train metrics, eval metrics)."""
    result = trainer.train()
    trainer.save_model()
    train_metrics = dict(result.metrics, train_samples=len(train_dataset))
    trainer.log_metrics("train", train_metrics)
    trainer.save_metrics("train", train_metrics)
    trainer.save_state()
    eval_metrics = trainer.evaluate()
    eval_metrics["eval_samples"] = len(eval_dataset)
    eval_metrics["perplexity"] = math.exp(eval_metrics["eval_loss"]) if eval_metrics["eval_loss"] < 700 else float("inf")
    trainer.log_metrics("eval", eval_metrics)
    trainer.save_metrics("eval", eval_metrics)
    print(f"versions: torch {torch.__version__}, transformers {transformers.__version__}, datasets {datasets.__version__}; "
          f"torch threads {torch.get_num_threads()}", file=sys.stderr)
    return train_metrics, eval_metrics


def argmax_logits(logits, labels):
    """preprocess_logits_for_metrics of both scripts: keep the argmax, not the [N, S, V] logits."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)


def accuracy(predictions, references):
    """`evaluate`'s "accuracy" metric (the share of equal entries), which the scripts load; here
    written out, since `evaluate` would fetch its metric script from the Hub."""
    return {"accuracy": float(np.mean(predictions == references))}
