// SHA-256 (FIPS 180-4) of files and bytes, through OpenSSL's EVP interface.
#pragma once

#include <cstddef>
#include <string>

namespace clusterbench {

/// Hex SHA-256 of a file's bytes (FIPS 180-4). Throws InputError if unreadable.
std::string sha256_file(const std::string& path);
/// Hex SHA-256 of a byte string.
std::string sha256_hex(const std::string& data);

/// SHA-256 (FIPS 180-4) of bytes fed in pieces: a large file or archive member hashed without
/// holding it in memory.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  /// Adds `n` bytes at `data`.
  void update(const void* data, size_t n);
  /// The digest of everything added, as 64 lowercase hex digits; call it once, last.
  std::string hex();

 private:
  void* ctx_;  ///< an EVP_MD_CTX (OpenSSL stays out of this header)
};

}  // namespace clusterbench
