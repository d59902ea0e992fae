# Windows under Wine (mk/wine/): the Go tests of gitops, workspace,
# internal/fileset, internal/platform (names as Windows compares them:
# the .git aliases, case folds), internal/shellcmd (pasteable commands quoted
# for cmd.exe, the %EDITOR% round trip through cmd.exe), diff, review and
# engine/tools
# cross-compiled for
# windows/amd64 and run under Debian's wine64, then an end-to-end smoke of
# agentd.exe (run, undo byte for byte, serve answers initialize) and the
# context-recall set through agentd.exe map.
# mk/wine/setup.sh installs wine64 and mingw-w64 from Debian's packages when
# missing and fails loudly when it cannot. The tests that cannot hold under
# Wine are listed with the reason in mk/wine/skip.txt. docs/platforms.md says
# what Wine shows of Windows and what it only emulates.
#
# agentd.exe is built as the release builds it (mk/gobuild.sh: cgo with
# mingw-w64, native tree-sitter parsers, statically linked), plus the
# overlay mk/wine/setup.sh describes; mingw-w64 also builds the
# bcryptprimitives.dll stub. WINE_AGENTD_EXE=dist/.../agentd.exe uses a
# given binary.
WINE_AGENTD_EXE ?= $(CACHE)/wine/agentd.exe

.PHONY: test-wine test-wine-go test-wine-smoke test-wine-recall

test-wine: test-wine-go test-wine-smoke test-wine-recall

test-wine-go:
	mk/wine/gotests.sh

$(CACHE)/wine/agentd.exe: FORCE_WINE_EXE
	@eval "$$(mk/wine/setup.sh)" && \
	  GO=$(GO) mk/gobuild.sh windows/amd64 $@ "$(LDFLAGS)" -overlay "$$WINE_OVERLAY"

.PHONY: FORCE_WINE_EXE
FORCE_WINE_EXE:

test-wine-smoke: $(WINE_AGENTD_EXE)
	mk/wine/smoke.sh $(WINE_AGENTD_EXE)

# The context-recall set through agentd.exe map under Wine (mk/recall.sh).
test-wine-recall: $(WINE_AGENTD_EXE)
	mk/recall.sh $(WINE_AGENTD_EXE) --wine

FRONTEND_TESTS += test-wine
