# agentd — see README.md.
SHELL := /bin/bash
GO ?= go
CACHE := $(CURDIR)/.cache
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build install deps test vet lint gotest bench demo clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/agentd ./cmd/agentd

# Installs agentd into $GOBIN, else ~/.local/bin (INSTALL_DIR=... to choose),
# and says whether that folder is on PATH.
INSTALL_DIR ?= $(or $(shell $(GO) env GOBIN),$(HOME)/.local/bin)
install: build
	@mkdir -p "$(INSTALL_DIR)"
	install -m 0755 $(BIN)/agentd "$(INSTALL_DIR)/agentd"
	@case ":$$PATH:" in *":$(INSTALL_DIR):"*) echo "installed $(INSTALL_DIR)/agentd; run: agentd help";; \
	  *) echo "installed $(INSTALL_DIR)/agentd, but $(INSTALL_DIR) is not on PATH; add it:"; \
	     echo "  export PATH=\"$(INSTALL_DIR):\$$PATH\"   (in ~/.bashrc or ~/.zshrc)";; esac

# Each front end's end-to-end suite lives in mk/<name>.mk, which appends its
# target to FRONTEND_TESTS; the README's test command runs them all.
FRONTEND_TESTS :=
-include mk/*.mk

# The README's test command: everything CI runs.
test: deps vet lint gotest $(FRONTEND_TESTS)

# What the tests use besides Go: git and diff (the oracles for ignore rules,
# snapshots and patches), ripgrep (the reference for search_code),
# Node.js with npm (a JSON-RPC client nobody here wrote drives agentd serve),
# and bash-completion (the shell completion test sources agentd's script).
# Installed from Debian's packages when missing; Go modules, staticcheck and
# the Node packages install themselves into git-ignored folders.
deps:
	@missing=""; \
	command -v git >/dev/null || missing="$$missing git"; \
	command -v diff >/dev/null || missing="$$missing diffutils"; \
	command -v rg >/dev/null || missing="$$missing ripgrep"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v gcc >/dev/null || missing="$$missing gcc"; \
	test -f /usr/share/bash-completion/bash_completion || missing="$$missing bash-completion"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing || \
	    { echo "make test needs:$$missing (apt-get install$$missing)"; exit 1; }; \
	fi

# internal/repomap parses natively with cgo and with parsers.wasm without
# it (the darwin and windows/arm64 releases): both builds are vetted,
# linted and tested. The whole tree is also vetted and linted as windows
# and darwin code, which this machine compiles but does not run.
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./internal/repomap/
	GOOS=windows $(GO) vet ./...
	GOOS=darwin $(GO) vet ./...

lint:
	GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(CACHE)/bin/staticcheck ./...
	CGO_ENABLED=0 $(CACHE)/bin/staticcheck ./internal/repomap/
	GOOS=windows $(CACHE)/bin/staticcheck ./...
	GOOS=darwin $(CACHE)/bin/staticcheck ./...

# The race detector slows the restore property and swap-race tests tenfold,
# so under -race they run a quarter of their rounds; the full 500 sequences
# and 200 rounds run here without it. Likewise the random undo test
# (session/undo_random_test.go): 100 sequences under -race, 300 here
# (make soak-undo runs thousands).
gotest:
	$(GO) test -race -count=1 -timeout 20m ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./internal/repomap/
	set -o pipefail; $(GO) test -count=1 -run 'TestUndoIsExact|TestRestoreSymlinkSwapRace' -v ./gitops/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)'
	set -o pipefail; $(GO) test -count=1 -timeout 30m -run 'TestUndoRandomSequences' -v ./session/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|sequences, |seed='

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs the bundled example plan on a copy of examples/demo, so the checkout
# stays clean. No model needed.
demo: build
	@d=$$(mktemp -d); cp -r examples/demo "$$d/demo"; \
	echo "workspace: $$d/demo"; \
	$(BIN)/agentd run examples/plans/refactor.json --workspace "$$d/demo" --yes --state-dir "$$d/state"; \
	code=$$?; echo; \
	echo "The binary is $(BIN)/agentd. To run it as 'agentd', put it on PATH:"; \
	echo "  make install                      (copies it to $(INSTALL_DIR))"; \
	echo "  or: export PATH=\"$(BIN):\$$PATH\""; \
	exit $$code

clean:
	rm -rf $(BIN)
