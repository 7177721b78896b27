"""The README's main job (run_mlm, bert-tiny-sized) and its GPT-2 run_clm
configuration, each run by the CLI (`build/lazytrain run_mlm|run_clm`) and by
the Python examples (examples/python/run_mlm.py, run_clm.py: Hugging Face's
scripts' flow over lazytrain.Trainer), interleaved for --rounds rounds (the
machine drifts within minutes). Prints every logged training loss, eval_loss,
perplexity and eval_accuracy of both (they must be equal), and
train_samples_per_second: each round's, the median, and the Python/CLI ratio
of the medians. train_samples_per_second is Hugging Face's: examples over
train_runtime, which includes the evaluations during training.

    python bench/python_trainer_bench.py --task mlm --rounds 3
    python bench/python_trainer_bench.py --task clm --rounds 2 --max_steps 100

Needs build/lazytrain and lazytrain importable by this Python (pip install .,
or PYTHONPATH=python with the extension built). Data: LAZYTRAIN_DATA_DIR
(default ../shared/data)."""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def task_arguments(task, data, max_steps):
    if task == "mlm":
        return ["--model_type", "bert", "--config_name", f"{data}/bert-base-uncased/config.json",
                "--config_overrides", "hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512",
                "--tokenizer_name", f"{data}/bert-base-uncased/vocab.txt",
                "--train_file", f"{data}/wikitext-2/valid.txt", "--validation_file", f"{data}/wikitext-2/test.txt",
                "--max_seq_length", "128", "--per_device_train_batch_size", "16", "--per_device_eval_batch_size", "16",
                "--learning_rate", "1e-3", "--max_steps", str(max_steps), "--logging_steps", "50", "--seed", "42",
                "--evaluation_strategy", "steps", "--eval_steps", "100", "--save_steps", "100", "--save_total_limit", "2",
                "--do_train", "--do_eval"]
    return ["--tokenizer_name", f"{data}/gpt2", "--config_overrides", "n_embd=128,n_layer=2,n_head=2",
            "--train_file", f"{data}/wikitext-2/valid.txt", "--validation_file", f"{data}/wikitext-2/test.txt",
            "--do_train", "--do_eval", "--block_size", "128", "--per_device_train_batch_size", "16",
            "--max_steps", str(max_steps), "--learning_rate", "1e-3", "--logging_steps", "50"]


def run(way, task, data, max_steps, out):
    command = task_arguments(task, data, max_steps) + ["--output_dir", out, "--disable_tqdm"]
    if way == "cli":
        command = [os.path.join(REPO, "build", "lazytrain"), "run_" + task] + command
    else:
        command = [sys.executable, os.path.join(REPO, "examples", "python", f"run_{task}.py")] + command
    shutil.rmtree(out, ignore_errors=True)
    start = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{way} failed ({done.returncode}):\n{' '.join(command)}\n{done.stderr[-3000:]}")
    history = json.load(open(os.path.join(out, "trainer_state.json")))["log_history"]
    results = json.load(open(os.path.join(out, "all_results.json")))
    return {"losses": [e["loss"] for e in history if "loss" in e], "eval_loss": results["eval_loss"],
            "perplexity": results["perplexity"], "eval_accuracy": results.get("eval_accuracy"),
            "train_samples_per_second": results["train_samples_per_second"], "wall": time.time() - start,
            "command": " ".join(command)}


def machine():
    model = "?"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    isa = "avx512_bf16" if "avx512_bf16" in flags else "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "?"
    return f"{model}, {os.cpu_count()} CPUs, {isa}, {platform.python_version()}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=["mlm", "clm"], default="mlm")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max_steps", type=int, default=300)
    a = p.parse_args()
    data = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(REPO, "..", "shared", "data"))
    print(f"machine: {machine()}; load before: {os.getloadavg()[0]:.2f}")
    work = tempfile.mkdtemp(prefix="python_trainer_bench_")
    runs = {"cli": [], "python": []}
    for r in range(a.rounds):
        order = ("cli", "python") if r % 2 == 0 else ("python", "cli")  # mirrored, so drift hits both
        for way in order:
            load = os.getloadavg()[0]
            runs[way].append(run(way, a.task, data, a.max_steps, os.path.join(work, way)))
            print(f"round {r} {way:6s}: train_samples_per_second {runs[way][-1]['train_samples_per_second']:.2f} "
                  f"(wall {runs[way][-1]['wall']:.0f} s, load at start {load:.2f})", flush=True)
    for way in ("cli", "python"):
        last = runs[way][-1]
        print(f"{way:6s}: losses {last['losses']}; eval_loss {last['eval_loss']:.6f}, perplexity {last['perplexity']:.4f}, "
              f"eval_accuracy {last['eval_accuracy']}")
        print(f"        {last['command']}")
    same = all(runs["cli"][-1][k] == runs["python"][-1][k] for k in ("losses", "eval_loss", "perplexity", "eval_accuracy"))
    medians = {w: statistics.median(x["train_samples_per_second"] for x in runs[w]) for w in runs}
    print(f"same losses, eval_loss, perplexity and accuracy: {same}")
    print(f"train_samples_per_second median: cli {medians['cli']:.2f}, python {medians['python']:.2f}, "
          f"python/cli {medians['python'] / medians['cli']:.3f}; load after: {os.getloadavg()[0]:.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
