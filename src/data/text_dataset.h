// Text datasets for masked-language-model training, reproducing Hugging Face
// examples/pytorch/language-modeling/run_mlm.py: reading a text file the way the
// `datasets` "text" loader does, tokenize_function, group_texts, and the
// --line_by_line path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "data/example.h"
#include "data/tokenizer.h"

namespace lazytrain::data {

// HF datasets.Dataset.map(batched=True) default batch_size: group_texts drops
// the remainder of every batch of this many lines, not only at the very end.
inline constexpr std::size_t kDatasetsMapBatchSize = 1000;

// What read_text_lines does with empty and whitespace-only lines. Hugging
// Face's run_mlm.py keeps them on the grouped path (the `datasets` "text"
// loader yields every line, and each blank one tokenizes to [CLS] [SEP], or
// <s> </s>) and skips them with --line_by_line.
enum class BlankLines { kKeep, kSkip };

// Python `not line.strip()`: the line is empty or all whitespace
// (str.isspace: e.g. " ", "\t", U+00A0, U+3000). Throws Error on invalid UTF-8.
bool is_blank_line(std::string_view line);

// Reads a UTF-8 text file into lines like load_dataset("text"): lines end at
// "\n", "\r\n" or "\r", line ends removed, no empty line after a final line
// end. Blank lines (is_blank_line) are kept or skipped as `blank_lines` says.
// Throws lazytrain::Error naming the file when it is missing or unreadable, has
// no non-blank line, or is not valid UTF-8 (with line number and byte offset).
std::vector<std::string> read_text_lines(const std::filesystem::path& path, BlankLines blank_lines);

// The `datasets` "text" loader with keep_linebreaks=True (run_clm.py's
// default): every line, blank ones included, keeps its line end, read in
// Python's text mode ("\r\n" and "\r" become "\n"; the last line has none when
// the file does not end with one), so a byte-level tokenizer encodes the
// breaks. Errors as read_text_lines.
std::vector<std::string> read_text_lines_keeping_breaks(const std::filesystem::path& path);

// run_mlm tokenize_function (non line-by-line): every line encoded WITH special
// tokens (BERT [CLS] ... [SEP], RoBERTa <s> ... </s>; a blank line gives only
// those two), no truncation, no padding; attention_mask all 1,
// special_tokens_mask 1 at the tokens build_inputs_with_special_tokens added.
std::vector<Example> tokenize_lines(const std::vector<std::string>& lines, const Tokenizer& tokenizer);

// run_mlm group_texts: within each batch of `map_batch_size` consecutive
// examples (0 = all at once), concatenate all columns, drop the remainder
// (total_length // block_size * block_size) and cut blocks of block_size.
// Throws Error when block_size < 1 or an example's columns differ in length.
std::vector<Example> group_texts(const std::vector<Example>& examples, int64_t block_size,
                                 std::size_t map_batch_size = kDatasetsMapBatchSize);

// The same for input_ids alone.
std::vector<std::vector<int64_t>> group_texts(const std::vector<std::vector<int64_t>>& input_ids,
                                              int64_t block_size,
                                              std::size_t map_batch_size = kDatasetsMapBatchSize);

// run_mlm --line_by_line tokenize_function: skips blank lines (is_blank_line),
// then tokenizer(line, truncation=True, max_length=max_seq_length,
// padding="max_length" if pad_to_max_length else False,
// return_special_tokens_mask=True): the special tokens around the first
// max_seq_length - num_special_tokens_to_add() tokens ([CLS] ... [SEP] or
// <s> ... </s>); when padding, the pad token ([PAD] or <pad>) up to
// max_seq_length with attention_mask 0 and special_tokens_mask 1. Throws Error
// when max_seq_length is smaller than num_special_tokens_to_add() (2).
std::vector<Example> tokenize_line_by_line(const std::vector<std::string>& lines, const Tokenizer& tokenizer,
                                           int64_t max_seq_length, bool pad_to_max_length);

}  // namespace lazytrain::data
