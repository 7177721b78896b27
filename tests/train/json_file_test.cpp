// JSON as Python's json module writes it: Infinity, -Infinity and NaN for
// non-finite numbers (not null), read back by parse_json.
#include "train/json_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <unistd.h>

#include "core/error.h"

namespace lazytrain::train {
namespace {

using json = nlohmann::json;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonFile, WritesNonFiniteNumbersAsPythonDoes) {
  json metrics = {{"eval_loss", 812.5}, {"perplexity", kInf}, {"low", -kInf}, {"bad", std::nan("")},
                  {"step", 300}, {"name", "Infinity"}, {"empty", json::object()}, {"log", json::array({1.5, kInf})}};
  // json.dumps(metrics, indent=2, sort_keys=True) in Python gives this text.
  EXPECT_EQ(dump_json(metrics, 2),
            "{\n"
            "  \"bad\": NaN,\n"
            "  \"empty\": {},\n"
            "  \"eval_loss\": 812.5,\n"
            "  \"log\": [\n"
            "    1.5,\n"
            "    Infinity\n"
            "  ],\n"
            "  \"low\": -Infinity,\n"
            "  \"name\": \"Infinity\",\n"
            "  \"perplexity\": Infinity,\n"
            "  \"step\": 300\n"
            "}");
  EXPECT_EQ(dump_json({{"loss", kInf}, {"lr", 0.001}}), "{\"loss\":Infinity,\"lr\":0.001}");
  // Finite values are exactly nlohmann's.
  const json finite = {{"a", {1, 2.25, "x\"y\\n", nullptr, true}}, {"b", json::array()}, {"c", 1e-300}};
  EXPECT_EQ(dump_json(finite, 2), finite.dump(2));
  EXPECT_EQ(dump_json(finite), finite.dump());
  EXPECT_EQ(dump_json(finite, 4), finite.dump(4));
}

TEST(JsonFile, ReadsBackWhatItWrites) {
  json metrics = {{"perplexity", kInf}, {"low", -kInf}, {"bad", std::nan("")}, {"eval_loss", 812.5},
                  {"text", "NaN and Infinity stay \"text\""}, {"sNaN", "s"}, {"nested", {{"x", json::array({-kInf, 2})}}}};
  for (int indent : {-1, 0, 2}) {
    const json back = parse_json(dump_json(metrics, indent), "test");
    EXPECT_EQ(back.at("perplexity").get<double>(), kInf);
    EXPECT_EQ(back.at("low").get<double>(), -kInf);
    EXPECT_TRUE(std::isnan(back.at("bad").get<double>()));
    EXPECT_EQ(back.at("eval_loss").get<double>(), 812.5);
    EXPECT_EQ(back.at("text"), "NaN and Infinity stay \"text\"");
    EXPECT_EQ(back.at("sNaN"), "s");
    EXPECT_EQ(back.at("nested").at("x")[0].get<double>(), -kInf);
    EXPECT_EQ(back.at("nested").at("x")[1], 2);
    EXPECT_EQ(dump_json(back, 2), dump_json(metrics, 2));
  }
  // Python's own output (json.dumps({"a": float("inf"), "b": [float("nan")]})).
  const json python = parse_json("{\"a\": Infinity, \"b\": [NaN], \"c\": -Infinity}", "python");
  EXPECT_EQ(python.at("a").get<double>(), kInf);
  EXPECT_TRUE(std::isnan(python.at("b")[0].get<double>()));
  EXPECT_EQ(python.at("c").get<double>(), -kInf);
  EXPECT_EQ(parse_json("[]", "x"), json::array());
  EXPECT_EQ(parse_json("\"Infinity\"", "x"), "Infinity");
}

TEST(JsonFile, ErrorsNameTheSourceAndTheOriginalPosition) {
  // The column is the text's own, whatever was rewritten before it.
  EXPECT_EQ(error_of([] { parse_json("{\"a\": Infinity, \"b\": NaN,, }", "'x.json'"); }),
            "[parse_json] 'x.json': [json.exception.parse_error.101] parse error at line 1, column 26: syntax error while "
            "parsing object key - unexpected ','; expected string literal");
  EXPECT_NE(error_of([] { parse_json("{\"a\": Infinit}", "'y.json'"); }).find("[parse_json] 'y.json': "), std::string::npos);
  EXPECT_NE(error_of([] { parse_json("", "'z.json'"); }).find("[parse_json] 'z.json': "), std::string::npos);
}

TEST(JsonFile, WriteThenReadAFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lazytrain_json_" + std::to_string(::getpid()) + ".json")).string();
  write_json_file(path, {{"perplexity", kInf}});
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\n  \"perplexity\": Infinity\n}\n");
  EXPECT_EQ(read_json_file(path).at("perplexity").get<double>(), kInf);
  std::filesystem::remove(path);
  EXPECT_EQ(error_of([&] { read_json_file(path); }), "[read_json_file] cannot read '" + path + "'");
}

}  // namespace
}  // namespace lazytrain::train
