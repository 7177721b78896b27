"""torch.nn's loss modules: CrossEntropyLoss, NLLLoss, MSELoss (nn/_losses.py does the work)."""
from . import _losses
from .module import Module


class CrossEntropyLoss(Module):
    """torch.nn.CrossEntropyLoss: F.cross_entropy(input, target) with the options given here."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.register_buffer("weight", weight)  # torch's: moves with to(), in the state_dict
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return _losses.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                     reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    """torch.nn.NLLLoss: F.nll_loss(input, target) (input holds log-probabilities)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = reduction

    def forward(self, input, target):
        return _losses.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                reduction=self.reduction)


class MSELoss(Module):
    """torch.nn.MSELoss: F.mse_loss(input, target)."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return _losses.mse_loss(input, target, reduction=self.reduction)
