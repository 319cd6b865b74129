// The first 8 bytes of an MD5 digest (RFC 1321): LM Challenge's fingerprint hash of a
// string, which lmc computes with hashlib.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lmlog {

// The first 8 bytes of the MD5 digest of `size` bytes, read as a little-endian integer.
uint64_t md5_prefix(const unsigned char* data, size_t size);

}  // namespace lmlog
