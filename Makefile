# ShareBroker: the README's two commands are `make demo` and `make test`.
# Every target installs what is missing (libsodium-dev, pkg-config) before it builds.

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FUZZ_SECONDS ?= 180

.PHONY: deps demo test build bench bench-check-allocations fuzz clean

deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libsodium; then \
		echo "installing libsodium-dev and pkg-config with apt-get"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsodium-dev pkg-config; \
	fi

build: deps
	$(SWIFT) build

demo: deps
	$(SWIFT) build --product sharebroker
	$$($(SWIFT) build --show-bin-path)/sharebroker demo

test: deps
	$(SWIFT) build --product sharebroker
	$(SWIFT) test

bench: deps
	python3 scripts/performance-report.py --wait-quiet 300

# Deterministic regression check for CI: allocations per call of every ShareBroker benchmark
# against Benchmarks/goals.json (release build of the Benchmarks package; no timing gated).
bench-check-allocations: deps
	python3 scripts/performance-report.py --check-allocations

clean:
	rm -rf .build Benchmarks/.build .build-* Benchmarks/.benchmark-results*
