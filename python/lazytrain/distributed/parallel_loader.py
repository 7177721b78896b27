"""torch_xla.distributed.parallel_loader on lazytrain: ``MpDeviceLoader``,
``ParallelLoader`` and ``PerDeviceLoader`` over the C++ DeviceLoader
(``src/distributed/parallel_loader.h``, what the C++ Trainer trains with).

A loader thread pulls batches from the Python loader (taking the GIL only to
call ``next`` on it and to copy the batch's arrays into C++ buffers) into a
queue of ``loader_prefetch_size``; a transfer thread makes device tensors of
them with the GIL released (timed as ``TransferToDeviceTime``) into a queue of
``device_prefetch_size``; ``next()`` calls ``mark_step()`` first, as
PyTorch/XLA's does, so batch n+1 is read and copied while step n runs.
"""
import atexit
import collections
import sys
import threading
import weakref
from collections.abc import Mapping

import numpy as np

from .. import _C

# numpy dtypes lazytrain has no tensor type for, and the one they become
# (float64 -> float32 and narrow/unsigned ints -> int64, as lazytrain.tensor() does).
_WIDENED = {"f": np.float32, "i": np.int64, "u": np.int64}
_KEPT = (np.float32, np.float16, np.int32, np.int64, np.bool_)

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    for loader in list(_live):
        loader.close()


# ---- a batch as leaves (arrays, tensors) and the structure around them ----
class _Slot:
    __slots__ = ("index", "torch")

    def __init__(self, index, torch=False):
        self.index = index
        self.torch = torch  # a torch tensor: handed out as a torch tensor on the lazy device


class _Node:
    __slots__ = ("kind", "type", "keys", "children")

    def __init__(self, kind, type_, keys, children):
        self.kind, self.type, self.keys, self.children = kind, type_, keys, children


class _Failure:
    """The loader raised at this batch: re-raised when the consumer reaches it."""
    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


def _host_array(array):
    if array.dtype.type not in _KEPT:
        target = _WIDENED.get(array.dtype.kind)
        if target is None:
            raise TypeError(f"MpDeviceLoader: a batch array has dtype {array.dtype}: expected numbers or bools")
        array = array.astype(target)
    return np.ascontiguousarray(array)


def _torch_leaf(value):
    """A torch tensor's leaf for the C++ loader: a CPU tensor's values as a numpy
    array (copied into the loader's buffers, as numpy batches are) where numpy has
    its dtype, else a lazytrain tensor (bfloat16; an unsupported dtype raises as
    `.to(device)` would); a tensor already on the lazy device, its lazytrain tensor."""
    lazy = sys.modules.get("lazytrain.torch_backend.lazy_device")
    if lazy is None:
        raise RuntimeError("MpDeviceLoader: a batch holds torch tensors; import lazytrain.torch_backend.lazy_device "
                           "(the lazy device for torch tensors) first")
    if isinstance(value, lazy.LazyTensor):
        return value._lt
    import torch
    if value.device.type != "cpu":
        raise RuntimeError(f"MpDeviceLoader: a batch tensor is on {value.device}: expected the CPU")
    value = value.detach()
    if value.dtype in (torch.float32, torch.float16, torch.int32, torch.int64, torch.bool):
        return np.ascontiguousarray(value.resolve_conj().resolve_neg().numpy())
    from ..torch_backend.lazy_device._transfer import to_lazytrain
    return to_lazytrain(value, "MpDeviceLoader batch tensor")


def _flatten(value, leaves):
    if isinstance(value, _C.Tensor):
        leaves.append(value)
        return _Slot(len(leaves) - 1)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        leaves.append(_torch_leaf(value))
        return _Slot(len(leaves) - 1, torch=True)
    if isinstance(value, np.ndarray):
        leaves.append(_host_array(value))
        return _Slot(len(leaves) - 1)
    if isinstance(value, Mapping):
        keys = list(value)
        return _Node("map", type(value), keys, [_flatten(value[k], leaves) for k in keys])
    if isinstance(value, (list, tuple)):
        return _Node("seq", type(value), None, [_flatten(v, leaves) for v in value])
    return value  # numbers, strings, None: handed over as they are (torch_xla moves tensors only)


