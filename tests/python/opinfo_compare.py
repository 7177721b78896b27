"""How the OpInfo sweep (opinfo_sweep.py) hands torch's samples to lazytrain and
judges lazytrain's outputs against torch's: dtype, shape, then values with
torch.testing's default tolerances for the dtype (NaN equals NaN); sort/argsort/topk
indices by what they select, since which of equal values comes first is unspecified."""
import math

DTYPE_NAMES = ("float32", "bfloat16", "float16", "int32", "int64", "bool")


class Skip(Exception):
    """The sample has an input lazytrain cannot hold (not counted)."""


def to_lt(lt, torch, obj, check_only=False):
    """`obj` with torch's tensors, dtypes and sizes as lazytrain's (check_only: only raises Skip
    where it has one lazytrain cannot hold)."""
    if isinstance(obj, torch.Tensor):
        dname = str(obj.dtype).replace("torch.", "")
        if dname not in DTYPE_NAMES:
            raise Skip(f"input of dtype {dname}")
        if check_only:
            return None
        t = obj.detach().contiguous()
        array = (t.float() if t.dtype == torch.bfloat16 else t).numpy()
        return lt.tensor(array, dtype=getattr(lt, dname))
    if isinstance(obj, torch.dtype):
        dname = str(obj).replace("torch.", "")
        if dname not in DTYPE_NAMES:
            raise Skip(f"dtype argument {dname}")
        return getattr(lt, dname)
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, (list, tuple)):
        items = [to_lt(lt, torch, o, check_only) for o in obj]
        return type(obj)(items) if type(obj) in (list, tuple) else tuple(items)
    if isinstance(obj, dict):
        return {k: to_lt(lt, torch, v, check_only) for k, v in obj.items()}
    return obj


def to_torch(lt, torch, obj):
    """lazytrain's output as torch objects (reads the values: synchronises)."""
    if isinstance(obj, lt.Tensor):
        dname = repr(obj.dtype).replace("lazytrain.", "").replace("torch.", "")
        dname = next((d for d in DTYPE_NAMES if getattr(lt, d) == obj.dtype), dname)
        array = (obj.float() if obj.dtype == lt.bfloat16 else obj).numpy()
        out = torch.from_numpy(array.copy()).reshape(tuple(obj.shape))
        return out.to(getattr(torch, dname))
    if isinstance(obj, (list, tuple)):
        return [to_torch(lt, torch, o) for o in obj]
    return obj


def compare(torch, actual, expected, values=True, path="out"):
    """None when `actual` (lazytrain's, as torch objects) matches `expected`, else why not."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"{path}: expected a tensor, got {type(actual).__name__}"
        if actual.dtype != expected.dtype:
            return f"{path}: dtype {str(actual.dtype)[6:]}, torch {str(expected.dtype)[6:]}"
        if tuple(actual.shape) != tuple(expected.shape):
            return f"{path}: shape {tuple(actual.shape)}, torch {tuple(expected.shape)}"
        if not values:
            return None
        try:
            torch.testing.assert_close(actual, expected.detach().cpu(), equal_nan=True, check_device=False,
                                       check_stride=False)
        except AssertionError as e:
            lines = [s.strip() for s in str(e).splitlines() if s.strip()]
            return f"{path}: values: " + "; ".join(lines[1:4])
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            return f"{path}: expected a sequence of {len(expected)}, got {type(actual).__name__}"
        if len(actual) != len(expected):
            return f"{path}: {len(actual)} outputs, torch {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            why = compare(torch, a, e, values, f"{path}[{i}]")
            if why:
                return why
        return None
    if isinstance(expected, (bool, int, float)):
        if isinstance(actual, torch.Tensor) or not isinstance(actual, (bool, int, float)):
            return f"{path}: expected a Python {type(expected).__name__}, got {type(actual).__name__}"
        if type(actual) is not type(expected):
            return f"{path}: Python {type(actual).__name__}, torch {type(expected).__name__}"
        both_nan = actual != actual and expected != expected
        close = actual == expected or isinstance(expected, float) and (math.isclose(actual, expected, rel_tol=1e-6)
                                                                       or both_nan)
        if values and not close:
            return f"{path}: {actual!r}, torch {expected!r}"
        return None
    if expected is None:
        return None if actual is None else f"{path}: expected None, got {type(actual).__name__}"
    return None if actual == expected else f"{path}: {actual!r}, torch {expected!r}"


def stable(name, args, kwargs):
    return name in ("sort", "argsort") and bool(kwargs.get("stable", args[2] if len(args) > 2 else False))


def compare_ties(torch, name, actual, expected, x, args, kwargs):
    """sort/argsort/topk: values as compare() does; the indices must be distinct along dim and
    pick torch's values from the input (which of equal values is unspecified)."""
    if name == "topk":
        dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
        ordered = args[3] if len(args) > 3 else kwargs.get("sorted", True)
    else:
        dim = args[0] if len(args) > 0 else kwargs.get("dim", -1)
        ordered = True
    single = name in ("argsort",)
    exp_idx = expected if single else expected[1]
    if single:
        why = compare(torch, actual, expected, values=False)
        act_idx = actual
    else:
        if not isinstance(actual, (list, tuple)) or len(actual) != 2:
            return compare(torch, actual, expected)
        act_vals, exp_vals = actual[0], expected[0]
        why = compare(torch, actual, expected, values=False)
        if why is None:
            if not ordered:
                act_vals, exp_vals = act_vals.sort(dim).values, exp_vals.sort(dim).values
            why = compare(torch, act_vals, exp_vals, path="out[0]")
        act_idx = actual[1]
    if why is not None:
        return why
    if x.dim() == 0:
        return None if int(act_idx) == 0 else f"indices: {act_idx.tolist()} for a 0-d input"
    if act_idx.numel():
        if int(act_idx.min()) < 0 or int(act_idx.max()) >= x.shape[dim]:
            return f"indices out of range: {act_idx.min().item()}..{act_idx.max().item()}"
        if (act_idx.sort(dim).values.diff(dim=dim) == 0).any():
            return "indices repeat along dim"
    picked, want = x.gather(dim, act_idx), x.gather(dim, exp_idx)
    if not ordered:
        picked, want = picked.sort(dim).values, want.sort(dim).values
    return compare(torch, picked, want, path="input[indices]")


def field_names(expected):
    return [n for n in getattr(type(expected), "__match_args__", ()) if not n.startswith("n_")]
