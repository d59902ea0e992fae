# agentd — see README.md.
SHELL := /bin/bash
GO ?= go
CACHE := $(CURDIR)/.cache
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test vet lint gotest bench demo clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/agentd ./cmd/agentd

# The README's test command: everything CI runs.
test: vet lint gotest

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

lint:
	GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(CACHE)/bin/staticcheck ./...

gotest:
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs the bundled example plan on a copy of examples/demo, so the checkout
# stays clean. No model needed.
demo: build
	@d=$$(mktemp -d); cp -r examples/demo "$$d/demo"; \
	echo "workspace: $$d/demo"; \
	$(BIN)/agentd run examples/plans/refactor.json --workspace "$$d/demo" --yes --state-dir "$$d/state"

clean:
	rm -rf $(BIN)
