// init_tokenizers: the C++ tokenizers (src/data/) behind lazytrain.tokenizers'
// Python classes (BertTokenizer, GPT2Tokenizer, XLMRobertaTokenizer). A
// _NativeTokenizer owns one data::Tokenizer; tokenization, batch encoding
// (threads, GIL released), decoding, saving and SentencePiece training are the
// library's. The Python side adds Hugging Face's __call__ arguments (padding,
// masks, tensors) and its files (tokenizer_config.json).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/batch_encode.h"
#include "data/gpt2_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/wordpiece_tokenizer.h"

namespace lazytrain::python {

using namespace nb::literals;

namespace {

struct NativeTokenizer {
  std::string kind;  // "wordpiece", "gpt2", "sentencepiece"
  std::shared_ptr<data::Tokenizer> tokenizer;
};

std::string kind_of(const data::Tokenizer& t) {
  if (dynamic_cast<const data::WordPieceTokenizer*>(&t)) return "wordpiece";
  if (dynamic_cast<const data::GPT2Tokenizer*>(&t)) return "gpt2";
  return "sentencepiece";
}

// `kind`: "wordpiece" (a vocab.txt or a directory holding one), "gpt2"
// (vocab.json and merges.txt), "sentencepiece" (spm.model) or "auto" (the kind
// of the files, data::AutoTokenizer::from_files).
// `wordpiece_options` only for "wordpiece" (BertTokenizer's do_lower_case,
// strip_accents, tokenize_chinese_chars and special tokens).
NativeTokenizer load_tokenizer(const std::string& kind, const std::string& path,
                               std::optional<data::WordPieceTokenizerOptions> wordpiece_options) {
  std::shared_ptr<data::Tokenizer> t;
  if (kind == "wordpiece") {
    t = std::make_shared<data::WordPieceTokenizer>(path, wordpiece_options.value_or(data::WordPieceTokenizerOptions{}));
  } else if (kind == "gpt2") {
    t = std::make_shared<data::GPT2Tokenizer>(path);
  } else if (kind == "sentencepiece") {
    t = std::make_shared<data::SentencePieceTokenizer>(path);
  } else if (kind == "auto") {
    t = data::AutoTokenizer::from_files(path);
  } else {
    throw Error("[tokenizer] unknown kind '" + kind + "': expected wordpiece, gpt2, sentencepiece or auto");
  }
  return {kind_of(*t), std::move(t)};
}

// A Python str from the bytes of a decoded text; bytes that are not UTF-8
// become U+FFFD, as Hugging Face's decode(errors="replace") does.
nb::str to_str(const std::string& text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw nb::python_error();
  return nb::steal<nb::str>(s);
}

std::string decode(const NativeTokenizer& n, const std::vector<int64_t>& ids, bool skip_special_tokens, bool clean_up) {
  if (auto* wordpiece = dynamic_cast<const data::WordPieceTokenizer*>(n.tokenizer.get())) {
    return wordpiece->decode(ids, skip_special_tokens, clean_up);
  }
  const std::string text = n.tokenizer->decode(ids, skip_special_tokens);
  return clean_up ? data::clean_up_tokenization(text) : text;
}

nb::dict train_sentencepiece(const std::vector<std::string>& input_files, const std::string& output_dir,
                             const std::string& model_type, int64_t vocab_size, double character_coverage,
                             int64_t max_sentence_length, int num_threads) {
  data::SentencePieceTrainOptions o;
  o.input_files = input_files;
  o.output_dir = output_dir;
  o.model_type = model_type;
  o.vocab_size = vocab_size;
  o.character_coverage = character_coverage;
  o.max_sentence_length = max_sentence_length;
  o.num_threads = num_threads;
  data::SentencePieceTrainSummary s;
  {
    nb::gil_scoped_release release;  // training runs in a child process; this thread only waits
    s = data::train_sentencepiece(o);
  }
  nb::dict d;
  d["num_lines"] = s.num_lines;
  d["longest_line_bytes"] = s.longest_line_bytes;
  d["max_sentence_length"] = s.max_sentence_length;
  d["skipped_long_lines"] = s.skipped_long_lines;
  return d;
}

}  // namespace

void init_tokenizers(nb::module_& m) {
  nb::class_<NativeTokenizer>(m, "_NativeTokenizer", "A C++ tokenizer (src/data/) behind a lazytrain.tokenizers class.")
      .def_ro("kind", &NativeTokenizer::kind)
      .def_prop_ro("vocab_size", [](const NativeTokenizer& n) { return n.tokenizer->vocab_size(); })
      .def_prop_ro("all_special_ids", [](const NativeTokenizer& n) { return n.tokenizer->all_special_ids(); })
      .def_prop_ro(
          "special_tokens_layout",
          [](const NativeTokenizer& n) {
            const data::SpecialTokensLayout l = data::special_tokens_layout(*n.tokenizer);
            return std::pair{l.before, l.after};
          },
          "(before, after): how many special tokens build_inputs_with_special_tokens puts around a sequence.")
      .def(
          "build_inputs_with_special_tokens",
          [](const NativeTokenizer& n, const std::vector<int64_t>& ids) { return n.tokenizer->build_inputs_with_special_tokens(ids); },
          "ids"_a, "HF build_inputs_with_special_tokens for one sequence ([CLS] ids [SEP], <s> ids </s>, or ids for GPT-2).")
      .def(
          "encode_batch",
          [](const NativeTokenizer& n, const std::vector<std::string>& texts, bool add_special_tokens,
             std::optional<int64_t> max_length, int num_threads) {
            data::BatchEncodeOptions o;
            o.add_special_tokens = add_special_tokens;
            o.max_length = max_length;
            o.num_threads = num_threads;
            nb::gil_scoped_release release;
            return data::encode_batch(*n.tokenizer, texts, o);
          },
          "texts"_a, "add_special_tokens"_a = true, "max_length"_a = nb::none(), "num_threads"_a = 0,
          "The ids of each text (data/batch_encode.h): truncated to max_length with room for the special tokens, on "
          "num_threads threads (0: one per CPU, at most one per 16 texts), without the GIL. LazytrainError naming the "
          "text's index for a text the tokenizer rejects.")
      .def(
          "decode",
          [](const NativeTokenizer& n, const std::vector<int64_t>& ids, bool skip_special_tokens, bool clean_up) {
            return to_str(decode(n, ids, skip_special_tokens, clean_up));
          },
          "ids"_a, "skip_special_tokens"_a = false, "clean_up_tokenization_spaces"_a = false,
          "The text of `ids` (the tokenizer's decode); LazytrainError naming an id outside [0, vocab_size).")
      .def(
          "decode_batch",
          [](const NativeTokenizer& n, const std::vector<std::vector<int64_t>>& sequences, bool skip_special_tokens,
             bool clean_up) {
            std::vector<std::string> texts;
            {
              nb::gil_scoped_release release;
              for (const auto& ids : sequences) texts.push_back(decode(n, ids, skip_special_tokens, clean_up));
            }
            nb::list out;
            for (const std::string& t : texts) out.append(to_str(t));
            return out;
          },
          "sequences"_a, "skip_special_tokens"_a = false, "clean_up_tokenization_spaces"_a = false)
      .def(
          "convert_id_to_token", [](const NativeTokenizer& n, int64_t id) { return n.tokenizer->convert_id_to_token(id); },
          "id"_a, "The token's own string ('##ing', 'Ġworld', '▁the'); LazytrainError for an id outside the vocabulary.")
      .def(
          "vocab",
          [](const NativeTokenizer& n) {
            std::vector<std::string> tokens;
            for (int64_t id = 0; id < n.tokenizer->vocab_size(); ++id) tokens.push_back(n.tokenizer->convert_id_to_token(id));
            return tokens;
          },
          "Every token, in id order.")
      .def(
          "save_pretrained",
          [](const NativeTokenizer& n, const std::string& directory) {
            nb::gil_scoped_release release;
            n.tokenizer->save_pretrained(directory);
          },
          "directory"_a,
          "The files the tokenizer loads from (vocab.txt; vocab.json and merges.txt; spm.model, spm.vocab and "
          "special_tokens_map.json), each written atomically into an existing directory.");
  nb::class_<data::WordPieceTokenizerOptions>(m, "_WordPieceTokenizerOptions", "BertTokenizer's options (data/wordpiece_tokenizer.h).")
      .def(nb::init<>())
      .def_prop_rw(
          "do_lower_case", [](const data::WordPieceTokenizerOptions& o) { return o.basic.do_lower_case; },
          [](data::WordPieceTokenizerOptions& o, bool v) { o.basic.do_lower_case = v; })
      .def_prop_rw(
          "strip_accents", [](const data::WordPieceTokenizerOptions& o) { return o.basic.strip_accents; },
          [](data::WordPieceTokenizerOptions& o, std::optional<bool> v) { o.basic.strip_accents = v; }, nb::arg("value").none())
      .def_prop_rw(
          "tokenize_chinese_chars", [](const data::WordPieceTokenizerOptions& o) { return o.basic.tokenize_chinese_chars; },
          [](data::WordPieceTokenizerOptions& o, bool v) { o.basic.tokenize_chinese_chars = v; })
      .def_rw("unk_token", &data::WordPieceTokenizerOptions::unk_token)
      .def_rw("sep_token", &data::WordPieceTokenizerOptions::sep_token)
      .def_rw("pad_token", &data::WordPieceTokenizerOptions::pad_token)
      .def_rw("cls_token", &data::WordPieceTokenizerOptions::cls_token)
      .def_rw("mask_token", &data::WordPieceTokenizerOptions::mask_token);
  m.def("_load_tokenizer", &load_tokenizer, "kind"_a, "path"_a, "wordpiece_options"_a = nb::none(),
        "A C++ tokenizer: kind 'wordpiece', 'gpt2', 'sentencepiece' or 'auto' (by the files). LazytrainError naming "
        "the file that is missing or malformed.");
  m.def("_train_sentencepiece", &train_sentencepiece, "input_files"_a, "output_dir"_a, "model_type"_a, "vocab_size"_a,
        "character_coverage"_a, "max_sentence_length"_a, "num_threads"_a,
        "data::train_sentencepiece (a child process trains; the GIL is released while it runs): writes spm.model, "
        "spm.vocab and special_tokens_map.json into output_dir and returns the summary (num_lines, "
        "longest_line_bytes, max_sentence_length, skipped_long_lines).");
}

}  // namespace lazytrain::python
