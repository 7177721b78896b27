// init_trainer: the C++ Trainer (train/trainer.h) driven from Python, what
// lazytrain.trainer.Trainer wraps with Hugging Face's API. Python hands over
// its model as named parameters (the same tensors: no copy), a loss function
// taking the batch dict, datasets as a size plus a collate function, and one
// event handler for its callbacks; the loop, checkpoints, exact resume,
// evaluation, replicas and logging stay the C++ Trainer's, the CLI's.
//
// Threads: train() and evaluate() run without the GIL. The loss function,
// the collate function (on the DeviceLoader's or the DataLoader workers'
// threads) and the event handler take it for the Python call only.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "bindings.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "train/checkpoint.h"
#include "train/json_file.h"
#include "train/results_files.h"
#include "train/trainer.h"

namespace lazytrain::python {

using namespace nb::literals;

namespace {

// A Python model as the C++ Trainer sees it: its named parameters (the
// Python Parameters' own tensors) and its train/eval switch.
class PythonModule : public nn::Module {
 public:
  PythonModule(const std::vector<std::pair<std::string, Tensor>>& parameters, nb::object set_training)
      : set_training_(std::move(set_training)) {
    for (const auto& [name, tensor] : parameters) register_parameter(name, tensor);
  }
  ~PythonModule() override {
    GilAcquire gil;
    set_training_.reset();
  }
  void train(bool on) override {
    nn::Module::train(on);
    GilAcquire gil;
    set_training_(on);
  }

 private:
  nb::object set_training_;
};

std::shared_ptr<nb::object> hold(nb::object callable);

// A collated batch from Python: a dict of C-contiguous CPU arrays (the Python
// side converts what the collator gave with numpy.ascontiguousarray).
data::NamedBatch named_batch(const nb::dict& arrays, double mlm_probability, const char* what) {
  data::NamedBatch batch;
  batch.mlm_probability = mlm_probability;
  for (auto [key, value] : arrays) {
    const std::string name = nb::cast<std::string>(key);
    batch.arrays[name] = literal_from_array(nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(value), what);
  }
  batch.rows = batch.arrays.empty() || batch.arrays.begin()->second.shape().empty() ? 0 : batch.arrays.begin()->second.shape()[0];
  batch.num_examples = batch.rows;
  data::check_named_batch(batch, what);
  return batch;
}

// (size, collate(indices, batch_number) -> dict, pad_token_id, mlm_probability,
// fingerprint() -> CRC32C or None).
data::TrainerDataset trainer_dataset(const nb::object& spec) {
  data::TrainerDataset d;
  if (spec.is_none()) return d;
  const nb::tuple t = nb::cast<nb::tuple>(spec);
  d.size = nb::cast<int64_t>(t[0]);
  std::shared_ptr<nb::object> collate = hold(nb::borrow(t[1]));
  d.pad_token_id = nb::cast<int64_t>(t[2]);
  const double mlm_probability = nb::cast<double>(t[3]);
  d.collate = [collate, mlm_probability](const std::vector<size_t>& indices, uint64_t number) {
    GilAcquire gil;
    nb::list index_list;
    for (size_t i : indices) index_list.append(i);
    const nb::object arrays = (*collate)(index_list, number);
    return named_batch(nb::cast<nb::dict>(arrays), mlm_probability, "Trainer data_collator");
  };
  if (!t[4].is_none()) {  // computed on first use (a checkpoint, or replicas comparing data), then kept
    auto crc = std::make_shared<std::optional<uint32_t>>();
    d.fingerprint = [fingerprint = hold(nb::borrow(t[4])), crc] {
      if (!*crc) {
        GilAcquire gil;
        *crc = nb::cast<uint32_t>((*fingerprint)());
      }
      return **crc;
    };
  }
  return d;
}

// The Python Trainer's callbacks behind one C++ callback: every event goes to
// `handler(event, state_json, payload_json)`, which returns True when a
// callback set control.should_training_stop.
class PythonCallbacks : public train::TrainerCallback {
 public:
  PythonCallbacks(nb::object handler, std::vector<std::string> events) : handler_(std::move(handler)), events_(events.begin(), events.end()) {}
  ~PythonCallbacks() override {
    GilAcquire gil;
    handler_.reset();
  }
  void on_train_begin(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c) override { call("on_train_begin", s, c); }
  void on_train_end(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c) override { call("on_train_end", s, c); }
  void on_epoch_begin(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c) override { call("on_epoch_begin", s, c); }
  void on_epoch_end(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c) override { call("on_epoch_end", s, c); }
  void on_step_end(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c) override { call("on_step_end", s, c); }
  void on_save(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c) override { call("on_save", s, c); }
  void on_log(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c, const nlohmann::json& logs) override {
    call("on_log", s, c, logs);
  }
  void on_evaluate(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c,
                   const std::map<std::string, double>& metrics) override {
    call("on_evaluate", s, c, nlohmann::json(metrics));
  }

