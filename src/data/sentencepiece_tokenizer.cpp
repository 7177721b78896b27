#include "data/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <fstream>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/unicode_text.h"

namespace lazytrain::data {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOp = "[SentencePiece] ";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string(kOp) + "cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// SentencePiece's trainer stops the whole process on inputs it cannot handle
// (its CHECKs call exit(-1) with "Program terminated with an unrecoverable
// error."), so it trains in a child process: whatever happens there, this
// process gets a model or a status message, never an exit. The child's own log
// lines (SentencePiece's warnings) are passed on when it succeeds.
struct TrainResult {
  bool ok = false;
  std::string model;    // when ok
  std::string message;  // SentencePiece's status message, or how the child ended
};

TrainResult train_in_child(const std::unordered_map<std::string, std::string>& args) {
  char dir_template[] = "/tmp/lazytrain-spm-XXXXXX";
  if (!mkdtemp(dir_template)) throw Error(std::string(kOp) + "cannot create a temporary directory under /tmp");
  const fs::path dir(dir_template);
  const fs::path model_file = dir / "model", message_file = dir / "message", log_file = dir / "log";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    fs::remove_all(dir);
    throw Error(std::string(kOp) + "cannot start the training process (fork failed)");
  }
  if (pid == 0) {
    if (std::freopen(log_file.c_str(), "w", stderr) == nullptr) _exit(3);
    std::string model;
    const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &model);
    std::ofstream(status.ok() ? model_file : message_file, std::ios::binary) << (status.ok() ? model : std::string(status.message()));
    std::fflush(stderr);
    _exit(status.ok() ? 0 : 1);
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  TrainResult r;
  const std::string log = fs::exists(log_file) ? read_file(log_file.string()) : "";
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 && fs::exists(model_file)) {
    r.ok = true;
    r.model = read_file(model_file.string());
    std::fputs(log.c_str(), stderr);
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 1 && fs::exists(message_file)) {
    r.message = read_file(message_file.string());
  } else {
    r.message = WIFSIGNALED(wstatus) ? "SentencePiece's trainer was killed by signal " + std::to_string(WTERMSIG(wstatus))
                                     : "SentencePiece's trainer stopped on an input it cannot handle";
  }
  fs::remove_all(dir);
  return r;
}

bool has_text(const std::string& line) { return line.find_first_not_of(" \t\r\n\v\f") != std::string::npos; }

}  // namespace

