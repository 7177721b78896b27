#include "data/wordpiece_tokenizer.h"

#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/unicode_text.h"

namespace lazytrain::data {
namespace {

constexpr const char* kOp = "[WordPieceTokenizer] ";

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(const std::filesystem::path& path,
                                       WordPieceTokenizerOptions options)
    : options_(std::move(options)), basic_(options_.basic) {
  std::error_code ec;
  vocab_file_ = std::filesystem::is_directory(path, ec) ? path / "vocab.txt" : path;
  std::ifstream in(vocab_file_, std::ios::binary);
  if (!in || std::filesystem::is_directory(vocab_file_, ec)) {
    throw Error(std::string(kOp) + "cannot open vocabulary '" + vocab_file_.string() +
                "': expected a vocab.txt with one token per line");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (const auto bad = unicode::find_invalid_utf8(text); bad != unicode::kValidUtf8) {
    throw Error(std::string(kOp) + "vocabulary '" + vocab_file_.string() +
                "' has invalid UTF-8 at byte offset " + std::to_string(bad) +
                ": expected a UTF-8 vocab.txt with one token per line");
  }
  // HF load_vocab: readlines() with universal newlines, rstrip("\n"); later duplicates win.
  for (std::string_view line : unicode::split_lines(text)) {
    const auto id = static_cast<int64_t>(id_to_token_.size());
    id_to_token_.emplace_back(line);
    token_to_id_.insert_or_assign(std::string(line), id);
  }
  if (id_to_token_.empty()) {
    throw Error(std::string(kOp) + "vocabulary '" + vocab_file_.string() +
                "' is empty: expected a vocab.txt with one token per line");
  }
  const auto special = [&](const std::string& token) {
    const int64_t id = find_id(token);
    if (id < 0) {
      throw Error(std::string(kOp) + "vocabulary '" + vocab_file_.string() + "' has no '" + token +
                  "' token: expected the special tokens " + options_.pad_token + " " +
                  options_.unk_token + " " + options_.cls_token + " " + options_.sep_token + " " +
                  options_.mask_token);
    }
    return id;
  };
  unk_id_ = special(options_.unk_token);
  sep_id_ = special(options_.sep_token);
  pad_id_ = special(options_.pad_token);
  cls_id_ = special(options_.cls_token);
  mask_id_ = special(options_.mask_token);
}

int64_t WordPieceTokenizer::find_id(std::string_view token) const {
  const auto it = token_to_id_.find(token);
  return it == token_to_id_.end() ? -1 : it->second;
}

bool WordPieceTokenizer::is_special_id(int64_t id) const {
  return id == unk_id_ || id == sep_id_ || id == pad_id_ || id == cls_id_ || id == mask_id_;
}

std::vector<std::string> WordPieceTokenizer::all_special_tokens() const {
  return {options_.unk_token, options_.sep_token, options_.pad_token, options_.cls_token,
          options_.mask_token};
}

void WordPieceTokenizer::save_pretrained(const std::string& directory) const {
  std::string text;
  for (const std::string& token : id_to_token_) text += token + "\n";
  write_file_atomically(directory + "/vocab.txt", text);
}

std::vector<std::string> WordPieceTokenizer::wordpiece(std::string_view word) const {
  // Byte offsets of the character boundaries of `word`.
  std::vector<std::size_t> bounds;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80) bounds.push_back(i);
  }
  bounds.push_back(word.size());
  const std::size_t n_chars = bounds.size() - 1;
  if (n_chars == 0) return {};
  if (n_chars > static_cast<std::size_t>(options_.max_input_chars_per_word)) {
    return {options_.unk_token};
  }
  std::vector<std::string> pieces;
  std::string candidate;
  std::size_t start = 0;
  while (start < n_chars) {
    bool found = false;
    for (std::size_t end = n_chars; end > start; --end) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if (token_to_id_.find(std::string_view(candidate)) != token_to_id_.end()) {
        pieces.push_back(candidate);
        start = end;
        found = true;
        break;
      }
    }
    if (!found) return {options_.unk_token};
  }
  return pieces;
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> tokens;
  const auto specials = all_special_tokens();
  const auto tokenize_plain = [&](std::string_view part) {
    for (const std::string& word : basic_.tokenize(part)) {
      for (std::string& piece : wordpiece(word)) tokens.push_back(std::move(piece));
    }
  };
  // Special tokens written in the text stay whole (HF splits on them first).
  std::size_t start = 0;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    for (const std::string& special : specials) {
      if (!special.empty() && text.compare(pos, special.size(), special) == 0) {
        tokenize_plain(text.substr(start, pos - start));
        tokens.push_back(special);
        pos += special.size() - 1;
        start = pos + 1;
        break;
      }
    }
  }
  tokenize_plain(text.substr(start));
  return tokens;
}

std::vector<int64_t> WordPieceTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::vector<std::string> tokens = tokenize(text);
  std::vector<int64_t> ids = convert_tokens_to_ids(tokens);
  return add_special_tokens ? build_inputs_with_special_tokens(ids) : ids;
}

std::vector<int64_t> WordPieceTokenizer::build_inputs_with_special_tokens(
    std::span<const int64_t> ids) const {
  std::vector<int64_t> out;
  out.reserve(ids.size() + 2);
  out.push_back(cls_id_);
  out.insert(out.end(), ids.begin(), ids.end());
  out.push_back(sep_id_);
  return out;
}

std::vector<uint8_t> WordPieceTokenizer::get_special_tokens_mask(std::span<const int64_t> ids) const {
  std::vector<uint8_t> mask(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) mask[i] = is_special_id(ids[i]) ? 1 : 0;
  return mask;
}

int64_t WordPieceTokenizer::convert_token_to_id(std::string_view token) const {
  const int64_t id = find_id(token);
  return id < 0 ? unk_id_ : id;
}

std::vector<int64_t> WordPieceTokenizer::convert_tokens_to_ids(std::span<const std::string> tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) ids.push_back(convert_token_to_id(token));
  return ids;
}

std::string WordPieceTokenizer::convert_id_to_token(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error(std::string(kOp) + "token id " + std::to_string(id) +
                " is out of range: expected 0 <= id < vocab_size " + std::to_string(vocab_size()) +
                " of '" + vocab_file_.string() + "'");
  }
  return id_to_token_[static_cast<std::size_t>(id)];
}

std::vector<std::string> WordPieceTokenizer::convert_ids_to_tokens(std::span<const int64_t> ids,
                                                                   bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (skip_special_tokens && is_special_id(id)) continue;
    tokens.push_back(convert_id_to_token(id));
  }
  return tokens;
}

std::string WordPieceTokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens,
                                       bool clean_up_tokenization_spaces) const {
  // convert_tokens_to_string: " ".join(tokens).replace(" ##", "").strip()
  const std::vector<std::string> tokens = convert_ids_to_tokens(ids, skip_special_tokens);
  std::string text;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) text += ' ';
    text += tokens[i];
  }
  unicode::replace_all(text, " ##", "");
  constexpr const char* kSpace = " \t\n\r\f\v";
  const auto first = text.find_first_not_of(kSpace);
  text = first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  return clean_up_tokenization_spaces ? clean_up_tokenization(text) : text;
}

}  // namespace lazytrain::data
