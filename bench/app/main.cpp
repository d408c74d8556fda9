// clusterbench: the command line (CLI11). Exit codes: DESIGN.md "Exit codes".
#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "core/benchmark.hpp"
#include "app/burnin_command.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "env/inventory.hpp"
#include "app/io_command.hpp"
#include "reports/archive.hpp"
#include "reports/compare.hpp"
#include "reports/html.hpp"
#include "reports/render.hpp"
#include "app/report_command.hpp"
#include "core/runner.hpp"
#include "core/version.hpp"

using namespace clusterbench;

namespace {

int cmd_inventory(const std::string& fs_root, bool all_nodes) {
  Context& ctx = Context::get();
  EnvRecord env;
  if (ctx.is_leader()) {
    InventoryOptions io;
    io.fs_root = fs_root;
    io.host = ctx.host();
    env = collect_env(io);
    env.versions.mpi = ctx.mpi_version();
    env.versions.clusterbench = clusterbench_version();
  }
  auto gathered = ctx.gather(ctx.is_leader() ? json(env).dump() : "");
  if (ctx.is_root()) {
    json out = json::array();
    for (const auto& g : gathered)
      if (!g.empty()) out.push_back(json::parse(g));
    std::cout << (all_nodes || out.size() != 1 ? out : out[0]).dump(2) << std::endl;
  }
  return 0;
}

int cmd_list(const std::string& suite) {
  Settings settings(suite, {});
  for (const auto& b : Registry::get().all()) {
    // Levels and GPU need can differ per case (compute.gemm: openblas per node, cuBLASLt per GPU).
    auto cases = b->cases(settings);
    std::set<std::string> kinds;
    for (const auto& c : cases)
      kinds.insert(std::string(level_name(b->case_level(c))) +
                   (b->case_needs_gpu(c) ? " GPU" : ""));
    std::string shown;
    for (const auto& k : kinds) shown += (shown.empty() ? "" : ", ") + k;
    std::cout << b->id() << "  [" << (shown.empty() ? level_name(b->level()) : shown) << "]  "
              << b->description() << "\n";
    std::cout << "    " << cases.size() << " case(s) in suite " << suite;
    if (!cases.empty()) std::cout << ", e.g. " << cases.front().dump();
    std::cout << "\n";
    auto knobs = b->knobs();
    if (!knobs.empty()) {
      std::cout << "    knobs:";
      for (const auto& k : knobs) std::cout << " --set " << b->id() << "." << k << "=...";
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"clusterbench: does a GPU cluster meet the spec it was bought against?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clusterbench " + clusterbench_version());

  RunOptions ro;
  auto* run =
      app.add_subcommand("run", "run the benchmarks on every rank and write a run directory");
  run->add_option("--suite", ro.suite, "ci | quick | full")
      ->check(CLI::IsMember({"ci", "quick", "full"}));
  run->add_option("--spec", ro.spec_path, "spec table (default: chosen from the hardware)");
  run->add_option("--only", ro.only, "glob(s) on benchmark ids, e.g. 'compute.*'");
  run->add_option("--set", ro.set, "id.key=value or area.key=value");
  run->add_option("--out", ro.out_dir, "run directory (default results/<run-id>)");
  run->add_option("--results", ro.results_root, "where default run directories go");
  run->add_option("--fs-root", ro.fs_root, "read /sys, /proc, /dev below this root")
      ->check(CLI::ExistingDirectory);
  // Seconds: a finite number in (0, 30 days]; nan, 0 and negatives are bad input (exit 2).
  const CLI::Validator seconds(
      [](std::string& text) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(v) || v <= 0 || v > 30 * 86400.0)
          return "'" + text + "' must be a number of seconds in (0, 2592000]";
        return "";
      },
      "SECONDS");
  run->add_option("--case-timeout", ro.case_timeout_s,
                  "seconds before a case is declared hung (default: 300 ci, 1200 quick, 3600 full, "
                  "or twice the case's estimate plus 60 when longer)")
      ->check(seconds);
  run->add_option("--resume", ro.resume_dir,
                  "complete an earlier run directory: rerun its failed and missing cases");
  run->add_flag("--dry-run", ro.dry_run, "print the plan with estimated durations; run nothing");
  run->add_option("--time-limit", ro.time_limit_s,
                  "seconds: start no case that would end past it; the rest is MISSING (exit 4)")
      ->check(seconds);
  run->add_flag("--allow-shared-gpus", ro.allow_shared_gpus,
                "run GPU cases although other processes use the GPUs (the records say so)");
  run->add_option("--prometheus", ro.prometheus_path,
                  "also write the headline metrics as a Prometheus textfile (node_exporter)");

