#!/usr/bin/env bash
# The main job: trains a small BERT masked LM on WikiText-2 and evaluates it.
# Installs dependencies and builds the `lazytrain` executable (nothing else) first. Data comes from ../shared/data
# (override with LAZYTRAIN_DATA_DIR); results go to ${OUTPUT_DIR:-out/bert-tiny-wikitext2}.
# It evaluates and saves a checkpoint every 100 steps (the newest 2 kept); run
# again on the same directory, it resumes from the newest checkpoint (a killed
# job just restarts); pass --overwrite_output_dir to start over.
# Extra arguments are passed to `lazytrain run_mlm` (e.g. --max_steps 20).
set -euo pipefail
cd "$(dirname "$0")/.."
data="${LAZYTRAIN_DATA_DIR:-../shared/data}"
out="${OUTPUT_DIR:-out/bert-tiny-wikitext2}"
bash scripts/build.sh --target lazytrain
./build/lazytrain run_mlm \
  --model_type bert \
  --config_name "$data/bert-base-uncased/config.json" \
  --config_overrides "hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512" \
  --tokenizer_name "$data/bert-base-uncased/vocab.txt" \
  --train_file "$data/wikitext-2/valid.txt" \
  --validation_file "$data/wikitext-2/test.txt" \
  --max_seq_length 128 \
  --per_device_train_batch_size 16 --per_device_eval_batch_size 16 \
  --learning_rate 1e-3 --max_steps 300 --logging_steps 50 --seed 42 \
  --evaluation_strategy steps --eval_steps 100 --save_steps 100 --save_total_limit 2 \
  --do_train --do_eval --metrics_debug \
  --output_dir "$out" "$@"
echo "results: $out/eval_results.json"
cat "$out/eval_results.json"
