// io.fio: fio job profiles run through fio itself (docs/fio.md, docs/metrics.md "fio").
#pragma once

#include <string>
#include <vector>

#include "io/fio_parser.hpp"

namespace clusterbench::io {

/// The profiles io.fio runs by default: io/profiles/NAME.fio.
const std::vector<std::string>& fio_profiles();

/// True when a failed fio attempt looks like a filesystem refusing O_DIRECT: a job error 22
/// (EINVAL), "err=22", or fio's "does not support direct=1" note in its output.
bool looks_like_direct_refused(const std::string& out, const std::string& err,
                               const FioOutput* parsed);

}  // namespace clusterbench::io
