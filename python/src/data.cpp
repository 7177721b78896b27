// init_data: the host data pipeline of src/data/ behind lazytrain.data
// (python/lazytrain/data/): the masked-LM collator, the shuffle orders of the
// DataLoader and DistributedSampler, run_mlm's text reading, and TFRecord
// streams. Examples arrive as Python lists of dicts; they are copied into C++
// Examples with the GIL held, then the work (masking, reading, parsing) runs
// with the GIL released. Results go back as int64 numpy arrays that own their
// C++ vectors (no copy).
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/data_collator.h"
#include "data/distributed_sampler.h"
#include "data/text_dataset.h"
#include "data/tfrecord_dataset.h"

namespace lazytrain::python {
namespace {

using namespace nb::literals;
using Int64Array = nb::ndarray<nb::numpy, int64_t>;

// An int64 numpy array of `shape` over `values` (moved in; the array owns them).
Int64Array to_numpy(std::vector<int64_t> values, std::vector<size_t> shape) {
  auto* owner = new std::vector<int64_t>(std::move(values));
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<std::vector<int64_t>*>(p); });
  return Int64Array(owner->data(), shape.size(), shape.data(), keep);
}

Int64Array to_numpy(const std::vector<size_t>& values) {
  return to_numpy(std::vector<int64_t>(values.begin(), values.end()), {values.size()});
}

template <typename T>
void copy_as_int64(const nb::ndarray<nb::ro, nb::ndim<1>, nb::device::cpu>& a, std::vector<int64_t>& out) {
  const T* p = static_cast<const T*>(a.data());
  const int64_t stride = a.stride(0);
  out.reserve(a.shape(0));
  for (size_t i = 0; i < a.shape(0); ++i) out.push_back(static_cast<int64_t>(p[static_cast<int64_t>(i) * stride]));
}

// A 1-D sequence of token ids (a list or tuple of ints, or a 1-D integer
// array: numpy, or anything with __dlpack__) as int64. TypeError naming the
// example and field otherwise.
std::vector<int64_t> int_sequence(nb::handle value, size_t example, const char* field,
                                  const char* who = "[DataCollatorForLanguageModeling] example ") {
  std::vector<int64_t> out;
  nb::ndarray<nb::ro, nb::ndim<1>, nb::device::cpu> array;
  if (nb::try_cast(value, array)) {
    using nb::dlpack::dtype_code;
    const auto code = static_cast<dtype_code>(array.dtype().code);
    const int bits = array.dtype().bits;
    if (code == dtype_code::Int && bits == 64) copy_as_int64<int64_t>(array, out);
    else if (code == dtype_code::Int && bits == 32) copy_as_int64<int32_t>(array, out);
    else if (code == dtype_code::Int && bits == 16) copy_as_int64<int16_t>(array, out);
    else if (code == dtype_code::Int && bits == 8) copy_as_int64<int8_t>(array, out);
    else if (code == dtype_code::UInt && bits == 64) copy_as_int64<uint64_t>(array, out);
    else if (code == dtype_code::UInt && bits == 32) copy_as_int64<uint32_t>(array, out);
    else if (code == dtype_code::UInt && bits == 16) copy_as_int64<uint16_t>(array, out);
    else if ((code == dtype_code::UInt || code == dtype_code::Bool) && bits == 8) copy_as_int64<uint8_t>(array, out);
    else {
      throw nb::type_error((who + std::to_string(example) + " '" + field + "' is an array of non-integer dtype: expected integer token ids")
                               .c_str());
    }
    return out;
  }
  if (!nb::isinstance<nb::str>(value) && nb::try_cast(value, out)) return out;
  throw nb::type_error((who + std::to_string(example) + " '" + field + "' is a " + nb::inst_name(value).c_str() +
                        ": expected a list of ints or a 1-D integer array")
                           .c_str());
}

