// The run directory's lock: one live run per directory, so that `run --resume` cannot measure the
// cases of a run that is still going (docs/operations.md "Resume").
#pragma once

#include <string>

namespace clusterbench {

/// Takes `dir`/run.lock for the rest of this process's life: flock(LOCK_EX | LOCK_NB) on it,
/// and its text rewritten to "pid=P host=H". Taking it again for the same directory does
/// nothing. Throws InputError (exit 2) naming the pid and host of the run that holds it: a live
/// run of this host (its flock), or, where the directory is on a shared filesystem, a run of
/// another host whose run.json has no exit code yet (its flock is not seen here; remove
/// run.lock when that run is gone). `dir` must exist.
void acquire_run_lock(const std::string& dir);

/// This host's name as run.lock records it (gethostname).
std::string run_lock_host();

}  // namespace clusterbench
