# Releases: `make release VERSION=1.2.0` cross-builds agentd for six targets
# into dist/ (mk/release.sh, and mk/gobuild.sh for how each target is
# built), and `make parsers` / `make check-parsers` build the repository
# map's WebAssembly parsers (internal/repomap/parsers.wasm) from the C
# sources of the tree-sitter modules go.mod pins. parsers.wasm is committed
# so that `go build` and `go install` need no C compiler (a build with cgo
# compiles the same C natively instead); check-parsers (part of `make
# test`) proves the committed bytes are what the pinned sources build.

.PHONY: release release-deps parsers-deps parsers check-parsers

PARSERS := internal/repomap/parsers.wasm

# What the release needs besides the parsers' tools, from Debian's packages
# when missing (never a prebuilt toolchain): the C compilers that build the
# native parsers (mk/gobuild.sh says which target uses which), file, which
# names each binary's kind as it is built, and zip for the Windows archives.
# mk/apt-install.sh waits for the package lock another apt or dpkg holds.
release-deps: parsers-deps
	@missing=""; \
	command -v x86_64-linux-gnu-gcc >/dev/null || missing="$$missing gcc"; \
	command -v aarch64-linux-gnu-gcc >/dev/null || missing="$$missing gcc-aarch64-linux-gnu"; \
	command -v x86_64-w64-mingw32-gcc >/dev/null || missing="$$missing gcc-mingw-w64-x86-64"; \
	command -v file >/dev/null || missing="$$missing file"; \
	command -v zip >/dev/null || missing="$$missing zip"; \
	if [ -n "$$missing" ]; then mk/apt-install.sh "the release" $$missing; fi

# What building parsers.wasm needs: clang and lld (wasm-ld) compile C to
# wasm32, wasi-libc is its C library, libclang-rt-14-dev-wasm32 its
# compiler runtime.
parsers-deps:
	@missing=""; \
	command -v clang >/dev/null || missing="$$missing clang"; \
	command -v wasm-ld >/dev/null || missing="$$missing lld"; \
	test -f /usr/lib/wasm32-wasi/libc.a || missing="$$missing wasi-libc"; \
	ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || missing="$$missing libclang-rt-14-dev-wasm32"; \
	if [ -n "$$missing" ]; then mk/apt-install.sh "building parsers.wasm" $$missing; fi

# api.h is the tree-sitter runtime's header, copied from the pinned
# go-tree-sitter module for the native parsers' cgo build (a cgo package
# cannot name another module's folder); check-parsers proves it is still
# that module's.
API_H := internal/repomap/wasm/include/tree_sitter/api.h
PINNED_API_H = $$($(GO) list -m -f '{{.Dir}}' github.com/tree-sitter/go-tree-sitter)/include/tree_sitter/api.h

# Rebuilds the committed parsers and api.h (after changing glue.c or a
# grammar's version in go.mod); commit the result.
parsers: parsers-deps
	internal/repomap/wasm/build.sh $(PARSERS)
	cp "$(PINNED_API_H)" $(API_H) && chmod 644 $(API_H)

check-parsers: parsers-deps
	@mkdir -p $(CACHE)
	internal/repomap/wasm/build.sh $(CACHE)/parsers.wasm
	@cmp -s $(CACHE)/parsers.wasm $(PARSERS) || { \
	  echo "$(PARSERS) is not what its sources build (glue.c, build.sh, the grammar versions in go.mod):"; \
	  echo "  run 'make parsers' and commit $(PARSERS)"; exit 1; }
	@cmp -s "$(PINNED_API_H)" $(API_H) || { \
	  echo "$(API_H) is not the pinned go-tree-sitter's: run 'make parsers' and commit it"; exit 1; }
	@echo "$(PARSERS): rebuilt from its sources, same bytes; $(API_H): the pinned runtime's"

FRONTEND_TESTS += check-parsers

release: check-parsers release-deps
	GO=$(GO) mk/release.sh "$(RELEASE_VERSION)"

# VERSION defaults to `git describe` for make build; a release names it.
RELEASE_VERSION := $(if $(filter command line environment,$(origin VERSION)),$(VERSION))

# The inputs (VERSION, TARGETS) are checked when make reads this file, before
# the parsers and the deps (half a minute and more) are built for nothing.
ifneq ($(filter release,$(MAKECMDGOALS)),)
RELEASE_CHECK := $(shell TARGETS="$(TARGETS)" mk/release.sh --check "$(RELEASE_VERSION)" 2>&1 || echo FAILED)
ifneq ($(filter FAILED,$(RELEASE_CHECK)),)
$(error $(filter-out FAILED,$(RELEASE_CHECK)))
endif
endif

# The release workflow (.github/workflows/release.yml: on a tag, make
# release, the archives and SHA256SUMS to the release page, each .vsix to
# the VS Code Marketplace and Open VSX) is checked by actionlint, installed
# from the Go module proxy into .cache/bin; and mk/release_test.sh checks
# the release's inputs, the package lock wait and TARGETS= trials with stub
# builders (no toolchain needed).
ACTIONLINT_VERSION := v1.7.7
.PHONY: test-release lint-workflows
lint-workflows:
	GOBIN=$(CACHE)/bin $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	$(CACHE)/bin/actionlint .github/workflows/*.yml

test-release: lint-workflows
	mk/release_test.sh

FRONTEND_TESTS += test-release