def _rebuild(skeleton, tensors):
    if isinstance(skeleton, _Slot):
        if skeleton.torch:
            from ..torch_backend.lazy_device import LazyTensor
            return LazyTensor(tensors[skeleton.index])
        return tensors[skeleton.index]
    if not isinstance(skeleton, _Node):
        return skeleton
    children = [_rebuild(c, tensors) for c in skeleton.children]
    if skeleton.kind == "map":
        pairs = dict(zip(skeleton.keys, children))
        try:
            return skeleton.type(pairs)
        except TypeError:
            return pairs
    if skeleton.type is list:
        return children
    if hasattr(skeleton.type, "_fields"):  # a namedtuple
        return skeleton.type(*children)
    return skeleton.type(children)


class _Source:
    """The loader's batches shared by the devices, round robin: batch i goes to
    device i % len(devices); a last incomplete round is dropped (torch_xla's
    ParallelLoader), so every device steps as often."""

    def __init__(self, loader, num_devices):
        self._iterator = iter(loader)
        self._queues = [collections.deque() for _ in range(num_devices)]
        self._lock = threading.Lock()
        self._done = False
        self._error = None

    def next_for(self, device_index):
        with self._lock:
            queue = self._queues[device_index]
            while not queue:
                if self._error is not None:
                    raise self._error
                if self._done:
                    raise StopIteration
                round_ = []
                try:
                    for _ in self._queues:
                        round_.append(next(self._iterator))
                except StopIteration:
                    self._done = True
                    continue
                except BaseException as error:
                    self._error = error
                    raise
                for q, batch in zip(self._queues, round_):
                    q.append(batch)
            return queue.popleft()


class _Feeder:
    """The fetch() the C++ loader thread calls, with the GIL: the next batch's
    leaves (its structure queued for the consumer), [] for a failure (queued
    too), None at the end."""

    def __init__(self, source, device_index):
        self._source = source
        self._device_index = device_index
        self._finished = False
        self.skeletons = collections.deque()

    def __call__(self):
        if self._finished:
            return None
        try:
            batch = self._source.next_for(self._device_index)
            leaves = []
            skeleton = _flatten(batch, leaves)
        except StopIteration:
            self._finished = True
            return None
        except BaseException as error:  # handed to the consumer at this batch's turn
            self._finished = True
            self.skeletons.append(_Failure(error))
            return []
        self.skeletons.append(skeleton)
        return leaves


def _as_device(device):
    if device is None:
        return _C.current_device()
    if isinstance(device, str):
        return _C.device(device)
    if isinstance(device, _C.device):
        return device
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(device, torch.device) and device.type == "lazytrain":
        # the lazy device for torch tensors (xm.xla_device() once it is imported): the same device
        return _C.device(f"cpu:{device.index}") if device.index is not None else _C.current_device()
    raise TypeError(f"expected a lazytrain device, 'cpu:N' or torch.device('lazytrain', N), got {device!r}")


class PerDeviceLoader:
    """The batches of one device, as device tensors (nested as the loader's
    batches were: dicts, lists, tuples; numpy arrays become tensors, float64
    as float32 and narrow ints as int64; lazytrain Tensors are moved to the
    device; torch tensors (a torch.utils.data.DataLoader's batches) become
    torch tensors on the lazy device, same dtype; other values pass
    unchanged). Each ``next()`` first calls ``mark_step()`` (the step traced
    since the previous batch runs while the next is prepared), also the one
    that ends the pass. An exception raised by
    the loader is raised here at that batch's turn. ``close()`` (or dropping
    the iterator, e.g. ``break``) stops the threads."""

    def __init__(self, source, device_index, device, loader_prefetch_size, device_prefetch_size, length, input_sharding=None):
        self._feeder = _Feeder(source, device_index)
        self._input_sharding = input_sharding
        self._device = device
        self._length = length
        self._first = True
        self._native = _C._DeviceLoader(self._feeder, device, loader_prefetch_size, device_prefetch_size)
        _live.add(self)

    def __iter__(self):
        return self

    def __next__(self):
        if self._native is None:
            raise StopIteration
        if self._first:
            self._first = False
            _C._mark_step(None)
        tensors = self._native.next()
        if tensors is None:
            self.close()
            raise StopIteration
        skeleton = self._feeder.skeletons.popleft()
        if isinstance(skeleton, _Failure):
            self.close()
            raise skeleton.error
        if self._input_sharding is not None:
            tensors = [self._input_sharding.apply(t) for t in tensors]
        return _rebuild(skeleton, tensors)

    next = __next__

    def __len__(self):
        if self._length is None:
            raise TypeError("PerDeviceLoader: the loader has no len()")
        return self._length

    def close(self):
        """Stops the loader and transfer threads (each finishes what it is doing)."""
        native, self._native = self._native, None
        if native is not None:
            native.close()

    def __del__(self):
        self.close()


