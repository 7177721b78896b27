"""lazytrain.nn: modules users subclass as torch.nn.Module, the layers of
today's language models, functional ops, init and utils."""
from . import functional, init, utils  # noqa: F401
from .parameter import Parameter  # noqa: F401
from .module import Module  # noqa: F401
from .containers import ModuleList, Sequential, ModuleDict  # noqa: F401
from .layers import (  # noqa: F401
    Linear, Embedding, LayerNorm, RMSNorm, Dropout, GELU, SiLU, ReLU, Tanh, Identity,
)
from .loss import CrossEntropyLoss, NLLLoss, MSELoss  # noqa: F401
