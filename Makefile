# clusterbench: `make run` (set up, build the binary and its GPU plugin, run the default suite on
# this node, report), `make test` (set up with the test tools, build everything, every test),
# `make report` (re-render results/latest), `make package` (the Debian package, docs/install.md).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all setup setup-test setup-package build build-binary build-all run test report package clean

all: build-all

setup:
	@bash scripts/setup.sh

setup-test:
	@bash scripts/setup.sh --test

setup-package:
	@bash scripts/setup.sh --package

# What `make run` needs: the binary and its GPU plugin; no test binaries, no test-only downloads.
build: setup
	@$(MAKE) --no-print-directory build-binary

build-binary:
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DCLUSTERBENCH_TESTS=OFF >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target clusterbench -- --no-print-directory

build-all: setup-test
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DCLUSTERBENCH_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) -- --no-print-directory

run: build
	@bash scripts/make-run.sh

test: build-all
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900

# The package carries both GPU plugins: the CUDA 12 one is built from the CUDA 12.2 wheels, so
# they are fetched before CMake configures (one recipe: in order under make -j too).
package: setup-package
	@$(MAKE) --no-print-directory build-binary
	@bash scripts/package.sh $(BUILD)

report: build
	@$(BUILD)/clusterbench report results/latest; rc=$$?; \
	  if [ $$rc -eq 2 ] || [ $$rc -gt 4 ]; then exit $$rc; fi; \
	  echo "make report: verdict exit code $$rc; report in $$(readlink -f results/latest)/report.md"

clean:
	rm -rf $(BUILD)