 private:
  void call(const char* event, const train::TrainerState& state, train::TrainerControl& control, const nlohmann::json& payload = nullptr) {
    if (!events_.count(event)) return;  // no Python callback handles it
    nlohmann::json s = state.to_json();
    s["is_world_process_zero"] = state.is_world_process_zero;
    s["step_loss"] = state.step_loss;
    const std::string state_text = s.dump(), payload_text = payload.is_null() ? "" : train::dump_json(payload);
    GilAcquire gil;
    if (nb::cast<bool>(handler_(event, state_text, payload_text))) control.should_training_stop = true;
  }
  nb::object handler_;
  std::set<std::string> events_;

 public:
  void set_events(const std::vector<std::string>& events) { events_ = std::set<std::string>(events.begin(), events.end()); }
};

// The Trainer and what it holds on to.
struct PyTrainer {
  std::shared_ptr<PythonModule> module;
  std::unique_ptr<train::Trainer> trainer;
  std::shared_ptr<PythonCallbacks> callbacks;
};

// Runs `call` without the GIL. Not PyWait: its op location would be the
// train() line for every op the model traces, and the outermost wins.
std::map<std::string, double> without_gil(const std::function<std::map<std::string, double>()>& call) {
  GilRelease release;
  return call();
}

// A Python callable kept alive by C++ functions that may be copied and
// dropped on threads without the GIL: the deleter takes it.
std::shared_ptr<nb::object> hold(nb::object callable) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(callable)), [](nb::object* o) {
    GilAcquire gil;
    delete o;
  });
}

}  // namespace

