// init_trainer: the C++ Trainer (train/trainer.h) driven from Python, what
// lazytrain.trainer.Trainer wraps with Hugging Face's API. Python hands over
// its model as named parameters (the same tensors: no copy), its arguments as
// a _TrainingArguments, a loss function taking the batch dict, datasets as a
// size plus a collate function, and one event handler for its callbacks
// (given a _TrainerState and a dict); the loop, checkpoints, exact resume,
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
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "bindings.h"
#include "core/crc32c.h"
#include "json_values.h"
#include "core/error.h"
#include "train/checkpoint.h"
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
// `handler(event, state, payload)` (state a _TrainerState copy; payload on_log's
// logs or on_evaluate's metrics as a dict, else None), which returns True when
// a callback set control.should_training_stop.
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
    call("on_log", s, c, &logs);
  }
  void on_evaluate(const train::TrainingArguments&, const train::TrainerState& s, train::TrainerControl& c,
                   const std::map<std::string, double>& metrics) override {
    const nlohmann::json payload(metrics);
    call("on_evaluate", s, c, &payload);
  }

 private:
  void call(const char* event, const train::TrainerState& state, train::TrainerControl& control, const nlohmann::json* payload = nullptr) {
    if (!events_.count(event)) return;  // no Python callback handles it
    GilAcquire gil;
    const nb::object s = nb::cast(state, nb::rv_policy::copy);
    const nb::object p = payload ? python_value(*payload) : nb::none();
    if (nb::cast<bool>(handler_(event, s, p))) control.should_training_stop = true;
  }
  nb::object handler_;
  std::set<std::string> events_;

 public:
  void set_events(const std::vector<std::string>& events) { events_ = std::set<std::string>(events.begin(), events.end()); }
};

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// A training argument's Python type, as training_args.py annotates the field.
template <typename T>
std::string python_type(const train::ArgumentSpec& spec) {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T>) return "int";
  else if constexpr (std::is_floating_point_v<T>) return "float";
  else if constexpr (std::is_same_v<T, std::string>) return spec.json_list_ ? "object" : spec.null_when_empty_ ? "Optional[str]" : "str";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "Union[str, List[str]]";
  else return "Optional[" + python_type<typename T::value_type>(spec) + "]";
}

// Its default as a Python value (None for an unset optional or a null_when_empty string).
template <typename T>
nb::object python_default(const train::ArgumentSpec& spec, const T& value) {
  if (spec.python_default_) return nb::str(spec.python_default_);
  if constexpr (is_optional<T>::value) {
    return value ? nb::cast(*value) : nb::none();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return spec.null_when_empty_ && value.empty() ? nb::none() : nb::cast(value);
  } else {
    return nb::cast(value);
  }
}

