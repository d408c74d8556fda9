// io.fio: fio job profiles run through fio itself (docs/fio.md, docs/metrics.md "fio").
#pragma once

#include <map>
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

/// What one fio run costs beyond its ramp and runtime: fio's start, its file layout and our
/// parsing: 0.27-0.47 s measured on the idle 2-core CI machine, 0.5 s alone and 0.84 s inside
/// the `ci` suite in a slower hour of it (2026-12-03), so 0.6 s (docs/launch.md "Estimates").
inline constexpr double kFioRunOverheadS = 0.6;

/// The write rate at which fio lays out a job's file (size=) before the case's first run, once
/// per case (each round of --rounds is one): a virtual or SATA disk's, about 250 MB/s (1 GiB took
/// 4-5 s on this project's 2-core VM, 2026-12-03). An NVMe drive lays out several times faster,
/// so the estimate runs high there.
inline constexpr double kFioLayoutBytesPerS = 250e6;

/// Seconds of a fio time value: a whole number with an optional unit ("500ms", "2", "1m",
/// "10s"; no unit is seconds; fio HOWTO "Time values"). Only forms that fio reads the same way
/// are accepted: no fraction, exponent, hex or sign, since the text itself is handed to fio.
/// Throws InputError naming `what` otherwise.
double fio_seconds(const std::string& text, const std::string& what);

/// How one fio profile runs in a directory another benchmark names (io.tiers): io.fio's knobs.
struct FioInDirectory {
  std::string binary = "fio";  ///< by name (looked up on PATH) or path
  std::string profiles_dir;    ///< where NAME.fio lives
  long long size = 0;          ///< bytes of each job's file
  std::string runtime, ramp;   ///< fio time values, handed to fio as given
  int repeat = 5;              ///< fio runs, each with its own ramp
};

/// One profile's fio runs in a directory: bandwidth per direction and how fio ran.
struct FioProfileResult {
  std::map<std::string, std::vector<double>> bw;  ///< "read" | "write" -> GB/s, one per run
  json evidence;  ///< profile, job_file, fio_command, fio_env, direct, fio_exit_code, fio_version
};

/// Runs `profile` o.repeat times in a scratch directory it creates (and removes) below `dir`,
/// after io.fio's checks of a named scratch directory (docs/fio.md "Safety"): fio may be handed
/// the path, before and after its symlinks; it is an existing directory this process may create
/// files in; it holds the jobs' files plus 64 MiB; no other process writes there; the job
/// file's own targets stay in the scratch directory. `origin` names the directory in errors.
/// Throws Waived when fio is not found, Refused or CallError as io.fio does.
FioProfileResult run_fio_in(const FioInDirectory& o, const std::string& profile,
                            const std::string& dir, const std::string& origin);

}  // namespace clusterbench::io
