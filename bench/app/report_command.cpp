// `clusterbench report` (report_command.hpp).
#include "app/report_command.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "app/command.hpp"
#include "core/version.hpp"
#include "records/sha256.hpp"
#include "records/spec.hpp"
#include "reports/alert_rules.hpp"
#include "reports/html.hpp"
#include "reports/prometheus.hpp"
#include "reports/render.hpp"
#include "reports/report.hpp"
#include "reports/select.hpp"

namespace clusterbench {

namespace {

/// The console summary after a report: the verdict, the details and where report.md is.
void print_report(const report::Report& rep, const std::string& dir, bool written) {
  // The records' warnings are among rep.warnings: render_console prints them once.
  std::cout << report::render_console(rep) << report::render_console_details(rep)
            << (written ? "report: " + dir + "/report.md\n"
                        : "report: not written (see the warning above)\n")
            << std::flush;
}

/// Refuses to write any of `outputs` ("--option", path) over the spec table `spec`.
void refuse_spec_overwrite(const std::vector<std::pair<std::string, std::string>>& outputs,
                           const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path table = fs::weakly_canonical(fs::absolute(spec, ec), ec);
  for (const auto& [option, path] : outputs)
    if (!path.empty() && fs::weakly_canonical(fs::absolute(path, ec), ec) == table)
      throw InputError(option + " " + path + ": is the spec table " + spec +
                       " the report is judged against; write it elsewhere");
}

/// The table at `path`; when run.json named it (`from_run`), an error says so: the run's own
/// field is what is wrong, and --spec is the way around it.
Spec spec_of(const std::string& dir, const std::string& path, bool from_run) {
  try {
    return load_spec(path);
  } catch (const InputError& e) {
    if (!from_run) throw;
    throw InputError(dir + "/run.json: field 'spec.path': " + e.what() +
                     " (pass --spec FILE to judge the run against a table)");
  }
}

/// `report --alert-rules FILE`: the rules of the table given by --spec, else of the one
/// run.json names; the run itself is not evaluated.
int write_alert_rules(const std::string& dir, const std::string& spec_arg, const std::string& file,
                      bool force) {
  std::string path;
  if (!spec_arg.empty()) {
    path = resolve_spec_arg(spec_arg);
  } else {
    const json run = read_json_file(dir + "/run.json");
    const json* p = run.contains("spec") && run.at("spec").is_object() ? &run.at("spec") : nullptr;
    if (!p || !p->contains("path") || !p->at("path").is_string() ||
        p->at("path").get<std::string>().empty())
      throw InputError(dir + "/run.json: names no spec table; pass --spec FILE");
    path = p->at("path").get<std::string>();
  }
  const Spec spec = spec_of(dir, path, spec_arg.empty());
  for (const auto& table : spec.extends_chain)  // the table and every table it extends
    refuse_spec_overwrite({{"--alert-rules", file}}, table);
  report::check_output_file(file, "--alert-rules",
                            std::filesystem::exists(dir + "/run.json") ? dir : "", force);
  write_file_atomic(file,
                    report::render_alert_rules(spec, sha256_file(path), clusterbench_version()));
  std::cout << "alert rules: " << spec.alerts.size() << " from " << spec.name << " (" << path
            << ") -> " << file << (spec.alerts.empty() ? " (the table defines none)" : "") << "\n";
  return 0;
}

}  // namespace

int report_command(const std::string& dir, const std::string& spec_path, bool quiet,
                   const std::string& prometheus, bool* written,
                   const std::vector<std::pair<std::string, std::string>>& outputs, bool force) {
  // Records are read with the `extra` keys the report reads and the table selects on: the
  // table named here is loaded first; run.json's is known only once the run is read, and a
  // table that selects on other keys has the run read again with them (docs/report.md "Scale").
  std::optional<Spec> given;
  if (!spec_path.empty()) given = spec_of(dir, resolve_spec_arg(spec_path), false);
  ExtraKeys keys = report::report_extra_keys(given ? &*given : nullptr);
  auto run = std::make_shared<RunDir>(read_run_dir(dir, true, &keys));
  if (!prometheus.empty()) report::check_output_file(prometheus, "--prometheus", dir, force);
  std::string path = given ? resolve_spec_arg(spec_path) : run->run.spec.path;
  if (path.empty()) throw InputError(dir + "/run.json: names no spec table; pass --spec FILE");
  auto all = outputs;
  all.emplace_back("--prometheus", prometheus);
  refuse_spec_overwrite(all, path);
  const Spec spec = given ? *given : spec_of(dir, path, true);
  if (ExtraKeys needed = report::report_extra_keys(&spec); needed != keys)
    *run = read_run_dir(dir, true, &needed);
  // The report (and the run it shares) is never freed: the process ends right after, and freeing
  // the million objects of a 1,000-node run took 0.7 s of `report` (docs/report.md "Scale").
  const report::Report& rep = *new report::Report(report::make_report(run, spec));
  // A run directory that cannot be written (read-only evidence copy): the verdict still stands.
  std::string unwritten;
  try {
    report::write_reports(rep, dir);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    unwritten = e.what();
  }
  if (written) *written = unwritten.empty();
  if (!prometheus.empty()) report::write_prometheus(prometheus, report::render_prometheus(rep));
  if (!unwritten.empty())
    std::cerr << "clusterbench: warning: report files not written in " << dir << " (" << unwritten
              << "); the verdict below is printed only\n";
  if (!quiet) print_report(rep, dir, unwritten.empty());
  return rep.exit_code;
}

RunHooks report_hooks() {
  RunHooks h;
  h.choose_spec = [](const std::vector<EnvRecord>& envs) {
    auto sel = report::select_spec(envs, specs_dir());
    SpecChoice c;
    c.path = sel.path;
    c.selected_by = "auto: " + sel.reason;
    return c;
  };
  h.check_output = [](const std::string& path, const std::string& option,
                      const std::string& run_dir) {
    report::check_output_file(path, option, run_dir);
  };
  // A run whose report files cannot be written (a full output filesystem) did not complete:
  // exit 3, not the verdict, so that no one signs on a verdict without its report.
  h.report = [](const std::string& dir, const std::string& prometheus) {
    bool written = true;
    int code = report_command(dir, "", false, prometheus, &written);
    if (written) return code;
    std::cerr << "clusterbench: run not complete: its report could not be written (see the "
                 "warning above); every record is in "
              << dir << "/records.jsonl: make room, then `clusterbench report " << dir << "`"
              << std::endl;
    return code == 2 ? 2 : 3;
  };
  return h;
}

namespace {

/// `clusterbench report [DIR] [--spec F] [--html F] [--pdf F] [--prometheus F] [--force]`, or
/// `clusterbench report [DIR] [--spec F] --alert-rules F [--force]`.
class ReportCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    cmd_ = app.add_subcommand("report", "evaluate a run directory against its spec table");
    cmd_->add_option("dir", dir_, "run directory (default results/latest)");
    cmd_->add_option("--spec", spec_, "spec table (default: the one run.json names)");
    html_opt_ = cmd_->add_option("--html", html_, "also copy report.html to this file");
    pdf_opt_ = cmd_->add_option("--pdf", pdf_, "print report.html to this PDF (headless Chromium)");
    prom_opt_ =
        cmd_->add_option("--prometheus", prom_,
                         "write the headline metrics as a Prometheus textfile (node_exporter)");
    rules_opt_ = cmd_->add_option(
        "--alert-rules", rules_,
        "write Prometheus alerting rules from the spec table's thresholds to this file "
        "(promtool check rules); the run is not evaluated");
    cmd_->add_flag(
        "--force", force_,
        "let --html/--pdf/--prometheus/--alert-rules replace an existing file that is not an "
        "earlier output of theirs (never a run directory's own file)");
    return cmd_;
  }
  int run(int, char**) override {
    // Checked before anything is rendered: never a run file, a directory or a device.
    if (!html_.empty()) report::check_output_file(html_, "--html", dir_, force_);
    if (!pdf_.empty()) report::check_output_file(pdf_, "--pdf", dir_, force_);
    for (const auto* o : {pdf_opt_, html_opt_, prom_opt_, rules_opt_})
      if (o && o->count() && o->as<std::string>().empty())
        throw InputError(o->get_name() + ": empty path; name a file");
    if (!rules_.empty()) {
      if (!html_.empty() || !pdf_.empty() || !prom_.empty())
        throw InputError(
            "--alert-rules writes the rules only; run report again for "
            "--html, --pdf or --prometheus");
      return write_alert_rules(dir_, spec_, rules_, force_);
    }
    bool written = false;
    int code = report_command(dir_, spec_, false, prom_, &written,
                              {{"--html", html_}, {"--pdf", pdf_}}, force_);
    if (!written && (!html_.empty() || !pdf_.empty()))
      throw InputError(std::string(html_.empty() ? "--pdf" : "--html") +
                       ": report.html could not be written in " + dir_ +
                       " (see the warning above), and an older one would not match this "
                       "verdict; copy the run directory somewhere writable");
    if (!html_.empty()) {
      std::error_code ec;
      std::filesystem::copy_file(dir_ + "/report.html", html_,
                                 std::filesystem::copy_options::overwrite_existing, ec);
      if (ec) throw InputError("--html " + html_ + ": " + ec.message());
    }
    if (!pdf_.empty()) {
      std::string err = report::print_pdf(dir_ + "/report.html", pdf_);
      if (!err.empty()) throw InputError(err);
      std::cout << "pdf: " << pdf_ << "\n";
    }
    return code;
  }

 private:
  CLI::App* cmd_ = nullptr;
  std::string dir_ = "results/latest", spec_, html_, pdf_, prom_, rules_;
  bool force_ = false;
  CLI::Option *html_opt_ = nullptr, *pdf_opt_ = nullptr, *prom_opt_ = nullptr,
              *rules_opt_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_report_command() { return std::make_unique<ReportCommand>(); }

}  // namespace clusterbench
