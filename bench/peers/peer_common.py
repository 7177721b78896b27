"""What every peer of bench/peers/ shares with lazytrain's bench_bert_train and bench_gpt2_train.

The models' sizes, batch sizes and sequence lengths, the random batches (the same distributions:
BERT tokens in [1000, vocab) with 15% of positions labelled and position 0 always labelled, no
padding; GPT-2 tokens in [0, vocab), labels = input_ids; the very batches, from a port of
std::mt19937_64 and libstdc++'s distributions), the static capacity lazytrain pads the
labelled rows to (src/data/labelled_positions.cpp), the training FLOPs per token that MFU counts
(bench_bert_train.cpp, gpt2_train_bench.cpp), the command line and the timing loop that prints the
RESULT line bench/run_all.sh parses.

Imports numpy only, so that each framework's script pulls in its own framework alone.
"""
import argparse
import json
import math
import os
import resource
import statistics
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2_CONFIG = os.path.join(HERE, "..", "..", "..", "shared", "data", "gpt2", "config.json")

# Turc et al. 2019 (tiny, mini), bert-base-uncased, bert-large-uncased; bench_bert_train's --model.
BERT_SIZES = {
    "bert-tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
    "bert-mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "bert-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}
MODELS = sorted(BERT_SIZES) + ["gpt2"]
MASK_PROBABILITY = 0.15  # BERT's masking; bench_bert_train's kMaskProbability
IGNORE_INDEX = -100


def bert_config(model):
    """bert-base-uncased's config.json fields (vocab 30522, 512 positions, 2 token types,
    dropout 0.1, GELU, LayerNorm eps 1e-12) with the sizes of `model`."""
    return dict(vocab_size=30522, max_position_embeddings=512, type_vocab_size=2, hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1, layer_norm_eps=1e-12, initializer_range=0.02,
                **BERT_SIZES[model])


def gpt2_config(path=GPT2_CONFIG):
    """GPT-2 124M's config.json (../shared/data/gpt2/config.json), as bench_gpt2_train reads it."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise SystemExit(f"--config: cannot read GPT-2's config.json at '{path}' ({e.strerror})") from None


def bert_train_flops_per_token(c, seq, head_rows):
    """bench_bert_train's train_flops_per_token: 3 x the forward's matmul FLOPs per token, per
    layer 8H² + 4HI + 4SH, the MLM head (2H² + 2HV) on `head_rows` of the tokens."""
    h, i, n, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    return 3 * (n * (8 * h * h + 4 * h * i + 4 * seq * h) + head_rows * (2 * h * h + 2 * h * v))


def gpt2_train_flops_per_token(c, seq):
    """bench_gpt2_train's: 3 x (per layer 8E² + 4EI + 4SE, plus the tied lm_head's 2EV)."""
    e, n, v = c["n_embd"], c["n_layer"], c["vocab_size"]
    i = c.get("n_inner") or 4 * e
    return 3 * (n * (8 * e * e + 4 * e * i + 4 * seq * e) + 2 * e * v)


def labelled_capacity(tokens, labelled, p=MASK_PROBABILITY):
    """src/data/labelled_positions.cpp: the smallest multiple of ceil(tokens / 64) that holds
    `labelled` and the expected count plus six standard deviations; at most `tokens`."""
    need = max(labelled, math.ceil(tokens * p + 6 * math.sqrt(tokens * p * (1 - p))))
    step = -(-tokens // 64)
    return min(tokens, max(1, -(-need // step)) * step)


class Mt19937_64:
    """std::mt19937_64 (Matsumoto and Nishimura's 64-bit Mersenne Twister, the parameters of
    C++11 [rand.predef]), so that the peers draw the very batches bench_bert_train and
    bench_gpt2_train draw from std::mt19937_64(seed)."""

    def __init__(self, seed):
        self.mt = [seed & _M64]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & _M64)
        self.index = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            mt[i] = mt[(i + 156) % 312] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
        self.index = 0

    def __call__(self):
        if self.index >= 312:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & _M64

    def uniform_int(self, low, high):
        """std::uniform_int_distribution<int64_t>(low, high) as libstdc++ draws it from a 64-bit
        engine: Lemire's multiply-and-reject with a 128-bit product."""
        span = high - low + 1
        product = self() * span
        if product & _M64 < span:
            threshold = (-span & _M64) % span
            while product & _M64 < threshold:
                product = self() * span
        return low + (product >> 64)

    def bernoulli(self, p):
        """std::bernoulli_distribution(p): generate_canonical<double, 53> < p, one 64-bit draw."""
        return float(self()) / 18446744073709551616.0 < p


