#include "data/gpt2_tokenizer.h"

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/unicode_text.h"

namespace lazytrain::data {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("[GPT2Tokenizer] cannot open '" + path + "': expected a GPT-2 tokenizer directory (vocab.json, merges.txt)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// bytes_to_unicode (GPT-2's encoder.py): the printable bytes stand for
// themselves, the others for the code points from 256 on, in byte order.
const std::vector<std::string>& byte_characters() {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      unicode::append_utf8(static_cast<char32_t>(printable ? b : next++), t[b]);
    }
    return t;
  }();
  return table;
}

// The inverse: a code point of a token -> its byte (-1 when none).
int byte_of(char32_t cp) {
  static const std::unordered_map<char32_t, int> inverse = [] {
    std::unordered_map<char32_t, int> m;
    for (int b = 0; b < 256; ++b) m[unicode::decode_utf8(byte_characters()[b], "GPT2Tokenizer")[0]] = b;
    return m;
  }();
  auto it = inverse.find(cp);
  return it == inverse.end() ? -1 : it->second;
}

enum class CharClass { kLetter, kNumber, kSpace, kOther };

struct Char {
  char32_t cp;     // kInvalid for a byte that does not start valid UTF-8
  size_t offset;   // in bytes
  size_t length;
  CharClass cls;
};
constexpr char32_t kInvalid = 0xFFFFFFFF;

// One character at `pos`: a valid UTF-8 sequence, or a single invalid byte.
Char next_char(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  char32_t cp = kInvalid;
  if (length > 0 && pos + length <= text.size()) {
    cp = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t k = 1; k < length && cp != kInvalid; ++k) {
      if ((byte(pos + k) & 0xC0) != 0x80) cp = kInvalid;
      else cp = (cp << 6) | (byte(pos + k) & 0x3F);
    }
    static const char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp != kInvalid && (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) cp = kInvalid;
  }
  if (cp == kInvalid) return {kInvalid, pos, 1, CharClass::kOther};
  const CharClass cls = unicode::is_python_space(cp) ? CharClass::kSpace
                        : unicode::is_letter(cp)     ? CharClass::kLetter
                        : unicode::is_number(cp)     ? CharClass::kNumber
                                                     : CharClass::kOther;
  return {cp, pos, length, cls};
}

}  // namespace

GPT2Tokenizer::GPT2Tokenizer(const std::string& path) {
  const std::string vocab_path = path + "/vocab.json", merges_path = path + "/merges.txt";
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(read_file(vocab_path));
  } catch (const nlohmann::json::exception& e) {
    throw Error("[GPT2Tokenizer] '" + vocab_path + "' is not valid JSON: " + e.what());
  }
  if (!vocab.is_object() || vocab.empty()) throw Error("[GPT2Tokenizer] '" + vocab_path + "': expected a JSON object of token -> id");
  tokens_.resize(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= static_cast<int64_t>(vocab.size())) {
      throw Error("[GPT2Tokenizer] '" + vocab_path + "': the id of token '" + token + "' is not an integer in [0, " +
                  std::to_string(vocab.size()) + ")");
    }
    const int64_t i = id.get<int64_t>();
    if (!tokens_[static_cast<size_t>(i)].empty()) throw Error("[GPT2Tokenizer] '" + vocab_path + "': id " + std::to_string(i) + " is used twice");
    tokens_[static_cast<size_t>(i)] = token;
    vocab_[token] = i;
  }
  auto eos = vocab_.find(kEndOfText);
  if (eos == vocab_.end()) throw Error("[GPT2Tokenizer] '" + vocab_path + "' has no " + std::string(kEndOfText) + " token");
  eos_id_ = eos->second;
  for (int b = 0; b < 256; ++b) {
    if (!vocab_.count(byte_characters()[b])) {
      throw Error("[GPT2Tokenizer] '" + vocab_path + "' lacks the token of byte " + std::to_string(b) + ": not a byte-level BPE vocabulary");
    }
  }
  merges_text_ = read_file(merges_path);
  std::istringstream lines(merges_text_);
  std::string line;
  int64_t rank = 0, line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos) {
      throw Error("[GPT2Tokenizer] '" + merges_path + "' line " + std::to_string(line_number) + ": expected two tokens separated by one space");
    }
    std::string a = line.substr(0, space), b = line.substr(space + 1);
    if (!vocab_.count(a) || !vocab_.count(b) || !vocab_.count(a + b)) {
      throw Error("[GPT2Tokenizer] '" + merges_path + "' line " + std::to_string(line_number) + ": merge '" + line +
                  "' names a token that vocab.json lacks");
    }
    merge_rank_.emplace(std::make_pair(std::move(a), std::move(b)), rank++);
  }
}