SentencePieceTrainSummary train_sentencepiece(const SentencePieceTrainOptions& o) {
  if (o.model_type != "unigram" && o.model_type != "bpe") {
    throw Error(std::string(kOp) + "--model_type must be unigram or bpe, got '" + o.model_type + "'");
  }
  if (o.vocab_size < 262) {
    throw Error(std::string(kOp) + "--vocab_size must be at least 262 (5 special tokens, 256 bytes and a piece), got " +
                std::to_string(o.vocab_size));
  }
  // SentencePiece's own check (trainer_interface.cc), said before it says it in its words.
  if (!(o.character_coverage >= 0.98 && o.character_coverage <= 1.0)) {
    throw Error(std::string(kOp) + "--character_coverage must be between 0.98 and 1, got " + std::to_string(o.character_coverage));
  }
  if (o.input_files.empty()) throw Error(std::string(kOp) + "no --input file given");
  if (o.output_dir.empty()) throw Error(std::string(kOp) + "--output_dir is required");
  if (o.max_sentence_length < 0 || o.max_sentence_length > std::numeric_limits<int32_t>::max()) {
    throw Error(std::string(kOp) + "--max_sentence_length must be between 1 and " +
                std::to_string(std::numeric_limits<int32_t>::max()) + " bytes, got " + std::to_string(o.max_sentence_length));
  }
  SentencePieceTrainSummary summary;
  std::vector<int64_t> line_bytes;  // of every non-empty line, as SentencePiece counts them
  std::vector<int64_t> text_bytes;  // of the lines holding more than white space (SentencePiece trains on those)
  std::string inputs;
  for (const std::string& f : o.input_files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) throw Error(std::string(kOp) + "input file '" + f + "' does not exist or is not a file");
    if (fs::file_size(f, ec) == 0) throw Error(std::string(kOp) + "input file '" + f + "' is empty");
    std::ifstream in(f, std::ios::binary);
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
      if (unicode::find_invalid_utf8(line) != unicode::kValidUtf8) {
        throw Error(std::string(kOp) + "'" + f + "' line " + std::to_string(number) + " is not valid UTF-8");
      }
      if (!line.empty()) line_bytes.push_back(static_cast<int64_t>(line.size()));
      if (has_text(line)) text_bytes.push_back(static_cast<int64_t>(line.size()));
    }
    inputs += (inputs.empty() ? "" : ",") + f;
  }
  summary.num_lines = static_cast<int64_t>(line_bytes.size());
  for (int64_t n : line_bytes) summary.longest_line_bytes = std::max(summary.longest_line_bytes, n);
  summary.max_sentence_length = o.max_sentence_length > 0
                                    ? o.max_sentence_length
                                    : std::max(kSentencePieceMaxSentenceLength, summary.longest_line_bytes);
  for (int64_t n : line_bytes) summary.skipped_long_lines += n > summary.max_sentence_length ? 1 : 0;
  const std::string what_to_do = "pass --max_sentence_length " + std::to_string(summary.longest_line_bytes) +
                                 " (or leave it out: it defaults to the longest line)";
  if (text_bytes.empty()) {
    throw Error(std::string(kOp) + inputs + " holds no text to train on: " +
                (summary.num_lines == 0 ? std::string("every line is empty") : "every line is blank (white space only)"));
  }
  const bool none_short = std::none_of(text_bytes.begin(), text_bytes.end(), [&](int64_t n) { return n <= summary.max_sentence_length; });
  if (none_short) {
    throw Error(std::string(kOp) + "every line of " + inputs + " that holds text is longer than --max_sentence_length " + std::to_string(summary.max_sentence_length) +
                " bytes (the longest has " + std::to_string(summary.longest_line_bytes) + "), so none is left to train on; " +
                what_to_do);
  }
  const std::string skipped_note =
      summary.skipped_long_lines == 0
          ? std::string()
          : " (" + std::to_string(summary.skipped_long_lines) + " of " + std::to_string(summary.num_lines) +
                " lines were skipped as longer than --max_sentence_length " + std::to_string(summary.max_sentence_length) +
                " bytes; " + what_to_do + ")";
  const std::unordered_map<std::string, std::string> args = {
      {"input", inputs},
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"num_threads", std::to_string(o.num_threads)},
      {"bos_id", "0"}, {"bos_piece", "<s>"},
      {"pad_id", "1"}, {"pad_piece", "<pad>"},
      {"eos_id", "2"}, {"eos_piece", "</s>"},
      {"unk_id", "3"}, {"unk_piece", "<unk>"},
      {"user_defined_symbols", "<mask>"},  // id 4: the first id after the fixed ones
      // Characters the corpus lacks become their UTF-8 bytes (<0xC3><0xBC>), not
      // <unk>: every text round-trips, as with RoBERTa's byte-level BPE.
      {"byte_fallback", "true"},
      {"max_sentence_length", std::to_string(summary.max_sentence_length)},
      // The lines skipped for length are in the summary (and the errors below);
      // SentencePiece's own "too long line" warnings would only repeat them.
      {"minloglevel", summary.skipped_long_lines > 0 ? "2" : "1"}};
  const TrainResult result = train_in_child(args);
  const std::string& model = result.model;
  if (!result.ok) {
    // SentencePiece's messages start with its source location; keep the sentence a user can act on.
    std::string why = result.message;
    if (size_t at = why.find("Vocabulary size"); at != std::string::npos) {
      why = why.substr(at);
      if (size_t hint = why.find(" Increase vocab_size or decrease character_coverage"); hint != std::string::npos) {
        why = why.substr(0, hint) + " Increase --vocab_size (or lower --character_coverage, down to 0.98).";
      }
      throw Error(std::string(kOp) + "--vocab_size " + std::to_string(o.vocab_size) + " does not fit " + inputs + ": " + why +
                  skipped_note);
    }
    throw Error(std::string(kOp) + "training on " + inputs + " failed: " + why + skipped_note);
  }
  sentencepiece::SentencePieceProcessor check;
  if (!check.LoadFromSerializedProto(model).ok()) throw Error(std::string(kOp) + "the trained model does not load");
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  if (ec || !fs::is_directory(o.output_dir)) {
    throw Error(std::string(kOp) + "--output_dir '" + o.output_dir + "' cannot be created (" + (ec ? ec.message() : "not a directory") + ")");
  }
  write_file_atomically(o.output_dir + "/spm.model", model);
  std::string vocab;
  for (int id = 0; id < check.GetPieceSize(); ++id) vocab += check.IdToPiece(id) + "\t" + std::to_string(check.GetScore(id)) + "\n";
  write_file_atomically(o.output_dir + "/spm.vocab", vocab);
  write_file_atomically(o.output_dir + "/special_tokens_map.json",
                        "{\"bos_token\": \"<s>\", \"cls_token\": \"<s>\", \"eos_token\": \"</s>\", \"mask_token\": \"<mask>\", "
                        "\"pad_token\": \"<pad>\", \"sep_token\": \"</s>\", \"unk_token\": \"<unk>\"}\n");
  return summary;
}

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& path)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  std::error_code ec;
  model_file_ = fs::is_directory(path, ec) ? path + "/spm.model" : path;
  if (!fs::is_regular_file(model_file_, ec)) throw Error(std::string(kOp) + "no model at '" + model_file_ + "'");
  const sentencepiece::util::Status status = processor_->LoadFromSerializedProto(read_file(model_file_));
  if (!status.ok()) {
    throw Error(std::string(kOp) + "'" + model_file_ + "' is not a SentencePiece model (expected a directory written by " +
                "`lazytrain train_tokenizer`, or its spm.model; a WordPiece vocab.txt is for --model_type bert)");
  }
  const std::vector<std::pair<std::string, int>> specials = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", 4}};
  for (const auto& [piece, id] : specials) {
    if (processor_->GetPieceSize() <= id || processor_->IdToPiece(id) != piece) {
      throw Error(std::string(kOp) + "'" + model_file_ + "' does not have " + piece + " at id " + std::to_string(id) +
                  " (train it with `lazytrain train_tokenizer`)");
    }
  }
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;
SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept = default;

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error(std::string(kOp) + "encode failed: " + status.ToString());
  // <mask> takes the space before it, as RoBERTa's mask token (lstrip=True):
  // "the <mask> of" is ▁the <mask> ▁of, as a masked word is in training, not
  // ▁the ▁ <mask> ▁of.
  std::vector<int64_t> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool lone_space_before_mask =
        i + 1 < ids.size() && ids[i + 1] == mask_token_id() && processor_->IdToPiece(ids[i]) == "\xe2\x96\x81";
    if (!lone_space_before_mask) out.push_back(ids[i]);
  }
  return add_special_tokens ? build_inputs_with_special_tokens(out) : out;
}

