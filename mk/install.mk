# One-step install in each editor (the windows helper's part of issue 26):
# the Neovim plugin's protocol-version refusal against a stand-in daemon, and
# build.lua's download from a file:// release folder shaped as `make release`
# writes one, plus the repository root loading as a plugin without `dir`.
# (The VS Code side runs with the extension's unit tests, test/unit/binary_platform.test.ts.)
.PHONY: test-install-neovim

test-install-neovim: nvim
	cd editors/neovim && NVIM_BIN=$(NVIM_DIR)/nvim timeout 120 $(NVIM_DIR)/nvim --headless -u NONE -i NONE -n -l tests/protocol.lua
	cd editors/neovim && NVIM_BIN=$(NVIM_DIR)/nvim timeout 120 $(NVIM_DIR)/nvim --headless -u NONE -i NONE -n -l tests/install.lua

FRONTEND_TESTS += test-install-neovim

# The linux-x64 platform .vsix, built by scripts/package-platform.sh around this
# checkout's agentd, installed into code-server with no agentd on PATH, runs a plan;
# then, opened on the user's home folder, it is refused with agentd.allowBroadWorkspace
# named, and turning that on restarts the bundled daemon (test/e2e/broad.mjs).
.PHONY: test-install-vscode
test-install-vscode: build
	editors/vscode/scripts/install-tools.sh
	editors/vscode/scripts/package-platform.sh linux-x64 $(BIN)/agentd $(CACHE)/agentd-linux-x64.vsix >/dev/null
	eval "$$(editors/vscode/scripts/install-tools.sh --env)" && cd editors/vscode && \
	  VSIX=$(CACHE)/agentd-linux-x64.vsix timeout 600 node test/e2e/install.mjs && \
	  VSIX=$(CACHE)/agentd-linux-x64.vsix timeout 600 node test/e2e/broad.mjs

FRONTEND_TESTS += test-install-vscode
