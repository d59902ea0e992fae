# The VS Code extension (editors/vscode): unit tests, the packaged .vsix, and end-to-end tests in
# code-server driven by Chromium. editors/vscode/scripts/install-tools.sh installs Node 24,
# code-server, Chromium and the npm packages into git-ignored folders and fails loudly if it cannot.
.PHONY: test-vscode vscode-package
test-vscode:
	editors/vscode/scripts/test.sh

# The .vsix alone, in editors/vscode/out/agentd.vsix.
vscode-package:
	editors/vscode/scripts/install-tools.sh
	eval "$$(editors/vscode/scripts/install-tools.sh --env)" && cd editors/vscode && npm run --silent package

FRONTEND_TESTS += test-vscode
