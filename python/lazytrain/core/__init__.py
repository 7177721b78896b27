"""torch_xla.core's place: ``import lazytrain.core.xla_model as xm``."""
from . import xla_model  # noqa: F401