class ParallelLoader:
    """torch_xla's ParallelLoader: starts the loading of `loader`'s batches for
    each of `devices` at once (batch i to device i % len(devices)); take each
    device's with ``per_device_loader(device)``. ``loader_prefetch_size``
    host batches and ``device_prefetch_size`` device batches are kept ready
    per device (the C++ DeviceLoader's defaults). ``input_sharding`` (an
    ``lazytrain.distributed.spmd.ShardingSpec``) lays every tensor of each
    batch out over its mesh (SPMD). Only ``batches_per_execution=1`` and one
    transfer thread are supported (ValueError)."""

    def __init__(self, loader, devices, batchdim=0, batches_per_execution=1, loader_prefetch_size=8,
                 device_prefetch_size=4, host_to_device_transfer_threads=1, input_sharding=None):
        if batches_per_execution != 1:
            raise ValueError("ParallelLoader: only batches_per_execution=1 is supported (mark_step on every batch)")
        if host_to_device_transfer_threads != 1:
            raise ValueError("ParallelLoader: host_to_device_transfer_threads must be 1 (one transfer thread per device)")
        if input_sharding is not None and not hasattr(input_sharding, "apply"):
            raise ValueError(f"ParallelLoader: input_sharding is {input_sharding!r}: expected a lazytrain.distributed.spmd.ShardingSpec")
        for name, value in (("loader_prefetch_size", loader_prefetch_size), ("device_prefetch_size", device_prefetch_size)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ParallelLoader: {name} is {value!r}: expected an int >= 1")
        devices = [_as_device(d) for d in devices]
        if not devices:
            raise ValueError("ParallelLoader: no devices")
        self._loader = loader
        self._devices = devices
        try:
            length = len(loader) // len(devices)
        except TypeError:
            length = None
        source = _Source(loader, len(devices))
        self._per_device = {str(d): PerDeviceLoader(source, i, d, loader_prefetch_size, device_prefetch_size, length, input_sharding)
                            for i, d in enumerate(devices)}

    def per_device_samples(self):
        return len(self._loader) // len(self._devices)

    def per_device_loader(self, device):
        key = str(_as_device(device))
        if key not in self._per_device:
            raise KeyError(f"ParallelLoader: no loader for device {key}; devices: {list(self._per_device)}")
        return self._per_device[key]

    def close(self):
        for loader in self._per_device.values():
            loader.close()


class MpDeviceLoader:
    """torch_xla's MpDeviceLoader: ``for batch in MpDeviceLoader(loader, device)``
    iterates `loader` (any iterable of batches: dicts of numpy arrays, lists,
    lazytrain Tensors, nested; a ``lazytrain.data.DataLoader``; a
    ``torch.utils.data.DataLoader``, its torch tensors handed out on the lazy
    device for torch tensors, `device` then ``xm.xla_device()``) with its
    batches on `device` as tensors, prepared on background threads (see
    ``PerDeviceLoader``). Every iteration starts a new pass of `loader`;
    ``len()`` is ``len(loader)``. Keyword arguments go to ``ParallelLoader``
    (``loader_prefetch_size=8``, ``device_prefetch_size=4``)."""

    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device
        self._parallel_loader_kwargs = kwargs

    def __iter__(self):
        parallel_loader = ParallelLoader(self._loader, [self._device], **self._parallel_loader_kwargs)
        return parallel_loader.per_device_loader(self._device)

    def __len__(self):
        return len(self._loader)
