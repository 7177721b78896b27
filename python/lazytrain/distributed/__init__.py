"""torch_xla.distributed on lazytrain: the device loader (parallel_loader) and
replicas (``import lazytrain.distributed.xla_multiprocessing as xmp``) and SPMD
sharding (``import lazytrain.distributed.spmd as xs``)."""
from . import parallel_loader, spmd, xla_multiprocessing  # noqa: F401
