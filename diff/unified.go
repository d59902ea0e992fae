package diff

import (
	"strconv"
	"strings"
)

// zeroOID is git's id for "no object", used in index lines of created and
// deleted files.
const zeroOID = "0000000000000000000000000000000000000000"

// defaultMode is the mode written for created or deleted files whose mode is
// unknown.
const defaultMode = 0o100644

// Unified renders fd as a git-style unified diff ("diff --git a/.. b/..",
// "---/+++", "@@ -a,b +c,d @@", "\ No newline at end of file", "new file
// mode", "deleted file mode", "Binary files ... differ") that `git apply`
// accepts. A binary diff carries a full index line; `git apply` needs the new
// blob in its object store to apply it (UnifiedBinary writes the content).
func Unified(fd *FileDiff) string {
	var sb strings.Builder
	WriteUnified(&sb, fd)
	return sb.String()
}

// UnifiedBinary is Unified with binary diffs written out as git "literal"
// patches when Compute kept both sides (at most maxLiteral bytes): such a
// patch applies, and reverts with `git apply -R`, with no objects at hand.
// It is meant for patches to save or pipe to git, not for display.
func UnifiedBinary(fd *FileDiff) string {
	var sb strings.Builder
	WriteUnifiedBinary(&sb, fd)
	return sb.String()
}

// WriteUnified appends the rendering of fd (see Unified) to sb; rendering
// many files into one builder makes a multi-file patch.
func WriteUnified(sb *strings.Builder, fd *FileDiff) { writeUnified(sb, fd, false) }

// WriteUnifiedBinary appends the rendering of fd (see UnifiedBinary) to sb.
func WriteUnifiedBinary(sb *strings.Builder, fd *FileDiff) { writeUnified(sb, fd, true) }

func writeUnified(sb *strings.Builder, fd *FileDiff, literals bool) {
	if isEmptyDiff(fd) {
		return
	}
	oldName, newName := fd.OldPath, fd.NewPath
	if oldName == "" {
		oldName = newName
	}
	if newName == "" {
		newName = oldName
	}
	aName := quotePath("a/" + oldName)
	bName := quotePath("b/" + newName)

	size := 0
	for _, h := range fd.Hunks {
		size += 32
		for _, l := range h.Lines {
			size += len(l.Text) + 3
		}
	}
	sb.Grow(size + 2*len(aName) + 2*len(bName) + 64)

	sb.WriteString("diff --git ")
	sb.WriteString(aName)
	sb.WriteByte(' ')
	sb.WriteString(bName)
	sb.WriteByte('\n')
	created, deleted := fd.OldPath == "", fd.NewPath == ""
	switch {
	case created:
		writeMode(sb, "new file mode ", orDefault(fd.NewMode))
	case deleted:
		writeMode(sb, "deleted file mode ", orDefault(fd.OldMode))
	case fd.OldMode != 0 && fd.NewMode != 0 && fd.OldMode != fd.NewMode:
		writeMode(sb, "old mode ", fd.OldMode)
		writeMode(sb, "new mode ", fd.NewMode)
	}
	if !created && !deleted && fd.OldPath != fd.NewPath {
		sb.WriteString("rename from ")
		sb.WriteString(quotePath(fd.OldPath))
		sb.WriteString("\nrename to ")
		sb.WriteString(quotePath(fd.NewPath))
		sb.WriteByte('\n')
	}
	aLabel, bLabel := aName, bName
	if created {
		aLabel = "/dev/null"
	}
	if deleted {
		bLabel = "/dev/null"
	}
	if fd.Binary {
		// git needs the full ids to apply a binary diff; leave the line out
		// when they are not known rather than write wrong ones.
		oldID, newID := fd.OldOID, fd.NewOID
		if created {
			oldID = zeroOID
		}
		if deleted {
			newID = zeroOID
		}
		if oldID != "" && newID != "" {
			sb.WriteString("index ")
			sb.WriteString(oldID)
			sb.WriteString("..")
			sb.WriteString(newID)
			if !created && !deleted && fd.OldMode != 0 && fd.OldMode == fd.NewMode {
				sb.WriteByte(' ')
				sb.WriteString(strconv.FormatUint(uint64(fd.OldMode), 8))
			}
			sb.WriteByte('\n')
		}
		if literals && fd.bin != nil && oldID != "" && newID != "" {
			writeBinaryPatch(sb, fd.bin)
			return
		}
		sb.WriteString("Binary files ")
		sb.WriteString(aLabel)
		sb.WriteString(" and ")
		sb.WriteString(bLabel)
		sb.WriteString(" differ\n")
		return
	}
	if len(fd.Hunks) == 0 {
		return
	}
	sb.WriteString("--- ")
	sb.WriteString(aLabel)
	if strings.IndexByte(aLabel, ' ') >= 0 {
		// git marks the end of a name holding spaces with a tab.
		sb.WriteByte('\t')
	}
	sb.WriteString("\n+++ ")
	sb.WriteString(bLabel)
	if strings.IndexByte(bLabel, ' ') >= 0 {
		sb.WriteByte('\t')
	}
	sb.WriteByte('\n')
	for i := range fd.Hunks {
		writeHunk(sb, &fd.Hunks[i])
	}
}

