# The context-recall set (internal/repomap/testdata/recall.json) through the
# built binary, as a user's `agentd map --request ... --json` shows it:
# TestContextRecall measures the same cases in-process; this measures what
# ships. mk/recall.sh prints each miss and "recall: H of N" and fails below
# the set's own pass mark ("pass" in recall.json). Needs node (make deps)
# and Go's source of net/http (go env GOROOT). Under Wine, with the
# windows/amd64 build: mk/recall.sh AGENTD_EXE --wine. RECALL_LISTS=FILE
# keeps each case's listed files, to diff two targets' maps.

.PHONY: test-recall
test-recall: build
	mk/recall.sh $(BIN)/agentd

FRONTEND_TESTS += test-recall