std::vector<std::string_view> GPT2Tokenizer::pre_tokenize(std::string_view text) {
  std::vector<Char> c;
  for (size_t pos = 0; pos < text.size();) {
    c.push_back(next_char(text, pos));
    pos += c.back().length;
  }
  const size_t n = c.size();
  std::vector<std::string_view> out;
  auto emit = [&](size_t from, size_t to) { out.push_back(text.substr(c[from].offset, c[to - 1].offset + c[to - 1].length - c[from].offset)); };
  for (size_t i = 0; i < n;) {
    // 's|'t|'re|'ve|'m|'ll|'d
    if (c[i].cp == '\'' && i + 1 < n) {
      const char32_t a = c[i + 1].cp, b = i + 2 < n ? c[i + 2].cp : 0;
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        emit(i, i + 3);
        i += 3;
        continue;
      }
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        emit(i, i + 2);
        i += 2;
        continue;
      }
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
    const size_t k = i + (c[i].cp == ' ' ? 1 : 0);
    if (k < n && c[k].cls != CharClass::kSpace) {
      const CharClass cls = c[k].cls;
      size_t end = k;
      while (end < n && c[end].cls == cls) ++end;
      emit(i, end);
      i = end;
      continue;
    }
    // \s+(?!\S) | \s+ : a run of whitespace, less its last character when a non-space follows.
    size_t end = i;
    while (end < n && c[end].cls == CharClass::kSpace) ++end;
    if (end < n && end - 1 > i) --end;
    emit(i, end);
    i = end;
  }
  return out;
}

std::vector<int64_t> GPT2Tokenizer::bpe(std::string_view pre_token) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(std::string(pre_token)); it != cache_.end()) return it->second;
  }
  std::vector<std::string> word;
  for (unsigned char b : pre_token) word.push_back(byte_characters()[b]);
  while (word.size() > 1) {
    int64_t best = INT64_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      auto it = merge_rank_.find({word[i], word[i + 1]});
      if (it != merge_rank_.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == INT64_MAX) break;
    // Every occurrence of the best pair, left to right (GPT-2's bpe()).
    const std::string first = word[at], second = word[at + 1];
    std::vector<std::string> merged;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        merged.push_back(first + second);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word = std::move(merged);
  }
  std::vector<int64_t> ids;
  ids.reserve(word.size());
  for (const std::string& token : word) ids.push_back(vocab_.at(token));
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() < 100000) cache_.emplace(std::string(pre_token), ids);
  return ids;
}

std::vector<int64_t> GPT2Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int64_t> ids;
  const std::string_view special(kEndOfText);
  size_t start = 0;
  while (start <= text.size()) {
    size_t found = text.find(special, start);
    const std::string_view piece = text.substr(start, (found == std::string_view::npos ? text.size() : found) - start);
    for (std::string_view pre_token : pre_tokenize(piece)) {
      const std::vector<int64_t> part = bpe(pre_token);
      ids.insert(ids.end(), part.begin(), part.end());
    }
    if (found == std::string_view::npos) break;
    ids.push_back(eos_id_);
    start = found + special.size();
  }
  return add_special_tokens ? build_inputs_with_special_tokens(ids) : ids;
}

std::vector<int64_t> GPT2Tokenizer::build_inputs_with_special_tokens(std::span<const int64_t> ids) const {
  return {ids.begin(), ids.end()};  // GPT-2 adds none (add_bos_token = False)
}

std::string GPT2Tokenizer::convert_id_to_token(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error("[GPT2Tokenizer] id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  }
  return tokens_[static_cast<size_t>(id)];
}

std::string GPT2Tokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens) const {
  std::string out;
  for (int64_t id : ids) {
    const std::string token = convert_id_to_token(id);
    if (id == eos_id_) {
      if (!skip_special_tokens) out += token;
      continue;
    }
    for (char32_t cp : unicode::decode_utf8(token, "GPT2Tokenizer.decode")) {
      const int b = byte_of(cp);
      if (b < 0) {
        unicode::append_utf8(cp, out);  // not a byte character (an added token): as it is
      } else {
        out.push_back(static_cast<char>(b));
      }
    }
  }
  return out;
}

void GPT2Tokenizer::save_pretrained(const std::string& directory) const {
  std::filesystem::create_directories(directory);
  nlohmann::ordered_json vocab;
  for (size_t id = 0; id < tokens_.size(); ++id) vocab[tokens_[id]] = id;
  write_file_atomically(directory + "/vocab.json", vocab.dump());
  write_file_atomically(directory + "/merges.txt", merges_text_);
}

}  // namespace lazytrain::data
