#include "data/unicode_text.h"

#include <utf8proc.h>

#include "core/error.h"

namespace lazytrain::data::unicode {
namespace {

// Decodes one sequence at `pos`; returns its length in bytes (0 when invalid).
std::size_t decode_one(std::string_view text, std::size_t pos, char32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(pos);
  std::size_t len;
  char32_t min;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (pos + len > text.size()) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    const unsigned char b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

utf8proc_category_t category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

// Unicode Cased property (Lowercase, Uppercase or Lt), as Python's Final_Sigma uses it.
bool is_cased(char32_t cp) {
  const auto c = category(cp);
  if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT) return true;
  const auto i = static_cast<utf8proc_int32_t>(cp);
  return utf8proc_tolower(i) != i || utf8proc_toupper(i) != i;
}

// Unicode Case_Ignorable: Mn, Me, Cf, Lm, Sk, or Word_Break MidLetter/MidNumLet/Single_Quote.
bool is_case_ignorable(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  switch (cp) {
    case 0x27: case 0x2E: case 0x3A: case 0xB7: case 0x387: case 0x55F: case 0x5F4:
    case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52:
    case 0xFE55: case 0xFF07: case 0xFF0E: case 0xFF1A:
      return true;
    default:
      return false;
  }
}

// Python's handle_capital_sigma: Σ is final when a cased letter precedes it and
// none follows it (skipping case-ignorable characters both ways).
bool is_final_sigma(std::u32string_view text, std::size_t i) {
  std::size_t j = i;
  while (j > 0 && is_case_ignorable(text[j - 1])) --j;
  if (j == 0 || !is_cased(text[j - 1])) return false;
  std::size_t k = i + 1;
  while (k < text.size() && is_case_ignorable(text[k])) ++k;
  return k == text.size() || !is_cased(text[k]);
}

}  // namespace

std::size_t find_invalid_utf8(std::string_view text) {
  char32_t cp;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t len = decode_one(text, pos, cp);
    if (len == 0) return pos;
    pos += len;
  }
  return kValidUtf8;
}

namespace {
// How many bytes of a sequence starting at text[pos] are a valid prefix (Unicode
// Table 3-7: the second byte's range depends on the lead), at least 1.
std::size_t valid_prefix_length(std::string_view text, std::size_t pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 1;
  }
  std::size_t n = 1;
  for (; n < length && pos + n < text.size(); ++n) {
    const unsigned char b = byte(pos + n);
    if (b < (n == 1 ? low : 0x80) || b > (n == 1 ? high : 0xBF)) break;
  }
  return n;
}
}  // namespace

std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t cp;
  for (std::size_t pos = 0; pos < text.size();) {
    if (const std::size_t len = decode_one(text, pos, cp); len > 0) {
      out.append(text.substr(pos, len));
      pos += len;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      pos += valid_prefix_length(text, pos);
    }
  }
  return out;
}

std::u32string decode_utf8(std::string_view text, std::string_view op) {
  std::u32string out;
  out.reserve(text.size());
  char32_t cp;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t len = decode_one(text, pos, cp);
    if (len == 0) {
      throw Error("[" + std::string(op) + "] invalid UTF-8 at byte offset " + std::to_string(pos) +
                  ": expected UTF-8 text");
    }
    out.push_back(cp);
    pos += len;
  }
  return out;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_utf8(cp, out);
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t pos = 0;
  for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    lines.push_back(text.substr(start, i - start));
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

bool is_bert_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return category(cp) == UTF8PROC_CATEGORY_ZS;
}

bool is_bert_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
      return true;
    default:
      return false;
  }
}

bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_cjk_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_python_space(char32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20)) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_nonspacing_mark(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_letter(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: return true;
    default: return false;
  }
}

bool is_number(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: return true;
    default: return false;
  }
}

std::u32string to_lower(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char32_t cp = text[i];
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp);
    } else if (cp == 0x130) {  // SpecialCasing: LATIN CAPITAL LETTER I WITH DOT ABOVE
      out.push_back(U'i');
      out.push_back(0x307);
    } else if (cp == 0x3A3) {  // GREEK CAPITAL LETTER SIGMA
      out.push_back(is_final_sigma(text, i) ? 0x3C2 : 0x3C3);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
  }
  return out;
}

std::u32string strip_accents(std::u32string_view text) {
  // utf8proc_decompose does NFD: canonical decomposition, then canonical ordering.
  const std::string utf8 = encode_utf8(text);
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  const auto size = static_cast<utf8proc_ssize_t>(utf8.size());
  std::vector<utf8proc_int32_t> decomposed(text.size() + 8);
  for (;;) {
    const auto n = utf8proc_decompose(bytes, size, decomposed.data(),
                                      static_cast<utf8proc_ssize_t>(decomposed.size()),
                                      UTF8PROC_DECOMPOSE);
    if (n < 0) throw Error(std::string("[strip_accents] utf8proc: ") + utf8proc_errmsg(n));
    if (static_cast<std::size_t>(n) <= decomposed.size()) {
      decomposed.resize(static_cast<std::size_t>(n));
      break;
    }
    decomposed.resize(static_cast<std::size_t>(n));
  }
  std::u32string out;
  out.reserve(decomposed.size());
  for (auto cp : decomposed) {
    if (!is_nonspacing_mark(static_cast<char32_t>(cp))) out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

}  // namespace lazytrain::data::unicode
