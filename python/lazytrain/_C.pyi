from collections.abc import Sequence
import enum
from typing import Annotated, overload

from numpy.typing import NDArray


class LazytrainError(RuntimeError):
    pass

class dtype(enum.Enum):
    """Element types (torch.dtype's names: lazytrain.float32, ...)"""

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    float32 = 0

    bfloat16 = 1

    float16 = 2

    int32 = 3

    int64 = 4

    bool = 5

    @property
    def is_floating_point(self) -> bool: ...

    @property
    def itemsize(self) -> int: ...

class device:
    """A device, as torch.device: 'cpu:0', 'cpu:1' (one per replica)"""

    def __init__(self, device: str) -> None:
        """Parses 'cpu' or 'cpu:N'; LazytrainError for anything else."""

    @property
    def type(self) -> str: ...

    @property
    def index(self) -> int: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    def __eq__(self, arg: device, /) -> bool: ...

    def __hash__(self) -> int: ...

class Tensor:
    """
    A lazy tensor: ops record a graph; sync() or a read runs it (tensor/tensor.h).
    """

    @overload
    def __init__(self) -> None: ...

    @overload
    def __init__(self, other: Tensor) -> None:
        """A handle to the same tensor (Parameter wraps a tensor this way)."""

    @property
    def shape(self) -> tuple:
        """The sizes, as a tuple."""

    @property
    def dtype(self) -> dtype: ...

    @property
    def device(self) -> device: ...

    @property
    def ndim(self) -> int: ...

    @property
    def is_leaf(self) -> bool:
        """
        True for tensors made by the user (and results of ops that need no gradient).
        """

    @property
    def requires_grad(self) -> bool:
        """Whether backward() accumulates a gradient into this leaf."""

    @requires_grad.setter
    def requires_grad(self, arg: bool, /) -> None: ...

    @property
    def grad(self) -> Tensor | None:
        """
        The accumulated gradient (None before backward() or after zero_grad()). Assigning one of another size, dtype or device raises RuntimeError, as torch.
        """

    @grad.setter
    def grad(self, grad: Tensor | None) -> None: ...

    @property
    def data(self) -> Tensor:
        """
        The value without autograd history; assigning replaces the value in place (same shape and dtype).
        """

    @data.setter
    def data(self, arg: Tensor, /) -> None: ...

    def dim(self) -> int: ...

    def numel(self) -> int: ...

    def detach(self) -> Tensor:
        """The same value, no autograd history (no copy)."""

    def backward(self, gradient: Tensor | None = None) -> None:
        """
        Accumulates gradients into the leaves (records the backward graph; nothing runs until sync()).
        """

    def item(self) -> object:
        """The value of a one-element tensor as a Python number (synchronises)."""

    def __hash__(self) -> int: ...

    def numpy(self) -> NDArray:
        """The value as a numpy array (synchronises; the array owns a host copy)."""

    def __dlpack__(self, stream: object | None = None, **kwargs) -> object:
        """
        DLPack export of the value (synchronises). The capsule shares the tensor's device buffer (no copy) unless another lazytrain value shares it too, or copy=True; a consumer such as torch.from_dlpack then writes into the tensor's value. copy=False raises BufferError where only a copy can be exported.
        """

    def __dlpack_device__(self) -> tuple:
        """(kDLCPU, 0)."""

    def __add__(self, other: object | None) -> object: ...

    def __radd__(self, other: object | None) -> object: ...

    def __sub__(self, other: object | None) -> object: ...

    def __rsub__(self, other: object | None) -> object: ...

    def __mul__(self, other: object | None) -> object: ...

    def __rmul__(self, other: object | None) -> object: ...

    def __truediv__(self, other: object | None) -> object: ...

    def __rtruediv__(self, other: object | None) -> object: ...

    def __floordiv__(self, other: object | None) -> object: ...

    def __rfloordiv__(self, other: object | None) -> object: ...

    def __mod__(self, other: object | None) -> object: ...

    def __rmod__(self, other: object | None) -> object: ...

    def __pow__(self, other: object | None) -> object: ...

    def __rpow__(self, other: object | None) -> object: ...

    def __and__(self, other: object | None) -> object: ...

    def __rand__(self, other: object | None) -> object: ...

    def __or__(self, other: object | None) -> object: ...

    def __ror__(self, other: object | None) -> object: ...

    def __xor__(self, other: object | None) -> object: ...

    def __rxor__(self, other: object | None) -> object: ...

    def __invert__(self) -> object: ...

    def __neg__(self) -> object: ...

    def __pos__(self) -> Tensor: ...

    def __abs__(self) -> object: ...

    def __matmul__(self, arg: Tensor, /) -> object: ...

    def __rmatmul__(self, arg: Tensor, /) -> object: ...

    def __eq__(self, other: object | None) -> object: ...

    def __ne__(self, other: object | None) -> object: ...

    def __lt__(self, other: object | None) -> object: ...

    def __le__(self, other: object | None) -> object: ...

    def __gt__(self, other: object | None) -> object: ...

    def __ge__(self, other: object | None) -> object: ...

    def mul(self, other: object) -> object: ...

    def div(self, other: object, *, rounding_mode: str | None = None) -> object: ...

    def floor_divide(self, other: object) -> object: ...

    def remainder(self, other: object) -> object: ...

    def maximum(self, other: object) -> object: ...

    def minimum(self, other: object) -> object: ...

    def eq(self, other: object) -> object: ...

    def ne(self, other: object) -> object: ...

    def lt(self, other: object) -> object: ...

    def le(self, other: object) -> object: ...

    def gt(self, other: object) -> object: ...

    def ge(self, other: object) -> object: ...

    def bitwise_and(self, other: object) -> object: ...

    def bitwise_or(self, other: object) -> object: ...

    def bitwise_xor(self, other: object) -> object: ...

    def add(self, other: object, *, alpha: float = 1.0) -> object: ...

    def sub(self, other: object, *, alpha: float = 1.0) -> object: ...

    def pow(self, exponent: object) -> object: ...

    def bitwise_not(self) -> object: ...

    def where(self, condition: Tensor, other: object) -> object:
        """torch.Tensor.where: where(condition, self, other)."""

    @overload
    def to(self, dtype: dtype) -> Tensor: ...

    @overload
    def to(self, device: device) -> Tensor: ...

    def float(self, *, memory_format: object | None = None) -> Tensor: ...

    def bfloat16(self, *, memory_format: object | None = None) -> Tensor: ...

    def half(self, *, memory_format: object | None = None) -> Tensor: ...

    def long(self, *, memory_format: object | None = None) -> Tensor: ...

    def int(self, *, memory_format: object | None = None) -> Tensor: ...

    def bool(self, *, memory_format: object | None = None) -> Tensor: ...

    def view(self, *args) -> Tensor: ...

    def reshape(self, *args) -> Tensor: ...

    def expand(self, *args) -> Tensor: ...

    def permute(self, *args) -> Tensor: ...

    def transpose(self, dim0: int, dim1: int) -> Tensor: ...

    def t(self) -> Tensor: ...

    def unsqueeze(self, dim: int) -> Tensor: ...

    def squeeze(self, dim: object | None = None) -> Tensor: ...

    def sum(self, dim: object | None = None, keepdim: bool = False) -> Tensor: ...

    def mean(self, dim: object | None = None, keepdim: bool = False) -> Tensor: ...

    def amax(self, dim: object | None = None, keepdim: bool = False) -> Tensor: ...

    def logsumexp(self, dim: object, keepdim: bool = False) -> Tensor: ...

    def argmax(self, dim: int, keepdim: bool = False) -> Tensor: ...

    def softmax(self, dim: int, dtype: dtype | None = None) -> Tensor: ...

    def log_softmax(self, dim: int, dtype: dtype | None = None) -> Tensor: ...

    def matmul(self, other: Tensor) -> Tensor: ...

    def masked_fill(self, mask: Tensor, value: float) -> Tensor: ...

    def index_select(self, dim: int, index: Tensor) -> Tensor: ...

    def exp(self) -> Tensor: ...

    def log(self) -> Tensor: ...

    def sqrt(self) -> Tensor: ...

    def rsqrt(self) -> Tensor: ...

    def tanh(self) -> Tensor: ...

    def erf(self) -> Tensor: ...

    def abs(self) -> Tensor: ...

    def relu(self) -> Tensor: ...

    def neg(self) -> Tensor: ...

    def logical_not(self) -> Tensor: ...

    def sigmoid(self) -> Tensor: ...

    def sin(self) -> Tensor: ...

    def cos(self) -> Tensor: ...

    def clamp(self, min: object | None = None, max: object | None = None) -> Tensor: ...

    def nonzero(self, *, as_tuple: bool = False) -> object: ...

    def cumsum(self, dim: int, dtype: dtype | None = None) -> Tensor: ...

    def tril(self, diagonal: int = 0) -> Tensor: ...

    def triu(self, diagonal: int = 0) -> Tensor: ...

    def gather(self, dim: int, index: Tensor) -> Tensor: ...

    @overload
    def split(self, split_size_or_sections: int, dim: int = 0) -> list[Tensor]: ...

    @overload
    def split(self, split_size_or_sections: Sequence[int], dim: int = 0) -> list[Tensor]: ...

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]: ...

    def repeat_interleave(self, repeats: int, dim: int | None = None) -> Tensor: ...

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple: ...

