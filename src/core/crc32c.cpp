#include "core/crc32c.h"

#include <array>
#include <cstring>
#if defined(__SSE4_2__) && defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace lazytrain {

namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

}  // namespace

uint32_t crc32c(std::string_view data, uint32_t crc) {
  crc = ~crc;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
#if defined(__SSE4_2__) && defined(__x86_64__)
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  crc = static_cast<uint32_t>(c);
#endif
  while (n > 0) {
    crc = kCrcTable[(crc ^ *p) & 0xFF] ^ (crc >> 8);
    ++p;
    --n;
  }
  return ~crc;
}

}  // namespace lazytrain
