// Reading Hugging Face config.json fields into a config struct, and
// PretrainedConfig.update_from_string, for any config that lists its fields
// with a `for_each_field(config, visitor)` (visitor(name, member&) for
// int64_t, std::optional<int64_t> (config.json's null when empty), double, bool
// and std::string members). Shared by BertConfig, GPT2Config and LlamaConfig.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace lazytrain::models {

// Copies the listed fields present in `j` into `config` and returns the rest
// (fields carried but not used). Throws Error "[<kind>] <source>: field 'x' has
// the wrong type (...)" for a value of another JSON type.
template <typename Config, typename ForEachField>
nlohmann::json read_config_fields(Config& config, const nlohmann::json& j, const std::string& kind, const std::string& source,
                                  ForEachField for_each_field) {
  if (!j.is_object()) throw Error("[" + kind + "] " + source + ": expected a JSON object");
  nlohmann::json rest = j;
  for_each_field(config, [&](const char* name, auto& field) {
    if (!j.contains(name)) return;
    using T = std::decay_t<decltype(field)>;
    const auto& v = j.at(name);
    const bool ok = std::is_same_v<T, std::string>              ? v.is_string()
                    : std::is_same_v<T, bool>                   ? v.is_boolean()
                    : std::is_same_v<T, int64_t>                ? v.is_number_integer()
                    : std::is_same_v<T, std::optional<int64_t>> ? v.is_null() || v.is_number_integer()
                                                                : v.is_number();
    if (!ok) throw Error("[" + kind + "] " + source + ": field '" + name + "' has the wrong type (" + v.dump() + ")");
    if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
      field = v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
    } else {
      field = v.get<T>();
    }
    rest.erase(name);
  });
  return rest;
}

// Applies "key=value,key=value" to the listed fields. Throws Error for an
// unknown key ("key foo isn't in the original config dict", transformers'
// words), a missing key or a value that does not parse as the field's type.
// An optional field takes an integer, or "None"/"null" for config.json's null.
template <typename Config, typename ForEachField>
void apply_config_overrides(Config& config, const std::string& overrides, ForEachField for_each_field) {
  std::stringstream ss(overrides);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error("[config_overrides] '" + item + "' is not of the form key=value");
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key.empty()) throw Error("[config_overrides] '" + item + "' has no key; expected key=value");
    bool found = false;
    for_each_field(config, [&](const char* name, auto& field) {
      if (key != name) return;
      found = true;
      using T = std::decay_t<decltype(field)>;
      try {
        size_t used = 0;
        if constexpr (std::is_same_v<T, std::string>) {
          field = value, used = value.size();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (value != "true" && value != "false") throw std::invalid_argument(value);
          field = value == "true", used = value.size();
        } else if constexpr (std::is_same_v<T, int64_t>) {
          field = std::stoll(value, &used);
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          if (value == "None" || value == "null") {
            field = std::nullopt, used = value.size();
          } else {
            field = std::stoll(value, &used);
          }
        } else {
          field = std::stod(value, &used);
        }
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        throw Error("[config_overrides] can't parse value '" + value + "' of key " + key);
      }
    });
    if (!found) throw Error("[config_overrides] key " + key + " isn't in the original config dict");
  }
}

// Hugging Face's attn_implementation ("eager" | "sdpa"): how a model computes
// attention. transformers takes it as a keyword argument (from_pretrained /
// from_config / the config's constructor, which reads it from a config.json
// too) and keeps it as config._attn_implementation, never writing it back; so
// here a config.json key "attn_implementation" is read by from_json, moved out
// of `extra`, and to_json leaves it out. Error naming `kind`, `source` and the
// accepted values for anything but a string of those two.
inline void read_attn_implementation(nlohmann::json& extra, std::string& field, const std::string& kind, const std::string& source) {
  if (!extra.contains("attn_implementation")) return;
  const nlohmann::json v = extra["attn_implementation"];
  extra.erase("attn_implementation");
  if (v.is_null()) return;  // transformers' None: the model's default
  if (!v.is_string()) throw Error("[" + kind + "] " + source + ": field 'attn_implementation' has the wrong type (" + v.dump() + ")");
  field = v.get<std::string>();
}

// Error unless `value` is "eager" or "sdpa" (transformers' message names the possible values too).
inline void check_attn_implementation(const std::string& value, const std::string& kind, const std::string& source) {
  if (value != "eager" && value != "sdpa") {
    throw Error("[" + kind + "] " + source + ": attn_implementation '" + value +
                "' is not supported; the possible values are 'eager' (matmul, softmax, matmul) and 'sdpa' (one fused "
                "scaled_dot_product_attention)");
  }
}

// A field's value as config.json holds it (an empty optional is null).
template <typename T>
nlohmann::json config_field_json(const T& field) {
  return field;
}
inline nlohmann::json config_field_json(const std::optional<int64_t>& field) {
  return field ? nlohmann::json(*field) : nlohmann::json(nullptr);
}

}  // namespace lazytrain::models
