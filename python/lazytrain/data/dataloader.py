"""torch.utils.data.DataLoader with threads for workers.

The order of an epoch is the C++ DataLoader's (``src/data/data_loader.h``):
``shuffle=True`` visits the examples in ``epoch_batches``' order for (seed,
epoch); a ``DistributedSampler`` gives the C++ Trainer's replica share. Workers
are threads, not processes: each makes whole batches (reads the examples and
calls the collate function; lazytrain's collators release the GIL while they
mask), at most ``num_workers * prefetch_factor`` batches ahead, and batches
come out in order. A collate function with a ``collate(examples,
batch_number)`` method (lazytrain's ``DataCollatorForLanguageModeling``) is
called through it with the batch's number in the run, as the C++ Trainer does,
so the batches do not depend on the number of workers and equal
``lazytrain run_mlm``'s for the same data and seed.
"""
import collections
import concurrent.futures
import itertools
import numbers
import threading

import numpy as np

from .collate import default_collate, default_convert
from .sampler import BatchSampler, RandomSampler, SequentialSampler

_worker = threading.local()


class IterableDataset:
    """torch.utils.data.IterableDataset: examples read as a stream (``__iter__``);
    the DataLoader batches them in the stream's order."""

    def __iter__(self):
        raise NotImplementedError


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset``."""

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002 (torch's field name)
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """torch.utils.data.get_worker_info(): this worker thread's WorkerInfo, None outside workers."""
    return getattr(_worker, "info", None)


def _is_iterable_dataset(dataset):
    if isinstance(dataset, IterableDataset):
        return True
    return hasattr(dataset, "__iter__") and not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__"))


