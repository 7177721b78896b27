"""torch_xla.distributed on lazytrain: the device loader (parallel_loader) and
replicas (``import lazytrain.distributed.xla_multiprocessing as xmp``)."""
from . import parallel_loader, xla_multiprocessing  # noqa: F401
