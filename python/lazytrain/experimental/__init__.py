"""torch_xla.experimental on lazytrain: FSDPv2 (``spmd_fully_sharded_data_parallel``)."""
from . import spmd_fully_sharded_data_parallel  # noqa: F401
