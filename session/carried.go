package session

import (
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// Plain data the front ends carry, print or put on their wire, named
// here so that no front end imports the packages below session
// (docs/architecture.md, session/layers_test.go). Only data: a rule a
// front end needs is a function or method of this package.

// Snapshots and restores (package gitops).
type (
	Snapshot        = gitops.Snapshot
	SnapshotOptions = gitops.SnapshotOptions
	FileChange      = gitops.FileChange
	SkippedFile     = gitops.SkippedFile
	RestoreOptions  = gitops.RestoreOptions
	RestoreResult   = gitops.RestoreResult
	RestoreConflict = gitops.RestoreConflict
	RevertConflict  = gitops.RevertConflict
	GCResult        = gitops.GCResult
	DoctorReport    = gitops.DoctorReport
	// Store is the snapshot store; a front end only hands a way to open
	// one to Options.OpenStore (tests).
	Store = gitops.Store
	// ConflictChoice is what an undo does where the user changed the
	// agent's own lines.
	ConflictChoice = gitops.ConflictChoice
)

const (
	RefuseOnConflict   = gitops.RefuseOnConflict
	KeepConflicts      = gitops.KeepConflicts
	OverwriteConflicts = gitops.OverwriteConflicts
)

// The errors a front end maps to its own words or codes.
var (
	ErrSnapshotNotFound   = gitops.ErrNotFound
	ErrNoProtectionBase   = gitops.ErrNoProtectionBase
	ErrInterruptedRestore = gitops.ErrInterruptedRestore

	ErrNoSuchRun       = journal.ErrNoSuchRun
	ErrAmbiguousRun    = journal.ErrAmbiguousRun
	ErrNothingToUndo   = journal.ErrNothingToUndo
	ErrRunStillActive  = journal.ErrRunStillActive
	ErrNoRestoreToUndo = journal.ErrNoRestoreToUndo
)

// The journal's record of undone runs.
type (
	// Undone is the journal's record that a run was undone, and how.
	Undone = journal.Undone
	// NoSnapshotsError names a run that cannot be undone: it has no
	// snapshots.
	NoSnapshotsError = journal.NoSnapshotsError
	// AlreadyUndoneError is an undo by ID of a run undone already; its
	// Undone.UndoID is the undo whose undo brings the run's changes back.
	AlreadyUndoneError = journal.AlreadyUndoneError
)

// HowRollback is Undone.How of a run that rolled itself back when it
// failed.
const HowRollback = journal.HowRollback

// Tools: what a front end shows of a tool or an approval.
type (
	ToolCategory = tools.Category
	ToolRisk     = tools.Risk
	// ToolRegistry is a set of tools a front end may hand to the engine.
	ToolRegistry = tools.Registry
)

const (
	CategoryRead    = tools.CategoryRead
	CategoryWrite   = tools.CategoryWrite
	CategoryDelete  = tools.CategoryDelete
	CategoryCommand = tools.CategoryCommand
	CategoryGit     = tools.CategoryGit
	CategoryInput   = tools.CategoryInput
	CategoryNetwork = tools.CategoryNetwork

	RiskLow    = tools.RiskLow
	RiskMedium = tools.RiskMedium
	RiskHigh   = tools.RiskHigh
)

// Tool is one tool of a registry, as a front end lists it.
type Tool = tools.Tool

// RiskVaries says whether t's risk depends on the call (git: status is
// low, commit high); its Risk is then the default.
func RiskVaries(t Tool) bool {
	_, ok := t.(tools.RiskAssessor)
	return ok
}

// ModelRetryMessage is the log message of a model call that failed and
// is tried again: a front end says it in its own words instead.
const ModelRetryMessage = llm.RetryMessage
