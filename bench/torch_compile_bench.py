"""issue 54: transformers models trained through torch.compile(backend="lazytrain") against torch eager and Inductor.

The same transformers model, built from its config with a fixed seed (no downloads; dropout off,
so that every backend's losses can be compared): BertForMaskedLM bert-base (12 layers, hidden
768; 15% of the tokens labelled, tokens in [1000, vocab)), GPT2LMHeadModel 124M
(../shared/data/gpt2/config.json) and LlamaForCausalLM of SmolLM2-135M's shape
(bench/smollm2_135m_config.json); GPT-2 and Llama with labels = input_ids. sdpa attention,
use_cache=False. One training step: forward with labels, backward, clip_grad_norm_(1.0),
torch.optim.AdamW (weight decay 0.01 except biases and norm weights, the Trainer's groups),
zero_grad(set_to_none=True), loss.item(). --dtypes bf16: the forward under
torch.autocast("cpu", dtype=torch.bfloat16), backward outside it, f32 weights and AdamW state.

Backends: eager; inductor (torch.compile of the model, default mode); lazytrain
(torch.compile(model, backend="lazytrain"), its default fallback="partition"). Both compiled
ones with dynamic=False and fullgraph=True, or fullgraph=False where True fails (the row says
so). Each configuration (model x dtype x threads x backend) runs in a process of its own (this
script with --child JSON), so each peak RSS is its own and no compile cache is shared:
OMP_NUM_THREADS=n (libgomp reads it at load: torch's and lazytrain's OpenMP pools), taskset to
the first n cores as bench/run_all.sh pins, torch.set_num_threads(n); Inductor's and
lazytrain's on-disk caches off (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1, LAZYTRAIN_CACHE_DIR unset):
cold compiles. GOMP_SPINCOUNT / OMP_WAIT_POLICY are passed through as set (unset: lazytrain's
pool spins 30,000 then sleeps, torch's libgomp its own default; README "Threads").

Per row: steady-state tokens/s (--warmup steps, then the median of --steps timed steps), the
compile time (first step minus the median step), peak RSS (ru_maxrss of the child), Dynamo
graphs and graph breaks (torch._dynamo.utils.counters), lazytrain's graphs and fallback nodes
(lazytrain.debug.metrics: DynamoGraphs, DynamoFallbackNodes), bytes copied into lazytrain per
step (DynamoInputCopyBytes) against the parameters' bytes, and the loss after the last step
(parity). Goals (issue 54): lazytrain >= 1.2x the better of eager and Inductor in f32, >= 1.5x
in bf16; compile <= 1/5 of Inductor's; copies <= 1% of the parameters' bytes. A row that misses
a goal gets the breakdown of each backend's step: forward, backward, clip + optimizer, and for
lazytrain its graphs' ExecuteTime inside forward + backward and the time spent importing
tensors (exchange in); the rest of forward + backward is Dynamo/AOTAutograd's wrappers, the
export of outputs and waiting.

Issue 56 adds two backends: lazydevice (the same model and step on lazytrain's lazy device for torch
tensors: model.to(xm.xla_device()), xm.optimizer_step + xm.mark_step, bf16 by
torch.autocast("lazytrain"); see child_lazy_device) and native (lazytrain's own C++ model of the
same size and step: bench_bert_train / bench_gpt2_train, see native_command). Their table: the lazy
device against the better of eager and Inductor (goals >= 1.3x f32, >= 1.6x bf16) and against the
native step (goal: native within 1.1x), the host's tracing time per step against the step, and how
much of tracing overlapped execution.

  PYTHONPATH=python build/venv-test/bin/python bench/torch_compile_bench.py --json out.json
  ... --small --models bert --dtypes f32 --threads 1     # smoke test, tiny configs
  ... --models bert --backends eager,inductor,lazydevice,native     # issue 56's rows only
"""
import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2_CONFIG = os.path.join(HERE, "..", "..", "shared", "data", "gpt2", "config.json")
LLAMA_CONFIG = os.path.join(HERE, "smollm2_135m_config.json")
MODELS = ("bert", "gpt2", "llama")
BACKENDS = ("eager", "inductor", "lazytrain", "lazydevice", "native")
PEERS = ("eager", "inductor")
PART1 = ("eager", "inductor", "lazytrain")  # issue 54's table
SPEED_GOAL = {"f32": 1.2, "bf16": 1.5}  # lazytrain / the better of eager and Inductor
LAZY_GOAL = {"f32": 1.3, "bf16": 1.6}  # issue 56: the lazy device / the better of eager and Inductor
NATIVE_GOAL = 1.1  # issue 56: lazytrain's native step / the lazy device's step at most this
NATIVE_BIN = {"bert": "bench_bert_train", "gpt2": "bench_gpt2_train", "llama": "bench_gpt2_train"}
COMPILE_GOAL = 0.2  # lazytrain's compile / Inductor's
COPY_GOAL = 0.01  # bytes copied per step / parameters' bytes
LT_COUNTERS = ("DynamoGraphs", "DynamoFallbackNodes", "DynamoInputCopies", "DynamoInputCopyBytes",
               "DynamoInputCacheHits", "DlpackInputAliases", "DlpackOutputAliases")


