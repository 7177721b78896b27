"""torch.utils.data.distributed.DistributedSampler over the C++ one
(``src/data/distributed_sampler.h``): each data-parallel replica's share of an
epoch, as the C++ Trainer splits it."""
import numbers

from .. import _C
from .sampler import Sampler


class DistributedSampler(Sampler):
    """Replica `rank`'s share of each epoch, PyTorch's rules: every replica
    takes the same permutation of the indices (the C++ DataLoader's order for
    (seed, epoch) when ``shuffle``, else 0..n-1), padded by repeating its start
    until it divides evenly (or, with ``drop_last``, cut to a multiple of the
    replicas), and takes every num_replicas-th index from position rank. So
    ``len(sampler)`` is ceil(n / num_replicas), or floor with drop_last, and
    replicas see disjoint positions.

    ``num_replicas`` and ``rank`` default to the runtime's
    (``lazytrain.core.xla_model.xrt_world_size()`` and ``get_ordinal()``: the
    replica this thread runs). The order changes only through
    ``set_epoch(epoch)``, which every replica calls with the same epoch before
    each pass (Hugging Face's Trainer does). ValueError for a rank outside
    [0, num_replicas) or num_replicas < 1; LazytrainError for drop_last with
    fewer examples than replicas (each would get none).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        from ..core import xla_model as xm
        if num_replicas is None:
            num_replicas = xm.xrt_world_size()
        if rank is None:
            rank = xm.get_ordinal()
        if not isinstance(num_replicas, numbers.Integral) or num_replicas < 1:
            raise ValueError(f"num_replicas should be a positive int, got {num_replicas!r}")
        if not isinstance(rank, numbers.Integral) or rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        if not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed should be an int >= 0, got {seed!r}")
        self.dataset = dataset
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self.num_samples = _C._distributed_sampler_num_samples(len(dataset), self.num_replicas, self.rank, self.drop_last)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch):
        """The epoch of the next passes (all replicas the same): a new order when shuffling."""
        self.epoch = int(epoch)

    def indices(self, epoch):
        """This replica's indices of `epoch` as an int64 numpy array."""
        return _C._distributed_sampler_indices(len(self.dataset), self.num_replicas, self.rank, self.shuffle, self.seed,
                                               self.drop_last, int(epoch))

    def __iter__(self):
        return iter(self.indices(self.epoch).tolist())

    def __len__(self):
        return self.num_samples
