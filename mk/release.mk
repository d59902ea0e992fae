# Releases: `make release VERSION=1.2.0` cross-builds agentd for six targets
# into dist/ (mk/release.sh says how), and `make parsers` / `make
# check-parsers` build the repository map's WebAssembly parsers
# (internal/repomap/parsers.wasm) from the C sources of the tree-sitter
# modules go.mod pins. parsers.wasm is committed so that `go build` and
# `go install` need no C compiler; check-parsers (part of `make test`)
# proves the committed bytes are what the pinned sources build.

.PHONY: release release-deps parsers check-parsers

PARSERS := internal/repomap/parsers.wasm

# What building the parsers and the archives needs, from Debian's packages
# when missing (never a prebuilt toolchain): clang and lld (wasm-ld) compile
# C to wasm32, wasi-libc is its C library, libclang-rt-14-dev-wasm32 its
# compiler runtime; zip writes the Windows archives.
release-deps:
	@missing=""; \
	command -v clang >/dev/null || missing="$$missing clang"; \
	command -v wasm-ld >/dev/null || missing="$$missing lld"; \
	test -f /usr/lib/wasm32-wasi/libc.a || missing="$$missing wasi-libc"; \
	ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || missing="$$missing libclang-rt-14-dev-wasm32"; \
	command -v zip >/dev/null || missing="$$missing zip"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing || \
	    { echo "the parsers and the release need:$$missing (apt-get install$$missing)"; exit 1; }; \
	fi

# Rebuilds the committed parsers (after changing glue.c or a grammar's
# version in go.mod); commit the result.
parsers: release-deps
	internal/repomap/wasm/build.sh $(PARSERS)

check-parsers: release-deps
	@mkdir -p $(CACHE)
	internal/repomap/wasm/build.sh $(CACHE)/parsers.wasm
	@cmp -s $(CACHE)/parsers.wasm $(PARSERS) || { \
	  echo "$(PARSERS) is not what its sources build (glue.c, build.sh, the grammar versions in go.mod):"; \
	  echo "  run 'make parsers' and commit $(PARSERS)"; exit 1; }
	@echo "$(PARSERS): rebuilt from its sources, same bytes"

FRONTEND_TESTS += check-parsers

release: check-parsers
	@test -n "$(RELEASE_VERSION)" || { echo "make release needs a version: make release VERSION=1.2.0"; exit 2; }
	GO=$(GO) mk/release.sh "$(RELEASE_VERSION)"

# VERSION defaults to `git describe` for make build; a release names it.
RELEASE_VERSION := $(if $(filter command line environment,$(origin VERSION)),$(VERSION))
