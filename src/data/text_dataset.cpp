#include "data/text_dataset.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "data/unicode_text.h"

namespace lazytrain::data {
namespace {

// 1-based line number of byte `offset`, counting "\n", "\r\n" and "\r" as line ends.
std::size_t line_of(std::string_view text, std::size_t offset) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))) ++line;
  }
  return line;
}

// The example of `ids` wrapped in the tokenizer's special tokens: attention_mask
// all 1, special_tokens_mask 1 at the tokens build_inputs_with_special_tokens
// added (HF get_special_tokens_mask(already_has_special_tokens=False)).
Example with_special_tokens(const Tokenizer& tokenizer, std::span<const int64_t> ids) {
  Example ex;
  ex.input_ids = tokenizer.build_inputs_with_special_tokens(ids);
  ex.attention_mask.assign(ex.input_ids.size(), 1);
  ex.special_tokens_mask.assign(ex.input_ids.size(), 1);
  // Where `ids` sit among the added tokens: found once per tokenizer with a probe id.
  const std::vector<int64_t> probe = tokenizer.build_inputs_with_special_tokens(std::vector<int64_t>{-1});
  const auto prefix = static_cast<std::size_t>(std::find(probe.begin(), probe.end(), -1) - probe.begin());
  std::fill_n(ex.special_tokens_mask.begin() + static_cast<std::ptrdiff_t>(prefix), ids.size(), uint8_t{0});
  return ex;
}

// Concatenates [begin, end) of `columns` and cuts whole blocks of block_size.
template <typename T>
void append_blocks(const std::vector<const std::vector<T>*>& columns, int64_t block_size,
                   std::vector<std::vector<T>>& blocks) {
  std::vector<T> concatenated;
  for (const auto* column : columns) concatenated.insert(concatenated.end(), column->begin(), column->end());
  const auto block = static_cast<std::size_t>(block_size);
  const std::size_t total = concatenated.size() / block * block;
  for (std::size_t i = 0; i < total; i += block) {
    blocks.emplace_back(concatenated.begin() + static_cast<std::ptrdiff_t>(i),
                        concatenated.begin() + static_cast<std::ptrdiff_t>(i + block));
  }
}

void check_block_size(int64_t block_size) {
  if (block_size < 1) {
    throw Error("[group_texts] block_size is " + std::to_string(block_size) +
                ": expected a positive block size (run_mlm --max_seq_length)");
  }
}

}  // namespace

bool is_blank_line(std::string_view line) {
  for (char32_t cp : unicode::decode_utf8(line, "is_blank_line")) {
    if (!unicode::is_python_space(cp)) return false;
  }
  return true;
}

std::vector<std::string> read_text_lines_keeping_breaks(const std::filesystem::path& path) {
  read_text_lines(path, BlankLines::kKeep);  // the checks: readable, UTF-8, some text
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // Python's text mode (universal newlines): "\r\n" and "\r" end a line as "\n" does, and read as "\n".
  std::vector<std::string> lines;
  std::string line;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') {
      line.push_back(text[i]);
      continue;
    }
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    lines.push_back(std::move(line) + "\n");
    line.clear();
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> read_text_lines(const std::filesystem::path& path, BlankLines blank_lines) {
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, ec)) {
    throw Error("[read_text_lines] cannot open '" + path.string() +
                "': expected a UTF-8 text file with one example per line");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (const auto bad = unicode::find_invalid_utf8(text); bad != unicode::kValidUtf8) {
    throw Error("[read_text_lines] '" + path.string() + "' has invalid UTF-8 on line " +
                std::to_string(line_of(text, bad)) + " (byte offset " + std::to_string(bad) +
                "): expected a UTF-8 text file");
  }
  std::vector<std::string> lines;
  bool any_text = false;
  for (std::string_view line : unicode::split_lines(text)) {
    const bool blank = is_blank_line(line);
    any_text = any_text || !blank;
    if (!blank || blank_lines == BlankLines::kKeep) lines.emplace_back(line);
  }
  if (!any_text) {
    throw Error("[read_text_lines] '" + path.string() +
                "' has no non-empty line: expected a UTF-8 text file with one example per line");
  }
  return lines;
}