// The examples of a collator call: dicts with input_ids and optionally
// attention_mask and special_tokens_mask, or bare id sequences (HF's collator
// takes both). Needs the GIL.
std::vector<data::Example> to_examples(const nb::list& examples) {
  std::vector<data::Example> out(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    nb::handle ex = examples[i];
    if (!nb::isinstance<nb::dict>(ex)) {
      out[i].input_ids = int_sequence(ex, i, "input_ids");
      continue;
    }
    nb::dict d = nb::borrow<nb::dict>(ex);
    if (!d.contains("input_ids")) {
      throw nb::key_error(("[DataCollatorForLanguageModeling] example " + std::to_string(i) +
                           " has no 'input_ids': expected dicts with input_ids (and optionally attention_mask, special_tokens_mask)")
                              .c_str());
    }
    out[i].input_ids = int_sequence(d["input_ids"], i, "input_ids");
    if (d.contains("attention_mask") && !d["attention_mask"].is_none()) {
      out[i].attention_mask = int_sequence(d["attention_mask"], i, "attention_mask");
    }
    if (d.contains("special_tokens_mask") && !d["special_tokens_mask"].is_none()) {
      const std::vector<int64_t> special = int_sequence(d["special_tokens_mask"], i, "special_tokens_mask");
      out[i].special_tokens_mask.assign(special.begin(), special.end());
    }
  }
  return out;
}

nb::tuple batch_arrays(data::Batch batch) {
  const std::vector<size_t> shape{static_cast<size_t>(batch.batch_size), static_cast<size_t>(batch.seq_len)};
  return nb::make_tuple(to_numpy(std::move(batch.input_ids), shape), to_numpy(std::move(batch.attention_mask), shape),
                        to_numpy(std::move(batch.labels), shape));
}

// The C++ collator and a lock for its own generator (__call__ draws from it;
// collate(examples, batch_number) is const and needs none).
struct PyCollator {
  data::DataCollatorForLanguageModeling collator;
  std::mutex mutex;
};

void def_collator(nb::module_& m) {
  nb::class_<PyCollator>(m, "_DataCollatorForLanguageModeling")
      .def(
          "__init__",
          [](PyCollator* self, int64_t vocab_size, int64_t mask_token_id, int64_t pad_token_id, std::vector<int64_t> special_ids,
             bool mlm, bool pad_labels_by_id, double mlm_probability, int64_t pad_to_multiple_of, uint64_t seed) {
            data::CollatorTokens tokens{vocab_size, mask_token_id, pad_token_id, std::move(special_ids)};
            data::DataCollatorOptions options;
            options.mlm = mlm;
            options.pad_labels_by_id = pad_labels_by_id;
            options.mlm_probability = mlm_probability;
            options.pad_to_multiple_of = pad_to_multiple_of;
            options.seed = seed;
            new (self) PyCollator{data::DataCollatorForLanguageModeling(std::move(tokens), options), {}};
          },
          "vocab_size"_a, "mask_token_id"_a, "pad_token_id"_a, "special_ids"_a, "mlm"_a, "pad_labels_by_id"_a, "mlm_probability"_a,
          "pad_to_multiple_of"_a, "seed"_a)
      .def(
          "__call__",
          [](PyCollator& self, const nb::list& examples) {
            std::vector<data::Example> ex = to_examples(examples);
            data::Batch batch;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(self.mutex);
              batch = self.collator(ex);
            }
            return batch_arrays(std::move(batch));
          },
          "examples"_a, "(input_ids, attention_mask, labels) [batch, seq] int64; draws from the collator's own generator.")
      .def(
          "collate",
          [](const PyCollator& self, const nb::list& examples, uint64_t batch_number) {
            std::vector<data::Example> ex = to_examples(examples);
            data::Batch batch;
            {
              nb::gil_scoped_release release;
              batch = self.collator(ex, batch_number);
            }
            return batch_arrays(std::move(batch));
          },
          "examples"_a, "batch_number"_a, "The same with a generator seeded from (seed, batch_number); thread-safe.");
}