_M64 = (1 << 64) - 1


def bert_batches(seed, batch, seq, vocab, count=4):
    """`count` masked-LM batches, the very ones bench_bert_train draws (its random_batch from
    std::mt19937_64(seed)): (input_ids, labels), int64 [batch, seq] each; attention_mask is all
    ones (no padding)."""
    rng = Mt19937_64(seed)
    low = 1000 if vocab > 2000 else 0
    out = []
    for _ in range(count):
        ids = np.empty(batch * seq, np.int64)
        labels = np.full(batch * seq, IGNORE_INDEX, np.int64)
        for i in range(batch * seq):  # token, then whether it is labelled, as random_batch
            ids[i] = rng.uniform_int(low, vocab - 1)
            if rng.bernoulli(MASK_PROBABILITY):
                labels[i] = ids[i]
        labels[0] = ids[0]
        out.append((ids.reshape(batch, seq), labels.reshape(batch, seq)))
    return out


def labelled_rows(labels):
    """(positions, labels) of a [batch, seq] label array: the flat indices of the labelled
    tokens and their labels, padded with position 0 / label -100 to labelled_capacity, as
    lazytrain's MaskedLMModel::forward_labelled takes them (a static shape for a compiler)."""
    flat = labels.reshape(-1)
    pos = np.nonzero(flat != IGNORE_INDEX)[0]
    cap = labelled_capacity(flat.size, pos.size)
    positions = np.zeros(cap, np.int64)
    positions[: pos.size] = pos
    lab = np.full(cap, IGNORE_INDEX, np.int64)
    lab[: pos.size] = flat[pos]
    return positions, lab


def gpt2_batches(seed, batch, seq, vocab, count=4):
    """The batches bench_gpt2_train draws from std::mt19937_64(seed): tokens in [0, vocab), int64
    [batch, seq]; labels = input_ids (shifted in the loss)."""
    rng = Mt19937_64(seed)
    return [np.array([rng.uniform_int(0, vocab - 1) for _ in range(batch * seq)], np.int64).reshape(batch, seq)
            for _ in range(count)]


