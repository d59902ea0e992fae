package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/workspace"
)

// newJSONEncoder is how every --json line is written: one object a line,
// and "&&" stays "&&" (no \u0026-style HTML escaping, which is for
// embedding in web pages, not for a stream read by programs and people).
//
// Values encoded earlier by the engine (a step's output, as
// json.RawMessage) hold such escapes already; the writer takes them out
// again, so no line of the stream has one.
func newJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(htmlUnescaper{w})
	enc.SetEscapeHTML(false)
	return enc
}

// htmlUnescaper writes JSON text with \u0026, \u003c and \u003e inside
// strings written as &, < and > (the same strings, without the escape).
// json.Encoder writes each value in one Write.
type htmlUnescaper struct{ w io.Writer }

func (u htmlUnescaper) Write(p []byte) (int, error) {
	if _, err := u.w.Write(unescapeHTML(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// unescapeHTML replaces the escapes \u0026, \u003c and \u003e by their
// characters; an escaped backslash ("\\u0026" is a backslash and the text
// u0026) is left as it is.
func unescapeHTML(p []byte) []byte {
	if !bytes.Contains(p, []byte(`\u00`)) {
		return p
	}
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 >= len(p) {
			out = append(out, p[i])
			continue
		}
		if p[i+1] == 'u' && i+5 < len(p) {
			switch string(p[i+2 : i+6]) {
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			case "003c", "003C":
				out, i = append(out, '<'), i+5
				continue
			case "003e", "003E":
				out, i = append(out, '>'), i+5
				continue
			}
		}
		out = append(out, p[i], p[i+1]) // any other escape, kept whole
		i++
	}
	return out
}

// jsonEvent is an event as `agentd run --json` writes it: a
// changeProposed event carries the change set's patch (git apply format),
// so a program reading the stream sees what changes, not only an id.
type jsonEvent struct {
	engine.Event
	Patch string `json:"patch,omitempty"`
}

// changePatch is cs as one unified diff of all its files.
func changePatch(cs *workspace.ChangeSet) string {
	var b strings.Builder
	for _, f := range cs.Files {
		switch {
		case f.Diff != nil:
			b.WriteString(diff.Unified(f.Diff))
		case f.Op == workspace.OpMove:
			b.WriteString("diff --git a/" + f.OldPath + " b/" + f.Path + "\nrename from " + f.OldPath + "\nrename to " + f.Path + "\n")
		default:
			b.WriteString("# " + string(f.Op) + " " + f.Path + "\n")
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// jsonResult is the last line of `agentd run --json`: the final state,
// the summary a person reads (Markdown), and the command that undoes the
// run (empty when it took no snapshots).
type jsonResult struct {
	Type    string           `json:"type"`
	State   *engine.RunState `json:"state"`
	Summary string           `json:"summary"`
	Undo    string           `json:"undo,omitempty"`
}
