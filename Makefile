# The two commands: `make run` and `make test`. Both install what is missing first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCRCRD_WERROR=ON

.PHONY: all deps configure build run test test-sanitize test-system fuzz fuzz-run bench bench-slurm deb clean format

all: build

deps:
	@deploy/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	@deploy/demo-setup.sh
	$(BUILD_DIR)/crcrd --config config/demo.yaml

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The whole suite built with AddressSanitizer and UndefinedBehaviorSanitizer (docs/security.md).
SANITIZE_DIR ?= build-asan
test-sanitize: deps
	@cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCRCRD_SANITIZE=ON >/dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)
	cd $(SANITIZE_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 900

# libFuzzer targets with clang (docs/security.md): `make fuzz-run SECONDS=60` runs each one.
FUZZ_DIR ?= build-fuzz
SECONDS ?= 60
fuzz:
	@deploy/install-deps.sh fuzz
	@cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DCRCRD_FUZZ=ON -DCRCRD_TESTS=OFF >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_all

fuzz-run: fuzz
	fuzz/run.sh $(FUZZ_DIR) $(SECONDS)

bench: build
	bench/run-ingest-bench.sh $(BUILD_DIR)
	bench/run-match-peers.sh $(BUILD_DIR)

# The Slurm executor against sbatch alone on a real one-node cluster (root, Slurm and munge
# installed; docs/performance.md). `make bench-slurm SLURM_BENCH_ARGS="--runs 100"`.
SLURM_BENCH_ARGS ?=
bench-slurm: build
	$(BUILD_DIR)/bench/bench_slurm $(SLURM_BENCH_ARGS)

# The Debian package crcrd_<version>_<arch>.deb in $(DEB_DIR) (deploy/build-deb.sh,
# debian/), then its test, lintian included (docs/operations.md, "Installing from the package").
DEB_DIR ?= build-deb
DEB_FILE = $(DEB_DIR)/crcrd_$(shell dpkg-parsechangelog -S Version)_$(shell dpkg --print-architecture).deb
deb: deps
	deploy/build-deb.sh $(DEB_DIR)
	tests/deploy/package_test.sh $(DEB_FILE) .

# The package under a real systemd (tests/deploy/systemd_test.sh, root only): a Debian 12 root
# (debootstrap, once, into /var/cache/crcrd-test) booted with systemd-nspawn, the package
# installed with dpkg, a job run through crcrd.service and crcrd-sandbox@.service.
test-system: deb
	tests/deploy/systemd_test.sh $(DEB_FILE) .

format:
	@clang-format -i $$(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp' 'bench/*.hpp')

clean:
	rm -rf $(BUILD_DIR)
