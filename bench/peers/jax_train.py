"""JAX peer of bench_bert_train / bench_gpt2_train: the whole training step under jax.jit (XLA:CPU).

BERT (Hugging Face's BertForMaskedLM without pooler: embeddings + LayerNorm, post-LN encoder
layers with exact-erf GELU, the MLM head's transform and the decoder tied to the word embeddings
plus its bias) and GPT-2 (GPT2LMHeadModel: pre-LN blocks, gelu_new, the lm_head tied to wte),
written in plain JAX with the parameter counts, shapes and matmul FLOPs of transformers' models
(both printed); Hugging Face's initialisation (normal(0, 0.02), GPT-2's residual projections
scaled by 1/sqrt(2 n_layer)); dropout as their configs say (train mode). The step is one jitted
function: forward (BERT: the MLM head on the labelled rows padded to lazytrain's static capacity,
padding rows ignored by the loss, as bench_bert_train --lm_head labelled; GPT-2: labels =
input_ids shifted), backward (jax.value_and_grad), clip by global norm 1.0 and AdamW (optax;
lr 1e-4, weight decay 0.01 except biases and LayerNorm parameters), with the parameters and the
optimizer state donated (donate_argnums), then the loss read back.
--dtype bf16: lazytrain's autocast policy, matmul operands (and outputs) in bfloat16, LayerNorm,
softmax and the loss in f32, f32 parameters and AdamW state.
--threads 1 runs XLA:CPU single-threaded (XLA_FLAGS --xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1, set before jax is imported); otherwise XLA sizes its thread pool to
the CPUs the process may use (bench/run_all.sh pins it with taskset). The compile time is jit's
own (lower + compile, ahead of the first step).

  ~/.cache/lazytrain/venv-peers/bin/python bench/peers/jax_train.py --model bert-base --dtype bf16
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

ARGS = peer_common.parse_args(__doc__.splitlines()[0])
if ARGS.threads == 1:  # before jax starts its CPU client
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

BF16 = ARGS.dtype == "bf16"


def normal(key, shape, std=0.02):
    return std * jax.random.normal(key, shape, jnp.float32)


def dense_params(key, n_in, n_out, std=0.02):
    return {"kernel": normal(key, (n_in, n_out), std), "bias": jnp.zeros((n_out,), jnp.float32)}


def norm_params(n):
    return {"scale": jnp.ones((n,), jnp.float32), "bias": jnp.zeros((n,), jnp.float32)}


def matmul(x, w):
    """x @ w; under --dtype bf16 both operands and the result in bfloat16 (autocast's matmuls)."""
    if BF16:
        return jnp.matmul(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16))
    return jnp.matmul(x, w)


def dense(p, x):
    y = matmul(x, p["kernel"])
    return y + p["bias"].astype(y.dtype)


def layer_norm(p, x, eps):
    """In f32 whatever the input's dtype (autocast keeps LayerNorm in f32)."""
    x = x.astype(jnp.float32)
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["scale"] + p["bias"]


def dropout(key, x, rate):
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0).astype(x.dtype)


def attention(q, k, v, heads, key, rate, causal):
    """Scaled dot-product attention over [batch, seq, hidden] projections: scores and P·V are
    the 4SH FLOPs per token that the FLOP count has; softmax in f32; dropout on the probabilities."""
    b, s, h = q.shape
    d = h // heads
    split = lambda t: t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scores = matmul(q, k.transpose(0, 1, 3, 2)).astype(jnp.float32) / math.sqrt(d)
    if causal:
        scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, jnp.finfo(jnp.float32).min)
    probs = dropout(key, jax.nn.softmax(scores, axis=-1), rate)
    out = matmul(probs, v)
    return out.transpose(0, 2, 1, 3).reshape(b, s, h)


def cross_entropy(logits, labels):
    """Mean over the labels that are not -100 (torch's ignore_index), in f32."""
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    valid = labels != peer_common.IGNORE_INDEX
    picked = jnp.take_along_axis(logp, jnp.where(valid, labels, 0)[:, None], axis=-1)[:, 0]
    return -(picked * valid).sum() / valid.sum()


# ---- BERT ----

def bert_init(key, c):
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    keys = iter(jax.random.split(key, 4 + 6 * c["num_hidden_layers"]))
    layers = [{"query": dense_params(next(keys), h, h), "key": dense_params(next(keys), h, h),
               "value": dense_params(next(keys), h, h), "attention_output": dense_params(next(keys), h, h),
               "attention_norm": norm_params(h), "intermediate": dense_params(next(keys), h, i),
               "output": dense_params(next(keys), i, h), "output_norm": norm_params(h)}
              for _ in range(c["num_hidden_layers"])]
    return {"word_embeddings": normal(next(keys), (v, h)),
            "position_embeddings": normal(next(keys), (c["max_position_embeddings"], h)),
            "token_type_embeddings": normal(next(keys), (c["type_vocab_size"], h)),
            "embeddings_norm": norm_params(h), "layers": layers,
            "transform": dense_params(next(keys), h, h), "transform_norm": norm_params(h),
            "decoder_bias": jnp.zeros((v,), jnp.float32)}


