package rpc

import (
	"path/filepath"
	"unicode/utf16"

	"github.com/agentd/agentd/diff"
	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// Wire shapes of change sets (docs/protocol.md, "Shapes").

func (s *Server) uriOf(rel string) string {
	if ws, err := s.workspace(); err == nil {
		if u := ws.URI(rel); u != "" {
			return u
		}
	}
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	return pathToURI(filepath.Join(root, filepath.FromSlash(rel)))
}

func lineRange(start, n int) LSPRange {
	if start > 0 {
		start--
	}
	return LSPRange{Start: wire.Position{Line: start}, End: wire.Position{Line: start + n}}
}

// changeInfo renders a set; the caller holds the book (Read).
func (s *Server) changeInfo(c *changeRecord, texts bool) ChangeSetInfo {
	ci := ChangeSetInfo{ID: c.ID, RunID: c.RunID, StepID: c.StepID, Status: string(c.Status()), Review: string(c.Review), Files: []FileInfo{},
		Counts: wireCounts(c.Counts()), ReasonToModel: c.ReasonToModel}
	for _, fr := range c.Files {
		ci.Files = append(ci.Files, s.fileInfo(c.Review, fr, texts))
	}
	return ci
}

// fileInfo renders one file of a set reviewed in mode; the caller holds
// the book (Read).
func (s *Server) fileInfo(mode review.Mode, fr *review.File, texts bool) FileInfo {
	return s.fileInfoWith(mode, fr, texts, texts)
}

// fileInfoWith renders one file, with the hunks' texts and the file's
// unified diff (patch) as asked; the caller holds the book (Read).
func (s *Server) fileInfoWith(mode review.Mode, fr *review.File, texts, patch bool) FileInfo {
	fi := FileInfo{URI: s.uriOf(fr.Path), Op: string(fr.Op), BaseHash: fr.BaseHash, Binary: fr.Binary, Status: string(fr.Summary()), Hunks: []HunkInfo{},
		Whole: fr.WholeFile(), Counts: wireCounts(fr.Counts())}
	if fr.OldPath != "" {
		fi.OldURI = s.uriOf(fr.OldPath)
	}
	if patch {
		oldPath, newPath := fr.OldPath, fr.Path
		if oldPath == "" {
			oldPath = fr.Path
		}
		fd := &diff.FileDiff{OldPath: oldPath, NewPath: newPath, Binary: fr.Binary}
		switch fr.Op {
		case workspace.OpCreate:
			fd.OldPath = ""
		case workspace.OpDelete:
			fd.NewPath = ""
		}
		for _, h := range fr.Hunks {
			fd.Hunks = append(fd.Hunks, h.Hunk)
		}
		p := diff.Unified(fd)
		fi.Patch = &p
	}
	enc := s.encoding()
	at := fr.Starts(mode)
	for i, h := range fr.Hunks {
		hi := HunkInfo{ID: h.ID, Status: string(h.Status), OldRange: lineRange(h.Hunk.OldStart, h.Hunk.OldLines), NewRange: lineRange(h.Hunk.NewStart, h.Hunk.NewLines),
			At: wire.Position{Line: at[i]}}
		if texts {
			o, n := h.Hunk.OldText(), h.Hunk.NewText()
			hi.OldText, hi.NewText = &o, &n
			hi.WordDiff = wordDiff(h.Hunk, enc)
		}
		fi.Hunks = append(fi.Hunks, hi)
	}
	return fi
}

// wordDiff pairs deleted and inserted lines of a hunk and marks the
// changed words (ranges in the new file for inserts, old file for deletes),
// with characters counted in enc.
func wordDiff(h diff.Hunk, enc workspace.PositionEncoding) []Word {
	var out []Word
	oldLine, newLine := max(h.OldStart-1, 0), max(h.NewStart-1, 0)
	for i := 0; i < len(h.Lines); {
		if h.Lines[i].Kind == diff.Context {
			oldLine++
			newLine++
			i++
			continue
		}
		var dels, ins []diff.Line
		for i < len(h.Lines) && h.Lines[i].Kind == diff.Delete {
			dels = append(dels, h.Lines[i])
			i++
		}
		for i < len(h.Lines) && h.Lines[i].Kind == diff.Insert {
			ins = append(ins, h.Lines[i])
			i++
		}
		for k := 0; k < len(dels) && k < len(ins); k++ {
			for _, sp := range diff.Words(dels[k].Text, ins[k].Text) {
				line, text, kind := oldLine+k, dels[k].Text, "delete"
				if sp.Kind == diff.Insert {
					line, text, kind = newLine+k, ins[k].Text, "insert"
				}
				out = append(out, Word{Kind: string(kind), Range: LSPRange{
					Start: wire.Position{Line: line, Character: units(text[:clamp(sp.Start, len(text))], enc)},
					End:   wire.Position{Line: line, Character: units(text[:clamp(sp.End, len(text))], enc)},
				}})
			}
		}
		oldLine += len(dels)
		newLine += len(ins)
	}
	return out
}

func clamp(n, max int) int {
	if n < 0 {
		return 0
	}
	if n > max {
		return max
	}
	return n
}

// units is the length of s in the units of enc.
func units(s string, enc workspace.PositionEncoding) int {
	if enc == workspace.UTF8 {
		return len(s)
	}
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
