# Windows under Wine (mk/wine/): the Go tests of gitops, workspace,
# internal/fileset, diff, review and engine/tools cross-compiled for
# windows/amd64 and run under Debian's wine64, then an end-to-end smoke of
# agentd.exe (run, undo byte for byte, serve answers initialize).
# mk/wine/setup.sh installs wine64 and mingw-w64 from Debian's packages when
# missing and fails loudly when it cannot. The tests that cannot hold under
# Wine are listed with the reason in mk/wine/skip.txt. docs/platforms.md says
# what Wine shows of Windows and what it only emulates.
#
# agentd.exe is built without cgo, as the release builds it (the repository
# map's tree-sitter parsers are WebAssembly run by wazero, pure Go); mingw-w64
# only builds the bcryptprimitives.dll stub (mk/wine/setup.sh).
# WINE_AGENTD_EXE=dist/.../agentd.exe uses a given binary.
WINE_AGENTD_EXE ?= $(CACHE)/wine/agentd.exe

.PHONY: test-wine test-wine-go test-wine-smoke

test-wine: test-wine-go test-wine-smoke

test-wine-go:
	mk/wine/gotests.sh

$(CACHE)/wine/agentd.exe: FORCE_WINE_EXE
	@eval "$$(mk/wine/setup.sh)" && \
	  CGO_ENABLED=0 GOOS=windows GOARCH=amd64 \
	  $(GO) build -overlay "$$WINE_OVERLAY" -ldflags "$(LDFLAGS)" -o $@ ./cmd/agentd

.PHONY: FORCE_WINE_EXE
FORCE_WINE_EXE:

test-wine-smoke: $(WINE_AGENTD_EXE)
	mk/wine/smoke.sh $(WINE_AGENTD_EXE)

FRONTEND_TESTS += test-wine
