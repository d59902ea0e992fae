package diff

// This file is the contract other packages build against. The diff package's
// owner may add to it but must not change these signatures without updating
// every caller.

// LineKind marks one line of a hunk.
type LineKind byte

const (
	Context LineKind = ' '
	Delete  LineKind = '-'
	Insert  LineKind = '+'
)

// Line is one line of a hunk. Text excludes the line terminator; EOL is the
// terminator that followed it in its file ("\n", "\r\n" or "" for a last line
// without a newline).
type Line struct {
	Kind LineKind
	Text string
	EOL  string
}

// Hunk is one region of change with up to 3 lines of context on each side.
// OldStart/NewStart are 1-based line numbers as in a unified diff header
// (0 when the side is empty).
type Hunk struct {
	// ID is stable while the hunk's own content (deleted and inserted lines
	// plus context) is unchanged, even if the hunk moves in the file.
	ID       string
	OldStart int
	OldLines int
	NewStart int
	NewLines int
	Lines    []Line
}

// OldText returns the hunk's old side (context + deleted lines) with terminators.
func (h Hunk) OldText() string { return h.side(Insert) }

// NewText returns the hunk's new side (context + inserted lines) with terminators.
func (h Hunk) NewText() string { return h.side(Delete) }

func (h Hunk) side(skip LineKind) string {
	n := 0
	for _, l := range h.Lines {
		if l.Kind != skip {
			n += len(l.Text) + len(l.EOL)
		}
	}
	b := make([]byte, 0, n)
	for _, l := range h.Lines {
		if l.Kind != skip {
			b = append(b, l.Text...)
			b = append(b, l.EOL...)
		}
	}
	return string(b)
}

// FileDiff is the difference between two versions of one file.
type FileDiff struct {
	OldPath string // slash-separated, relative; "" for a created file
	NewPath string // "" for a deleted file
	OldMode uint32 // git mode (0100644, 0100755, 0120000) or 0 if unknown
	NewMode uint32
	Binary  bool // either side is binary (or too large to diff): Hunks is empty
	Hunks   []Hunk

	// OldOID and NewOID are the git blob ids (40 hex digits) of the two
	// sides. Compute sets them for binary files only, where `git apply`
	// needs a full index line (and the new blob in its object store); Parse
	// sets them from a full "index" line. Empty when unknown: Unified then
	// leaves the index line out (and `git apply` cannot apply the binary
	// diff).
	OldOID string
	NewOID string

	// bin is both sides of a binary diff, when Compute made it and they
	// are small enough to write out (see maxLiteral).
	bin *binaryData
}

// Span is a part of a changed line for word-level display; Start and End are
// byte offsets into the old line (Delete) or the new line (Insert).
type Span struct {
	Start, End int
	Kind       LineKind // Delete or Insert
}

// Conflict is a region a three-way merge could not resolve.
type Conflict struct {
	// BaseStart/BaseLines locate the region in base (1-based lines).
	BaseStart, BaseLines int
	Ours, Theirs         string
}
