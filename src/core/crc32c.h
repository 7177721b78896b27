// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), as iSCSI,
// ext4 and TensorFlow's TFRecord framing use it; SSE4.2's crc32 instruction
// when the build targets it. crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstdint>
#include <string_view>

namespace lazytrain {

// The CRC32C of `data`, continuing from `crc` (0 to start):
// crc32c(b, crc32c(a)) == crc32c(a + b).
uint32_t crc32c(std::string_view data, uint32_t crc = 0);

}  // namespace lazytrain
