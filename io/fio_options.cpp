// The fio job-file allow-list (fio_options.hpp).
#include "io/fio_options.hpp"

#include <set>
#include <sstream>

namespace clusterbench::io {

namespace {

/// The options a disk measurement needs. The reason for each group is in docs/fio.md
/// ("Job-file options"); anything else, however harmless it looks, is refused by name.
const std::set<std::string>& allowed_options() {
  static const std::set<std::string> kAllowed = {
      // Naming and grouping the jobs.
      "name", "description", "group_reporting", "new_group", "stonewall", "wait_for",
      // The files, all inside the scratch directory (the target check sees these).
      "filename", "directory", "filename_format", "opendir", "nrfiles", "file_service_type",
      "openfiles", "unique_filename", "create_on_open", "create_serialize", "fallocate", "unlink",
      "unlink_each_loop", "lockfile",
      // The I/O pattern and its size.
      "rw", "readwrite", "rwmixread", "rwmixwrite", "bs", "blocksize", "bsrange", "bssplit", "ba",
      "blockalign", "bs_unaligned", "size", "filesize", "io_size", "io_limit", "offset",
      "offset_increment", "number_ios", "loops", "random_distribution", "randrepeat", "randseed",
      "norandommap", "random_generator", "percentage_random", "zonemode", "zonesize", "zonerange",
      "zoneskip",
      // Queueing and the engine (its value is checked apart).
      "ioengine", "iodepth", "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete",
      "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low", "numjobs",
      "thread", "direct", "buffered", "atomic", "hipri", "fixedbufs", "registerfiles",
      "sqthread_poll", "iomem", "mem", "iomem_align", "mem_align",
      // Durability of the writes measured.
      "fsync", "fdatasync", "end_fsync", "fsync_on_close", "sync", "write_barrier", "invalidate",
      "overwrite",
      // Time.
      "time_based", "runtime", "ramp_time", "startdelay",
      // The data written (its content, not where it goes).
      "zero_buffers", "refill_buffers", "scramble_buffers", "buffer_pattern",
      "buffer_compress_percentage", "buffer_compress_chunk", "dedupe_percentage",
      // Reading back what was written.
      "verify", "do_verify", "verify_pattern", "verify_interval", "verify_offset", "verify_fatal",
      "verify_backlog",
      // Rates, placement and reporting.
      "rate", "rate_min", "rate_iops", "rate_iops_min", "rate_process", "cpus_allowed",
      "cpus_allowed_policy", "cpumask", "numa_cpu_nodes", "numa_mem_policy", "nice", "prio",
      "prioclass", "percentile_list", "clat_percentiles", "lat_percentiles", "slat_percentiles",
      "significant_figures", "unified_rw_reporting", "disable_lat", "disable_clat", "disable_slat",
      "disable_bw_measurement", "gtod_reduce", "clocksource", "kb_base", "continue_on_error",
      "ignore_error", "exitall", "exitall_on_error"};
  return kAllowed;
}

/// The engines that only move data between memory and the files (never exec, never a network
/// or an external program).
const std::set<std::string>& allowed_engines() {
  static const std::set<std::string> kEngines = {"libaio",  "io_uring", "psync", "sync", "pvsync",
                                                 "pvsync2", "posixaio", "vsync", "mmap"};
  return kEngines;
}

std::string trim(const std::string& v) {
  const char* ws = " \t\r";
  const auto b = v.find_first_not_of(ws);
  return b == std::string::npos ? "" : v.substr(b, v.find_last_not_of(ws) - b + 1);
}

/// The first `$` expansion of `line` that is not one clusterbench controls, or "".
std::string foreign_expansion(const std::string& line) {
  static const std::set<std::string> kOwn = {
      "${CB_FIO_DIR}",    "${CB_FIO_SIZE}", "${CB_FIO_RUNTIME}", "${CB_FIO_RAMP}",
      "${CB_FIO_DIRECT}", "$jobnum",        "$jobname",          "$filenum"};
  for (size_t at = line.find('$'); at != std::string::npos; at = line.find('$', at + 1)) {
    bool own = false;
    for (const auto& k : kOwn)
      if (line.compare(at, k.size(), k) == 0) own = true;
    if (!own) return line.substr(at, line.find_first_of(" \t/", at) - at);
  }
  return "";
}

}  // namespace

std::string job_option_refusal(const std::string& job_file, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line[0] == ';' || line[0] == '#' || line[0] == '[') continue;
    const std::string where =
        "refused: " + job_file + " line " + std::to_string(n) + " '" + line.substr(0, 80) + "': ";
    if (line.rfind("include", 0) == 0 && (line.size() == 7 || line[7] == ' ' || line[7] == '\t'))
      continue;  // the target check refuses it, naming the file it includes
    if (std::string v = foreign_expansion(line); !v.empty())
      return where + "expands " + v +
             ", which clusterbench does not set (fio expands variables before it reads the "
             "option, so it could become any option); only ${CB_FIO_*}, $jobnum, $jobname and "
             "$filenum";
    const auto eq = line.find('=');
    const std::string key = trim(line.substr(0, eq));
    if (!allowed_options().count(key))
      return where + "option '" + key +
             "' is not on the allow-list of options a disk measurement needs (it could run a "
             "command, write outside the scratch directory or change the host; docs/fio.md "
             "\"Job-file options\")";
    if (key == "ioengine") {
      const std::string engine = eq == std::string::npos ? "" : trim(line.substr(eq + 1));
      if (!allowed_engines().count(engine))
        return where + "ioengine '" + engine +
               "' is not one of the engines that only move data (libaio, io_uring, psync, sync, "
               "pvsync, pvsync2, posixaio, vsync, mmap)";
    }
  }
  return "";
}

}  // namespace clusterbench::io
