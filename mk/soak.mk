# The soak of the random undo test (session/undo_random_test.go): thousands
# of sequences of runs, user edits, undos and killed undos, without -race
# (go test runs a few hundred; under -race fewer). Not part of `make test`:
# run it before a release or after a change to undo, restore or the ledger.
# Each soak draws new sequences (AGENTD_UNDO_BASE=time; the base is printed,
# AGENTD_UNDO_BASE=N replays the draw); go test and make test run a fixed
# set. A failure prints seed=N; replay it with AGENTD_UNDO_SEED=N.
.PHONY: soak-undo
SOAK_UNDO_SEQS ?= 3000
soak-undo:
	AGENTD_UNDO_BASE=$${AGENTD_UNDO_BASE:-time} AGENTD_UNDO_SEQS=$(SOAK_UNDO_SEQS) $(GO) test -count=1 -timeout 3h -run 'TestUndoRandomSequences' -v ./session/
