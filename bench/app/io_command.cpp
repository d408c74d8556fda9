// `clusterbench io make-dataset DIR --count N --size BYTES [--size-max BYTES] [--seed S]`: writes
// the sample files io.dataloader reads (docs/dataloader.md "Dataset").
#include <iostream>

#include "app/command.hpp"
#include "core/api/settings.hpp"
#include "io/dataset.hpp"

namespace clusterbench {

namespace {

class IoCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* io = app.add_subcommand("io", "storage helpers (io make-dataset)");
    io->require_subcommand(1);
    auto* mk =
        io->add_subcommand("make-dataset", "write a dataset of sample files for io.dataloader");
    mk->add_option("dir", dir_, "directory to fill (created; must hold no samples)")->required();
    mk->add_option("--count", count_, "number of sample files")->required();
    mk->add_option("--size", size_, "bytes per file, e.g. 128K (the minimum with --size-max)")
        ->required();
    mk->add_option("--size-max", size_max_, "sizes uniform in [--size, --size-max]");
    mk->add_option("--seed", seed_, "seed of the payload and the sizes");
    return io;
  }
  /// Bad options or a directory that already holds samples throw InputError (exit 2).
  int run(int, char**) override {
    io::DatasetSpec spec;
    spec.dir = dir_;
    spec.count = count_;
    spec.size = parse_size(size_, "--size");
    spec.size_max = size_max_.empty() ? 0 : parse_size(size_max_, "--size-max");
    if (spec.size_max != 0 && spec.size_max < spec.size)
      throw InputError("make-dataset: --size-max must be at least --size");
    spec.seed = seed_;
    long long bytes = io::make_dataset(spec);
    std::cout << "wrote " << spec.count << " sample files, " << bytes << " B, to " << spec.dir
              << std::endl;
    return 0;
  }

 private:
  std::string dir_, size_, size_max_;
  long long count_ = 0;
  unsigned long long seed_ = 1;
};

}  // namespace

std::unique_ptr<Command> make_io_command() { return std::make_unique<IoCommand>(); }

}  // namespace clusterbench
