#!/usr/bin/env bash
# The TF/TPU recipe for training from scratch, end to end on WikiText-2:
# a SentencePiece Unigram tokenizer (vocab 8,000) trained on valid.txt, the
# corpus written as TFRecord shards of 128-token blocks (valid.txt for training,
# test.txt for evaluation), and a small RoBERTa (hidden 128, 2 layers) trained
# for 300 steps streaming the shards, then evaluated (perplexity).
# Installs dependencies and builds first. Data: ../shared/data (LAZYTRAIN_DATA_DIR);
# output: ${OUTPUT_DIR:-out/roberta-tfrecords}. Extra arguments go to run_mlm.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${LAZYTRAIN_DATA_DIR:-../shared/data}"
out="${OUTPUT_DIR:-out/roberta-tfrecords}"
bash scripts/build.sh
mkdir -p "$out"
./build/lazytrain train_tokenizer --model_type unigram --vocab_size 8000 \
  --input "$data/wikitext-2/valid.txt" --output_dir "$out/tokenizer"
./build/lazytrain make_tfrecords --tokenizer "$out/tokenizer" --max_seq_length 128 --shard_size 1000 \
  --input "$data/wikitext-2/valid.txt" --output_dir "$out/tfrecords" --prefix train
./build/lazytrain make_tfrecords --tokenizer "$out/tokenizer" --max_seq_length 128 --shard_size 1000 \
  --input "$data/wikitext-2/test.txt" --output_dir "$out/tfrecords" --prefix validation
./build/lazytrain run_mlm --model_type roberta --tokenizer_name "$out/tokenizer" \
  --config_overrides "vocab_size=8000,hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512,max_position_embeddings=130" \
  --train_tfrecords "$out/tfrecords/train-*.tfrecord" --validation_tfrecords "$out/tfrecords/validation-*.tfrecord" \
  --per_device_train_batch_size 16 --per_device_eval_batch_size 16 \
  --learning_rate 1e-3 --max_steps 300 --logging_steps 50 --seed 42 \
  --do_train --do_eval --metrics_debug --output_dir "$out/model" --overwrite_output_dir "$@"
echo "results: $out/model/eval_results.json"
cat "$out/model/eval_results.json"