void def_orders(nb::module_& m) {
  m.def(
      "_epoch_order",
      [](uint64_t dataset_size, bool shuffle, uint64_t seed, uint64_t epoch) {
        std::vector<size_t> order;
        {
          nb::gil_scoped_release release;
          order = data::epoch_order(dataset_size, shuffle, seed, epoch);
        }
        return to_numpy(order);
      },
      "dataset_size"_a, "shuffle"_a, "seed"_a, "epoch"_a,
      "One epoch's order of [0, n): the C++ DataLoader's (data/distributed_sampler.h epoch_order).");
  m.def(
      "_distributed_sampler_indices",
      [](uint64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle, uint64_t seed, bool drop_last, uint64_t epoch) {
        std::vector<size_t> indices;
        {
          nb::gil_scoped_release release;
          indices = data::DistributedSampler(dataset_size, {num_replicas, rank, shuffle, seed, drop_last}).indices(epoch);
        }
        return to_numpy(indices);
      },
      "dataset_size"_a, "num_replicas"_a, "rank"_a, "shuffle"_a, "seed"_a, "drop_last"_a, "epoch"_a,
      "Replica `rank`'s indices of `epoch` (data/distributed_sampler.h).");
  m.def(
      "_distributed_sampler_num_samples",
      [](uint64_t dataset_size, int64_t num_replicas, int64_t rank, bool drop_last) {
        return data::DistributedSampler(dataset_size, {num_replicas, rank, false, 0, drop_last}).num_samples();
      },
      "dataset_size"_a, "num_replicas"_a, "rank"_a, "drop_last"_a);
}

// The examples of a tokenized text file as (input_ids, attention_mask,
// special_tokens_mask) rows: flat arrays and each row's length.
nb::tuple example_columns(const std::vector<data::Example>& examples) {
  std::vector<int64_t> ids, attention, special, lengths;
  for (const data::Example& ex : examples) {
    ids.insert(ids.end(), ex.input_ids.begin(), ex.input_ids.end());
    attention.insert(attention.end(), ex.attention_mask.begin(), ex.attention_mask.end());
    special.insert(special.end(), ex.special_tokens_mask.begin(), ex.special_tokens_mask.end());
    lengths.push_back(static_cast<int64_t>(ex.input_ids.size()));
  }
  const size_t n = ids.size();
  return nb::make_tuple(to_numpy(std::move(ids), {n}), to_numpy(std::move(attention), {n}), to_numpy(std::move(special), {n}),
                        to_numpy(std::move(lengths), {examples.size()}));
}

// Rows of token ids (lists or tuples of ints, or 1-D integer arrays) as one
// int64 array and each row's length: group_texts' concatenation, without a
// Python object per token (WikiText-2's 2.5M ids in ~20 ms instead of ~250 ms).
nb::tuple concatenate_rows(const nb::list& rows) {
  std::vector<int64_t> flat, lengths;
  lengths.reserve(rows.size());
  size_t total = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    PyObject* row = rows[r].ptr();
    if (PyList_Check(row) || PyTuple_Check(row)) total += static_cast<size_t>(PySequence_Fast_GET_SIZE(row));
  }
  flat.reserve(total);
  for (size_t r = 0; r < rows.size(); ++r) {
    PyObject* row = rows[r].ptr();
    if (PyList_Check(row) || PyTuple_Check(row)) {
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(row);
      PyObject** items = PySequence_Fast_ITEMS(row);
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!PyLong_Check(items[i])) {
          const std::string what = nb::inst_name(items[i]).c_str();
          throw nb::type_error(("row " + std::to_string(r) + " holds a " + what + ": expected token ids (ints)").c_str());
        }
        const long long v = PyLong_AsLongLong(items[i]);
        if (v == -1 && PyErr_Occurred()) throw nb::python_error();
        flat.push_back(v);
      }
      lengths.push_back(static_cast<int64_t>(n));
    } else {
      const std::vector<int64_t> ids = int_sequence(rows[r], r, "ids", "row ");
      flat.insert(flat.end(), ids.begin(), ids.end());
      lengths.push_back(static_cast<int64_t>(ids.size()));
    }
  }
  const size_t n = flat.size(), count = lengths.size();
  return nb::make_tuple(to_numpy(std::move(flat), {n}), to_numpy(std::move(lengths), {count}));
}

