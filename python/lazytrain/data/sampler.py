"""torch.utils.data's samplers: which example indices an epoch visits, in
which order. ``RandomSampler``'s order is the C++ DataLoader's
(``src/data/distributed_sampler.h`` epoch_order: a Fisher-Yates shuffle with
``std::mt19937_64(seed * 1000003 + epoch)``), not torch's randperm, so a
Python pipeline visits the examples in the order ``lazytrain run_mlm`` does."""
import numbers

from .. import _C


def seed_of(generator, who):
    """The seed of `generator`: None gives 0, an int is the seed, an object with
    ``initial_seed()`` (a torch.Generator) gives that."""
    if generator is None:
        return 0
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        seed = int(generator)
    elif callable(getattr(generator, "initial_seed", None)):
        seed = int(generator.initial_seed())
    else:
        raise TypeError(f"{who}: generator={generator!r}; expected None, an int seed or a generator with initial_seed()")
    if seed < 0:
        raise ValueError(f"{who}: the seed {seed} is negative; expected an int >= 0")
    return seed


class Sampler:
    """torch.utils.data.Sampler: iterates example indices; ``__len__`` where known."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A permutation of the indices per epoch: the C++ DataLoader's order for
    (seed, epoch), seed from ``generator`` (None: 0; an int; or a generator's
    ``initial_seed()``). Each iteration uses ``epoch`` and then advances it (a
    new order every pass, as torch's generator advances); ``set_epoch(e)``
    picks the epoch of the next pass. Sampling with replacement and
    ``num_samples`` other than the dataset's length are not supported
    (NotImplementedError)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if replacement:
            raise NotImplementedError("RandomSampler(replacement=True): lazytrain shuffles without replacement only")
        if num_samples is not None and num_samples != len(data_source):
            raise NotImplementedError(f"RandomSampler(num_samples={num_samples}): only one permutation of the "
                                      f"{len(data_source)} examples per epoch is supported")
        self.data_source = data_source
        self.replacement = replacement
        self.generator = generator
        self.seed = seed_of(generator, "RandomSampler")
        self.epoch = 0

    @property
    def num_samples(self):
        return len(self.data_source)

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def indices(self, epoch):
        """The order of `epoch` as an int64 numpy array (does not advance the epoch)."""
        return _C._epoch_order(len(self.data_source), True, self.seed, int(epoch))

    def __iter__(self):
        order = self.indices(self.epoch)
        self.epoch += 1
        return iter(order.tolist())

    def __len__(self):
        return len(self.data_source)


class BatchSampler(Sampler):
    """torch.utils.data.BatchSampler: lists of `batch_size` indices from
    `sampler`; the last shorter one kept unless `drop_last`."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
