"""The Python examples of Hugging Face's and PyTorch/XLA's workflows against the
CLI: examples/python/run_mlm.py and run_clm.py log the losses, eval_loss,
perplexity and accuracy `lazytrain run_mlm|run_clm` log for the same
arguments and write the same files; xla_spawn_loop.py trains the same model
on 2 replicas as on one at the same global batch, in threads and under
mpirun; the Trainer's replicas under xmp.spawn train as one replica does."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import lazytrain as lt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
EXAMPLES = os.path.join(ROOT, "examples", "python")


def lazytrain_cli():
    """The command line: the installed package's, else the build tree's."""
    for path in (os.path.join(os.path.dirname(lt.__file__), "bin", "lazytrain"), os.path.join(ROOT, "build", "lazytrain")):
        if os.access(path, os.X_OK):
            return path
    pytest.skip("no lazytrain command line (install the wheel, or bash scripts/build.sh --target lazytrain)")


def run(cmd, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), LAZYTRAIN_DATA_DIR=DATA, OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr[-3000:]}"
    return r


def logged(out):
    history = json.load(open(os.path.join(out, "trainer_state.json")))["log_history"]
    results = json.load(open(os.path.join(out, "all_results.json")))
    keep = ("loss", "grad_norm", "learning_rate", "eval_loss", "eval_accuracy", "train_loss", "epoch", "step")
    return [{k: v for k, v in e.items() if k in keep} for e in history], \
        {k: results[k] for k in ("eval_loss", "perplexity", "eval_accuracy", "train_loss", "eval_samples", "train_samples")}


def tree(out):
    """The files of an output directory (TensorBoard's event file names hold the time: only their folder)."""
    names = set()
    for dirpath, _, files in os.walk(out):
        rel = os.path.relpath(dirpath, out)
        if rel.startswith("runs"):
            names.add("runs/")
            continue
        names.update(os.path.normpath(os.path.join(rel, f)) for f in files)
    return names


MLM = ["--model_type", "bert", "--config_name", f"{DATA}/bert-base-uncased/config.json",
       "--config_overrides", "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=64",
       "--tokenizer_name", f"{DATA}/bert-base-uncased/vocab.txt", "--train_file", f"{DATA}/wikitext-2/valid.txt",
       "--validation_file", f"{DATA}/wikitext-2/test.txt", "--max_seq_length", "32", "--max_train_samples", "320",
       "--max_eval_samples", "70", "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "8",
       "--learning_rate", "1e-3", "--max_steps", "12", "--logging_steps", "3", "--seed", "7", "--evaluation_strategy", "steps",
       "--eval_steps", "6", "--save_steps", "6", "--save_total_limit", "1", "--do_train", "--do_eval", "--disable_tqdm"]

CLM = ["--tokenizer_name", f"{DATA}/gpt2", "--config_overrides", "n_embd=32,n_layer=1,n_head=2",
       "--train_file", f"{DATA}/wikitext-2/valid.txt", "--validation_file", f"{DATA}/wikitext-2/test.txt",
       "--block_size", "32", "--max_train_samples", "200", "--max_eval_samples", "37", "--per_device_train_batch_size", "8",
       "--per_device_eval_batch_size", "8", "--max_steps", "10", "--logging_steps", "5", "--learning_rate", "1e-3",
       "--save_steps", "5", "--do_train", "--do_eval", "--disable_tqdm"]


@pytest.mark.parametrize("task,arguments", [("mlm", MLM), ("clm", CLM)])
def test_python_script_logs_what_the_cli_logs(tmp_path, task, arguments):
    cli, py = str(tmp_path / "cli"), str(tmp_path / "py")
    run([lazytrain_cli(), f"run_{task}"] + arguments + ["--output_dir", cli])
    run([sys.executable, os.path.join(EXAMPLES, f"run_{task}.py")] + arguments + ["--output_dir", py])
    cli_history, cli_results = logged(cli)
    py_history, py_results = logged(py)
    assert py_history == cli_history
    assert py_results == cli_results
    assert tree(py) >= tree(cli) - {"metrics_report.txt"}
    for name in ("model.safetensors", f"checkpoint-{10 if task == 'clm' else 12}/model.safetensors",
                 f"checkpoint-{10 if task == 'clm' else 12}/optimizer.safetensors"):
        assert open(os.path.join(py, name), "rb").read() == open(os.path.join(cli, name), "rb").read(), name


def spawn_loop(tmp_path, name, cores, batch, launcher=()):
    out = str(tmp_path / name)
    r = run(list(launcher) + [sys.executable, os.path.join(EXAMPLES, "xla_spawn_loop.py"), "--num_cores", str(cores),
                              "--per_device_train_batch_size", str(batch), "--max_steps", "8", "--logging_steps", "4",
                              "--output_dir", out])
    losses = [line.split()[3] for line in r.stdout.splitlines() if line.startswith("step ")]
    return {k: v.numpy() for k, v in lt.load(os.path.join(out, "model.safetensors")).items()}, losses, r.stdout


def test_spawn_loop_on_two_replicas_trains_the_one_replica_model(tmp_path):
    one, one_losses, _ = spawn_loop(tmp_path, "one", 1, 16)
    two, two_losses, report = spawn_loop(tmp_path, "two", 2, 8)
    assert "replicas: 2" in report and "GilWaitTime" in report and "CompileTime" in report
    assert two_losses == one_losses and len(one_losses) == 2
    for name in one:
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-5, err_msg=name)
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed (scripts/install_deps.sh installs Open MPI)")
    launcher = [mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "tcp,self",
                "--mca", "btl_tcp_if_include", "lo", "-np", "2"]
    mpi, mpi_losses, _ = spawn_loop(tmp_path, "mpi", 1, 8, launcher)
    assert mpi_losses == two_losses
    for name in two:
        np.testing.assert_array_equal(mpi[name], two[name], err_msg=name)  # the same collectives: the same bits


