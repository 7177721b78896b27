#include "train/json_file.h"

#include <cmath>
#include <fstream>
#include <iterator>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lazytrain::train {

namespace {

using json = nlohmann::json;

constexpr std::string_view kInfinity = "Infinity";
constexpr std::string_view kNaN = "NaN";

void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(depth), ' ');
}

void dump_to(std::string& out, const json& value, int indent, int depth) {
  switch (value.type()) {
    case json::value_t::object: {
      if (value.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ',';
        first = false;
        newline(out, indent, depth + 1);
        out += json(key).dump();
        out += indent < 0 ? ":" : ": ";
        dump_to(out, item, indent, depth + 1);
      }
      newline(out, indent, depth);
      out += '}';
      return;
    }
    case json::value_t::array: {
      if (value.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ',';
        newline(out, indent, depth + 1);
        dump_to(out, value[i], indent, depth + 1);
      }
      newline(out, indent, depth);
      out += ']';
      return;
    }
    case json::value_t::number_float: {
      const double v = value.get<double>();
      if (std::isnan(v)) {
        out += kNaN;
      } else if (std::isinf(v)) {
        if (v < 0) out += '-';
        out += kInfinity;
      } else {
        out += value.dump();
      }
      return;
    }
    default:
      out += value.dump();
  }
}

// Python's tokens as strings nlohmann can parse, told apart from the text's own
// strings by a tag after the opening quote: "s..." is a string of the text,
// "n+Infinity", "n-Infinity", "nNaN" a non-finite number. untag() undoes it.
std::string tag(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      out += "\"s";
      in_string = true;
    } else if (text.substr(i, kInfinity.size()) == kInfinity) {
      out += "\"n+Infinity\"";
      i += kInfinity.size() - 1;
    } else if (c == '-' && text.substr(i + 1, kInfinity.size()) == kInfinity) {
      out += "\"n-Infinity\"";
      i += kInfinity.size();
    } else if (text.substr(i, kNaN.size()) == kNaN) {
      out += "\"nNaN\"";
      i += kNaN.size() - 1;
    } else {
      out += c;
    }
  }
  return out;
}

json untag(json value) {
  switch (value.type()) {
    case json::value_t::object: {
      json out = json::object();
      for (auto& [key, item] : value.items()) out[key.substr(1)] = untag(std::move(item));
      return out;
    }
    case json::value_t::array:
      for (json& item : value) item = untag(std::move(item));
      return value;
    case json::value_t::string: {
      std::string& s = value.get_ref<std::string&>();
      if (s[0] == 's') return s.substr(1);
      if (s == "nNaN") return std::nan("");
      return s == "n+Infinity" ? HUGE_VAL : -HUGE_VAL;
    }
    default:
      return value;
  }
}

// The same text with each token replaced by a number of its length, so that
// nlohmann's error names the line and column of the original text.
std::string same_length_numbers(std::string_view text) {
  std::string out(text);
  bool in_string = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (in_string) {
      if (out[i] == '\\') ++i;
      else if (out[i] == '"') in_string = false;
    } else if (out[i] == '"') {
      in_string = true;
    } else if (std::string_view(out).substr(i, kInfinity.size()) == kInfinity) {
      out.replace(i, kInfinity.size(), "1.000000");
    } else if (std::string_view(out).substr(i, kNaN.size()) == kNaN) {
      out.replace(i, kNaN.size(), "0.0");
    }
  }
  return out;
}

}  // namespace

std::string dump_json(const nlohmann::json& value, int indent) {
  std::string out;
  dump_to(out, value, indent, 0);
  return out;
}

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  try {
    return untag(json::parse(tag(text)));
  } catch (const json::parse_error&) {
    try {
      const json ignored = json::parse(same_length_numbers(text));
    } catch (const json::parse_error& e) {
      throw Error("[parse_json] " + source + ": " + e.what());
    }
    throw Error("[parse_json] " + source + ": not JSON");
  }
}

void write_json_file(const std::string& path, const nlohmann::json& value) {
  write_file_atomically(path, dump_json(value, 2) + "\n");
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("[read_json_file] cannot read '" + path + "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_json(text, "'" + path + "'");
}

}  // namespace lazytrain::train
