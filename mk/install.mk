# One-step install in each editor (the windows helper's part of issue 26):
# the Neovim plugin's protocol-version refusal against a stand-in daemon.
# (The VS Code side runs with the extension's unit tests, test/unit/binary_platform.test.ts.)
.PHONY: test-install-neovim

test-install-neovim: nvim
	cd editors/neovim && timeout 120 $(NVIM_DIR)/nvim --headless -u NONE -i NONE -n -l tests/protocol.lua

FRONTEND_TESTS += test-install-neovim
