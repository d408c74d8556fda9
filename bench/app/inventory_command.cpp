// `clusterbench inventory`: this node's EnvRecord (bench/env), or every node's under mpirun.
#include <iostream>

#include "app/command.hpp"
#include "core/api/context.hpp"
#include "core/version.hpp"
#include "env/inventory.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace {

class InventoryCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand("inventory", "print this node's EnvRecord (JSON)");
    cmd->add_option("--fs-root", root_, "read /sys, /proc, /dev below this root")
        ->check(CLI::ExistingDirectory);
    cmd->add_flag("--all", all_, "always print an array (one EnvRecord per node)");
    return cmd;
  }
  bool needs_mpi() const override { return true; }
  int run(int, char**) override {
    const Context& ctx = Context::get();
    EnvRecord env;
    if (ctx.is_leader()) {
      InventoryOptions io;
      io.fs_root = root_;
      io.host = ctx.host();
      env = collect_env(io);
      env.versions.mpi = ctx.mpi_version();
      env.versions.clusterbench = clusterbench_version();
    }
    auto gathered = ctx.gather(ctx.is_leader() ? dump_json(json(env)) : "");
    if (!ctx.is_root()) return 0;
    json out = json::array();
    for (const auto& g : gathered)
      if (!g.empty()) out.push_back(json::parse(g));
    std::cout << dump_json(all_ || out.size() != 1 ? out : out[0], 2) << std::endl;
    return 0;
  }

 private:
  std::string root_ = "/";
  bool all_ = false;
};

}  // namespace

std::unique_ptr<Command> make_inventory_command() { return std::make_unique<InventoryCommand>(); }

}  // namespace clusterbench