  std::string report_dir = "results/latest", report_spec;
  auto* report = app.add_subcommand("report", "evaluate a run directory against its spec table");
  report->add_option("dir", report_dir, "run directory (default results/latest)");
  report->add_option("--spec", report_spec, "spec table (default: the one run.json names)");
  std::string report_html, report_pdf;
  report->add_option("--html", report_html, "also copy report.html to this file");
  report->add_option("--pdf", report_pdf, "print report.html to this PDF (headless Chromium)");
  std::string report_prom;
  report->add_option("--prometheus", report_prom,
                     "write the headline metrics as a Prometheus textfile (node_exporter)");

  std::string cmp_base, cmp_cur, cmp_out;
  std::vector<std::string> cmp_tol;
  auto* compare = app.add_subcommand("compare", "compare two run directories: what regressed");
  compare->add_option("baseline", cmp_base, "baseline run directory")->required();
  compare->add_option("current", cmp_cur, "current run directory")->required();
  compare->add_option("--tolerance", cmp_tol, "KEY=PCT, KEY a unit or benchmark glob[:metric]");
  compare->add_option("--out", cmp_out, "where compare.{md,json,junit.xml} go (default CURRENT)");

  std::string inv_root = "/";
  bool inv_all = false;
  auto* inventory = app.add_subcommand("inventory", "print this node's EnvRecord (JSON)");
  inventory->add_option("--fs-root", inv_root, "read /sys, /proc, /dev below this root")
      ->check(CLI::ExistingDirectory);
  inventory->add_flag("--all", inv_all, "always print an array (one EnvRecord per node)");

  std::string list_suite = "ci";
  auto* list = app.add_subcommand("list", "list the benchmarks and their cases");
  list->add_option("--suite", list_suite, "ci | quick | full");

  io::IoCommand io_cmd = io::add_io_command(app);

  std::string archive_dir, archive_out;
  auto* archive = app.add_subcommand(
      "archive", "pack a run directory into DIR.tar.gz with a SHA256SUMS manifest inside");
  archive->add_option("dir", archive_dir, "run directory")->required();
  archive->add_option("-o,--output", archive_out, "archive file (default DIR.tar.gz)");
  std::string verify_path;
  auto* verify = app.add_subcommand(
      "verify", "check every file of a run archive against its SHA256SUMS (exit 1 naming it)");
  verify->add_option("archive", verify_path, "archive written by `clusterbench archive`")
      ->required();

