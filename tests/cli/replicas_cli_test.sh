#!/usr/bin/env bash
# run_mlm on data-parallel replicas (CTest cli.replicas):
#   --num_cores 2 (threads) and mpirun -np 2 (processes, TCP over loopback)
#   train the same model bit for bit; their loss is close to one replica's at
#   the same global batch; the master alone writes checkpoints and outputs; a
#   checkpoint resumes on as many replicas and is refused on another count;
#   --fsdp full_shard (one SPMD program, every parameter split) trains one
#   replica's model and resumes on another mesh;
#   killing one MPI rank ends the job non-zero within a minute, naming it; bad
#   flags get one error.
# Usage: replicas_cli_test.sh LAZYTRAIN_BINARY DATA_DIR
set -uo pipefail
bin="$1"
data="$2"
tmp="$(mktemp -d)"
# The kill test's job runs until killed: never outlive the test (ctest would wait for it).
trap 'pkill -9 -f "output_dir $tmp/killed" 2>/dev/null; rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo -np 2)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
common=(run_mlm --model_type bert --config_name "$data/bert-base-uncased/config.json"
        --config_overrides "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=64"
        --tokenizer_name "$data/bert-base-uncased/vocab.txt" --train_file "$data/wikitext-2/valid.txt"
        --validation_file "$data/wikitext-2/test.txt" --max_seq_length 32 --max_train_samples 256 --max_eval_samples 61
        --per_device_eval_batch_size 8 --learning_rate 1e-3 --seed 7 --logging_steps 2 --disable_tqdm --do_train --do_eval)
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d$2)" "$1"; }

# 1. Two replicas in one process, two processes, one replica at the same global batch.
"$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --max_steps 6 --save_steps 3 --output_dir "$tmp/threads" > "$tmp/threads.log" 2>&1 \
  || fail "--num_cores 2: $(tail -3 "$tmp/threads.log")"
timeout 300 "${mpi[@]}" "$bin" "${common[@]}" --per_device_train_batch_size 4 --max_steps 6 --save_steps 3 --output_dir "$tmp/processes" \
  > "$tmp/processes.log" 2>&1 || fail "mpirun -np 2: $(tail -3 "$tmp/processes.log")"
"$bin" "${common[@]}" --per_device_train_batch_size 8 --max_steps 6 --save_steps 3 --output_dir "$tmp/one" > "$tmp/one.log" 2>&1 \
  || fail "one replica: $(tail -3 "$tmp/one.log")"
cmp -s "$tmp/threads/model.safetensors" "$tmp/processes/model.safetensors" \
  || fail "--num_cores 2 and mpirun -np 2 trained different models"
for run in threads processes; do
  [ -d "$tmp/$run/checkpoint-3" ] && [ -d "$tmp/$run/checkpoint-6" ] || fail "$run: checkpoints 3 and 6 missing"
  [ "$(grep -c '^\*\*\*\*\* train metrics' "$tmp/$run.log")" = 1 ] || fail "$run: the metrics must be printed once (by the master)"
  [ "$(grep -c '"loss"' "$tmp/$run.log")" = 3 ] || fail "$run: 3 loss lines expected (steps 2, 4, 6) from the master alone"
  [ "$(json "$tmp/$run/checkpoint-3/data_state.json" '["world_size"]')" = 2 ] || fail "$run: data_state.json must record world_size 2"
  [ "$(json "$tmp/$run/eval_results.json" '["eval_samples"]')" = 61 ] || fail "$run: every evaluation example counted once"
done
# The global batch is the same 8 examples a step: the losses are close (the masks differ).
/usr/bin/python3 - "$tmp/threads/train_results.json" "$tmp/one/train_results.json" <<'PY' || fail "the 2-replica loss is not close to one replica's"
import json, sys
a, b = (json.load(open(p))["train_loss"] for p in sys.argv[1:3])
print(f"train_loss: 2 replicas x 4 = {a:.4f}, 1 replica x 8 = {b:.4f}")
sys.exit(0 if abs(a - b) / b < 0.02 else 1)
PY

# 1a. The replicas' evaluation is one replica's (batch k to replica k mod 2: the same
#     batches and masks; only the order of the final sums differs).
evaluate=(run_mlm --model_name_or_path "$tmp/one" --validation_file "$data/wikitext-2/test.txt" --max_seq_length 32
          --max_eval_samples 61 --per_device_eval_batch_size 8 --seed 7 --do_eval --disable_tqdm)
