# make wrappers around CMake. `make bench` is the main job, `make test` the tests.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# make install: where (PREFIX; unset: the build's CMAKE_INSTALL_PREFIX,
# /usr/local unless configured otherwise) and, for packaging, under which
# staging root (DESTDIR: the files go to $(DESTDIR)$(PREFIX)/...)
PREFIX     ?=
DESTDIR    ?=
# Benchmark results: under the build folder, never in the source tree.
BENCH_OUT  ?= $(BUILD)/bench-results

.PHONY: all build test test-fast test-asan test-tsan test-clang bench bench-quick bench-publish \
	install install-only clean

all: build

build:
	@scripts/install-deps.sh
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

# The whole suite: normal build, then ASan+UBSan, then TSan, then a clang
# build; every build with warnings as errors.
test: test-fast test-asan test-tsan test-clang

# The normal build's suite runs three times: as built (per-CPU sheaves,
# Linux 7.0, each thread's own), with every cache in the 6.x cpu-slab
# model (USLUB_CPU_SLABS=1), and with the sheaves per CPU
# (USLUB_PERCPU=auto: per rseq id where glibc registered rseq; the same as
# the first pass where not). The checks of the build itself, the install,
# options-consistency and bench-publish checks, and the set-uid test,
# which sets its own environment, run once.
ONCE := '^(layering|fastpath_size|tls_model|malloc_setuid|install|options_consistency|bench_publish)$$'
test-fast:
	@$(MAKE) --no-print-directory build CMAKE_ARGS="$(CMAKE_ARGS) -DUSLUB_WERROR=ON"
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cd $(BUILD) && USLUB_CPU_SLABS=1 ctest --output-on-failure -j $(JOBS) -E $(ONCE)
	cd $(BUILD) && USLUB_PERCPU=auto ctest --output-on-failure -j $(JOBS) -E $(ONCE)

test-asan:
	@scripts/install-deps.sh
	@cmake -S . -B build-asan -DUSLUB_SANITIZE=address,undefined -DUSLUB_BUILD_BENCH=OFF -DUSLUB_WERROR=ON >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory
	cd build-asan && USLUB_SANITIZED=1 ctest --output-on-failure -j $(JOBS)

test-tsan:
	@scripts/install-deps.sh
	@cmake -S . -B build-tsan -DUSLUB_SANITIZE=thread -DUSLUB_BUILD_BENCH=OFF -DUSLUB_WERROR=ON >/dev/null
	@cmake --build build-tsan -j $(JOBS) -- --no-print-directory
	cd build-tsan && USLUB_SANITIZED=1 TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# clang, warnings as errors: the library, the tool and the tests build;
# the unit tier runs (the gcc builds above run everything).
test-clang:
	@scripts/install-deps.sh
	@cmake -S . -B build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
		-DUSLUB_BUILD_BENCH=OFF -DUSLUB_WERROR=ON >/dev/null
	@cmake --build build-clang -j $(JOBS) -- --no-print-directory
	cd build-clang && ctest --output-on-failure -j $(JOBS) -L unit

# Benchmarks against the peers (installs missing peers when it can); the
# results go to $(BENCH_OUT) (bench.json, bench.md, bench.png).
bench: build
	@bench/install-peers.sh $(BUILD)
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory
	@python3 bench/run.py --build $(BUILD) --out $(BENCH_OUT) $(BENCH_ARGS)

bench-quick:
	@$(MAKE) --no-print-directory bench BENCH_ARGS=--quick

# The README's table of published figures, from the last full `make bench`.
bench-publish:
	@python3 bench/run.py --publish $(BENCH_OUT)/bench.json

# Installs under PREFIX (default: the build's CMAKE_INSTALL_PREFIX, which
# is /usr/local unless CMAKE_ARGS set it), staged under DESTDIR if set.
# The installed uslub.pc and CMake package are relocatable (paths relative
# to where they lie), so a staged or moved tree works where it lies.
# As root without DESTDIR it then runs ldconfig: the loader finds a new
# library in /usr/local/lib only through its cache.
install: build
	@$(MAKE) --no-print-directory install-only
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then \
		ldconfig; fi

# The same without building first (what is in $(BUILD) already).
install-only:
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) $(if $(PREFIX),--prefix "$(PREFIX)")

clean:
	rm -rf build build-asan build-tsan build-clang
