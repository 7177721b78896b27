"""torch_xla.distributed on lazytrain: the device loader (parallel_loader)."""
from . import parallel_loader  # noqa: F401