"$bin" "${evaluate[@]}" --output_dir "$tmp/eval1" > "$tmp/eval1.log" 2>&1 || fail "evaluate on 1: $(tail -3 "$tmp/eval1.log")"
"$bin" "${evaluate[@]}" --num_cores 2 --output_dir "$tmp/eval2" > "$tmp/eval2.log" 2>&1 || fail "evaluate on 2: $(tail -3 "$tmp/eval2.log")"
/usr/bin/python3 - "$tmp/eval1/eval_results.json" "$tmp/eval2/eval_results.json" <<'PY' || fail "2 replicas must evaluate as one does"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(f"eval_loss: 1 replica {a['eval_loss']:.9f}, 2 replicas {b['eval_loss']:.9f}; accuracy {a['eval_accuracy']:.6f} / {b['eval_accuracy']:.6f}")
sys.exit(0 if abs(a["eval_loss"] - b["eval_loss"]) < 1e-6 * a["eval_loss"] and a["eval_accuracy"] == b["eval_accuracy"]
         and a["eval_samples"] == b["eval_samples"] == 61 else 1)
PY

# 1b. The sharded optimizer (ZeRO stage 1): half the AdamW state on each replica, the same
#     model up to the order of the clipping norm's sum, and its checkpoints resume exactly.
"$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --sharded_optimizer --max_steps 6 --save_steps 3 \
  --output_dir "$tmp/sharded" > "$tmp/sharded.log" 2>&1 || fail "--sharded_optimizer: $(tail -3 "$tmp/sharded.log")"
full_mb="$(sed -n 's/.*AdamW state on each: \([0-9.]*\) MB$/\1/p' "$tmp/threads.log")"
shard_mb="$(sed -n 's/.*AdamW state on each: \([0-9.]*\) MB (sharded, ZeRO stage 1)$/\1/p' "$tmp/sharded.log")"
echo "AdamW state per replica: ${full_mb} MB unsharded, ${shard_mb} MB sharded"
/usr/bin/python3 -c "import sys; f, s = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if 0.49 * f <= s <= 0.51 * f else 1)" "$full_mb" "$shard_mb" \
  || fail "the sharded state must be half the unsharded one (${shard_mb} vs ${full_mb} MB)"
/usr/bin/python3 - "$tmp/threads/model.safetensors" "$tmp/sharded/model.safetensors" <<'PY' || fail "the sharded optimizer trained another model"
# The standard library only: the test dependencies (scripts/install_deps.sh) have no numpy.
import array, json, struct, sys
def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    tensors = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", f"{path}: {k} is {v['dtype']}, expected F32"
        tensors[k] = array.array("f", data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
    return tensors
a, b = load(sys.argv[1]), load(sys.argv[2])
worst = max(max(abs(x - y) for x, y in zip(a[k], b[k])) for k in a)
print(f"sharded vs unsharded model: max difference {worst:.2e}")
sys.exit(0 if a.keys() == b.keys() and all(len(a[k]) == len(b[k]) for k in a) and worst < 1e-4 else 1)
PY
"$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --sharded_optimizer --max_steps 6 --save_steps 3 \
  --output_dir "$tmp/sharded_resumed" --resume_from_checkpoint "$tmp/sharded/checkpoint-3" > "$tmp/sharded_resumed.log" 2>&1 \
  || fail "resume sharded: $(tail -3 "$tmp/sharded_resumed.log")"
cmp -s "$tmp/sharded/model.safetensors" "$tmp/sharded_resumed/model.safetensors" || fail "a resumed sharded run must reach the same model"

# 1c. --fsdp full_shard (issue 34): one SPMD program over 2 devices, every parameter split, the
#     global batch of 2 x 4 rows read whole: the model of one replica at batch 8 (the same data,
#     masks and dropout bits), and its checkpoint resumes on another mesh (4 devices x 2 rows).
"$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --fsdp full_shard --max_steps 6 --save_steps 3 \
  --output_dir "$tmp/fsdp" > "$tmp/fsdp.log" 2>&1 || fail "--fsdp full_shard: $(tail -3 "$tmp/fsdp.log")"
grep -q "fsdp full_shard over 2 devices: 26 of 26 parameters split" "$tmp/fsdp.log" || fail "fsdp must split every parameter: $(grep fsdp "$tmp/fsdp.log")"
cp -r "$tmp/fsdp" "$tmp/fsdp_resumed" && rm -rf "$tmp/fsdp_resumed/checkpoint-6" "$tmp/fsdp_resumed/model.safetensors"
"$bin" "${common[@]}" --per_device_train_batch_size 2 --num_cores 4 --fsdp full_shard --max_steps 6 --save_steps 3 \
  --output_dir "$tmp/fsdp_resumed" --resume_from_checkpoint "$tmp/fsdp_resumed/checkpoint-3" > "$tmp/fsdp_resumed.log" 2>&1 \
  || fail "resume fsdp on 4 devices: $(tail -3 "$tmp/fsdp_resumed.log")"
/usr/bin/python3 - "$tmp/one/model.safetensors" "$tmp/fsdp/model.safetensors" "$tmp/fsdp_resumed/model.safetensors" <<'PY' || fail "fsdp must train one replica's model"
import array, json, struct, sys
def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: array.array("f", data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in header.items() if k != "__metadata__"}
one, fsdp, resumed = (load(p) for p in sys.argv[1:4])
def worst(a, b):
    return max(max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a[k], b[k])) for k in b)
