# The two set-up commands of the README:
#   make demo   installs what building needs (Debian 12), builds the CLI, runs the flash-sale demo
#   make test   installs what is missing, builds, runs every test (plain, ASan+UBSan, TSan)
#   make package  Debian packages in $(BUILD): libdlock, libdlock-<backend>, libdlock-dev, dlock
# CI (.ci/run) runs `make test` and nothing else.

JOBS ?= $(shell nproc)
# Tests run several at a time: most of a test's time is spent waiting (servers starting, leases
# ending, timeouts: the plain pass keeps 2 cores about 40% busy at -j2), and each starts its
# own servers on free ports in its own directories. Tests that compile run alone (PROCESSORS
# above -j), and at most two fault runs overlap (two resource-lock lanes, tests/fault). The
# sanitizer passes, whose tests spend far more of their time computing, stay at two.
TEST_JOBS ?= 3
SAN_TEST_JOBS ?= 2
BUILD ?= build
CMAKE_FLAGS ?=
# Line tables only (-g1): backtraces and sanitizer reports still name file and line, and the
# builds of `make test` take about a quarter less time than with full debug info (-g).
# DEBUG_INFO=-g for a build to step through in gdb.
DEBUG_INFO ?= -g1
REL_FLAGS = -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG"
SAN_FLAGS = -DCMAKE_CXX_FLAGS_DEBUG="$(DEBUG_INFO)"

.PHONY: all deps deps-build configure build package demo test test-plain test-asan test-tsan bench format clean

all: build

deps:
	@scripts/install-deps.sh test

# The demo needs only what libdlock and the CLI build with: no test servers, no JRE.
deps-build:
	@scripts/install-deps.sh build

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(REL_FLAGS) -DDLOCK_BUILD_TESTS=ON -DDLOCK_BUILD_BENCH=ON $(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD) -j$(JOBS)

package: build
	cmake --build $(BUILD) --target package

# Only the CLI (and libdlock): the tests and benchmarks take many minutes more to build.
demo: deps-build
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(REL_FLAGS) -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target dlock_cli
	$(BUILD)/src/cli/dlock demo flash-sale

test: test-plain test-asan test-tsan

test-plain: build
	cd $(BUILD) && ctest --timeout 900 -j$(TEST_JOBS) \
		|| { $(CURDIR)/scripts/test-failures.sh .; exit 1; }

# AddressSanitizer + UndefinedBehaviorSanitizer over the whole suite.
test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug $(SAN_FLAGS) -DDLOCK_SANITIZE=address,undefined -DDLOCK_BUILD_BENCH=OFF >/dev/null
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ctest --timeout 900 -j$(SAN_TEST_JOBS) -LE nosan \
		|| { $(CURDIR)/scripts/test-failures.sh .; exit 1; }

# ThreadSanitizer over the in-process concurrency tests (label inprocess); only their
# executables are built.
TSAN_TARGETS = unit_tests conformance_memory dlock_fault_checker_test dlock_fault_tcp_proxy_test prometheus_tests
test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug $(SAN_FLAGS) -DDLOCK_SANITIZE=thread -DDLOCK_BUILD_BENCH=OFF >/dev/null
	cmake --build build-tsan -j$(JOBS) --target $(TSAN_TARGETS)
	cd build-tsan && ctest --timeout 900 -j$(SAN_TEST_JOBS) -L inprocess \
		|| { $(CURDIR)/scripts/test-failures.sh .; exit 1; }

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan
