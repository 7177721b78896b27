#include "train/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/atomic_file.h"

namespace lazytrain::train {
namespace {

// The reference's Dtype enum order: increasing alignment. Writing sorts by
// descending position here, then by name.
const std::vector<std::pair<std::string, int64_t>>& dtype_table() {
  static const std::vector<std::pair<std::string, int64_t>> table = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"C64", 8}, {"F64", 8}, {"I64", 8},     {"U64", 8},
  };
  return table;
}

int dtype_rank(const std::string& dtype) {
  const auto& t = dtype_table();
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].first == dtype) return static_cast<int>(i);
  return -1;
}

std::string known_dtypes() {
  std::string out;
  for (const auto& [name, size] : dtype_table()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw Error("[safetensors] '" + path + "': " + message);
}

// Text from a damaged header, made safe to print: bytes outside printable
// ASCII as \xNN (an error message stays valid UTF-8), cut after `limit` bytes.
std::string printable(std::string_view text, size_t limit = 200) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    }
  }
  if (text.size() > limit) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

// A header value as it appeared (compact JSON), shortened for an error message.
// Safe on any value the header parser accepted: nesting is at most 3 deep.
std::string brief(const nlohmann::json& v) { return printable(v.dump(), 80); }

// The header's JSON, rejecting what the format cannot hold before it is built:
// a key twice in one object (ambiguous: nlohmann would keep the last value
// silently, while serde's derived structs in the reference reject a repeated
// field) and nesting deeper than
// {"name": {"shape": [d]}} (so no later step recurses through a hostile depth).
nlohmann::json parse_header(const std::string& path, const std::string& text) {
  constexpr int kMaxDepth = 3;
  std::vector<std::unordered_set<std::string>> keys;  // one set per open object
  auto check = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth > kMaxDepth) fail(path, "header nests values " + std::to_string(depth) + " deep; a safetensors header has at most 3 levels");
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
      fail(path, "header has the key '" + printable(parsed.get<std::string>()) + "' twice in one object; expected unique keys");
    return true;
  };
  try {
    return nlohmann::json::parse(text, check);
  } catch (const nlohmann::json::exception& e) {
    fail(path, "header is not valid JSON (" + printable(e.what()) + "); expected a JSON object");
  }
}

// "[2, 3]"; a hostile rank is cut after 16 dimensions.
std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size() && i < 16; ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() > 16) out += ", ... (" + std::to_string(shape.size()) + " dimensions)";
  return out + "]";
}

// numel * itemsize, or fails on overflow / negative dimensions.
uint64_t byte_size(const std::string& path, const std::string& name, const std::string& dtype,
                   const std::vector<int64_t>& shape) {
  uint64_t n = static_cast<uint64_t>(safetensors_dtype_size(dtype));
  for (int64_t d : shape) {
    if (d < 0) fail(path, "tensor '" + printable(name) + "' has negative dimension in shape " + shape_string(shape));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      fail(path, "tensor '" + printable(name) + "' shape " + shape_string(shape) + " overflows the byte count");
  }
  return n;
}

struct Prepared {
  std::string header;                          // 8-byte length + padded JSON
  std::vector<const TensorRecord*> in_order;   // buffer order
};

// Mirrors the reference's prepare(): order, offsets, compact JSON, padding.
Prepared prepare(const std::map<std::string, TensorRecord>& tensors,
                 const std::map<std::string, std::string>& metadata, const std::string& path) {
  std::vector<std::pair<const std::string*, const TensorRecord*>> order;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail(path, "a tensor may not be named '__metadata__'");
    if (dtype_rank(t.dtype) < 0)
      fail(path, "tensor '" + name + "' has unknown dtype '" + t.dtype + "'; expected one of " + known_dtypes());
    uint64_t expected = byte_size(path, name, t.dtype, t.shape);
    if (t.data.size() != expected)
      fail(path, "tensor '" + name + "' has " + std::to_string(t.data.size()) + " bytes of data but shape " +
                     shape_string(t.shape) + " of " + t.dtype + " needs " + std::to_string(expected));
    order.emplace_back(&name, &t);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return dtype_rank(a.second->dtype) > dtype_rank(b.second->dtype);  // names already sorted
  });

  auto quote = [&path](const std::string& s) {
    try {
      return nlohmann::json(s).dump();
    } catch (const nlohmann::json::exception&) {
      fail(path, "tensor name or metadata string '" + s + "' is not valid UTF-8");
    }
  };
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      json += (first ? "" : ",") + quote(k) + ":" + quote(v);
      first = false;
    }
    json += "}";
  }
  Prepared out;
  uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    if (json.size() > 1) json += ",";
    json += quote(*name) + ":{\"dtype\":\"" + t->dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t->shape.size(); ++i) json += (i ? "," : "") + std::to_string(t->shape[i]);
    uint64_t end = offset + t->data.size();
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
    out.in_order.push_back(t);
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');
  uint64_t n = json.size();
  out.header.resize(8);
  for (int i = 0; i < 8; ++i) out.header[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.header += json;
  return out;
}