print(f"fsdp on 2 devices vs one replica at batch 8: {worst(fsdp, one):.2e}; resumed on 4 devices vs fsdp on 2: {worst(resumed, fsdp):.2e}")
sys.exit(0 if one.keys() == fsdp.keys() == resumed.keys() and worst(fsdp, one) < 1e-5 and worst(resumed, fsdp) < 1e-5 else 1)
PY

# 1d. --tp_size 2 (issue 34): one SPMD program over a 1 x 2 mesh (data x model), Megatron's layout and
#     vocabulary-parallel loss over the 2 devices, the batch of 8 rows whole on each: one replica's model at batch 8.
"$bin" "${common[@]}" --per_device_train_batch_size 8 --num_cores 2 --tp_size 2 --max_steps 6 --save_steps 3 \
  --output_dir "$tmp/tp" > "$tmp/tp.log" 2>&1 || fail "--tp_size 2: $(tail -3 "$tmp/tp.log")"
grep -q "tensor parallel over 1 x 2 devices (data x model): 12 of 26 parameters split" "$tmp/tp.log" \
  || fail "tp must split Megatron's parameters: $(grep 'tensor parallel' "$tmp/tp.log")"
/usr/bin/python3 - "$tmp/one/model.safetensors" "$tmp/tp/model.safetensors" <<'PY' || fail "--tp_size 2 must train one replica's model"
import array, json, struct, sys
def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: array.array("f", data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in header.items() if k != "__metadata__"}
one, tp = (load(p) for p in sys.argv[1:3])
worst = max(max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(tp[k], one[k])) for k in one)
print(f"--tp_size 2 vs one replica at batch 8: {worst:.2e}")
sys.exit(0 if one.keys() == tp.keys() and worst < 1e-5 else 1)
PY
out="$("$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --tp_size 4 --max_steps 1 --output_dir "$tmp/tp_bad" 2>&1)" \
  && fail "--tp_size 4 on 2 devices must fail"
echo "$out" | grep -q -- "--tp_size 4 does not divide the job's 2 devices" || fail "the refusal must name --tp_size: $out"

# 2. Resuming: on two replicas it continues; on one it is refused (another data order).
"$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --max_steps 6 --save_steps 3 --output_dir "$tmp/resumed" \
  --resume_from_checkpoint "$tmp/threads/checkpoint-3" > "$tmp/resumed.log" 2>&1 || fail "resume on 2 replicas: $(tail -3 "$tmp/resumed.log")"
cmp -s "$tmp/threads/model.safetensors" "$tmp/resumed/model.safetensors" || fail "a resumed 2-replica run must reach the same model"
out="$("$bin" "${common[@]}" --per_device_train_batch_size 4 --max_steps 6 --output_dir "$tmp/one_resumed" \
  --resume_from_checkpoint "$tmp/threads/checkpoint-3" 2>&1)" && fail "resuming a 2-replica checkpoint on 1 must fail"
