// Internal: lower-case hex of bytes (digests, random ids).
#pragma once

#include <cstddef>
#include <string>

namespace reel {

// Lower-case hex of `n` bytes.
std::string HexOf(const unsigned char* data, size_t n);

}  // namespace reel