// Reads exactly `size` bytes at `offset`; fails naming the file.
void read_at(int fd, const std::string& path, void* dst, size_t size, uint64_t offset) {
  char* p = static_cast<char*>(dst);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, std::string("read failed (") + std::strerror(errno) + ")");
    if (n == 0) fail(path, "file ended early while reading; expected a complete safetensors file");
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct Entry {
  std::string name;
  TensorRecord record;  // dtype and shape; data filled later
  uint64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& v) {
  const std::string what = "tensor '" + printable(name) + "'";
  if (!v.is_object()) fail(path, what + " is not a JSON object; expected {\"dtype\", \"shape\", \"data_offsets\"}");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(path, what + " has no \"" + key + "\"; expected {\"dtype\", \"shape\", \"data_offsets\"}");
  Entry e;
  e.name = name;
  const auto& dtype = v["dtype"];
  if (!dtype.is_string()) fail(path, what + " has a non-string dtype " + brief(dtype));
  e.record.dtype = dtype.get<std::string>();
  if (dtype_rank(e.record.dtype) < 0)
    fail(path, what + " has unknown dtype '" + printable(e.record.dtype) + "'; expected one of " + known_dtypes());
  const auto& shape = v["shape"];
  if (!shape.is_array()) fail(path, what + " has shape " + brief(shape) + "; expected an array of non-negative integers");
  for (const auto& d : shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(path, what + " has shape " + brief(shape) + "; expected an array of non-negative integers");
    e.record.shape.push_back(d.get<int64_t>());
  }
  const auto& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail(path, what + " has data_offsets " + brief(offsets) + "; expected [begin, end] of non-negative integers");
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  uint64_t expected = byte_size(path, name, e.record.dtype, e.record.shape);
  if (e.end < e.begin || e.end - e.begin != expected)
    fail(path, what + " has data_offsets " + brief(offsets) + " but shape " + shape_string(e.record.shape) + " of " +
                   e.record.dtype + " needs " + std::to_string(expected) + " bytes");
  return e;
}

}  // namespace

int64_t safetensors_dtype_size(const std::string& dtype) {
  for (const auto& [name, size] : dtype_table())
    if (name == dtype) return size;
  return 0;
}

std::string serialize_safetensors(const std::map<std::string, TensorRecord>& tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  const std::string& path_for_errors) {
  Prepared p = prepare(tensors, metadata, path_for_errors);
  std::string out = std::move(p.header);
  for (const TensorRecord* t : p.in_order) out.append(t->data.begin(), t->data.end());
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, TensorRecord>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(tensors, metadata, path);  // validates before any file exists
  AtomicFileWriter writer(path, "safetensors");
  writer.write(p.header);
  for (const TensorRecord* t : p.in_order) writer.write(t->data.data(), t->data.size());
  writer.commit();
}

std::map<std::string, TensorRecord> load_safetensors(const std::string& path,
                                                     std::map<std::string, std::string>* metadata) {
  constexpr uint64_t kMaxHeader = 100'000'000;  // the reference's MAX_HEADER_SIZE
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + "); expected a safetensors file");
  struct stat st{};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path, "not a regular file; expected a safetensors file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8)
    fail(path, "file is " + std::to_string(file_size) +
                   " bytes, too short for the 8-byte header length; expected a safetensors file");
  unsigned char len_bytes[8];
  read_at(file.fd, path, len_bytes, 8, 0);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxHeader)
    fail(path, "header length " + std::to_string(n) + " exceeds the " + std::to_string(kMaxHeader) +
                   "-byte limit; expected a safetensors file");
  if (n + 8 > file_size)
    fail(path, "header length " + std::to_string(n) + " exceeds file size " + std::to_string(file_size) +
                   "; expected a safetensors file");
  std::string text(n, '\0');
  read_at(file.fd, path, text.data(), n, 8);
  if (text.empty() || text[0] != '{') fail(path, "header does not start with '{'; expected a JSON object");
  const nlohmann::json header = parse_header(path, text);
  if (!header.is_object()) fail(path, "header is not a JSON object");

  std::vector<Entry> entries;
  if (metadata) metadata->clear();
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail(path, "\"__metadata__\" is not a JSON object of strings");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) fail(path, "\"__metadata__\" value for '" + printable(k) + "' is not a string");
        if (metadata) (*metadata)[k] = v.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, name, value));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].begin != covered)
      fail(path, "tensor '" + printable(entries[i].name) + "' starts at byte " + std::to_string(entries[i].begin) + " but " +
                     (i == 0 ? std::string("the buffer starts at byte 0")
                             : "the previous tensor '" + printable(entries[i - 1].name) + "' ends at byte " +
                                   std::to_string(covered)) +
                     "; expected contiguous tensors with no holes or overlaps");
    covered = entries[i].end;
  }
  const uint64_t buffer_size = file_size - 8 - n;
  if (covered > buffer_size)
    fail(path, "file is truncated: the tensors need " + std::to_string(covered) + " data bytes but only " +
                   std::to_string(buffer_size) + " follow the header (file size " + std::to_string(file_size) + ")");
  if (covered < buffer_size)
    fail(path, "the tensors cover " + std::to_string(covered) + " data bytes but " + std::to_string(buffer_size) +
                   " follow the header; expected no trailing bytes");

  std::map<std::string, TensorRecord> out;
  for (Entry& e : entries) {
    e.record.data.resize(e.end - e.begin);
    read_at(file.fd, path, e.record.data.data(), e.record.data.size(), 8 + n + e.begin);
    out.emplace(std::move(e.name), std::move(e.record));
  }
  return out;
}

TensorRecord to_tensor_record(const Literal& literal) {
  TensorRecord r;
  r.dtype = safetensors_name(literal.dtype());
  r.shape = literal.shape();
  r.data.resize(static_cast<size_t>(literal.nbytes()));
  if (!r.data.empty()) std::memcpy(r.data.data(), literal.raw(), r.data.size());
  return r;
}

Literal to_literal(const TensorRecord& record) {
  Literal literal(record.shape, dtype_from_safetensors_name(record.dtype));
  if (!record.data.empty()) std::memcpy(literal.mutable_raw(), record.data.data(), record.data.size());
  return literal;
}

}  // namespace lazytrain::train