echo "$out" | grep -q 'it was made with world_size 2, this run has 1' || fail "the refusal must name world_size: $out"

# 3. A killed rank ends the job non-zero, named, within a minute.
("${mpi[@]}" "$bin" "${common[@]}" --per_device_train_batch_size 4 --max_steps 100000 --output_dir "$tmp/killed" > "$tmp/killed.log" 2>&1
 echo "exit $?" >> "$tmp/killed.log") &
# Up to 5 minutes for the first loss: on a loaded machine two ranks compiling take long.
for _ in $(seq 1 600); do grep -q '"loss"' "$tmp/killed.log" 2>/dev/null && break; sleep 0.5; done
grep -q '"loss"' "$tmp/killed.log" || fail "the job to be killed logged no loss within 5 minutes: $(tail -3 "$tmp/killed.log")"
start=$(date +%s)
for p in $(pgrep -f "output_dir $tmp/killed"); do
  # grep without -q reads to the end: with -q it may exit first, tr then dies of
  # SIGPIPE and pipefail turns the match into a failure (a large environment).
  if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -x 'OMPI_COMM_WORLD_RANK=1' > /dev/null; then kill -9 "$p"; fi
done
for _ in $(seq 1 120); do grep -q '^exit ' "$tmp/killed.log" && break; sleep 0.5; done
elapsed=$(( $(date +%s) - start ))
grep -q '^exit 0$' "$tmp/killed.log" && fail "the job must end non-zero after a rank is killed"
grep -q '^exit ' "$tmp/killed.log" || fail "the job did not end within a minute of the kill"
grep -q 'process rank 1 .*exited on signal 9' "$tmp/killed.log" || fail "the end must name rank 1: $(tail -5 "$tmp/killed.log")"
echo "killed rank 1: the job ended after ${elapsed}s"

# 4. TFRecord shards are split by replica (file f to replica f mod 2): every shard
#    of the evaluation is counted once; fewer shards than replicas is an error.
head -n 600 "$data/wikitext-2/valid.txt" > "$tmp/train.txt"
head -n 300 "$data/wikitext-2/test.txt" > "$tmp/valid.txt"
"$bin" train_tokenizer --model_type unigram --vocab_size 600 --input "$tmp/train.txt" --output_dir "$tmp/tok" > /dev/null 2>&1 \
  || fail "train_tokenizer"
for split in train valid; do
  "$bin" make_tfrecords --tokenizer "$tmp/tok" --max_seq_length 32 --shard_size 120 --input "$tmp/$split.txt" \
    --output_dir "$tmp/shards" --prefix "$split" > /dev/null 2>&1 || fail "make_tfrecords $split"
done
roberta=(run_mlm --model_type roberta --tokenizer_name "$tmp/tok"
         --config_overrides "vocab_size=600,hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37,max_position_embeddings=34"
         --per_device_train_batch_size 4 --per_device_eval_batch_size 4 --max_steps 4 --logging_steps 2 --disable_tqdm --do_train --do_eval)
"$bin" "${roberta[@]}" --num_cores 2 --train_tfrecords "$tmp/shards/train-*.tfrecord" --validation_tfrecords "$tmp/shards/valid-*.tfrecord" \
  --output_dir "$tmp/tfrecords" > "$tmp/tfrecords.log" 2>&1 || fail "TFRecords on 2 replicas: $(tail -3 "$tmp/tfrecords.log")"
valid_examples="$(json "$tmp/shards/valid.json" '["num_examples"]')"
[ "$(json "$tmp/tfrecords/eval_results.json" '["eval_samples"]')" = "$valid_examples" ] \
  || fail "the replicas' evaluation must count all $valid_examples examples of the shards once"
[ "$(ls "$tmp/shards"/valid-*.tfrecord | wc -l)" -ge 2 ] || fail "the test needs at least 2 evaluation shards"
out="$("$bin" "${roberta[@]}" --num_cores 2 --train_tfrecords "$tmp/shards/train-00000-of-*.tfrecord" \
  --validation_tfrecords "$tmp/shards/valid-*.tfrecord" --output_dir "$tmp/one_shard" 2>&1)" && fail "one shard for 2 replicas must fail"