# ---------------------------------------------------------------- child: one configuration

def model_and_batches(name, small, batch, seq, seed):
    """(model, no-decay test of a parameter name, batches: 4 input dicts), seeded."""
    import torch
    import transformers

    def read(path, drop):
        with open(path) as f:
            return {k: v for k, v in json.load(f).items() if k not in drop}

    torch.manual_seed(seed)
    if name == "bert":
        sizes = (dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, vocab_size=2000)
                 if small else dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072))
        cfg = transformers.BertConfig(**sizes, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                      attn_implementation="sdpa")
        model = transformers.BertForMaskedLM(cfg)
    elif name == "gpt2":
        fields = read(GPT2_CONFIG, ("architectures", "model_type", "task_specific_params"))
        if small:
            fields.update(n_embd=128, n_layer=2, n_head=2, vocab_size=2000)
        cfg = transformers.GPT2Config(**fields, attn_implementation="sdpa")
        cfg.resid_pdrop = cfg.embd_pdrop = cfg.attn_pdrop = 0.0
        model = transformers.GPT2LMHeadModel(cfg)
        # The loss transformers falls back to for GPT2LMHeadModel's unrecognised "LMHead" loss type,
        # set here since its warning_once is a graph break under torch.compile.
        model.loss_type = "ForCausalLM"
    else:
        fields = read(LLAMA_CONFIG, ("architectures", "model_type"))
        if small:
            fields.update(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          intermediate_size=256, vocab_size=2000)
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**fields, attn_implementation="sdpa"))
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(4):
        ids = torch.randint(1000 if name == "bert" and vocab > 2000 else 0, vocab, (batch, seq), generator=gen)
        if name == "bert":
            labels = torch.where(torch.rand(batch, seq, generator=gen) < 0.15, ids, torch.full_like(ids, -100))
            labels[0, 0] = ids[0, 0]
            batches.append(dict(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels))
        else:
            batches.append(dict(input_ids=ids, labels=ids, use_cache=False))
    # transformers' get_decay_parameter_names: no decay for biases and normalisation weights.
    return model, lambda n: n.endswith("bias") or "norm" in n.lower() or ".ln_" in n, batches


def lt_counters():
    """lazytrain's counters (0 for one not (yet) counted), plus the Python shim's."""
    from lazytrain.debug import metrics
    out = {}
    for name in LT_COUNTERS:
        try:
            out[name] = metrics.counter_value(name)
        except Exception:  # noqa: BLE001 (a counter this build does not know)
            out[name] = 0
        out[name] += _SHIM_COUNTS.get(name, 0)
    return out


_SHIM_COUNTS = {}  # lazytrain._C._counter_add's stand-in, where the build lacks it
_SHIMMED = [False]


def lt_execute_ns():
    from lazytrain.debug import metrics
    data = metrics.metric_data("ExecuteTime")
    return data[1] if data else 0


def setup_lazytrain(timers):
    """Imports the backend (shimming _C._counter_add where missing) and wraps the tensor import
    with a timer (timers["exchange_in"], seconds)."""
    from lazytrain import _C
    if not hasattr(_C, "_counter_add"):
        _C._counter_add = lambda name, value: _SHIM_COUNTS.__setitem__(name, _SHIM_COUNTS.get(name, 0) + value)
        _SHIMMED[0] = True
    import lazytrain.torch_backend  # noqa: F401 (registers backend="lazytrain")
    from lazytrain.torch_backend import _backend
    inner = getattr(_backend, "to_lazytrain", None)
    if inner is None:  # the backend changed its layout: exchange in reads 0
        return

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            timers["exchange_in"] += time.perf_counter() - t

    _backend.to_lazytrain = timed


