#!/usr/bin/env bash
# Crash safety of checkpoints: a training run is killed with SIGKILL at random
# moments (KILLS times, default 20; every other one as soon as a save has begun). After every kill the newest complete checkpoint must be the one the
# re-run of the same command resumes from, and the run finally finishes with a
# model.safetensors byte-identical to an uninterrupted run's.
# Usage: kill_resume_test.sh <lazytrain> <shared data dir> [kills]
set -uo pipefail
bin="$1"
data="$2"
kills="${3:-20}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
RANDOM=12345  # the same kill times on every run of the test
args=(run_mlm --tokenizer_name "$data/bert-base-uncased/vocab.txt" --config_name "$data/bert-base-uncased/config.json"
      --config_overrides "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37"
      --max_seq_length 32 --train_file "$data/sample-text/sample_text.txt" --per_device_train_batch_size 4
      --max_steps 300 --logging_steps 50 --save_steps 1 --save_total_limit 2 --do_train --disable_tqdm --report_to none
      --compile_cache_dir "$work/cache")

"$bin" "${args[@]}" --output_dir "$work/reference" > "$work/reference.log" 2>&1 || { echo "FAIL: the uninterrupted run"; cat "$work/reference.log"; exit 1; }

# The newest checkpoint-<step> holding its completion marker, or "none".
newest_marked() {
  local best=none best_step=-1 d step
  for d in "$work"/run/checkpoint-*; do
    [ -f "$d/checkpoint_complete.json" ] || continue
    step="${d##*-}"
    if [ "$step" -gt "$best_step" ]; then best_step=$step; best=$d; fi
  done
  echo "$best"
}

failed=0
in_save=0
early=0
loads=0
expected=none
for ((i = 1; i <= kills; i++)); do
  "$bin" "${args[@]}" --output_dir "$work/run" > "$work/run.log" 2>&1 &
  pid=$!
  if ((i % 2 == 0)); then
    # Inside a save: killed by the poller the moment a staging directory holds
    # a file (polled every 0.2 ms for up to 8 s; a save takes milliseconds).
    python3 -c "
import glob, os, signal, sys, time
end = time.time() + 8
while time.time() < end and not glob.glob(sys.argv[1]):
    time.sleep(0.0002)
os.kill(int(sys.argv[2]), signal.SIGKILL)" "$work/run/tmp-checkpoint-*/*" "$pid" 2> /dev/null
  else
    # Between 0.5 and 3.5 seconds: during start-up, mid-training, mid-save.
    sleep "$(printf '0.%03d' $((RANDOM % 1000)))"
    sleep "$(printf '0.%03d' $((500 + RANDOM % 500)))"
    sleep $((RANDOM % 3))
  fi
  kill -9 "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  # The checkpoint the run chose (printed before any work) and the one it loaded
  # (printed once model, optimizer, scheduler and RNG were restored).
  chosen=$(sed -n 's/^Checkpoint detected, resuming training at \(.*\)\. To avoid.*/\1/p' "$work/run.log")
  loaded=$(sed -n 's/^Resuming training from \(.*\) at step .*/\1/p' "$work/run.log")
  if [ ! -s "$work/run.log" ]; then
    early=$((early + 1))  # killed before it chose a checkpoint
  elif [ "${chosen:-none}" != "$expected" ] || { [ -n "$loaded" ] && [ "$loaded" != "$chosen" ]; }; then
    echo "FAIL kill $i: chose '${chosen:-none}' and loaded '${loaded:-nothing yet}'; the newest complete checkpoint was '$expected'"
    cat "$work/run.log"
    failed=$((failed + 1))
  fi
  [ -n "$loaded" ] && loads=$((loads + 1))
  if compgen -G "$work/run/tmp-checkpoint-*" > /dev/null; then in_save=$((in_save + 1)); fi
  expected=$(newest_marked)
done
"$bin" "${args[@]}" --output_dir "$work/run" > "$work/run.log" 2>&1 || { echo "FAIL: the final run"; cat "$work/run.log"; exit 1; }
resumed=$(sed -n 's/^Resuming training from \(.*\) at step .*/\1/p' "$work/run.log")
if [ "${resumed:-none}" != "$expected" ]; then
  echo "FAIL final run: resumed from '${resumed:-none}', expected '$expected'"
  failed=$((failed + 1))
fi
if ! cmp -s "$work/reference/model.safetensors" "$work/run/model.safetensors"; then
  echo "FAIL: the resumed run's model.safetensors differs from the uninterrupted run's"
  failed=$((failed + 1))
fi
if [ "$in_save" -eq 0 ]; then
  echo "FAIL: no kill landed inside a save"
  failed=$((failed + 1))
fi
echo "$kills kills: $in_save inside a save (a staging directory left behind), $early before the run chose a checkpoint;" \
  "$loads runs loaded the newest complete checkpoint before their kill; $failed failures"
[ "$failed" -eq 0 ]
