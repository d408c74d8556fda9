// `clusterbench io make-dataset`: see make_dataset_command.hpp.
#include "app/io_command.hpp"

#include <iostream>
#include <memory>

#include "core/benchmark.hpp"
#include "io/dataset.hpp"

namespace clusterbench::io {

IoCommand add_io_command(CLI::App& app) {
  struct Args {
    std::string dir, size, size_max;
    long long count = 0;
    unsigned long long seed = 1;
  };
  auto a = std::make_shared<Args>();
  IoCommand c;
  c.io = app.add_subcommand("io", "storage helpers (io make-dataset)");
  c.io->require_subcommand(1);
  c.make_dataset =
      c.io->add_subcommand("make-dataset", "write a dataset of sample files for io.dataloader");
  c.make_dataset->add_option("dir", a->dir, "directory to fill (created; must hold no samples)")
      ->required();
  c.make_dataset->add_option("--count", a->count, "number of sample files")->required();
  c.make_dataset
      ->add_option("--size", a->size, "bytes per file, e.g. 128K (the minimum with --size-max)")
      ->required();
  c.make_dataset->add_option("--size-max", a->size_max, "sizes uniform in [--size, --size-max]");
  c.make_dataset->add_option("--seed", a->seed, "seed of the payload and the sizes");
  c.run = [a]() {
    DatasetSpec spec;
    spec.dir = a->dir;
    spec.count = a->count;
    spec.size = parse_size(a->size, "--size");
    spec.size_max = a->size_max.empty() ? 0 : parse_size(a->size_max, "--size-max");
    if (spec.size_max != 0 && spec.size_max < spec.size)
      throw InputError("make-dataset: --size-max must be at least --size");
    spec.seed = a->seed;
    long long bytes = make_dataset(spec);
    std::cout << "wrote " << spec.count << " sample files, " << bytes << " B, to " << spec.dir
              << std::endl;
    return 0;
  };
  return c;
}

}  // namespace clusterbench::io
