// tf.train.Example payloads with int64 features (input_ids, attention_mask),
// through protobuf and our copy of TensorFlow's public schema
// (proto/tensorflow/example.proto).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lazytrain::data {

using Int64Features = std::map<std::string, std::vector<int64_t>>;

// The serialized Example with one int64_list feature per entry. Deterministic
// (map entries in key order), so the same features always give the same bytes.
std::string serialize_int64_example(const Int64Features& features);

// The int64 features of a serialized Example. Throws lazytrain::Error when the
// bytes are not a tf.train.Example or a feature is not an int64_list; `where`
// (e.g. "'shard-00000.tfrecord' record 3") starts the message.
Int64Features parse_int64_example(std::string_view bytes, const std::string& where);

}  // namespace lazytrain::data