std::vector<int64_t> SentencePieceTokenizer::build_inputs_with_special_tokens(std::span<const int64_t> ids) const {
  std::vector<int64_t> out;
  out.reserve(ids.size() + 2);
  out.push_back(bos_token_id());
  out.insert(out.end(), ids.begin(), ids.end());
  out.push_back(eos_token_id());
  return out;
}

std::vector<std::string> SentencePieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  const auto status = processor_->Encode(text, &pieces);
  if (!status.ok()) throw Error(std::string(kOp) + "encode failed: " + status.ToString());
  return pieces;
}

std::string SentencePieceTokenizer::convert_id_to_token(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error(std::string(kOp) + "id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  }
  return processor_->IdToPiece(static_cast<int>(id));
}

std::string SentencePieceTokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens) const {
  std::vector<int> kept;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) throw Error(std::string(kOp) + "id " + std::to_string(id) + " is outside the vocabulary");
    if (skip_special_tokens && id <= mask_token_id() && id != unk_token_id()) continue;
    kept.push_back(static_cast<int>(id));
  }
  std::string text;
  const auto status = processor_->Decode(kept, &text);
  if (!status.ok()) throw Error(std::string(kOp) + "decode failed: " + status.ToString());
  return text;
}

int64_t SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

void SentencePieceTokenizer::save_pretrained(const std::string& directory) const {
  for (const char* name : {"spm.model", "spm.vocab", "special_tokens_map.json"}) {
    const fs::path from = name == std::string("spm.model") ? fs::path(model_file_) : fs::path(model_file_).parent_path() / name;
    std::error_code ec;
    if (!fs::is_regular_file(from, ec)) continue;  // a bare .model file was given
    write_file_atomically(directory + "/" + name, read_file(from.string()));
  }
}

}  // namespace lazytrain::data