echo "$out" | grep -q 'matches 1 shards, fewer than the 2 replicas' || fail "one shard for 2 replicas: $out"

# 4b. --line_by_line on replicas: one padded example per line, every evaluation line counted once.
"$bin" "${common[@]}" --line_by_line --per_device_train_batch_size 4 --num_cores 2 --max_steps 2 --output_dir "$tmp/lines" \
  > "$tmp/lines.log" 2>&1 || fail "--line_by_line on 2 replicas: $(tail -3 "$tmp/lines.log")"
[ "$(json "$tmp/lines/eval_results.json" '["eval_samples"]')" = 61 ] || fail "--line_by_line on 2 replicas: eval_samples must be 61"

# 5. Bad flags: one error each.
out="$("$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 0 --output_dir "$tmp/bad" 2>&1)" && fail "--num_cores 0 must fail"
echo "$out" | grep -q -- '--num_cores must be between 1 and 256' || fail "--num_cores 0: $out"
out="$("$bin" "${common[@]}" --per_device_train_batch_size 4 --collective_timeout 0 --output_dir "$tmp/bad" 2>&1)" && fail "--collective_timeout 0 must fail"
echo "$out" | grep -q -- '--collective_timeout must be a positive number' || fail "--collective_timeout 0: $out"

out="$(timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo \
  -np 1 "$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 1 --output_dir "$tmp/mismatch" : \
  -np 1 "$bin" "${common[@]}" --per_device_train_batch_size 4 --num_cores 2 --output_dir "$tmp/mismatch" 2>&1)" \
  && fail "processes with different --num_cores must fail"
echo "$out" | grep -q 'under mpirun, process rank 1 has --num_cores 2, rank 0 has 1 (this is rank [01]: [12]); every process must be given the same training arguments' ||
  fail "--num_cores mismatch: $out"
# run_clm too, before any collective (it crashed inside Open MPI); and an argument that
# would silently diverge the replicas (--learning_rate on one rank).
out="$(timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo \
  -np 1 "$bin" "${common[@]}" --per_device_train_batch_size 4 --learning_rate 1e-3 --output_dir "$tmp/mismatch_lr" : \
  -np 1 "$bin" "${common[@]}" --per_device_train_batch_size 4 --learning_rate 5 --output_dir "$tmp/mismatch_lr" 2>&1)" \
  && fail "processes with different --learning_rate must fail"
echo "$out" | grep -q 'process rank 1 has --learning_rate 5.0, rank 0 has 0.001' || fail "--learning_rate mismatch: $out"
[ -e "$tmp/mismatch_lr/model.safetensors" ] && fail "a run refused for its arguments wrote a model"
# The same arguments but other training text on one rank: the data's fingerprint differs.
head -c 20000 "$data/wikitext-2/test.txt" > "$tmp/other.txt"
out="$(timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo \
  -np 1 "$bin" "${common[@]}" --per_device_train_batch_size 4 --max_steps 2 --output_dir "$tmp/mismatch_data" : \
  -np 1 "$bin" "${common[@]}" --per_device_train_batch_size 4 --max_steps 2 --train_file "$tmp/other.txt" --output_dir "$tmp/mismatch_data" 2>&1)" \
  && fail "processes with different training data must fail"
echo "$out" | grep -q "training data (.*) differs from replica .*every process must read the same training files" || fail "data mismatch: $out"
clm=(run_clm --tokenizer_name "$data/gpt2" --config_overrides "n_embd=32,n_layer=1,n_head=2,vocab_size=50257,n_positions=64"
     --block_size 32 --train_file "$data/wikitext-2/valid.txt" --max_train_samples 64 --max_steps 2 --do_train --disable_tqdm)
out="$(timeout 120 mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo \
  -np 1 "$bin" "${clm[@]}" --num_cores 1 --output_dir "$tmp/mismatch_clm" : \
  -np 1 "$bin" "${clm[@]}" --num_cores 2 --output_dir "$tmp/mismatch_clm" 2>&1)" \
  && fail "run_clm processes with different --num_cores must fail"
echo "$out" | grep -q '\[run_clm\] under mpirun, process rank 1 has --num_cores 2, rank 0 has 1' || fail "run_clm --num_cores mismatch: $out"

[ "$failures" -eq 0 ] && echo "all replica CLI checks passed"
exit "$failures"
