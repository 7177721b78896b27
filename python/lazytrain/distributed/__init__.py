"""torch_xla.distributed's place: ``import lazytrain.distributed.xla_multiprocessing as xmp``."""
from . import xla_multiprocessing  # noqa: F401