// isEmptyDiff reports a FileDiff that changes nothing; it renders as "".
func isEmptyDiff(fd *FileDiff) bool {
	sameBinary := fd.Binary && fd.OldOID != "" && fd.OldOID == fd.NewOID
	return (!fd.Binary || sameBinary) && len(fd.Hunks) == 0 && fd.OldPath == fd.NewPath &&
		(fd.OldMode == fd.NewMode || fd.OldMode == 0 || fd.NewMode == 0)
}

func orDefault(mode uint32) uint32 {
	if mode == 0 {
		return defaultMode
	}
	return mode
}

func writeMode(sb *strings.Builder, label string, mode uint32) {
	sb.WriteString(label)
	sb.WriteString(strconv.FormatUint(uint64(mode), 8))
	sb.WriteByte('\n')
}

// HunkHeader returns the "@@ -a,b +c,d @@" line of h (without newline); a
// count of 1 is left out, as git does.
func HunkHeader(h *Hunk) string {
	var sb strings.Builder
	writeHeader(&sb, h)
	return sb.String()
}

func writeHeader(sb *strings.Builder, h *Hunk) {
	var buf [20]byte
	sb.WriteString("@@ -")
	sb.Write(strconv.AppendInt(buf[:0], int64(h.OldStart), 10))
	if h.OldLines != 1 {
		sb.WriteByte(',')
		sb.Write(strconv.AppendInt(buf[:0], int64(h.OldLines), 10))
	}
	sb.WriteString(" +")
	sb.Write(strconv.AppendInt(buf[:0], int64(h.NewStart), 10))
	if h.NewLines != 1 {
		sb.WriteByte(',')
		sb.Write(strconv.AppendInt(buf[:0], int64(h.NewLines), 10))
	}
	sb.WriteString(" @@")
}

func writeHunk(sb *strings.Builder, h *Hunk) {
	writeHeader(sb, h)
	sb.WriteByte('\n')
	for _, l := range h.Lines {
		sb.WriteByte(byte(l.Kind))
		sb.WriteString(l.Text)
		if l.EOL == "" {
			sb.WriteString("\n\\ No newline at end of file\n")
		} else {
			sb.WriteString(l.EOL)
		}
	}
}

// quotePath quotes a name the way git does (core.quotePath=true): names with
// control characters, '"', '\\' or bytes >= 0x80 are written as a C string.
func quotePath(name string) string {
	needs := false
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return name
	}
	var sb strings.Builder
	sb.Grow(len(name) + 8)
	sb.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '\a':
			sb.WriteString(`\a`)
		case '\b':
			sb.WriteString(`\b`)
		case '\t':
			sb.WriteString(`\t`)
		case '\n':
			sb.WriteString(`\n`)
		case '\v':
			sb.WriteString(`\v`)
		case '\f':
			sb.WriteString(`\f`)
		case '\r':
			sb.WriteString(`\r`)
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				sb.WriteByte('\\')
				sb.WriteByte('0' + c>>6)
				sb.WriteByte('0' + c>>3&7)
				sb.WriteByte('0' + c&7)
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
