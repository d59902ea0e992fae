# The ACP suite: the official ACP TypeScript SDK's client side
# (@agentclientprotocol/sdk, pinned in acp/testclient/package-lock.json)
# drives the built `agentd acp` against the fake model server, run as a
# process (internal/fakemodel/cmd/fakemodel). Every message both ways is
# validated against the JSON schema the SDK ships (acp/testclient/schema.mjs,
# with ajv). A second client nobody here wrote, acpx (npm, a headless ACP
# command-line client), runs a persistent session through its CLI with
# tap.mjs checking the wire (acpx.test.mjs). npm installs into the
# git-ignored acp/testclient/node_modules, with its cache in .cache/npm.

ACP_CLIENT := $(CURDIR)/acp/testclient

.PHONY: test-acp
test-acp: build
	$(GO) build -o $(CACHE)/bin/fakemodel ./internal/fakemodel/cmd/fakemodel
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "test-acp: needs Node.js and npm (make deps installs them)"; exit 1; }
	@cd $(ACP_CLIENT) && if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
	  npm_config_cache=$(CACHE)/npm npm ci --no-audit --no-fund || \
	  { echo "test-acp: could not install @agentclientprotocol/sdk, ajv and acpx from npm into $(ACP_CLIENT)/node_modules; the ACP suite cannot run"; exit 1; }; \
	fi
	cd $(ACP_CLIENT) && AGENTD_BIN=$(BIN)/agentd FAKEMODEL_BIN=$(CACHE)/bin/fakemodel \
	  node --test --test-reporter=spec --test-reporter-destination=stdout \
	  --test-reporter=./summary.mjs --test-reporter-destination=stdout acp.test.mjs acpx.test.mjs

FRONTEND_TESTS += test-acp