class DataLoader:
    """torch.utils.data.DataLoader: batches of `dataset`, torch's arguments and checks.

    `dataset` is map-style (``__len__`` and ``__getitem__(int)`` returning an
    example: a list of dicts, ``lazytrain.data.Dataset``, a Hugging Face
    ``datasets.Dataset``; ``__getitems__(indices)`` is used when present) or
    iterable (``__iter__``: ``TFRecordDataset``, a generator; its examples are
    read on the iterating thread, in order, and batched as they come).

    * ``shuffle=True``: a ``RandomSampler`` seeded from ``generator`` (None: 0;
      an int; or an object's ``initial_seed()``): the C++ DataLoader's order
      of (seed, epoch); every pass advances the epoch, ``set_epoch`` sets it.
    * ``sampler`` / ``batch_sampler``: any iterables of indices / index lists
      (``DistributedSampler`` for data parallelism).
    * ``num_workers``: threads that make batches (0: the iterating thread);
      ``prefetch_factor`` (default 2) batches ahead per worker;
      ``worker_init_fn(worker_id)`` runs first on each; ``timeout`` > 0 bounds
      the wait for a batch (RuntimeError after it).
    * ``collate_fn``: default ``default_collate`` (numpy arrays); one with a
      ``collate(examples, batch_number)`` method gets the batch number
      ``epoch * len(loader) + index`` (times ``num_replicas`` plus ``rank``
      for a sampler or dataset that has them), epoch being the sampler's (or
      iterable dataset's) ``epoch`` where it has one, else the loader's
      (``set_epoch``, default 0). A stream's ``len()`` is asked once per
      pass for this (``TFRecordDataset`` counts its records once); a stream
      without one numbers each pass from 0.

    ``len(loader)`` is the number of batches a pass gives. An exception raised
    while making a batch is raised by the iteration at that batch; leaving a
    pass early stops making batches (a worker finishes the one it is on).
    ``pin_memory``, ``persistent_workers``, ``multiprocessing_context`` and
    ``pin_memory_device`` are accepted for torch's sake and change nothing
    (workers are threads, the host arrays are the device loader's input).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to "
                             "enable multiprocessing, otherwise set prefetch_factor to None.")
        if prefetch_factor is None:
            prefetch_factor = 2
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ValueError(f"prefetch_factor should be a positive int, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if not in_order:
            raise ValueError("DataLoader: in_order=False is not supported (batches always come in order)")
        self._iterable = _is_iterable_dataset(dataset)
        if not self._iterable and not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
            raise TypeError(f"DataLoader: dataset is a {type(dataset).__name__}: expected a map-style dataset (__len__ and "
                            "__getitem__ returning an example: a list of dicts, a datasets.Dataset) or an iterable of examples")
        if self._iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                                     f"{name}={value}")
        elif sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        elif not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not self._iterable:
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.pin_memory = pin_memory
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)
        self._epoch = 0

    @property
    def _auto_collation(self):
        return self.batch_size is not None or self.batch_sampler is not None

    def _index_source(self):
        """What decides an epoch's examples: the iterable dataset, the batch sampler's sampler, or the sampler."""
        if self._iterable:
            return self.dataset
        inner = getattr(self.batch_sampler, "sampler", None)
        return inner if inner is not None else self.sampler

    def set_epoch(self, epoch):
        """The epoch of the next pass, passed on to the sampler (and batch sampler, iterable dataset) that have set_epoch."""
        self._epoch = int(epoch)
        for owner in {id(o): o for o in (self.sampler, self.batch_sampler, self._index_source()) if o is not None}.values():
            if callable(getattr(owner, "set_epoch", None)):
                owner.set_epoch(self._epoch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)  # TypeError for a stream without a length, as torch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self._auto_collation else self.sampler)

    def __iter__(self):
        return self._iterate()

    # ---- one pass ----
    def _pass_numbering(self):
        """(first batch number, stride, offset): batch k of this pass is number (first + k) * stride + offset."""
        source = self._index_source()
        epoch = getattr(source, "epoch", None)
        epoch = int(epoch) if isinstance(epoch, numbers.Integral) else self._epoch
        try:
            per_epoch = len(self)
        except TypeError:
            per_epoch = 0  # a stream of unknown length: numbers restart every pass
        return epoch * per_epoch, int(getattr(source, "num_replicas", 1)), int(getattr(source, "rank", 0))

    def _fetch(self, indices):
        indices = [int(i) if isinstance(i, np.integer) else i for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def _sources(self):
        """Per batch, a function returning its examples (map-style: read by the worker; streams: read here, in order)."""
        if not self._iterable:
            if self._auto_collation:
                for indices in self.batch_sampler:
                    yield lambda indices=indices: self._fetch(indices)
            else:
                for index in self.sampler:
                    yield lambda index=index: self.dataset[index]
            return
        stream = iter(self.dataset)
        if self.batch_size is None:
            for example in stream:
                yield lambda example=example: example
            return
        while True:
            chunk = list(itertools.islice(stream, self.batch_size))
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            yield lambda chunk=chunk: chunk

    def _make(self, number, examples_of):
        examples = examples_of()
        if not self._auto_collation:
            return self.collate_fn(examples)
        seeded = getattr(self.collate_fn, "collate", None)
        return seeded(examples, number) if callable(seeded) else self.collate_fn(examples)

    def _start_worker(self, ids):
        worker_id = next(ids)
        _worker.info = WorkerInfo(worker_id, self.num_workers, worker_id, self.dataset)
        if self.worker_init_fn is not None:
            self.worker_init_fn(worker_id)

    def _result(self, future):
        try:
            return future.result(timeout=self.timeout or None)
        except concurrent.futures.TimeoutError:
            raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None

    def _iterate(self):
        first, stride, offset = self._pass_numbering()
        numbered = ((first + k) * stride + offset for k in itertools.count())
        if self.num_workers == 0:
            for number, examples_of in zip(numbered, self._sources()):
                yield self._make(number, examples_of)
            return
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.num_workers, thread_name_prefix="lazytrain-data-worker", initializer=self._start_worker,
            initargs=(itertools.count(),))
        pending = collections.deque()
        ahead = self.num_workers * self.prefetch_factor
        try:
            for number, examples_of in zip(numbered, self._sources()):
                pending.append(pool.submit(self._make, number, examples_of))
                if len(pending) >= ahead:
                    yield self._result(pending.popleft())
            while pending:
                yield self._result(pending.popleft())
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