  BurninOptions bo;
  auto* burnin = app.add_subcommand("burnin",
                                    "soak every GPU (CPU ranks without GPUs) with GEMM "
                                    "and all_reduce, per-GPU verdicts (docs/burnin.md)");
  burnin->add_option("--minutes", bo.minutes, "soak length in minutes, fractions allowed")
      ->required();
  burnin->add_option("--spec", bo.spec_path, "spec table (default: reports/specs/burnin-*.json)");
  burnin->add_option("--out", bo.out_dir, "run directory (default results/<run-id>)");
  burnin->add_option("--results", bo.results_root, "where default run directories go");
  burnin->add_option("--fs-root", bo.fs_root, "read /sys, /proc, /dev below this root")
      ->check(CLI::ExistingDirectory);
  burnin->add_option("--dtype", bo.dtype, "GEMM dtype (default bf16 on GPUs, fp32 on CPUs)");
  burnin->add_option("--shape", bo.shape, "GEMM cube size (default 8192 on GPUs, 256 on CPUs)");
  burnin
      ->add_option("--allreduce-bytes", bo.allreduce_bytes,
                   "all_reduce size (default 256M with NCCL, 1M with MPI)")
      ->transform([](std::string s) {
        try {
          return std::to_string(parse_size(s, "--allreduce-bytes"));
        } catch (const std::exception& e) {
          throw CLI::ValidationError(e.what());
        }
      });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help and the like
    // Name the subcommand: "clusterbench io make-dataset: dir is required".
    std::string where = "clusterbench";
    for (CLI::App* a = &app; !a->get_subcommands().empty();) {
      a = a->get_subcommands().front();
      where += " " + a->get_name();
    }
    std::cerr << where << ": " << e.what() << "\nRun '" << where
              << " --help' for more information.\n";
    return 2;
  }

  int code = 0;
  bool mpi = run->parsed() || inventory->parsed() || burnin->parsed();
  try {
    if (mpi) Context::init(&argc, &argv);
    if (run->parsed()) {
      ro.argv.assign(argv, argv + argc);
      ro.suite_given = run->count("--suite") > 0;
      ro.spec_given = run->count("--spec") > 0;
      ro.only_given = run->count("--only") > 0;
      ro.set_given = run->count("--set") > 0;
      code = run_command(ro, report_hooks());
    } else if (inventory->parsed()) {
      code = cmd_inventory(inv_root, inv_all);
    } else if (burnin->parsed()) {
      bo.argv.assign(argv, argv + argc);
      code = burnin_command(bo);
    } else if (report->parsed()) {
      // Checked before anything is rendered: never a run file, a directory or a device.
      if (!report_html.empty()) report::check_output_file(report_html, "--html", report_dir);
      if (!report_pdf.empty()) report::check_output_file(report_pdf, "--pdf", report_dir);
      bool written = false;
      code = report_command(report_dir, report_spec, false, report_prom, &written);
      if (!written && (!report_html.empty() || !report_pdf.empty()))
        throw InputError(std::string(report_html.empty() ? "--pdf" : "--html") +
                         ": report.html could not be written in " + report_dir +
                         " (see the warning above), and an older one would not match this "
                         "verdict; copy the run directory somewhere writable");
      if (!report_html.empty()) {
        std::error_code ec;
        std::filesystem::copy_file(report_dir + "/report.html", report_html,
                                   std::filesystem::copy_options::overwrite_existing, ec);
        if (ec) throw InputError("--html " + report_html + ": " + ec.message());
      }
      if (!report_pdf.empty()) {
        std::string err = report::print_pdf(report_dir + "/report.html", report_pdf);
        if (!err.empty()) throw InputError(err);
        std::cout << "pdf: " << report_pdf << "\n";
      }
    } else if (archive->parsed()) {
      code = report::archive_command(archive_dir, archive_out);
    } else if (verify->parsed()) {
      code = report::verify_command(verify_path);
    } else if (compare->parsed()) {
      code = report::compare_command(cmp_base, cmp_cur, cmp_tol, cmp_out);
    } else if (io_cmd.parsed()) {
      code = io_cmd.run();
    } else if (list->parsed()) {
      code = cmd_list(list_suite);
    }
  } catch (const InputError& e) {
    std::cerr << "clusterbench: " << e.what() << std::endl;
    code = 2;
  } catch (const std::exception& e) {
    std::cerr << "clusterbench: error: " << e.what() << std::endl;
    code = 3;
  }
  if (mpi) Context::finalize();
  return code;
}
