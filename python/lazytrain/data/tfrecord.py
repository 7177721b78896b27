"""TFRecord shards of tf.train.Example token blocks (what ``lazytrain
make_tfrecords`` writes) read as a stream, by the C++ reader
(``src/data/tfrecord_dataset.h``)."""
import os

from .. import _C
from .dataloader import IterableDataset


class TFRecordDataset(IterableDataset):
    """The examples of TFRecord files, each a dict of int64 numpy arrays:
    ``input_ids`` and, where the record has it, ``attention_mask`` (the int64
    features ``make_tfrecords`` writes; other features are not read).

    `filenames`: a glob pattern (``"out/train-*.tfrecord"``, matched files sorted)
    or a list of paths (in that order). A pass is tf.data's pipeline, as
    ``lazytrain run_mlm --train_tfrecords`` streams it: the files of this
    replica (file f goes to replica f % num_replicas), ``cycle_length`` of them
    read at once, records taken round-robin (``interleave``), then, when
    ``shuffle_buffer_size`` > 0, tf.data's ``shuffle`` with a buffer of that
    many examples and the generator ``std::mt19937_64(seed * 1000003 +
    epoch)`` (``set_epoch``; the CLI trains with cycle_length=4,
    shuffle_buffer_size=10000 and its --seed). Records are read and parsed with
    the GIL released.

    ``len(dataset)`` counts the examples of this replica's files (one read of
    them, cached). Errors (LazytrainError): no file matches, a file cannot be
    opened, a damaged record (``[TFRecordReader] 'shard.tfrecord': record 7
    (byte offset 1234): data CRC mismatch ...``), a record that is not a
    tf.train.Example with int64 input_ids (naming the file and record); with
    ``skip_corrupt=True`` damaged records are skipped with a warning instead
    and counted in ``skipped``.
    """

    def __init__(self, filenames, cycle_length=2, shuffle_buffer_size=0, seed=0, num_replicas=1, rank=0,
                 skip_corrupt=False):
        if isinstance(filenames, (str, os.PathLike)):
            files = _C._glob_files(os.fspath(filenames))
        else:
            files = [os.fspath(f) for f in filenames]
            if not files:
                raise ValueError("TFRecordDataset: no filenames: expected a glob pattern or a list of paths")
        for name, value, low in (("cycle_length", cycle_length, 1), ("shuffle_buffer_size", shuffle_buffer_size, 0),
                                 ("seed", seed, 0), ("num_replicas", num_replicas, 1), ("rank", rank, 0)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"TFRecordDataset: {name} is {value!r}: expected an int >= {low}")
        if rank >= num_replicas:
            raise ValueError(f"TFRecordDataset: rank {rank} is not below num_replicas {num_replicas}")
        self.files = files
        self.cycle_length = cycle_length
        self.shuffle_buffer_size = shuffle_buffer_size
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.skip_corrupt = bool(skip_corrupt)
        self.epoch = 0
        self.skipped = 0
        self._length = None
        self._open(0, 0, 0)  # the replica's files and the options are checked here, not at the first read

    def _open(self, cycle_length, shuffle_buffer_size, seed):
        return _C._TFRecordDataset(self.files, max(cycle_length, 1), shuffle_buffer_size, seed, self.num_replicas,
                                   self.rank, self.skip_corrupt)

    def set_epoch(self, epoch):
        """The epoch of the next passes: the shuffle generator's seed is seed * 1000003 + epoch."""
        self.epoch = int(epoch)

    def __iter__(self):
        stream = self._open(self.cycle_length, self.shuffle_buffer_size, (self.seed * 1000003 + self.epoch) % 2**64)
        while True:
            example = stream.next()
            if example is None:
                self.skipped = stream.skipped
                return
            input_ids, attention_mask = example
            yield {"input_ids": input_ids} if attention_mask is None else {"input_ids": input_ids,
                                                                            "attention_mask": attention_mask}

    def __len__(self):
        if self._length is None:
            stream = self._open(1, 0, 0)
            n = 0
            while stream.next() is not None:
                n += 1
            self._length = n
        return self._length