std::vector<Example> tokenize_lines(const std::vector<std::string>& lines, const Tokenizer& tokenizer) {
  std::vector<Example> examples;
  examples.reserve(lines.size());
  for (const std::string& line : lines) {
    examples.push_back(with_special_tokens(tokenizer, tokenizer.encode(line, /*add_special_tokens=*/false)));
  }
  return examples;
}

std::vector<std::vector<int64_t>> group_texts(const std::vector<std::vector<int64_t>>& input_ids,
                                              int64_t block_size, std::size_t map_batch_size) {
  check_block_size(block_size);
  const std::size_t step = map_batch_size == 0 ? std::max<std::size_t>(input_ids.size(), 1) : map_batch_size;
  std::vector<std::vector<int64_t>> blocks;
  for (std::size_t begin = 0; begin < input_ids.size(); begin += step) {
    std::vector<const std::vector<int64_t>*> batch;
    for (std::size_t i = begin; i < std::min(begin + step, input_ids.size()); ++i) batch.push_back(&input_ids[i]);
    append_blocks(batch, block_size, blocks);
  }
  return blocks;
}

std::vector<Example> group_texts(const std::vector<Example>& examples, int64_t block_size,
                                 std::size_t map_batch_size) {
  check_block_size(block_size);
  const std::size_t step = map_batch_size == 0 ? std::max<std::size_t>(examples.size(), 1) : map_batch_size;
  std::vector<Example> out;
  for (std::size_t begin = 0; begin < examples.size(); begin += step) {
    std::vector<const std::vector<int64_t>*> ids, attention;
    std::vector<const std::vector<uint8_t>*> special;
    for (std::size_t i = begin; i < std::min(begin + step, examples.size()); ++i) {
      const Example& ex = examples[i];
      if (ex.attention_mask.size() != ex.input_ids.size() ||
          ex.special_tokens_mask.size() != ex.input_ids.size()) {
        throw Error("[group_texts] example " + std::to_string(i) + " has " +
                    std::to_string(ex.input_ids.size()) + " input_ids, " +
                    std::to_string(ex.attention_mask.size()) + " attention_mask and " +
                    std::to_string(ex.special_tokens_mask.size()) +
                    " special_tokens_mask entries: expected equal lengths");
      }
      ids.push_back(&ex.input_ids);
      attention.push_back(&ex.attention_mask);
      special.push_back(&ex.special_tokens_mask);
    }
    std::vector<std::vector<int64_t>> id_blocks, attention_blocks;
    std::vector<std::vector<uint8_t>> special_blocks;
    append_blocks(ids, block_size, id_blocks);
    append_blocks(attention, block_size, attention_blocks);
    append_blocks(special, block_size, special_blocks);
    for (std::size_t b = 0; b < id_blocks.size(); ++b) {
      out.push_back({std::move(id_blocks[b]), std::move(attention_blocks[b]), std::move(special_blocks[b])});
    }
  }
  return out;
}

std::vector<Example> tokenize_line_by_line(const std::vector<std::string>& lines, const Tokenizer& tokenizer,
                                           int64_t max_seq_length, bool pad_to_max_length) {
  const int64_t specials = tokenizer.num_special_tokens_to_add();
  if (max_seq_length < specials) {
    throw Error("[tokenize_line_by_line] max_seq_length is " + std::to_string(max_seq_length) + ": expected at least " +
                std::to_string(specials) + " (room for the special tokens)");
  }
  const auto max_len = static_cast<std::size_t>(max_seq_length);
  const auto room = static_cast<std::size_t>(max_seq_length - specials);
  std::vector<Example> examples;
  for (const std::string& line : lines) {
    if (is_blank_line(line)) continue;
    std::vector<int64_t> ids = tokenizer.encode(line, /*add_special_tokens=*/false);
    if (ids.size() > room) ids.resize(room);  // truncation keeps room for the closing special token
    Example ex = with_special_tokens(tokenizer, ids);
    if (pad_to_max_length) {
      ex.input_ids.resize(max_len, tokenizer.pad_token_id());
      ex.attention_mask.resize(max_len, 0);
      ex.special_tokens_mask.resize(max_len, 1);
    }
    examples.push_back(std::move(ex));
  }
  return examples;
}

}  // namespace lazytrain::data