def parse_args(description, extra=None):
    """The peers' command line: bench/torch_bert_bench.py's flags (--model, --dtype, --threads,
    --warmup, --steps, --batch_size, --seq_len, --seed) plus --config for GPT-2."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", choices=MODELS, default="bert-tiny")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                   help="bf16: matmuls in bfloat16 (autocast), LayerNorm, softmax and the loss in f32, f32 weights and AdamW state")
    p.add_argument("--batch_size", type=int, default=0, help="0: 8 for bert-tiny/mini, 4 for bert-base/large and gpt2")
    p.add_argument("--seq_len", type=int, default=0, help="0: 128 for BERT, 64 for gpt2")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps; the first compiles")
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--config", default=GPT2_CONFIG, help="GPT-2's config.json (--model gpt2)")
    if extra:
        extra(p)
    a = p.parse_args()
    if a.warmup < 1 or a.steps < 1:
        p.error("--warmup and --steps must be at least 1")
    if a.threads < 1:
        p.error(f"--threads must be at least 1, got {a.threads}")
    a.batch_size = a.batch_size or (8 if a.model in ("bert-tiny", "bert-mini") else 4)
    a.seq_len = a.seq_len or (64 if a.model == "gpt2" else 128)
    if a.model == "gpt2":
        a.cfg = gpt2_config(a.config)
        if a.seq_len > a.cfg["n_positions"]:
            p.error(f"--seq_len {a.seq_len} is larger than n_positions {a.cfg['n_positions']}")
    else:
        a.cfg = bert_config(a.model)
        if a.seq_len > a.cfg["max_position_embeddings"]:
            p.error(f"--seq_len {a.seq_len} is larger than max_position_embeddings 512")
    return a


def make_batches(a):
    """The run's batches and its training FLOPs per token: BERT's (ids, labels) with the head's
    FLOPs counted on the labelled rows (bench_bert_train's --lm_head labelled), or GPT-2's ids."""
    if a.model == "gpt2":
        return gpt2_batches(a.seed, a.batch_size, a.seq_len, a.cfg["vocab_size"]), gpt2_train_flops_per_token(a.cfg, a.seq_len)
    batches = bert_batches(a.seed, a.batch_size, a.seq_len, a.cfg["vocab_size"])
    share = np.mean([(labels != IGNORE_INDEX).sum() for _, labels in batches]) / (a.batch_size * a.seq_len)
    return batches, bert_train_flops_per_token(a.cfg, a.seq_len, share)


def proc_status_kb(key):
    """A field of /proc/self/status in kB (VmHWM: the peak resident set); -1 if absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def loaded_malloc():
    """The malloc the process runs on: jemalloc or tcmalloc when preloaded, else glibc."""
    with open("/proc/self/maps") as f:
        maps = f.read()
    for name in ("jemalloc", "tcmalloc"):
        if name in maps:
            return name
    return "glibc"


def cpu_seconds():
    """User + system CPU time of the whole process, every thread."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def time_steps(a, peer, step, tokens_per_step, flops_per_token, n_params, compile_s=None, extra=""):
    """Runs a.warmup untimed and a.steps timed calls of step(i) (each returns the loss as a Python
    float, so the step has finished), then prints a summary and the line
      RESULT bench=peer peer=PEER model=... tokens_per_s=... tokens_per_s_best=... step_median_s=...
    with the keys of lazytrain's bench_support.h that bench/run_all.sh reads. compile_s: the
    peer's own compile time when it measured one; otherwise the first step's excess over the
    median timed step (torch.compile and PyTorch/XLA compile inside the first step). extra: more
    ` key=value` text for the RESULT line, or a function that returns it after the steps ran."""
    t0 = time.perf_counter()
    first_loss = step(0)
    first_step_s = time.perf_counter() - t0
    loss = first_loss
    for i in range(1, a.warmup):
        loss = step(i)
    times = []
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    for i in range(a.steps):
        t = time.perf_counter()
        loss = step(a.warmup + i)
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    cpu_per_step = (cpu_seconds() - cpu0) / a.steps
    median = statistics.median(times)
    if compile_s is None:
        compile_s = max(0.0, first_step_s - median)
    tok_s, tok_s_best = tokens_per_step * a.steps / total, tokens_per_step / min(times)
    hwm = proc_status_kb("VmHWM")
    vocab = a.cfg["vocab_size"]
    if callable(extra):
        extra = extra()
    print(f"{peer}: {a.model} batch {a.batch_size} x seq {a.seq_len}, {a.dtype}, {a.threads} thread(s), {n_params} parameters, "
          f"training FLOPs/token (matmuls) {flops_per_token:.4g}")
    print(f"first step {first_step_s:.3f} s (compile {compile_s:.3f} s), loss {first_loss:.4f} (ln(vocab) = {math.log(vocab):.4f}); "
          f"timed: {a.steps} steps in {total:.3f} s: {tok_s:.1f} tokens/s (best step {tok_s_best:.1f}), step median {median:.3f} s "
          f"(min {min(times):.3f}, max {max(times):.3f}), loss {loss:.4f}, CPU {cpu_per_step:.3f} s/step, peak RSS {hwm / 1024:.1f} MiB, "
          f"malloc {loaded_malloc()}")
    print(f"RESULT bench=peer peer={peer} model={a.model} dtype={a.dtype} batch={a.batch_size} seq={a.seq_len} threads={a.threads} "
          f"steps={a.steps} tokens_per_s={tok_s:.2f} tokens_per_s_best={tok_s_best:.2f} step_median_s={median:.4f} "
          f"first_step_s={first_step_s:.3f} compile_s={compile_s:.3f} flops_per_token={flops_per_token:.6g} "
          f"model_gflops={tok_s * flops_per_token * 1e-9:.3f} model_gflops_best={tok_s_best * flops_per_token * 1e-9:.3f} "
          f"cpu_s_per_step={cpu_per_step:.4f} vmhwm_kb={hwm} parameters={n_params} malloc={loaded_malloc()} "
          f"loss_first={first_loss:.4f} loss={loss:.4f}{extra}", flush=True)
