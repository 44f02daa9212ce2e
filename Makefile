# make wrappers around CMake. `make bench` is the main job, `make test` the tests.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all build test test-fast test-asan test-tsan bench bench-quick install clean

all: build

build:
	@scripts/install-deps.sh
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

# The whole suite: normal build, then ASan+UBSan, then TSan.
test: test-fast test-asan test-tsan

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	@scripts/install-deps.sh
	@cmake -S . -B build-asan -DUSLUB_SANITIZE=address,undefined -DUSLUB_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory
	cd build-asan && USLUB_SANITIZED=1 ctest --output-on-failure -j $(JOBS)

test-tsan:
	@scripts/install-deps.sh
	@cmake -S . -B build-tsan -DUSLUB_SANITIZE=thread -DUSLUB_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS) -- --no-print-directory
	cd build-tsan && USLUB_SANITIZED=1 TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# Benchmarks against the peers (installs missing peers when it can).
bench: build
	@bench/install-peers.sh
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory
	@python3 bench/run.py --build $(BUILD) $(BENCH_ARGS)

bench-quick:
	@$(MAKE) --no-print-directory bench BENCH_ARGS=--quick

install: build
	cmake --install $(BUILD)

clean:
	rm -rf build build-asan build-tsan