def child(c):
    if c["backend"] == "lazydevice":
        return child_lazy_device(c)
    if c["backend"] == "native":
        return child_native(c)
    import torch
    import transformers
    from torch._dynamo.utils import counters

    torch.set_num_threads(c["threads"])
    backend = c["backend"]
    timers = {"exchange_in": 0.0}
    if backend == "lazytrain":
        setup_lazytrain(timers)
    model, no_decay, batches = model_and_batches(c["model"], c["small"], c["batch"], c["seq"], c["seed"])
    model.train()
    named = list(model.named_parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    opt = torch.optim.AdamW([{"params": [p for n, p in named if not no_decay(n)], "weight_decay": 0.01},
                             {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    bf16 = c["dtype"] == "bf16"

    def compiled(fullgraph):
        torch._dynamo.reset()
        return torch.compile(model, backend=backend, fullgraph=fullgraph, dynamic=False)

    fullgraph = None
    fn = model
    if backend != "eager":
        fullgraph = True
        fn = compiled(True)

    def step(i):
        """(loss, [forward, backward, clip + optimizer] seconds)."""
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = fn(**batches[i % len(batches)]).loss
        value = loss.item()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return value, [t1 - t0, t2 - t1, time.perf_counter() - t2]

    fullgraph_error = None
    t = time.perf_counter()
    try:
        losses = [step(0)[0]]
    except Exception as e:  # noqa: BLE001
        if fullgraph is None or isinstance(e, torch._dynamo.exc.BackendCompilerFailed):
            raise
        # A graph break under fullgraph=True (nothing has stepped yet): again with graph breaks allowed.
        fullgraph_error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        print(f"fullgraph=True failed ({fullgraph_error}); fullgraph=False", file=sys.stderr)
        opt.zero_grad(set_to_none=True)
        fullgraph, fn = False, compiled(False)
        t = time.perf_counter()
        losses = [step(0)[0]]
    first = time.perf_counter() - t
    for i in range(1, c["warmup"]):
        losses.append(step(i)[0])
    before = lt_counters() if backend == "lazytrain" else {}
    graphs_before = counters["stats"]["unique_graphs"]
    exec_before, timers["exchange_in"] = (lt_execute_ns() if backend == "lazytrain" else 0), 0.0
    times, parts = [], []
    for i in range(c["warmup"], c["warmup"] + c["steps"]):
        t = time.perf_counter()
        loss, part = step(i)
        times.append(time.perf_counter() - t)
        losses.append(loss)
        parts.append(part)
    median = statistics.median(times)
    r = dict(c, fullgraph=fullgraph, fullgraph_error=fullgraph_error, torch=torch.__version__,
             transformers=transformers.__version__, torch_threads=torch.get_num_threads(),
             params=sum(p.numel() for p in model.parameters()), param_bytes=param_bytes,
             tokens_per_s=c["batch"] * c["seq"] / median, step_median_s=median, step_min_s=min(times),
             first_step_s=first, compile_s=max(0.0, first - median), losses=losses,
             maxrss_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
             dynamo_graphs=counters["stats"]["unique_graphs"],
             recompiles_timed=counters["stats"]["unique_graphs"] - graphs_before,
             graph_breaks=sum(counters["graph_break"].values()),
             breakdown_s={k: statistics.median(p[j] for p in parts)
                          for j, k in enumerate(("forward", "backward", "clip_optimizer"))})
    if backend == "lazytrain":
        after = lt_counters()
        n = c["steps"]
        r["lt_counters"] = after
        r["lt_counter_shim"] = _SHIMMED[0]
        r["lt_per_step"] = {k: (after[k] - before[k]) / n for k in LT_COUNTERS}
        r["copy_bytes_per_step"] = r["lt_per_step"]["DynamoInputCopyBytes"]
        r["breakdown_s"]["lt_execute"] = (lt_execute_ns() - exec_before) * 1e-9 / n
        r["breakdown_s"]["exchange_in"] = timers["exchange_in"] / n
    return r


def adamw(model, no_decay):
    import torch
    named = list(model.named_parameters())
    return torch.optim.AdamW([{"params": [p for n, p in named if not no_decay(n)], "weight_decay": 0.01},
                              {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}],
                             lr=1e-4, betas=(0.9, 0.999), eps=1e-8)


def child_lazy_device(c):
    """issue 56: the same model and step on lazytrain's lazy device for torch tensors, as a PyTorch/XLA
    script runs it: model.to(xm.xla_device()), the batches moved before timing (as bench_bert_train makes
    them on its device), forward / backward / clip_grad_norm_ / xm.optimizer_step(AdamW) / zero_grad,
    xm.mark_step(); each step's loss is read after the next step's mark_step (one step late, as a torch_xla
    loop logs), so tracing step n+1 can overlap executing step n. A step's time is start to start."""
    import torch
    import transformers

    torch.set_num_threads(c["threads"])
    import lazytrain.core.xla_model as xm
    from lazytrain.debug import metrics
    from lazytrain.torch_backend import lazy_device  # noqa: F401 (enables the torch device)

    dev = xm.xla_device()
    bf16 = c["dtype"] == "bf16"
    if bf16:
        autocast_ok = _lazy_device_autocast()
        if autocast_ok is not True:
            raise RuntimeError(f"bf16: torch.autocast on the lazy device: {autocast_ok}")
    model, no_decay, batches = model_and_batches(c["model"], c["small"], c["batch"], c["seq"], c["seed"])
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    model.to(dev)
    model.train()
    opt = adamw(model, no_decay)
    if not c.get("mask_read"):
        # Eager and Inductor skip an all-ones attention_mask (transformers reads attention_mask.all() on the
        # host). On the lazy device transformers builds the mask instead, reading nothing
        # (lazy_device/_masking.py): extra work the peers do not do. These masks are all ones, so without them
        # every backend computes the same (--mask_read keeps them).
        for b in batches:
            if "attention_mask" in b and bool(b["attention_mask"].all()):
                del b["attention_mask"]
    batches = [{k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in b.items()} for b in batches]
    xm.mark_step(wait=True)
    counter = lambda name: metrics.counter_value(name) or 0  # noqa: E731
    execute_ns = lambda: (metrics.metric_data("ExecuteTime") or [0, 0])[1]  # noqa: E731

    def step(i):
        """(loss tensor, tracing seconds: start to xm.mark_step(), mark_step's seconds: cutting and
        launching the graph after waiting for the previous step's to finish)."""
        t0 = time.perf_counter()
        # torch.autocast asks the device module even when disabled.
        with torch.autocast(dev.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            loss = model(**batches[i % len(batches)]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        xm.optimizer_step(opt)
        opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        xm.mark_step()
        t2 = time.perf_counter()
        return loss, t1 - t0, t2 - t1

    total = c["warmup"] + c["steps"]
    starts, traces, marks, waits, losses = [], [], [], [], []
    pending = None
    compiles_warm = exec_before = None
    for i in range(total + 1):  # the last start only ends the last timed step
        starts.append(time.perf_counter())
        # ExecuteTime is added as a graph finishes: at both marks the previous step may still run, so
        # the window holds `steps` steps' execution (warmup - 1 .. total - 2).
        if i == c["warmup"]:
            compiles_warm, exec_before = counter("UncachedCompile"), execute_ns()
        if i == total:
            exec_after = execute_ns()
            break
        loss, trace, mark = step(i)
        traces.append(trace)
        marks.append(mark)
        t = time.perf_counter()
        if pending is not None:
            losses.append(pending.item())  # waits for the previous step's graph only
        waits.append(time.perf_counter() - t)
        pending = loss
    losses.append(pending.item())
    times = [b - a for a, b in zip(starts[c["warmup"]:], starts[c["warmup"] + 1:])]
    median = statistics.median(times)
    timed = slice(c["warmup"], total)
    exec_s = (exec_after - exec_before) * 1e-9 / c["steps"]
    return dict(c, torch=torch.__version__, transformers=transformers.__version__,
                torch_threads=torch.get_num_threads(), params=sum(p.numel() for p in model.parameters()),
                param_bytes=param_bytes, tokens_per_s=c["batch"] * c["seq"] / median, step_median_s=median,
                step_min_s=min(times), first_step_s=starts[1] - starts[0],
                compile_s=max(0.0, starts[1] - starts[0] - median), losses=losses,
                maxrss_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                lt_compiles=counter("UncachedCompile"), recompiles_timed=counter("UncachedCompile") - compiles_warm,
                trace_s=statistics.median(traces[timed]), mark_step_s=statistics.median(marks[timed]),
                wait_s=statistics.median(waits[timed]), execute_s=exec_s)


def _lazy_device_autocast():
    """True when torch.autocast works on the lazy device (a tiny linear in bf16), else why not."""
    import torch
    dev = torch.device("lazytrain", 0)
    try:
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            out = torch.nn.functional.linear(torch.ones(2, 2, device=dev), torch.ones(2, 2, device=dev))
        return True if out.dtype == torch.bfloat16 else f"a linear under autocast gave {out.dtype}"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"


def native_command(c):
    """lazytrain's native bench (bench_bert_train / bench_gpt2_train) for the same model and step:
    the C++ model, the same sizes, dropout off, sdpa attention, the MLM head on every token (as
    transformers' BertForMaskedLM), mark_step + loss.item() per step."""
    build = os.environ.get("LAZYTRAIN_BENCH_DIR", os.path.join(HERE, "..", "build", "bench"))
    cmd = [os.path.join(build, NATIVE_BIN[c["model"]]), "--batch_size", str(c["batch"]), "--seq_len", str(c["seq"]),
           "--warmup", str(c["warmup"]), "--steps", str(c["steps"]), "--seed", str(c["seed"]), "--no_roofline",
           "--attn_implementation", "sdpa"]
    if c["model"] == "bert":
        cmd += ["--model", "bert-tiny" if c["small"] else "bert-base", "--lm_head", "all"]
        over = "hidden_dropout_prob=0,attention_probs_dropout_prob=0" + (",vocab_size=2000" if c["small"] else "")
    elif c["model"] == "gpt2":
        over = "resid_pdrop=0,embd_pdrop=0,attn_pdrop=0" + (",n_embd=128,n_layer=2,n_head=2,vocab_size=2000"
                                                          if c["small"] else "")
    else:
        cmd += ["--model_type", "llama", "--config", LLAMA_CONFIG]
        cmd = [a for a in cmd if a not in ("--attn_implementation", "sdpa")]
        over = ("hidden_size=128,num_hidden_layers=2,num_attention_heads=4,num_key_value_heads=2,"
                "intermediate_size=256,vocab_size=2000") if c["small"] else ""
    if over:
        cmd += ["--config_overrides", over]
    return cmd + (["--bf16"] if c["dtype"] == "bf16" else [])


def child_native(c):
    cmd = native_command(c)
    if not os.path.exists(cmd[0]):
        raise RuntimeError(f"{cmd[0]} is missing (cmake --build build --target {os.path.basename(cmd[0])}; "
                           "or LAZYTRAIN_BENCH_DIR=<dir of the bench binaries>)")
    p = subprocess.run(cmd, capture_output=True, text=True)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    if p.returncode or not line:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    f = dict(kv.split("=", 1) for kv in line[-1].split()[1:])
    median = float(f["step_median_s"])
    return dict(c, command=" ".join(cmd), tokens_per_s=float(f["tokens_per_s"]), step_median_s=median,
                first_step_s=float(f["first_step_s"]), compile_s=max(0.0, float(f["first_step_s"]) - median),
                losses=[float(f["loss"])], maxrss_kb=int(f["vmhwm_kb"]), recompiles_timed=int(f["recompiles"]),
                execute_s=float(f["execute_share"]) * median)


# ---------------------------------------------------------------- parent: the runs and the table

def machine():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), "?")
    flags = set(next((ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), []))
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f in flags]
    return f"{model}, {os.cpu_count()} CPUs, ISA: {' '.join(isa) or 'none of avx2/avx512f/avx512_bf16/amx'}"


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_child(c, timeout):
    env = dict(os.environ, OMP_NUM_THREADS=str(c["threads"]), TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    for k in ("LAZYTRAIN_CACHE_DIR", "LAZYTRAIN_PROFILE", "LAZYTRAIN_PROFILE_STDERR"):
        env.pop(k, None)
    cpus = sorted(os.sched_getaffinity(0))
    pin = cpus[:c["threads"]] if c["threads"] < len(cpus) else None
    load = loadavg()
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(c)], env=env,
                           capture_output=True, text=True, timeout=timeout,
                           preexec_fn=(lambda: os.sched_setaffinity(0, pin)) if pin else None)
        out = p.stdout.strip().splitlines()
        if p.returncode == 0 and out and out[-1].startswith("{"):
            r = json.loads(out[-1])
        else:
            lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
            errors = [ln for ln in lines if "Error" in ln or "error" in ln]
            r = dict(c, error=f"rc {p.returncode}: {(errors or lines or ['no output'])[-1][:400]}", stderr=p.stderr[-4000:])
    except subprocess.TimeoutExpired:
        r = dict(c, error=f"timeout after {timeout} s")
    r.update(wall_s=time.perf_counter() - t, load_at_start=load, pinned_cpus=pin)
    return r


def fmt(x, spec, none="-"):
    return none if x is None else format(x, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def report(rows):
    by = {(r["model"], r["dtype"], r["threads"], r["backend"]): r for r in rows}
    get = lambda key, b, k: by.get((*key, b), {}).get(k)  # noqa: E731
    if any(r["backend"] in PART1 for r in rows if r["backend"] not in PEERS):
        report_compile(rows, by, get)
    if any(r["backend"] in ("lazydevice", "native") for r in rows):
        report_lazy_device(rows, by, get)
    for r in rows:
        if r.get("recompiles_timed"):
            print(f"\n{r['model']} {r['dtype']} {r['threads']} thr {r['backend']}: {r['recompiles_timed']} "
                  f"{'Dynamo graphs' if r['backend'] in PART1 else 'lazytrain graphs'} compiled during the timed "
                  "steps (recompiles: its tokens/s include them)")
        if r.get("error"):
            print(f"\n{r['model']} {r['dtype']} {r['threads']} thr {r['backend']}: FAILED {r['error']}")
        elif r.get("fullgraph_error"):
            print(f"\n{r['model']} {r['dtype']} {r['threads']} thr {r['backend']}: fullgraph=True failed "
                  f"({r['fullgraph_error']}); ran with fullgraph=False")
        if r.get("command"):
            print(f"\n{r['model']} {r['dtype']} {r['threads']} thr native: {r['command']}")


def report_lazy_device(rows, by, get):
    """issue 56's table: the lazy device against the better peer and against lazytrain's native step."""
    print("\n| model | dtype | thr | eager tok/s | inductor tok/s | lazy device tok/s | native tok/s | "
          "lazy / best peer (goal) | native / lazy step (goal <= 1.1) | step ms | tracing ms (to mark_step) | "
          "mark_step ms | tracing / step | execute ms | wait for loss n-1 ms | overlap | "
          "compile s lazy / native | loss e / lazy |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    ok = lambda v, good: "" if v is None else (" ok" if good(v) else " MISS")  # noqa: E731
    for key in dict.fromkeys((r["model"], r["dtype"], r["threads"]) for r in rows):
        r = by.get((*key, "lazydevice"), {})
        tok = {b: get(key, b, "tokens_per_s") for b in (*PEERS, "lazydevice", "native")}
        peers = [tok[b] for b in PEERS if tok[b]]
        speed = ratio(tok["lazydevice"], max(peers) if peers else None)
        native = ratio(tok["native"], tok["lazydevice"])
        goal = LAZY_GOAL[key[1]]
        step, trace, exe = r.get("step_median_s"), r.get("trace_s"), r.get("execute_s")
        # The share of the shorter of tracing and executing hidden behind the other (0: serial, 1: full).
        overlap = (None if None in (step, trace, exe) or not min(trace, exe) else
                   min(1.0, max(0.0, (trace + exe - step) / min(trace, exe))))
        ms = lambda v: fmt(v and v * 1e3, ".1f")  # noqa: E731
        cells = [*(fmt(tok[b], ".1f", by.get((*key, b), {}).get("error") and "failed" or "-")
                   for b in (*PEERS, "lazydevice", "native")),
                 f"{fmt(speed, '.2f')}x (>= {goal}x){ok(speed, lambda v: v >= goal)}",
                 f"{fmt(native, '.2f')}{ok(native, lambda v: v <= NATIVE_GOAL)}",
                 ms(step), ms(trace), ms(r.get("mark_step_s")), fmt(ratio(trace, step), ".2f"), ms(exe),
                 ms(r.get("wait_s")), fmt(overlap, ".2f"),
                 " / ".join(fmt(get(key, b, "compile_s"), ".1f") for b in ("lazydevice", "native")),
                 " / ".join(fmt((get(key, b, "losses") or [None])[-1], ".4f") for b in ("eager", "lazydevice"))]
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    print("\nlazy device: tracing = a step's start to xm.mark_step() (forward, backward, clip, optimizer, "
          "zero_grad recorded on the host); mark_step = cutting, hashing and launching the graph, after waiting "
          "for the previous step's graph (tracing + mark_step = start to mark_step returning); execute = the "
          "step's ExecuteTime; overlap = (tracing + execute - step) / min(tracing, execute): 1 when tracing "
          "is hidden behind execution. native: the C++ model's "
          "step (bench_bert_train / bench_gpt2_train: its own init, so its loss is not comparable; it reads "
          "loss.item() right after mark_step, no overlap).")


def report_compile(rows, by, get):
    print("\n| model | dtype | thr | eager tok/s | inductor tok/s | lazytrain tok/s | lt / best (goal) | "
          "compile s ind / lt | lt / ind (goal <= 0.20) | peak RSS MiB e / i / lt | Dynamo graphs, breaks i / lt | "
          "lt graphs, fallbacks | copied / param bytes (goal <= 1%) | loss e / i / lt after N |")
    print("|---|---|---:|---:|---:|---:|---|---|---|---|---|---|---|---|")
    misses = []
    for key in dict.fromkeys((r["model"], r["dtype"], r["threads"]) for r in rows):
        tok = {b: get(key, b, "tokens_per_s") for b in PART1}
        peers = [v for b, v in tok.items() if b != "lazytrain" and v]
        speed = ratio(tok["lazytrain"], max(peers) if peers else None)
        comp = ratio(get(key, "lazytrain", "compile_s"), get(key, "inductor", "compile_s"))
        pb = get(key, "lazytrain", "param_bytes")
        copied = ratio(get(key, "lazytrain", "copy_bytes_per_step"), pb)
        goal = SPEED_GOAL[key[1]]
        ok = lambda v, good: "" if v is None else (" ok" if good(v) else " MISS")  # noqa: E731
        cells = [
            *(fmt(tok[b], ".1f", by.get((*key, b), {}).get("error") and "failed" or "-") for b in PART1),
            f"{fmt(speed, '.2f')}x (>= {goal}x){ok(speed, lambda v: v >= goal)}",
            " / ".join(fmt(get(key, b, "compile_s"), ".1f") for b in ("inductor", "lazytrain")),
            f"{fmt(comp, '.2f')}{ok(comp, lambda v: v <= COMPILE_GOAL)}",
            " / ".join(fmt(ratio(get(key, b, "maxrss_kb"), 1024), ".0f") for b in PART1),
            " / ".join(f"{fmt(get(key, b, 'dynamo_graphs'), 'd')}, {fmt(get(key, b, 'graph_breaks'), 'd')}"
                       + ("" if get(key, b, "fullgraph") is not False else " (fullgraph=False)")
                       for b in ("inductor", "lazytrain")),
            f"{fmt((get(key, 'lazytrain', 'lt_counters') or {}).get('DynamoGraphs'), 'd')}, "
            f"{fmt((get(key, 'lazytrain', 'lt_counters') or {}).get('DynamoFallbackNodes'), 'd')}",
            f"{fmt(copied and copied * 100, '.2f')}%{ok(copied, lambda v: v <= COPY_GOAL)}" if copied is not None else "-",
            " / ".join(fmt((get(key, b, "losses") or [None])[-1], ".4f") for b in PART1),
        ]
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
        if "MISS" in "".join(cells) and (*key, "lazytrain") in by:
            misses.append(key)
    if any(r.get("lt_counter_shim") for r in rows):
        print("\nnote: this lazytrain build has no _C._counter_add: the backend's counters (DynamoGraphs, "
              "DynamoFallbackNodes, DynamoInputCopy*) were counted by a Python stand-in; counters only the C++ "
              "counts (DlpackInputAliases, DlpackOutputAliases) read 0")
    if misses:
        print("\nRows that miss a goal: the step's median parts in ms (lazytrain's forward + backward include "
              "its graphs' ExecuteTime and the import of tensors, 'exchange in'; 'other' = forward + backward "
              "- execute - exchange in: Dynamo/AOTAutograd wrappers, output export, waiting)")
        for key in misses:
            for b in PART1:
                r = by.get((*key, b))
                if not r or r.get("error"):
                    continue
                d = {k: v * 1e3 for k, v in r["breakdown_s"].items()}
                line = (f"  {key[0]} {key[1]} {key[2]} thr {b:9s}: step {r['step_median_s'] * 1e3:8.1f}  forward "
                        f"{d['forward']:8.1f}  backward {d['backward']:8.1f}  clip+optimizer {d['clip_optimizer']:7.1f}")
                if b == "lazytrain":
                    other = d["forward"] + d["backward"] - d["lt_execute"] - d["exchange_in"]
                    per = r["lt_per_step"]
                    line += (f"  | execute {d['lt_execute']:8.1f}  exchange in {d['exchange_in']:6.1f}  other {other:7.1f}"
                             f"  | per step: {per['DynamoInputCopies']:.0f} copies "
                             f"({per['DynamoInputCopyBytes'] / 2**20:.1f} MiB), {per['DlpackInputAliases']:.0f} "
                             f"in / {per['DlpackOutputAliases']:.0f} out aliased")
                print(line)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--models", default=",".join(MODELS), help="of bert, gpt2, llama")
    p.add_argument("--dtypes", default="f32,bf16", help="f32, bf16 (autocast)")
    p.add_argument("--threads", default="1,2", help="thread counts, each a row")
    p.add_argument("--backends", default=",".join(BACKENDS), help="of eager, inductor, lazytrain (torch.compile), lazydevice (issue 56), native (bench_bert_train / bench_gpt2_train)")
    p.add_argument("--batch", type=int, default=4, help="sequences per step")
    p.add_argument("--seq", type=int, default=128, help="tokens per sequence")
    p.add_argument("--warmup", type=int, default=0, help="warm-up steps, the first compiles (default 3; --small 2)")
    p.add_argument("--steps", type=int, default=0, help="timed steps (default 10; --small 3)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--mask_read", action="store_true",
                   help="lazydevice: keep BERT's all-ones attention_mask (the lazy device then builds the additive mask "
                        "that eager and Inductor skip after reading it on the host)")
    p.add_argument("--small", action="store_true", help="tiny configs (hidden 128, 2 layers, vocab 2000): a smoke test")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per configuration")
    p.add_argument("--json", help="write every row (and the machine) to this file")
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return
    a.warmup = a.warmup or (2 if a.small else 3)
    a.steps = a.steps or (3 if a.small else 10)
    lists = {k: getattr(a, k).split(",") for k in ("models", "dtypes", "backends")}
    for k, allowed in (("models", MODELS), ("dtypes", ("f32", "bf16")), ("backends", BACKENDS)):
        if not set(lists[k]) <= set(allowed):
            p.error(f"--{k}: of {', '.join(allowed)}")
    threads = [int(t) for t in a.threads.split(",")]

    import torch
    import transformers
    start_load = loadavg()
    print(f"torch_compile_bench: machine {machine()}")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, python {sys.version.split()[0]}")
    print(f"{'small (smoke-test) configs' if a.small else 'bert-base, GPT-2 124M, SmolLM2-135M-shaped Llama'}, "
          f"batch {a.batch} x seq {a.seq}, {a.warmup} warm-up + {a.steps} timed steps (median), seed {a.seed}, dropout off")
    print(f"threads: OMP_NUM_THREADS=n, torch.set_num_threads(n), pinned to the first n CPUs; GOMP_SPINCOUNT="
          f"{os.environ.get('GOMP_SPINCOUNT', '(unset)')} OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
    print(f"load average before: {start_load}", flush=True)
    rows = []
    for model in lists["models"]:
        for dtype in lists["dtypes"]:
            for n in threads:
                for backend in lists["backends"]:
                    c = dict(model=model, dtype=dtype, threads=n, backend=backend, batch=a.batch, seq=a.seq,
                             warmup=a.warmup, steps=a.steps, seed=a.seed, small=a.small, mask_read=a.mask_read)
                    r = run_child(c, a.timeout)
                    rows.append(r)
                    print(f"  {model} {dtype} {n} thr {backend:9s}: "
                          + (f"FAILED {r['error']}" if r.get("error") else
                             f"{r['tokens_per_s']:.1f} tok/s, compile {r['compile_s']:.1f} s, "
                             f"RSS {r['maxrss_kb'] / 1024:.0f} MiB, loss {r['losses'][-1]:.4f}")
                          + f" ({r['wall_s']:.0f} s, load {r['load_at_start']})", file=sys.stderr, flush=True)
    report(rows)
    print(f"\nload average before: {start_load}, after: {loadavg()}")
    print(f"goals: lazytrain >= {SPEED_GOAL['f32']}x (f32) / {SPEED_GOAL['bf16']}x (bf16) the better of eager and "
          f"Inductor; compile <= {COMPILE_GOAL:.2f} x Inductor's; copies <= {COPY_GOAL:.0%} of the parameters' bytes")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine(), "load_before": start_load, "load_after": loadavg(),
                       "args": vars(a), "rows": rows}, f, indent=1)
        print(f"rows: {a.json}")


if __name__ == "__main__":
    main()