// (name, type, default, help, alias_of) for each field of Python's
// TrainingArguments, in order: the list's fields under their Hugging Face
// names, each followed by its alias's field (alias_of: the field it sets).
nb::list training_argument_fields() {
  nb::list out;
  const train::TrainingArguments defaults;
  train::for_each_training_argument(defaults, [&](const train::TrainingArgumentField& field, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    const std::string type = python_type<T>(field.spec);
    out.append(nb::make_tuple(field.key(), type, python_default(field.spec, value), field.help, nb::none()));
    if (field.spec.alias_) {
      const std::string optional = type.starts_with("Optional[") ? type : "Optional[" + type + "]";
      out.append(nb::make_tuple(field.spec.alias_, optional, nb::none(), std::string("Hugging Face's other name of ") + field.key(), field.key()));
    }
  });
  return out;
}

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
  m.def("_training_argument_fields", &training_argument_fields,
        "(name, type, default, help, alias_of) of every field of TrainingArguments (train/training_argument_fields.h), in "
        "order: type a Python annotation ('int', 'Optional[str]', ...), alias_of the field an alias sets (else None).");
  nb::class_<train::TrainingArguments>(m, "_TrainingArguments",
                                       "The C++ TrainingArguments (train/training_arguments.h) that lazytrain.TrainingArguments "
                                       "hands to the C++ Trainer.")
      .def(
          "__init__",
          [](train::TrainingArguments* self, const nb::dict& values) {
            new (self) train::TrainingArguments(train::TrainingArguments::from_json(json_value(values, "TrainingArguments"), "TrainingArguments"));
          },
          "values"_a,
          "The arguments of a dict of fields (Hugging Face's names; missing ones keep their defaults), read as "
          "training_args.json is: LazytrainError '[TrainingArguments] unknown training argument ...' or naming the field "
          "of a value of the wrong type. Not validated.")
      .def("validate", &train::TrainingArguments::validate,
           "The CLI's checks: LazytrainError '[TrainingArguments] --name ...' naming the field for a value out of range.")
      .def("resolve", &train::TrainingArguments::resolve,
           "Hugging Face's __post_init__ defaults: do_eval, eval_steps, metric_for_best_model, greater_is_better, "
           "logging_dir, report_to.")
      .def(
          "to_dict", [](const train::TrainingArguments& a) { return nb::cast<nb::dict>(python_value(a.to_json())); },
          "Every field under its Hugging Face name, as training_args.json holds it (unset ones None).");
  nb::class_<train::TrainerState>(m, "_TrainerState",
                                  "The C++ Trainer's state (train/trainer_state.h) at an event: transformers.TrainerState's fields.")
      .def_ro("epoch", &train::TrainerState::epoch)
      .def_ro("global_step", &train::TrainerState::global_step)
      .def_ro("max_steps", &train::TrainerState::max_steps)
      .def_ro("logging_steps", &train::TrainerState::logging_steps)
      .def_ro("eval_steps", &train::TrainerState::eval_steps)
      .def_ro("save_steps", &train::TrainerState::save_steps)
      .def_ro("num_train_epochs", &train::TrainerState::num_train_epochs)
      .def_ro("train_batch_size", &train::TrainerState::train_batch_size)
      .def_ro("best_metric", &train::TrainerState::best_metric)
      .def_prop_ro(
          "best_model_checkpoint",
          [](const train::TrainerState& s) { return s.best_model_checkpoint.empty() ? std::optional<std::string>() : s.best_model_checkpoint; },
          "The best checkpoint's directory so far, or None.")
      .def_prop_ro(
          "log_history", [](const train::TrainerState& s) { return nb::cast<nb::list>(python_value(s.log_history)); },
          "Every logged entry: a list of dicts (a new list each time).")
      .def_ro("is_world_process_zero", &train::TrainerState::is_world_process_zero)
      .def_ro("step_loss", &train::TrainerState::step_loss);
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
          [](PyTrainer* self, const train::TrainingArguments& args, const std::vector<std::pair<std::string, Tensor>>& parameters,
             nb::object set_training, nb::object loss_fn, nb::object train_spec, nb::object eval_spec, nb::object event_handler,
             std::vector<std::string> events) {
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
            new (self) PyTrainer{module, std::make_unique<train::Trainer>(*module, args, std::move(fn), trainer_dataset(train_spec),
                                                                           trainer_dataset(eval_spec)),
                                 callbacks};
            self->trainer->add_callback(callbacks);
          },
          "args"_a, "parameters"_a, "set_training"_a, "loss_fn"_a, "train_dataset"_a.none(), "eval_dataset"_a.none(), "event_handler"_a, "events"_a)
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
      .def(
          "state", [](PyTrainer& t) { return t.trainer->state(); }, "A copy of the Trainer's state (trainer_state.json's fields).")
      .def_prop_ro("global_step", [](PyTrainer& t) { return t.trainer->global_step(); })
      .def_prop_ro("is_world_process_zero", [](PyTrainer& t) { return t.trainer->is_world_process_zero(); })
      .def_prop_ro("train_graph_count", [](PyTrainer& t) { return t.trainer->train_graph_count(); });
}

}  // namespace lazytrain::python
