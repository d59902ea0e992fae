package rpc

import (
	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
)

// The wire's shapes are package protocol's, generated from the one schema
// (docs/protocol.schema.json); these are rpc's names for them. rpc converts
// the core's types to them here, at its edge.
type (
	ApprovalOption         = wire.ApprovalOption
	ApprovalRequestParams  = wire.ApprovalRequestParams
	ApprovalResult         = wire.ApprovalResult
	Decision               = wire.Decision
	ResolveConflict        = wire.ResolveConflict
	ResolveResult          = wire.ResolveResult
	HunkInfo               = wire.HunkInfo
	Word                   = wire.WordDiff
	FileInfo               = wire.FileInfo
	ChangeSetInfo          = wire.ChangeSet
	ChangesDidChangeParams = wire.ChangesDidChangeParams
	SnapshotInfo           = wire.SnapshotInfo
	SnapshotFile           = wire.SnapshotFile
	RestoreResult          = wire.RestoreResult
	ToolInfo               = wire.ToolInfo
	UndoConflict           = wire.UndoConflict
	WayBack                = wire.WayBack
	UndoResult             = wire.UndoResult
	UndoRunResult          = wire.UndoRunResult
	UndoRestoreResult      = wire.UndoRestoreResult
	ReloadParams           = wire.ReloadParams
	SaveParams             = wire.SaveParams
	SaveResult             = wire.SaveResult
	RunStartResult         = wire.RunStartResult
	// LSPRange is an LSP range.
	LSPRange = wire.Range
)

func wireCounts(c review.Counts) wire.Counts { return wire.Counts(c) }

func wireFileChanges(cs []session.FileChange) []wire.FileChange {
	if cs == nil {
		return nil
	}
	out := make([]wire.FileChange, len(cs))
	for i, c := range cs {
		out[i] = wire.FileChange{Path: c.Path, Kind: string(c.Kind)}
	}
	return out
}

func wireSkipped(fs []session.SkippedFile) []wire.SkippedFile {
	if fs == nil {
		return nil
	}
	out := make([]wire.SkippedFile, len(fs))
	for i, f := range fs {
		out[i] = wire.SkippedFile{Path: f.Path, Size: int(f.Size), Reason: f.Reason}
	}
	return out
}

func wireLeftovers(l *session.Leftovers) *wire.Leftovers {
	if l == nil {
		return nil
	}
	out := &wire.Leftovers{Revert: l.Revert, Staged: l.Staged, BigFiles: l.BigFiles, Text: l.Text}
	for _, c := range l.Commits {
		out.Commits = append(out.Commits, wire.LeftoverCommit{SHA: c.SHA, Subject: c.Subject})
	}
	return out
}
