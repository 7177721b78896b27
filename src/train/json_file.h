// JSON as Python's `json` module writes and reads it (the files Hugging Face
// writes with json.dump): numbers that are not finite are the bare tokens
// Infinity, -Infinity and NaN, not null (nlohmann::json's dump writes null, and
// its parser rejects the tokens). Every JSON file and JSON log line lazytrain
// writes with metrics goes through dump_json; every such file it reads back,
// through parse_json.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lazytrain::train {

// json.dumps(value, indent=indent) for indent >= 0 (items on their own lines,
// "key": value, empty containers as {} and []); indent < 0: compact, as
// nlohmann's dump() ({"a":1,"b":[1,2]}). A float that is +inf, -inf or NaN is
// written Infinity, -Infinity, NaN; every other value as nlohmann writes it
// (strings escaped, floats in their shortest round-trip form). Throws
// nlohmann::json::type_error for a string that is not UTF-8, as dump() does.
std::string dump_json(const nlohmann::json& value, int indent = -1);

// json.loads(text): nlohmann's parser, plus the tokens Infinity, -Infinity and
// NaN outside strings, read as float values +inf, -inf and NaN (a string
// "Infinity" stays a string). Throws lazytrain::Error
// "[parse_json] <source>: <what is wrong, with line and column>" for text that
// is not JSON.
nlohmann::json parse_json(std::string_view text, const std::string& source);

// Writes dump_json(value, 2) and a newline to `path`, atomically. Throws Error
// naming the file when it cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& value);

// parse_json of the whole file. Throws Error naming the file when it cannot be
// read or is not JSON.
nlohmann::json read_json_file(const std::string& path);

}  // namespace lazytrain::train
