// replace_invalid_utf8 against Python's bytes.decode("utf-8", errors="replace")
// (the expected strings were printed by CPython 3.11): one U+FFFD for each
// maximal invalid subpart, valid text unchanged.
#include "data/unicode_text.h"

#include <gtest/gtest.h>

namespace lazytrain::data::unicode {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(ReplaceInvalidUtf8, MatchesPythonsErrorsReplace) {
  EXPECT_EQ(replace_invalid_utf8("plain, caf\xC3\xA9 \xF0\x9F\x98\x80"), "plain, caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(replace_invalid_utf8("\xE5\x8A"), kReplacement);  // a CJK character cut after two bytes
  EXPECT_EQ(replace_invalid_utf8("a\xE5\x8A b"), "a" + kReplacement + " b");
  EXPECT_EQ(replace_invalid_utf8("\xFF\xFE"), kReplacement + kReplacement);
  EXPECT_EQ(replace_invalid_utf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // a surrogate: no valid prefix
  EXPECT_EQ(replace_invalid_utf8("\xF0\x9F\x98"), kReplacement);                                // an emoji cut short
  EXPECT_EQ(replace_invalid_utf8("\xC3\xA9\x80z"), "\xC3\xA9" + kReplacement + "z");
  EXPECT_EQ(replace_invalid_utf8("\xF4\x90\x80\x80"), kReplacement + kReplacement + kReplacement + kReplacement);  // above U+10FFFF
  EXPECT_EQ(replace_invalid_utf8(""), "");
}

}  // namespace
}  // namespace lazytrain::data::unicode
