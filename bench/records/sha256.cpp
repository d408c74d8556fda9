// SHA-256 (sha256.hpp).
#include "records/sha256.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "records/json_io.hpp"

namespace clusterbench {

std::string sha256_hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::ostringstream os;
  for (unsigned i = 0; i < len; ++i)
    os << std::hex << std::setw(2) << std::setfill('0') << int(md[i]);
  return os.str();
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL: EVP_DigestInit_ex(sha256) failed");
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256Stream::update(const void* data, size_t n) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) != 1)
    throw std::runtime_error("OpenSSL: EVP_DigestUpdate failed");
}

std::string Sha256Stream::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len) != 1)
    throw std::runtime_error("OpenSSL: EVP_DigestFinal_ex failed");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += {kHex[md[i] >> 4], kHex[md[i] & 15]};
  return out;
}

std::string sha256_file(const std::string& path) {
  require_regular_file(path);  // a FIFO would block the read
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  Sha256Stream sha;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    sha.update(buf.data(), static_cast<size_t>(in.gcount()));
  if (in.bad()) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
  return sha.hex();
}

}  // namespace clusterbench
