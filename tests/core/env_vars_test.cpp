// The environment is parsed in one place (core/env_vars.h) into the values that
// fill option structs; a malformed value is an error naming the variable.
#include "core/env_vars.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "backend/compiler.h"
#include "core/error.h"

namespace lazytrain {
namespace {

EnvironmentVariables parse(const std::map<std::string, std::string>& vars) {
  return parse_environment([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(Environment, ReadsEachVariable) {
  const EnvironmentVariables none = parse({});
  EXPECT_EQ(none.backend, "");
  EXPECT_EQ(none.cache_dir, "");
  EXPECT_EQ(none.profile_dir, "");
  EXPECT_FALSE(none.profile_stderr);
  EXPECT_FALSE(none.graph_size_warning.has_value());
  const EnvironmentVariables all = parse({{"LAZYTRAIN_BACKEND", "interpreter"},
                                          {"LAZYTRAIN_CACHE_DIR", "/tmp/cc"},
                                          {"LAZYTRAIN_DUMP_HLO", "/tmp/dump"},
                                          {"LAZYTRAIN_PROFILE", "/tmp/trace"},
                                          {"LAZYTRAIN_PROFILE_STDERR", ""},
                                          {"LAZYTRAIN_GRAPH_SIZE_WARNING", "1234"},
                                          {"CXX", "g++-12"}});
  EXPECT_EQ(all.backend, "interpreter");
  EXPECT_EQ(all.cache_dir, "/tmp/cc");
  EXPECT_EQ(all.dump_hlo, "/tmp/dump");
  EXPECT_EQ(all.profile_dir, "/tmp/trace");
  EXPECT_TRUE(all.profile_stderr);  // set, whatever its value
  EXPECT_EQ(all.graph_size_warning, 1234u);
  EXPECT_EQ(all.cxx, "g++-12");
  EXPECT_EQ(parse({{"LAZYTRAIN_GRAPH_SIZE_WARNING", "0"}}).graph_size_warning, 0u);
}

TEST(Environment, MalformedNumberNamesTheVariable) {
  for (const char* bad : {"many", "-5", "12k", " 3"}) {
    try {
      parse({{"LAZYTRAIN_GRAPH_SIZE_WARNING", bad}});
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("LAZYTRAIN_GRAPH_SIZE_WARNING='" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Environment, AsyncCollectivesIsOneZeroOrUnset) {
  EXPECT_FALSE(parse({}).async_collectives.has_value());  // the compiler decides by the job's processes
  EXPECT_EQ(parse({{"LAZYTRAIN_ASYNC_COLLECTIVES", "1"}}).async_collectives, true);
  EXPECT_EQ(parse({{"LAZYTRAIN_ASYNC_COLLECTIVES", "0"}}).async_collectives, false);
  try {
    parse({{"LAZYTRAIN_ASYNC_COLLECTIVES", "yes"}});
    FAIL() << "accepted 'yes'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LAZYTRAIN_ASYNC_COLLECTIVES='yes': expected 1"), std::string::npos) << e.what();
  }
}

TEST(Environment, OmpNumThreadsIsTheFirstNumberOfOpenMPsList) {
  EXPECT_FALSE(parse({}).omp_num_threads.has_value());
  EXPECT_EQ(parse({{"OMP_NUM_THREADS", "3"}}).omp_num_threads, 3);
  EXPECT_EQ(parse({{"OMP_NUM_THREADS", "2,1"}}).omp_num_threads, 2);  // nested levels: the outer one
  EXPECT_EQ(parse({{"OMP_NUM_THREADS", " 2 "}}).omp_num_threads, 2);  // blanks, as libgomp allows
  for (const char* bad : {"0", "-1", "two", "2x", "+2", "3,x", "2,", "1.5"}) {
    try {
      parse({{"OMP_NUM_THREADS", bad}});
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("OMP_NUM_THREADS='" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Environment, FillsCompilerOptionsDefaults) {
  // The process's own environment, as parsed once: the options mirror it.
  const backend::CompilerOptions o = backend::CompilerOptions::from_environment();
  EXPECT_EQ(o.cache_dir, environment().cache_dir);
  EXPECT_EQ(o.dump_dir, environment().dump_hlo);
  EXPECT_EQ(o.profile, environment().profile_stderr);
  EXPECT_EQ(o.cxx, environment().cxx);
}

}  // namespace
}  // namespace lazytrain
