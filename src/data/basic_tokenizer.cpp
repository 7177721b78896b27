#include "data/basic_tokenizer.h"

#include "data/unicode_text.h"

namespace lazytrain::data {

namespace u = unicode;

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text) const {
  const std::u32string decoded = u::decode_utf8(text, "BasicTokenizer");

  // _clean_text and _tokenize_chinese_chars.
  std::u32string cleaned;
  cleaned.reserve(decoded.size());
  for (char32_t cp : decoded) {
    if (cp == 0 || cp == 0xFFFD || u::is_bert_control(cp)) continue;
    if (u::is_bert_whitespace(cp)) {
      cleaned.push_back(U' ');
    } else if (options_.tokenize_chinese_chars && u::is_cjk_char(cp)) {
      cleaned.push_back(U' ');
      cleaned.push_back(cp);
      cleaned.push_back(U' ');
    } else {
      cleaned.push_back(cp);
    }
  }

  const bool strip = options_.strip_accents.value_or(options_.do_lower_case);
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos < cleaned.size()) {
    // whitespace_tokenize: Python str.split().
    while (pos < cleaned.size() && u::is_python_space(cleaned[pos])) ++pos;
    std::size_t end = pos;
    while (end < cleaned.size() && !u::is_python_space(cleaned[end])) ++end;
    if (end == pos) break;
    std::u32string word = cleaned.substr(pos, end - pos);
    pos = end;

    if (options_.do_lower_case) word = u::to_lower(word);
    if (strip) word = u::strip_accents(word);

    // _run_split_on_punc.
    std::u32string current;
    for (char32_t cp : word) {
      if (u::is_bert_punctuation(cp)) {
        if (!current.empty()) words.push_back(u::encode_utf8(current));
        current.clear();
        words.push_back(u::encode_utf8(std::u32string(1, cp)));
      } else {
        current.push_back(cp);
      }
    }
    if (!current.empty()) words.push_back(u::encode_utf8(current));
  }
  return words;
}

}  // namespace lazytrain::data
