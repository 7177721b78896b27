// Unicode helpers for the tokenizers and text datasets: UTF-8 decoding and
// encoding, and the character classes Hugging Face's BERT tokenizer and
// Python's str methods use. Character data comes from utf8proc (Debian package
// libutf8proc-dev), so no ICU is needed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lazytrain::data::unicode {

// Sentinel returned by find_invalid_utf8 when the text is valid.
inline constexpr std::size_t kValidUtf8 = static_cast<std::size_t>(-1);

// Returns the byte offset of the first byte that does not start a valid UTF-8
// sequence (overlong forms, surrogates and code points above U+10FFFF are
// invalid, as in Python's strict 'utf-8' codec), or kValidUtf8.
std::size_t find_invalid_utf8(std::string_view text);

// The text with each invalid part replaced by U+FFFD, as Python's
// bytes.decode("utf-8", errors="replace") does: every maximal prefix of a
// valid sequence that breaks off (a multi-byte character cut in two by
// byte-level BPE tokens, say) becomes one U+FFFD, and so does every byte that
// starts nothing. Valid text comes back unchanged.
std::string replace_invalid_utf8(std::string_view text);

// Decodes UTF-8 into code points. Throws lazytrain::Error
// "[<op>] invalid UTF-8 at byte offset N: expected UTF-8 text" when the text is
// not valid UTF-8; `op` names the caller in that message.
std::u32string decode_utf8(std::string_view text, std::string_view op);

// Encodes code points as UTF-8 (appending to `out`, or returning a new string).
void append_utf8(char32_t cp, std::string& out);
std::string encode_utf8(std::u32string_view text);

// Splits text into lines the way Python reads a text file opened with
// newline=None and then strips the line ends: "\n", "\r\n" and "\r" all end a
// line, and a final line end does not start another (empty) line.
std::vector<std::string_view> split_lines(std::string_view text);

// Python str.replace(from, to): non-overlapping, left to right.
void replace_all(std::string& s, std::string_view from, std::string_view to);

// HF BasicTokenizer._is_whitespace: ' ', \t, \n, \r or category Zs.
bool is_bert_whitespace(char32_t cp);
// HF BasicTokenizer._is_control: category C* except \t, \n, \r.
bool is_bert_control(char32_t cp);
// HF BasicTokenizer._is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126, or category P*.
bool is_bert_punctuation(char32_t cp);
// HF BasicTokenizer._is_chinese_char: the CJK Unified Ideographs blocks.
bool is_cjk_char(char32_t cp);
// Python str.isspace() for one character (what str.split() and str.strip() use).
bool is_python_space(char32_t cp);
// Unicode general category L* (\p{L} of a regular expression): Lu, Ll, Lt, Lm, Lo.
bool is_letter(char32_t cp);
// Unicode general category N* (\p{N}): Nd, Nl, No.
bool is_number(char32_t cp);
// Unicode general category Mn (nonspacing mark).
bool is_nonspacing_mark(char32_t cp);

// Python str.lower(): full lower-case mapping, including U+0130 -> "i\u0307"
// and the Final_Sigma rule (Σ -> ς at the end of a word).
std::u32string to_lower(std::u32string_view text);

// HF BasicTokenizer._run_strip_accents: NFD decomposition, then drop every
// character of category Mn.
std::u32string strip_accents(std::u32string_view text);

}  // namespace lazytrain::data::unicode
