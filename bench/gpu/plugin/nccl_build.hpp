// Inside libclusterbench_gpu.so, and its unit test: which CUDA a libnccl was built for, from the
// version text every NCCL build embeds ("NCCL version 2.28.9+cuda13.0", the line NCCL prints at
// init). Both CUDA 12 and CUDA 13 builds of NCCL are libnccl.so.2, so a plugin built for one can
// bind the other's and would fail only at communicator init, with an unhelpful error.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace clusterbench::gpu {

/// What an NCCL library's bytes say of its build.
struct NcclBuild {
  std::string version;  ///< "2.28.9"; "" when the bytes hold no version text
  int cuda = 0;         ///< CUDA it was built for as CUDART_VERSION (13000); 0 when unknown
};

/// Finds "NCCL version <version>+cuda<major>.<minor>" in `bytes` (the library file's contents).
inline NcclBuild nccl_build_of(std::string_view bytes) {
  constexpr std::string_view kTag = "NCCL version ";
  for (size_t at = bytes.find(kTag); at != std::string_view::npos; at = bytes.find(kTag, at + 1)) {
    size_t p = at + kTag.size(), v = p;
    while (p < bytes.size() &&
           (std::isdigit(static_cast<unsigned char>(bytes[p])) || bytes[p] == '.'))
      ++p;
    if (p == v || bytes.substr(p, 5) != "+cuda") continue;
    size_t q = p + 5;
    int major = 0, minor = 0, digits = 0;
    for (; q < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[q])); ++q, ++digits)
      major = major * 10 + (bytes[q] - '0');
    if (digits == 0 || q >= bytes.size() || bytes[q] != '.') continue;
    for (++q, digits = 0; q < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[q]));
         ++q, ++digits)
      minor = minor * 10 + (bytes[q] - '0');
    if (digits == 0) continue;
    return {std::string(bytes.substr(v, p - v)), major * 1000 + minor * 10};
  }
  return {};
}

/// Why an NCCL built for CUDA `nccl_cuda` cannot serve a plugin built with CUDA `plugin_cuda`
/// (their majors differ), naming the library; "" when it can or either is unknown.
inline std::string nccl_build_mismatch(const std::string& library, const NcclBuild& b,
                                       int plugin_cuda) {
  if (b.cuda == 0 || plugin_cuda == 0 || b.cuda / 1000 == plugin_cuda / 1000) return "";
  auto ver = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  return library + " is NCCL " + b.version + " built for CUDA " + ver(b.cuda) +
         ", but this GPU plugin is built with CUDA " + ver(plugin_cuda) +
         ": both are libnccl.so.2, and another CUDA major's NCCL cannot start a communicator. "
         "Put the NCCL of CUDA " +
         std::to_string(plugin_cuda / 1000) +
         " first on the library path (LD_LIBRARY_PATH), or use the plugin built for CUDA " +
         std::to_string(b.cuda / 1000);
}

}  // namespace clusterbench::gpu
