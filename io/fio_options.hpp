// What a fio job file may ask for (docs/fio.md "Job-file options"): every option on an
// allow-list of what measuring a disk needs, every other one refused by name. fio's job files
// can run commands (exec_prerun=, exec_postrun=, ioengine=exec), write logs anywhere
// (write_iolog=, write_bw_log=, ...) or change the host (ioscheduler=); a target check of
// filename= and directory= alone let an exec_prerun overwrite a block device.
#pragma once

#include <string>

namespace clusterbench::io {

/// Why the fio job file `job_file` (its text `text`) may not run, naming the file, the line and
/// the option; "" when every option is allowed. Checked: each option's name (a `key=value` or a
/// bare flag such as `time_based`) against the allow-list, ioengine's value against the engines
/// that only move data, and each `$` expansion against the CB_FIO_* variables clusterbench sets
/// and fio's own `$jobnum`, `$jobname`, `$filenum` (fio expands environment variables in a whole
/// line before it parses it, so another variable could become any option). Section headers,
/// comments (';', '#') and blank lines are skipped; `include` is left to the target check.
std::string job_option_refusal(const std::string& job_file, const std::string& text);

}  // namespace clusterbench::io
