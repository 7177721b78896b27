// init_models: the C++ BertForMaskedLM (models/bert.h) driven from Python, with
// the same numerics as the CLI's. Private for now (the benchmark drives it,
// bench/python_bert_bench.py); issue 32 makes lazytrain.models the public
// classes with Hugging Face's names.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "models/bert.h"

namespace lazytrain::python {

using namespace nb::literals;

void init_models(nb::module_& m) {
  nb::class_<models::BertForMaskedLM>(m, "_BertForMaskedLM")
      .def(
          "__init__",
          [](models::BertForMaskedLM* self, const std::string& config_overrides) {
            models::BertConfig config;  // bert-base-uncased's defaults
            if (!config_overrides.empty()) config.update_from_string(config_overrides);
            config.validate("_BertForMaskedLM");
            new (self) models::BertForMaskedLM(config);
          },
          "config_overrides"_a = "", "BertForMaskedLM from bert-base-uncased's config with Hugging Face's overrides string.")
      .def(
          "forward",
          [](const models::BertForMaskedLM& model, const Tensor& input_ids, const Tensor& attention_mask, const Tensor& labels) {
            PyOp op;
            return model.forward(input_ids, attention_mask, labels).loss;
          },
          "input_ids"_a, "attention_mask"_a, "labels"_a, "The masked-LM loss (the head on every token).")
      .def("named_parameters", &models::BertForMaskedLM::named_parameters)
      .def("train", &models::BertForMaskedLM::train, "mode"_a = true);
}

}  // namespace lazytrain::python