def from_numpy(array: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> Tensor:
    """
    A tensor with a C-contiguous CPU array's values (copied onto the device once; float32, float16, int32, int64, bool).
    """

def from_dlpack(array: Annotated[NDArray, dict(device='cpu', writable=False)], copy: bool | None = None) -> Tensor:
    """
    A tensor from any DLPack producer on the CPU (numpy, torch). A C-contiguous array whose data is 64-byte aligned is aliased, not copied (the producer is kept alive; later executions read its current values, and lazytrain never writes into it); any other is copied onto the device once. copy=True always copies; copy=False raises BufferError when the array cannot be aliased. Counted as DlpackInputAliases, or DlpackInputCopies and DlpackInputCopyBytes.
    """

def neg(input: Tensor) -> Tensor: ...

def exp(input: Tensor) -> Tensor: ...

def log(input: Tensor) -> Tensor: ...

def sqrt(input: Tensor) -> Tensor: ...

def rsqrt(input: Tensor) -> Tensor: ...

def tanh(input: Tensor) -> Tensor: ...

def erf(input: Tensor) -> Tensor: ...

def abs(input: Tensor) -> Tensor: ...

def relu(input: Tensor) -> Tensor: ...

def logical_not(input: Tensor) -> Tensor: ...

def sigmoid(input: Tensor) -> Tensor: ...

def silu(input: Tensor) -> Tensor: ...

def sin(input: Tensor) -> Tensor: ...

def cos(input: Tensor) -> Tensor: ...

def gelu(input: Tensor, approximate: str = 'none') -> Tensor: ...

def masked_fill(input: Tensor, mask: Tensor, value: float) -> Tensor: ...

def masked_select(input: Tensor, mask: Tensor) -> Tensor: ...

def matmul(input: Tensor, other: Tensor) -> Tensor: ...

def sum(input: Tensor, dim: object | None = None, keepdim: bool = False) -> Tensor: ...

def mean(input: Tensor, dim: object | None = None, keepdim: bool = False) -> Tensor: ...

def amax(input: Tensor, dim: object | None = None, keepdim: bool = False) -> Tensor: ...

def logsumexp(input: Tensor, dim: object, keepdim: bool = False) -> Tensor: ...

def argmax(input: Tensor, dim: int, keepdim: bool = False) -> Tensor: ...

def reshape(input: Tensor, shape: Sequence[int]) -> Tensor: ...

def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor: ...

def permute(input: Tensor, dims: Sequence[int]) -> Tensor: ...

def unsqueeze(input: Tensor, dim: int) -> Tensor: ...

def squeeze(input: Tensor, dim: object | None = None) -> Tensor: ...

def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor: ...

def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor: ...

def optimization_barrier(input: Tensor, after: Tensor) -> Tensor: ...

def softmax(input: Tensor, dim: int, dtype: dtype | None = None) -> Tensor: ...

def log_softmax(input: Tensor, dim: int, dtype: dtype | None = None) -> Tensor: ...

def embedding(weight: Tensor, input: Tensor, padding_idx: int = -1) -> Tensor: ...

def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor, bias: Tensor, eps: float = 1e-05) -> Tensor: ...

