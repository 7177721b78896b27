"""lazytrain.optim: AdamW and SGD with torch.optim's interface.

Updates are recorded into the step's graph; the numbers that change every
step (the learning rate, bias corrections) enter it as device data, never as
constants, so a training loop compiles once whatever the schedule does."""
from .optimizer import Optimizer  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .sgd import SGD  # noqa: F401
from . import lr_scheduler  # noqa: F401
