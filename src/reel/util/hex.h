// Internal: lower-case hex of bytes (digests, random ids).
#pragma once

#include <cstddef>
#include <string>

namespace reel {

// Lower-case hex of `n` bytes.
std::string HexOf(const unsigned char* data, size_t n);

// SHA-256 of `data`, lower-case hex (OpenSSL). Also declared in reel/serve.h.
std::string Sha256Hex(const std::string& data);

}  // namespace reel