def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor: ...

def cross_entropy(input: Tensor, target: Tensor, ignore_index: int = -100) -> Tensor: ...

def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor: ...

def clamp(input: Tensor, min: object | None = None, max: object | None = None) -> Tensor:
    """
    torch.clamp: numbers or tensors as bounds (tensors broadcast: minimum(maximum(input, min), max)).
    """

def cumsum(input: Tensor, dim: int, dtype: dtype | None = None) -> Tensor: ...

def tril(input: Tensor, diagonal: int = 0) -> Tensor: ...

def triu(input: Tensor, diagonal: int = 0) -> Tensor: ...

def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor: ...

@overload
def split(tensor: Tensor, split_size_or_sections: int, dim: int = 0) -> list[Tensor]: ...

@overload
def split(tensor: Tensor, split_size_or_sections: Sequence[int], dim: int = 0) -> list[Tensor]: ...

def chunk(input: Tensor, chunks: int, dim: int = 0) -> list[Tensor]: ...

def gather(input: Tensor, dim: int, index: Tensor) -> Tensor: ...

def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor: ...

def repeat_interleave(input: Tensor, repeats: int, dim: int | None = None) -> Tensor: ...

def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    """(values, indices int64) of the k largest along dim."""

def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None, eps: float | None = None) -> Tensor: ...

