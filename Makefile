# clusterbench: `make run` (set up, build, run the default suite on this node, report),
# `make test` (set up, build, every test), `make report` (re-render results/latest).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all setup build run test report clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	@bash scripts/make-run.sh

test: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900

report: build
	@$(BUILD)/clusterbench report results/latest; rc=$$?; \
	  if [ $$rc -eq 2 ] || [ $$rc -gt 4 ]; then exit $$rc; fi; \
	  echo "make report: verdict exit code $$rc; report in $$(readlink -f results/latest)/report.md"

clean:
	rm -rf $(BUILD)
