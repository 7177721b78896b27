"""The data pipeline: Hugging Face's collators, text datasets and group_texts,
PyTorch's DataLoader and samplers, and TFRecord streams, over the C++ data
code the CLI trains with (src/data/), so that a Python pipeline gives the
batches ``lazytrain run_mlm`` gives for the same data and seed::

    from lazytrain.data import DataLoader, DataCollatorForLanguageModeling, group_texts, load_dataset

    raw = load_dataset("text", data_files={"train": "train.txt", "validation": "valid.txt"})
    tokenized = raw.map(lambda b: tokenizer(b["text"], return_special_tokens_mask=True),
                        batched=True, remove_columns=["text"])
    blocks = tokenized.map(lambda b: group_texts(b, 128), batched=True)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=42)
    loader = DataLoader(blocks["train"], batch_size=8, shuffle=True, collate_fn=collator, generator=42)
"""
from .collate import default_collate, default_convert  # noqa: F401
from .data_collator import DataCollatorForLanguageModeling, DataCollatorWithPadding, default_data_collator  # noqa: F401
from .dataloader import DataLoader, IterableDataset, WorkerInfo, get_worker_info  # noqa: F401
from .dataset import Dataset, DatasetDict  # noqa: F401
from .distributed import DistributedSampler  # noqa: F401
from .language_modeling import group_texts  # noqa: F401
from .load import load_dataset  # noqa: F401
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler  # noqa: F401
from .tfrecord import TFRecordDataset  # noqa: F401