def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None) -> Tensor:
    """
    One fused op (a custom-call to a FlashAttention-2 style kernel on the cpu backend).
    """

def nonzero(input: Tensor, *, as_tuple: bool = False) -> object:
    """
    torch.nonzero: int64 [n, ndim] indices of the nonzero elements; as_tuple: one 1-D tensor per dim.
    """

def to_dtype(input: Tensor, dtype: dtype) -> Tensor: ...

def scalar_tensor(value: float, dtype: dtype = dtype.float32, *, device: object | None = None, requires_grad: bool = False) -> Tensor:
    """
    A 0-d tensor that is device data, not a constant: changing it between steps never recompiles.
    """

def manual_seed(seed: int) -> None:
    """
    torch.manual_seed: resets the current device's generator (and the host one that initialises parameters).
    """

def mul(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def div(input: Tensor, other: object, *, rounding_mode: str | None = None) -> object: ...

def floor_divide(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def maximum(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def minimum(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def eq(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def ne(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def lt(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def le(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def gt(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def ge(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def bitwise_and(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def bitwise_or(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def bitwise_xor(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def logical_and(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def logical_or(input: Tensor, other: object) -> object:
    """
    torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.
    """

def add(input: Tensor, other: object, *, alpha: float = 1.0) -> object: ...

def sub(input: Tensor, other: object, *, alpha: float = 1.0) -> object: ...

def remainder(input: object, other: object) -> object: ...

def pow(input: object, exponent: object) -> object: ...

def bitwise_not(input: Tensor) -> object: ...

def result_type(tensor1: object, tensor2: object) -> dtype:
    """
    torch.result_type: the dtype an arithmetic op of the two (tensors or numbers) gives.
    """

def promote_types(type1: dtype, type2: dtype) -> dtype:
    """
    torch.promote_types: the smallest dtype both cast to safely (bool < int32 < int64 < float16/bfloat16 < float32).
    """

def can_cast(from_: dtype, to: dtype) -> bool:
    """
    torch.can_cast: false where the cast lowers the category (float to integer, integer to bool).
    """

@overload
def where(condition: Tensor, input: object, other: object) -> object:
    """
    torch.where: input where condition (bool) else other, broadcasting all three; tensors or numbers, the result dtype their result_type.
    """

@overload
def where(condition: Tensor) -> tuple:
    """torch.where(condition): nonzero(condition, as_tuple=True)."""

def clone(input: Tensor) -> Tensor:
    """torch.clone: a copy with gradients passed through."""

def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    """
    torch.slice_scatter: input with input[start:end:step] along dim replaced by src.
    """

def wait_device_ops() -> None:
    """
    Waits until no device has an execution in flight (torch_xla's xm.wait_device_ops); raises a failed execution's error.
    """

def current_device() -> device:
    """This thread's device (where tensors made from nothing go)."""

def set_detect_anomaly(enabled: bool) -> None: ...

def is_anomaly_enabled() -> bool: ...

def graph_break() -> None: ...

def is_grad_enabled() -> bool: ...

def is_autocast_enabled() -> bool: ...

class ReduceType(enum.Enum):
    SUM = 0

    MUL = 1

    MIN = 2

    MAX = 3

def all_reduce(reduce_type: ReduceType, input: Tensor, scale: float = 1.0) -> Tensor: ...

def all_gather(input: Tensor, dim: int = 0) -> Tensor: ...
