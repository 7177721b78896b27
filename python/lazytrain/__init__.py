"""lazytrain: lazy tensors compiled through an XLA-style pipeline.

Ops record a graph and return at once; ``lazytrain.sync()`` (PyTorch/XLA's
``mark_step``) or a read of a value (``item()``, ``numpy()``, ``print``) runs it.
A graph is compiled once and cached by its hash, so a training loop with static
shapes compiles once. Names follow PyTorch for tensors, nn and optim, and
PyTorch/XLA for the runtime and its metrics::

    import lazytrain as lt
    x = lt.randn(4, 8, requires_grad=True)
    loss = (x @ x.t()).sum()
    loss.backward()
    lt.sync()
    print(loss.item(), lt.debug.metrics.short_metrics_report())

The classes of ``lazytrain.models``, ``lazytrain.tokenizers`` and
``lazytrain.trainer``, and the data collators of ``lazytrain.data``, are also
importable from ``lazytrain`` itself (``lazytrain.Trainer``); they are
documented in their modules.
"""
import os as _os

from . import _C
from ._C import (  # noqa: F401
    LazytrainError,
    Tensor,
    dtype,
    device as _device_class,
    from_numpy,
    from_dlpack,
    manual_seed,
    scalar_tensor,
    is_grad_enabled,
    is_autocast_enabled,
    set_detect_anomaly,
    is_anomaly_enabled,
    wait_device_ops,
    graph_break,
    # ops (tensor/ops.h under torch's names)
    add, sub, mul, div, pow, neg, exp, log, sqrt, rsqrt, tanh, erf, abs, relu, gelu,
    maximum, minimum, eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_not,
    where, masked_fill, masked_select, nonzero, matmul, sum, mean, amax, logsumexp, argmax,
    reshape, transpose, permute, unsqueeze, squeeze, cat, index_select, optimization_barrier,
    softmax, log_softmax, embedding, layer_norm, dropout, cross_entropy, linear,
    sigmoid, silu, sin, cos, clamp, cumsum, tril, triu, stack, split, chunk, gather, scatter_add,
    topk, rms_norm, scaled_dot_product_attention,
    floor_divide, remainder, bitwise_and, bitwise_or, bitwise_xor, bitwise_not, result_type, promote_types, can_cast,
)

_C._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)))

float32 = dtype.float32
bfloat16 = dtype.bfloat16
float16 = dtype.float16
int32 = dtype.int32
int64 = dtype.int64
bool = dtype.bool  # noqa: A001 (torch.bool)
float = float32  # noqa: A001 (torch.float)
half = float16
long = int64
int = int32  # noqa: A001 (torch.int)

from ._tensor import (  # noqa: E402,F401
    tensor, asarray, zeros, ones, full, arange, rand, randn, zeros_like, ones_like, full_like,
    rand_like, randn_like, empty, is_tensor, numel,
)
from ._tensor_methods import repeat_interleave  # noqa: E402,F401
from ._reductions import (  # noqa: E402,F401,A004 (torch's names: max, min, any, all)
    max, min, amax, amin, argmax, argmin, prod, any, all, var, std, norm, topk, sort, argsort, median, return_types,
)
from . import _indexing  # noqa: E402,F401 (installs Tensor.__getitem__)
from ._runtime import (  # noqa: E402,F401
    sync, mark_step, device, devices, compile, execution_mode, no_grad, enable_grad,
    set_grad_enabled, autocast, detect_anomaly,
)
from . import debug, nn, optim, core, models, data, distributed, runtime  # noqa: E402,F401
from .models import (  # noqa: E402,F401
    PretrainedConfig, PreTrainedModel, BertConfig, BertModel, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM,
    GPT2Config, GPT2Model, GPT2LMHeadModel, LlamaConfig, LlamaModel, LlamaForCausalLM, AutoConfig, AutoModelForMaskedLM,
    AutoModelForCausalLM,
)
from . import tokenizers  # noqa: E402,F401
from .tokenizers import (  # noqa: E402,F401
    PreTrainedTokenizer, BatchEncoding, BertTokenizer, GPT2Tokenizer, XLMRobertaTokenizer, AutoTokenizer, train_tokenizer,
)
from . import trainer  # noqa: E402,F401
from .trainer import (  # noqa: E402,F401
    Trainer, TrainingArguments, TrainerCallback, TrainerControl, TrainerState, EvalPrediction, HfArgumentParser,
    get_last_checkpoint, set_seed,
)
from ._serialization import save, load  # noqa: E402,F401
from . import autograd  # noqa: E402,F401
autograd._install()
# transformers exports its collators at the top level.
from .data import DataCollatorForLanguageModeling, DataCollatorWithPadding, default_data_collator  # noqa: E402,F401

__version__ = "0.1.0"

# Last: torch's views and in-place ops wrap the final spelling of every op (_views.py).
from ._index_put import scatter, index_fill, index_add, index_copy  # noqa: E402,F401
from ._C import clone, slice_scatter  # noqa: E402,F401
from . import _index_put as _index_put_module, _views as _views_module  # noqa: E402
_index_put_module.install()
_views_module.install()