def bert_loss(params, batch, key, c):
    ids, positions, labels = batch
    eps, rate, attn_rate = c["layer_norm_eps"], c["hidden_dropout_prob"], c["attention_probs_dropout_prob"]
    keys = iter(jax.random.split(key, 1 + 3 * c["num_hidden_layers"]))
    s = ids.shape[1]
    x = params["word_embeddings"][ids] + params["position_embeddings"][:s] + params["token_type_embeddings"][0]
    x = dropout(next(keys), layer_norm(params["embeddings_norm"], x, eps), rate)
    for p in params["layers"]:
        a = attention(dense(p["query"], x), dense(p["key"], x), dense(p["value"], x),
                      c["num_attention_heads"], next(keys), attn_rate, causal=False)
        x = layer_norm(p["attention_norm"], x + dropout(next(keys), dense(p["attention_output"], a), rate), eps)
        f = dense(p["output"], jax.nn.gelu(dense(p["intermediate"], x), approximate=False))
        x = layer_norm(p["output_norm"], x + dropout(next(keys), f, rate), eps)
    rows = x.reshape(-1, x.shape[-1])[positions]  # the labelled rows, padded to the static capacity
    t = layer_norm(params["transform_norm"], jax.nn.gelu(dense(params["transform"], rows), approximate=False), eps)
    logits = matmul(t, params["word_embeddings"].T)
    logits = logits + params["decoder_bias"].astype(logits.dtype)
    return cross_entropy(logits, labels)


# ---- GPT-2 ----

def gpt2_init(key, c):
    e, v, n = c["n_embd"], c["vocab_size"], c["n_layer"]
    inner = c.get("n_inner") or 4 * e
    proj_std = c["initializer_range"] / math.sqrt(2 * n)  # GPT2PreTrainedModel._init_weights
    keys = iter(jax.random.split(key, 2 + 4 * n))
    layers = [{"ln_1": norm_params(e), "c_attn": dense_params(next(keys), e, 3 * e),
               "attn_c_proj": dense_params(next(keys), e, e, proj_std), "ln_2": norm_params(e),
               "c_fc": dense_params(next(keys), e, inner), "mlp_c_proj": dense_params(next(keys), inner, e, proj_std)}
              for _ in range(n)]
    return {"wte": normal(next(keys), (v, e)), "wpe": normal(next(keys), (c["n_positions"], e)),
            "layers": layers, "ln_f": norm_params(e)}


def gpt2_loss(params, batch, key, c):
    (ids,) = batch
    eps = c["layer_norm_epsilon"]
    keys = iter(jax.random.split(key, 1 + 3 * c["n_layer"]))
    s = ids.shape[1]
    x = dropout(next(keys), params["wte"][ids] + params["wpe"][:s], c["embd_pdrop"])
    for p in params["layers"]:
        q, k, v = jnp.split(dense(p["c_attn"], layer_norm(p["ln_1"], x, eps)), 3, axis=-1)
        a = attention(q, k, v, c["n_head"], next(keys), c["attn_pdrop"], causal=True)
        x = x + dropout(next(keys), dense(p["attn_c_proj"], a), c["resid_pdrop"])
        f = dense(p["mlp_c_proj"], jax.nn.gelu(dense(p["c_fc"], layer_norm(p["ln_2"], x, eps)), approximate=True))
        x = x + dropout(next(keys), f, c["resid_pdrop"])
    logits = matmul(layer_norm(params["ln_f"], x, eps), params["wte"].T)
    # Next-token loss: position t predicts token t + 1 (labels shifted left, the last position has none).
    return cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def decay_mask(params):
    """The Trainer's groups: weight decay on matmul kernels and embeddings, not on biases and
    LayerNorm parameters."""
    def decays(path, _):
        names = [getattr(k, "key", "") for k in path]
        return not (names[-1] in ("bias", "decoder_bias") or any("norm" in n or n.startswith("ln_") for n in names))
    return jax.tree_util.tree_map_with_path(decays, params)


def main():
    a = ARGS
    c = a.cfg
    batches, flops = peer_common.make_batches(a)
    init, loss_fn = (gpt2_init, gpt2_loss) if a.model == "gpt2" else (bert_init, bert_loss)
    if a.model == "gpt2":
        inputs = [(jnp.asarray(ids),) for ids in batches]
    else:
        inputs = [(jnp.asarray(ids), *map(jnp.asarray, peer_common.labelled_rows(labels))) for ids, labels in batches]
    key = jax.random.PRNGKey(a.seed)
    params = init(key, c)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    opt = optax.chain(optax.clip_by_global_norm(1.0),
                      optax.adamw(1e-4, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01, mask=decay_mask(params)))
    opt_state = opt.init(params)
    dropout_key = jax.random.fold_in(key, 1)

    def train_step(params, opt_state, batch, step):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch, jax.random.fold_in(dropout_key, step), c)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    t0 = time.perf_counter()
    compiled = jax.jit(train_step, donate_argnums=(0, 1)).lower(params, opt_state, inputs[0], jnp.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    state = {"params": params, "opt_state": opt_state}
    del params, opt_state  # donated to the first step

    def step(i):
        state["params"], state["opt_state"], loss = compiled(state["params"], state["opt_state"], inputs[i % len(inputs)], jnp.int32(i))
        return float(loss)

    peer_common.time_steps(a, "jax", step, a.batch_size * a.seq_len, flops, n_params, compile_s=compile_s,
                           extra=f" jax={jax.__version__} xla_threads={'1' if a.threads == 1 else 'all-allowed'}")


if __name__ == "__main__":
    main()