def test_trainer_replicas_under_spawn_train_the_one_replica_model(tmp_path):
    """Hugging Face's Trainer on 2 replicas (xla_spawn.py's way: one Trainer per
    replica) at 4 examples each trains what one replica with 8 trains."""
    rng = np.random.default_rng(0)
    blocks = [{"input_ids": ids, "labels": ids} for ids in rng.integers(0, 64, (64, 16))]

    def train(index, out, batch):
        lt.manual_seed(3)
        model = lt.GPT2LMHeadModel(lt.GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2,
                                                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
        args = lt.TrainingArguments(output_dir=out, max_steps=6, per_device_train_batch_size=batch, learning_rate=1e-2,
                                    logging_steps=3, save_strategy="no", report_to="none", disable_tqdm=True, seed=3)
        trainer = lt.Trainer(model=model, args=args, train_dataset=blocks)
        trainer.train()
        trainer.save_model()

    lt.distributed.xla_multiprocessing.spawn(train, args=(str(tmp_path / "two"), 4), nprocs=2)
    train(0, str(tmp_path / "one"), 8)
    one, two = (lt.load(str(tmp_path / d / "model.safetensors")) for d in ("one", "two"))
    for name in one:
        np.testing.assert_allclose(two[name].numpy(), one[name].numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_tfrecord_custom_loop_reports_each_step_and_compiles_one_graph(tmp_path):
    shards = tmp_path / "shards"
    run([lazytrain_cli(), "make_tfrecords", "--tokenizer", f"{DATA}/gpt2", "--max_seq_length", "32", "--shard_size", "300",
         "--input", f"{DATA}/sample-text/sample_text.txt", "--output_dir", str(shards), "--prefix", "train"])
    r = run([sys.executable, os.path.join(EXAMPLES, "tfrecord_custom_loop.py"), "--train_tfrecords",
             str(shards / "train-*.tfrecord"), "--steps", "8", "--batch_size", "4", "--warmup_steps", "2",
             "--config_overrides", "n_embd=32,n_layer=1,n_head=2,n_positions=64"])
    steps = [line.split() for line in r.stdout.splitlines() if line.startswith("step")]
    assert [int(s[1]) for s in steps] == list(range(1, 9))
    losses, accuracies = [float(s[3]) for s in steps], [float(s[5]) for s in steps]
    assert losses[-1] < losses[0] and all(0.0 <= a <= 1.0 for a in accuracies)
    assert "graphs compiled: 1" in r.stdout
