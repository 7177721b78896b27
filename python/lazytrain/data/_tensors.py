"""What a collator returns: ``return_tensors`` as transformers spells it."""
import numpy as np

from .. import _C

RETURN_TENSORS = ("np", "lt", "pt")


def check_return_tensors(return_tensors, who):
    if return_tensors not in RETURN_TENSORS:
        raise ValueError(f"{who}: return_tensors={return_tensors!r}; expected 'np' (numpy arrays), "
                         "'lt' (lazytrain Tensors) or 'pt' (torch tensors, when torch is installed)")


def convert(batch, return_tensors):
    """`batch` (a dict of numpy arrays) as numpy arrays, lazytrain Tensors or torch tensors."""
    if return_tensors == "np":
        return batch
    if return_tensors == "lt":
        return {k: _C.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v for k, v in batch.items()}
    import torch  # only for return_tensors="pt"
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in batch.items()}
