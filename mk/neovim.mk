# The Neovim plugin's end-to-end suite (editors/neovim): headless Neovim 0.10
# with the real plugin against the built daemon on real git workspaces.
# Neovim 0.10 is installed into .cache/nvim by the project's own script
# (Debian 13's package with its own loader); failing to install fails the
# suite, it never skips.
NVIM_DIR := $(CACHE)/nvim

.PHONY: test-neovim nvim bench-neovim

nvim:
	@editors/neovim/scripts/install-nvim.sh $(NVIM_DIR) >/dev/null || \
	  { echo "test-neovim: could not install Neovim 0.10 into $(NVIM_DIR) (messages above)"; exit 1; }

# The project's fake model server, for the model-driven paths (:Agent plan, R).
$(CACHE)/neovim-fakemodel: $(wildcard editors/neovim/tests/fakemodel/*.go internal/fakemodel/*.go)
	$(GO) build -o $@ ./editors/neovim/tests/fakemodel

test-neovim: build nvim $(CACHE)/neovim-fakemodel
	FAKEMODEL_BIN=$(CACHE)/neovim-fakemodel editors/neovim/tests/run.sh $(BIN)/agentd $(NVIM_DIR)/nvim

# Speed of the plugin (keystroke overhead, drawing, startup); prints figures.
bench-neovim: build nvim
	editors/neovim/bench/bench.sh $(BIN)/agentd $(NVIM_DIR)/nvim

FRONTEND_TESTS += test-neovim