void def_text(nb::module_& m) {
  m.def("_concatenate_rows", &concatenate_rows, "rows"_a,
        "(ids, lengths): rows of token ids concatenated as int64, and each row's length; TypeError for a row that is not ids.");
  m.def(
      "_read_text_lines",
      [](const std::string& path, bool keep_linebreaks) {
        nb::gil_scoped_release release;
        return keep_linebreaks ? data::read_text_lines_keeping_breaks(path) : data::read_text_lines(path, data::BlankLines::kKeep);
      },
      "path"_a, "keep_linebreaks"_a,
      "The lines of a UTF-8 text file as the `datasets` text loader yields them (data/text_dataset.h).");
  // The C++ side of run_mlm's text path, for tests and cross-checks: the
  // tokenizer of the files at `tokenizer_path` (AutoTokenizer::from_files).
  m.def(
      "_text_dataset_tokenize_lines",
      [](const std::string& tokenizer_path, const std::vector<std::string>& lines) {
        std::vector<data::Example> examples;
        {
          nb::gil_scoped_release release;
          examples = data::tokenize_lines(lines, *data::AutoTokenizer::from_files(tokenizer_path));
        }
        return example_columns(examples);
      },
      "tokenizer_path"_a, "lines"_a, "run_mlm's tokenize_function in C++: (ids, attention, special, lengths).");
  m.def(
      "_text_dataset_group_texts",
      [](const std::string& path, const std::string& tokenizer_path, int64_t block_size, bool keep_linebreaks) {
        std::vector<data::Example> blocks;
        {
          nb::gil_scoped_release release;
          const auto tokenizer = data::AutoTokenizer::from_files(tokenizer_path);
          const std::vector<std::string> lines =
              keep_linebreaks ? data::read_text_lines_keeping_breaks(path) : data::read_text_lines(path, data::BlankLines::kKeep);
          blocks = data::group_texts(data::tokenize_lines(lines, *tokenizer), block_size);
        }
        return example_columns(blocks);
      },
      "path"_a, "tokenizer_path"_a, "block_size"_a, "keep_linebreaks"_a = false,
      "The blocks `lazytrain run_mlm` (or, keeping line breaks with GPT-2's tokenizer, `run_clm`) trains on from a text file: "
      "read, tokenized and grouped in C++.");
}

// A TFRecord stream and a lock: Python threads may share one iterator.
struct PyTFRecordDataset {
  data::TFRecordDataset dataset;
  std::mutex mutex;
};

void def_tfrecord(nb::module_& m) {
  m.def("_glob_files", &data::glob_files, "pattern"_a, "The files matching a glob pattern, sorted; LazytrainError when none.");
  nb::class_<PyTFRecordDataset>(m, "_TFRecordDataset")
      .def(
          "__init__",
          [](PyTFRecordDataset* self, std::vector<std::string> files, int cycle_length, int64_t shuffle_buffer, uint64_t seed,
             int num_replicas, int replica_index, bool skip_corrupt) {
            data::TFRecordDatasetOptions options;
            options.cycle_length = cycle_length;
            options.shuffle_buffer = shuffle_buffer;
            options.seed = seed;
            options.num_replicas = num_replicas;
            options.replica_index = replica_index;
            options.skip_corrupt = skip_corrupt;
            nb::gil_scoped_release release;
            new (self) PyTFRecordDataset{data::TFRecordDataset(std::move(files), options), {}};
          },
          "files"_a, "cycle_length"_a, "shuffle_buffer"_a, "seed"_a, "num_replicas"_a, "replica_index"_a, "skip_corrupt"_a)
      .def(
          "next",
          [](PyTFRecordDataset& self) -> nb::object {
            std::optional<data::Example> ex;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(self.mutex);
              ex = self.dataset.next();
            }
            if (!ex) return nb::none();
            const size_t n = ex->input_ids.size();
            nb::object mask = ex->attention_mask.empty() ? nb::none() : nb::cast(to_numpy(std::move(ex->attention_mask), {n}));
            return nb::make_tuple(to_numpy(std::move(ex->input_ids), {n}), mask);
          },
          "(input_ids, attention_mask or None) of the next example, or None after the last.")
      .def_prop_ro("skipped", [](PyTFRecordDataset& self) {
        std::lock_guard<std::mutex> lock(self.mutex);
        return self.dataset.skipped();
      });
}

}  // namespace

void init_data(nb::module_& m) {
  def_collator(m);
  def_orders(m);
  def_text(m);
  def_tfrecord(m);
}

}  // namespace lazytrain::python
