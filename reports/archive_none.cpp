// Run archives in a -DCLUSTERBENCH_GPU_CHECK=ON build: that build carries no libarchive
// (its ICU data alone is 31 MB of the bundle a GPU machine can take), so `archive` and `verify`
// refuse with the reason; a full build packs and verifies archives (archive.cpp).
#include <iostream>

#include "records/records.hpp"
#include "reports/archive.hpp"

namespace clusterbench::report {

namespace {

const char* const kNoArchive =
    "this build has no libarchive (-DCLUSTERBENCH_GPU_CHECK=ON, the GPU check's bundle): "
    "run archives are disabled; use a full build";

}  // namespace

std::string default_archive_path(const std::string& dir) { return dir + ".tar.gz"; }

ArchiveSummary write_archive(const std::string&, const std::string&) {
  throw InputError(kNoArchive);
}

VerifyResult verify_archive(const std::string&) { throw InputError(kNoArchive); }

int archive_command(const std::string&, const std::string&, const std::string&) {
  std::cerr << "archive: " << kNoArchive << "\n";
  return 2;
}

int verify_command(const std::string&, const std::string&, const std::string&) {
  std::cerr << "verify: " << kNoArchive << "\n";
  return 2;
}

}  // namespace clusterbench::report
