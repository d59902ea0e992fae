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
release-deps: parsers-deps
	@missing=""; \
	command -v x86_64-linux-gnu-gcc >/dev/null || missing="$$missing gcc"; \
	command -v aarch64-linux-gnu-gcc >/dev/null || missing="$$missing gcc-aarch64-linux-gnu"; \
	command -v x86_64-w64-mingw32-gcc >/dev/null || missing="$$missing gcc-mingw-w64-x86-64"; \
	command -v file >/dev/null || missing="$$missing file"; \
	command -v zip >/dev/null || missing="$$missing zip"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing || \
	    { echo "the release needs:$$missing (apt-get install$$missing)"; exit 1; }; \
	fi

# What building parsers.wasm needs: clang and lld (wasm-ld) compile C to
# wasm32, wasi-libc is its C library, libclang-rt-14-dev-wasm32 its
# compiler runtime.
parsers-deps:
	@missing=""; \
	command -v clang >/dev/null || missing="$$missing clang"; \
	command -v wasm-ld >/dev/null || missing="$$missing lld"; \
	test -f /usr/lib/wasm32-wasi/libc.a || missing="$$missing wasi-libc"; \
	ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || missing="$$missing libclang-rt-14-dev-wasm32"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing || \
	    { echo "building parsers.wasm needs:$$missing (apt-get install$$missing)"; exit 1; }; \
	fi

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
	@test -n "$(RELEASE_VERSION)" || { echo "make release needs a version: make release VERSION=1.2.0"; exit 2; }
	GO=$(GO) mk/release.sh "$(RELEASE_VERSION)"

# VERSION defaults to `git describe` for make build; a release names it.
RELEASE_VERSION := $(if $(filter command line environment,$(origin VERSION)),$(VERSION))