void init_trainer(nb::module_& m) {
  m.def(
      "_training_arguments", [](const std::string& json_text) {
        train::TrainingArguments a = train::TrainingArguments::from_json(nlohmann::json::parse(json_text), "TrainingArguments");
        a.validate();
        a.resolve();
        return a.to_json().dump();
      },
      "json"_a,
      "TrainingArguments' fields (JSON) read, checked and resolved as the CLI does (HF's __post_init__): the resolved "
      "fields as JSON; LazytrainError '[TrainingArguments] --name ...' naming the field otherwise.");
  m.def(
      "_crc32c_int64", [](const nb::ndarray<nb::ro, int64_t, nb::c_contig, nb::device::cpu>& a, uint32_t crc) {
        return crc32c(std::string_view(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(int64_t)), crc);
      },
      "values"_a, "crc"_a = 0, "CRC32C of int64 values' bytes, continuing `crc` (core/crc32c.h).");

  m.def("_get_last_checkpoint", &train::get_last_checkpoint, "output_dir"_a,
        "transformers.trainer_utils.get_last_checkpoint: the newest complete checkpoint-<step> of output_dir, or None.");
  m.def("_resolve_checkpoint", &train::resolve_checkpoint, "checkpoint"_a, "output_dir"_a,
        "A checkpoint directory to resume from ('latest': the newest of output_dir); LazytrainError naming it when incomplete.");
  m.def(
      "_save_metrics",
      [](const std::string& output_dir, const std::string& split, const std::map<std::string, double>& metrics, bool combined) {
        train::save_metrics(output_dir, split, metrics, combined);
      },
      "output_dir"_a, "split"_a, "metrics"_a, "combined"_a = true,
      "Trainer.save_metrics: <split>_results.json and all_results.json, as the CLI writes them (train/results_files.h).");
  m.def("_log_metrics", &train::log_metrics, "split"_a, "metrics"_a, "Trainer.log_metrics: the metrics printed on stdout as the CLI prints them.");

  nb::class_<PyTrainer>(m, "_Trainer", "The C++ Trainer (train/trainer.h) behind lazytrain.Trainer.")
      .def(
          "__init__",
          [](PyTrainer* self, const std::string& args_json, const std::vector<std::pair<std::string, Tensor>>& parameters,
             nb::object set_training, nb::object loss_fn, nb::object train_spec, nb::object eval_spec, nb::object event_handler,
             std::vector<std::string> events) {
            train::TrainingArguments args = train::TrainingArguments::from_json(nlohmann::json::parse(args_json), "TrainingArguments");
            auto module = std::make_shared<PythonModule>(parameters, std::move(set_training));
            std::shared_ptr<nb::object> loss = hold(std::move(loss_fn));
            // The batch dict -> (loss, logits or None, labels or None).
            train::LossFn fn = [loss](const distributed::DeviceBatch& batch) {
              GilAcquire gil;
              nb::dict inputs;
              for (const auto& [name, tensor] : batch.tensors) inputs[name.c_str()] = nb::cast(tensor);
              const nb::tuple out = nb::cast<nb::tuple>((*loss)(inputs));
              auto tensor_or_empty = [](nb::handle h) { return h.is_none() ? Tensor() : nb::cast<Tensor>(h); };
              return train::ModelOutput(nb::cast<Tensor>(out[0]), tensor_or_empty(out[1]), tensor_or_empty(out[2]));
            };
            auto callbacks = std::make_shared<PythonCallbacks>(std::move(event_handler), std::move(events));
            new (self) PyTrainer{module, std::make_unique<train::Trainer>(*module, std::move(args), std::move(fn), trainer_dataset(train_spec),
                                                                           trainer_dataset(eval_spec)),
                                 callbacks};
            self->trainer->add_callback(callbacks);
          },
          "args_json"_a, "parameters"_a, "set_training"_a, "loss_fn"_a, "train_dataset"_a.none(), "eval_dataset"_a.none(), "event_handler"_a, "events"_a)
      .def(
          "set_compute_metrics",
          [](PyTrainer& t, nb::object compute, nb::object preprocess) {
            std::shared_ptr<nb::object> c = hold(std::move(compute));
            train::ComputeMetricsFn fn = [c](const train::EvalPrediction& p) {
              GilAcquire gil;
              return nb::cast<std::map<std::string, double>>((*c)(numpy_from_literal(p.predictions), numpy_from_literal(p.label_ids)));
            };
            train::PreprocessLogitsFn pre;
            if (!preprocess.is_none()) {
              std::shared_ptr<nb::object> p = hold(std::move(preprocess));
              pre = [p](const Tensor& logits, const Tensor& labels) {
                GilAcquire gil;
                return nb::cast<Tensor>((*p)(logits, labels));
              };
            }
            t.trainer->set_compute_metrics(std::move(fn), std::move(pre));
          },
          "compute_metrics"_a, "preprocess_logits_for_metrics"_a.none())
      .def(
          "set_eval_dataset", [](PyTrainer& t, nb::object spec) { t.trainer->set_eval_dataset(trainer_dataset(spec)); }, "eval_dataset"_a.none(),
          "The dataset evaluate() reads from now on; the training state is kept.")
      .def("set_events", [](PyTrainer& t, const std::vector<std::string>& events) { t.callbacks->set_events(events); }, "events"_a,
           "The events the Python callbacks handle (the others are not sent).")
      .def("set_model_config", [](PyTrainer& t, const std::string& json) { t.trainer->set_model_config(nlohmann::json::parse(json)); })
      .def("keep_checkpoint", [](PyTrainer& t, const std::string& dir) { t.trainer->keep_checkpoint(dir); })
      .def(
          "on_save_files",
          [](PyTrainer& t, nb::object save_files) {
            std::shared_ptr<nb::object> f = hold(std::move(save_files));
            t.trainer->on_save([f](const std::string& dir) {
              GilAcquire gil;
              (*f)(dir);
            });
          },
          "save_files"_a, "Called with each checkpoint's staging directory, to add files (the tokenizer's).")
      .def(
          "train", [](PyTrainer& t, const std::string& resume) { return without_gil([&] { return t.trainer->train(resume); }); },
          "resume_from_checkpoint"_a = "")
      .def("evaluate", [](PyTrainer& t) { return without_gil([&] { return t.trainer->evaluate(); }); })
      .def("save_state", [](PyTrainer& t) { t.trainer->save_state(); })
      .def("state_json", [](PyTrainer& t) { return t.trainer->state().to_json().dump(); })
      .def_prop_ro("global_step", [](PyTrainer& t) { return t.trainer->global_step(); })
      .def_prop_ro("is_world_process_zero", [](PyTrainer& t) { return t.trainer->is_world_process_zero(); })
      .def_prop_ro("train_graph_count", [](PyTrainer& t) { return t.trainer->train_graph_count(); });
}

}  // namespace lazytrain::python
