// `clusterbench list [--suite S]`: the benchmarks, their cases and their declared knobs.
#include <iostream>
#include <set>

#include "app/command.hpp"
#include "core/api/benchmark.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace {

/// "[node, gpu GPU]": the levels (and GPU need) of a benchmark's cases in a suite.
std::string kinds_of(const Benchmark& b, const std::vector<json>& cases) {
  std::set<std::string> kinds;
  for (const auto& c : cases)
    kinds.insert(std::string(level_name(b.case_level(c))) + (b.case_needs_gpu(c) ? " GPU" : ""));
  std::string shown;
  for (const auto& k : kinds) shown += (shown.empty() ? "" : ", ") + k;
  return shown.empty() ? level_name(b.level()) : shown;
}

void print_benchmark(const Benchmark& b, const std::string& suite) {
  Settings settings(suite, {});
  const bool here = b.in_suite(suite);
  auto cases = here ? b.cases(settings) : std::vector<json>{};
  std::cout << b.id() << "  [" << kinds_of(b, cases) << "]  " << b.description() << "\n";
  std::cout << "    " << cases.size() << " case(s) in suite " << suite;
  if (!cases.empty()) std::cout << ", e.g. " << dump_json(cases.front());
  if (!here) {
    std::vector<std::string> in;
    for (const char* x : {"ci", "quick", "full"})
      if (b.in_suite(x)) in.push_back(std::string("--suite ") + x);
    std::string where = "`clusterbench burnin`";
    if (!in.empty()) {
      where = in.front();
      for (size_t i = 1; i < in.size(); ++i) where += (i + 1 == in.size() ? " and " : ", ") + in[i];
    }
    std::cout << " (it runs in " << where << ")";
  }
  std::cout << "\n";
  for (const KnobSpec* k : b.knob_specs()) std::cout << "    " << describe_knob(b.id(), *k) << "\n";
}

class ListCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand("list", "list the benchmarks, their cases and their knobs");
    cmd->add_option("--suite", suite_, "ci | quick | full")
        ->check(CLI::IsMember({"ci", "quick", "full"}));
    return cmd;
  }
  int run(int, char**) override {
    std::cout << "Benchmarks and their cases in suite " << suite_
              << ". Each knob: --set ID.KNOB=DEFAULT (type, unit) help; a default written a/b/c "
                 "is the ci/quick/full suites'. KNOB may also be set for a whole area (AREA.KNOB, "
                 "e.g. collectives.path=network).\n\n";
    for (const auto& b : Registry::get().all()) print_benchmark(*b, suite_);
    return 0;
  }

 private:
  std::string suite_ = "ci";
};

}  // namespace

std::unique_ptr<Command> make_list_command() { return std::make_unique<ListCommand>(); }

}  // namespace clusterbench
