# CodeCompanion.nvim as a test client of `agentd acp` (issue 37): headless
# Neovim >= 0.11 (Debian testing's, with its plenary.nvim, installed into
# .cache/nvim011 by the plugin's install script; the 0.10 suite keeps
# .cache/nvim) drives the built agentd through CodeCompanion's chat against
# the project's fake model: an approval, a rejection, a cancel and /undo
# (editors/neovim/tests/codecompanion.lua). The pinned CodeCompanion comes
# from ../shared/vendor (or AGENTD_VENDOR_DIR), else from its home at the
# same commit (editors/neovim/scripts/codecompanion.sh), unpacked into
# .cache/codecompanion; failing to get it fails the suite, it never skips.
NVIM011_DIR := $(CACHE)/nvim011

.PHONY: test-codecompanion nvim011

nvim011:
	@editors/neovim/scripts/install-nvim.sh $(NVIM011_DIR) forky >/dev/null || \
	  { echo "test-codecompanion: could not install Neovim >= 0.11 and plenary.nvim into $(NVIM011_DIR) (messages above)"; exit 1; }

test-codecompanion: build nvim011 $(CACHE)/neovim-fakemodel
	editors/neovim/tests/codecompanion.sh $(BIN)/agentd $(NVIM011_DIR)/nvim $(CACHE)/neovim-fakemodel

FRONTEND_TESTS += test-codecompanion
