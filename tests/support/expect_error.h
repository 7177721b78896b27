// expect_error: the test fails unless f() throws lazytrain::Error whose message
// names "[op]" and holds `text` (the op's own words, torch's where it has them).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

namespace lazytrain {

inline void expect_error(const std::function<void()>& f, const std::string& op, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one naming " << op;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[" + op + "]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace lazytrain
