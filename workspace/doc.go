// Package workspace is the sandboxed view of the folder a user has open:
// path resolution that refuses anything outside the root, the overlays of
// unsaved editor buffers (so every read sees what the user sees), atomic
// writes that keep file modes, ignore-aware listing through fileset, and
// change sets: what a step proposes to do to files, with hunks, checked
// against the content it was computed from when it is applied.
//
// # Paths
//
// Every method takes a workspace-relative path, an absolute path inside the
// root (or inside the root as it was named before symlink resolution) or a
// file:// URI. Resolve refuses, with a *PathError wrapping ErrOutsideRoot,
// anything that leaves the root lexically ("..", absolute paths elsewhere,
// percent-encoded dots in URIs) or through a symlink in any existing
// component; symlinks that stay inside are followed. A missing tail is
// allowed so files can be created. NUL bytes and non-local URIs wrap
// ErrInvalidPath. Writing, removing or renaming inside a `.git` directory
// (any level, any case, also through a link) wraps ErrGitDir; reading there
// is allowed.
//
// Internally every path is reduced to its symlink-free form. Reads go
// through an os.Root of the workspace; every write, rename and removal
// opens the directories on the way one by one without following links
// (dirat.go), so a component swapped for a link between the check and the
// use is refused, never followed. Overlays and change sets are keyed by the
// symlink-free form; a Builder's Write, Delete and Move and Apply act on a
// symbolic link itself, never on its target (links.go).
//
// # Overlays
//
// OpenOverlay/EditOverlay/CloseOverlay mirror didOpen/didChange/didClose:
// incremental edits with 0-based lines ("\n", "\r\n" and "\r" end a line)
// and UTF-16 (or, with EditOverlayIn, UTF-8) character offsets, a nil Range
// replacing the whole text; position.go is the one conversion. Buffers
// also know whose edits they hold (BeginAgentEdit, BufferState).
// ReadFile, Builder and Apply read the overlay when one is open.
//
// # Writes
//
// WriteFile writes a temporary file with a short fixed-length name beside
// the target, fsyncs it, gives it the existing file's mode (and owner, when
// allowed; a new file gets its mode under the umask), renames it into place
// and fsyncs the directory.
//
// # Change sets
//
// Propose returns a Builder; Build gives a ChangeSet whose files carry the
// content they were computed against (Old, BaseHash), the proposal (New) and
// its hunks. Apply writes accepted hunks after checking each file against
// BaseHash, rebasing with a three-way merge when the user changed the file
// meanwhile, and reporting a ConflictError (leaving the file alone) when the
// merge is not clean. Revert takes applied hunks out again. The review of a
// change set (statuses, rebasing pending hunks onto the user's typing) is
// package review's.
package workspace
