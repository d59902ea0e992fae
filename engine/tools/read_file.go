package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

//go:embed read_file.md
var readFileDesc string

// Tunables for read_file (tests may change them).
var (
	// MaxReadBytes bounds the content read_file returns; a larger file must
	// be read in line ranges.
	MaxReadBytes = 512 << 10
)

// ReadFileArgs are read_file's arguments.
type ReadFileArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"startLine,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
}

// ReadFileOutput is read_file's output. Lines are 1-based and inclusive.
type ReadFileOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"startLine"`
	EndLine    int    `json:"endLine"`
	TotalLines int    `json:"totalLines"`
}

const readFileSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root (or a file:// URI inside it)."},
    "startLine": {"type": "integer", "minimum": 1, "description": "First line to return, 1-based (default 1)."},
    "endLine": {"type": "integer", "minimum": 1, "description": "Last line to return, 1-based and inclusive (default: the last line)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

type readFileTool struct{ spec }

func newReadFile() Tool {
	return &readFileTool{spec{name: "read_file", desc: readFileDesc, category: CategoryRead, risk: RiskLow, schema: readFileSchema}}
}

// ReadPaths is the file the call reads (the engine asks first for a
// sensitive one).
func (t *readFileTool) ReadPaths(raw json.RawMessage) []string {
	a, err := decodeArgs[ReadFileArgs](t.name, raw)
	if err != nil || a.Path == "" {
		return nil
	}
	return []string{a.Path}
}

func (t *readFileTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[ReadFileArgs](t.name, raw)
	return Description{Title: "Read " + a.Path, Detail: lineRangeText(a.StartLine, a.EndLine)}
}

func lineRangeText(start, end int) string {
	switch {
	case start == 0 && end == 0:
		return "whole file"
	case end == 0:
		return fmt.Sprintf("from line %d", start)
	case start == 0:
		return fmt.Sprintf("up to line %d", end)
	}
	return fmt.Sprintf("lines %d-%d", start, end)
}

func (t *readFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[ReadFileArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	if a.StartLine < 0 || a.EndLine < 0 {
		return nil, errorf(CodeInvalidArgs, "read_file: startLine and endLine are 1-based; got %d and %d", a.StartLine, a.EndLine)
	}
	if a.StartLine > 0 && a.EndLine > 0 && a.EndLine < a.StartLine {
		return nil, errorf(CodeInvalidArgs, "read_file: endLine %d is before startLine %d", a.EndLine, a.StartLine)
	}
	rel, _, err := resolve(env, t.name, "path", a.Path)
	if err != nil {
		return nil, err
	}
	if fi, err := env.WS.Stat(rel); err == nil && fi.IsDir() {
		return nil, errorf(CodeIsDir, "read_file: %s is a directory, not a file", rel).hint("use list_dir to see its entries")
	}
	data, err := env.WS.ReadFile(ctx, rel)
	if err != nil {
		return nil, fileError(t.name, rel, err)
	}
	if looksBinary(data) {
		return nil, errorf(CodeBinary, "read_file: %s is a binary file (%d bytes); read_file only returns text", rel, len(data))
	}
	out, err := sliceLines(rel, data, a.StartLine, a.EndLine)
	if err != nil {
		return nil, err
	}
	return &Result{Output: out}, nil
}

// sliceLines cuts lines start..end (1-based, inclusive, 0 = open) out of
// data, bounded by MaxReadBytes.
func sliceLines(rel string, data []byte, start, end int) (ReadFileOutput, error) {
	total := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	if start == 0 {
		start = 1
	}
	if end == 0 || end > total {
		end = total
	}
	out := ReadFileOutput{Path: rel, TotalLines: total, StartLine: start, EndLine: end}
	if total == 0 {
		out.StartLine, out.EndLine = 0, 0
		if start > 1 {
			return out, errorf(CodeInvalidArgs, "read_file: %s is empty; startLine %d is past its end", rel, start)
		}
		return out, nil
	}
	if start > total {
		return out, errorf(CodeInvalidArgs, "read_file: startLine %d is past the end of %s, which has %d lines", start, rel, total)
	}
	// Find the byte offsets of line start and of the end of line end.
	off, line := 0, 1
	for line < start {
		i := bytes.IndexByte(data[off:], '\n')
		off += i + 1
		line++
	}
	from := off
	for line <= end {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			off = len(data)
			break
		}
		off += i + 1
		line++
	}
	chunk := data[from:off]
	if len(chunk) > MaxReadBytes {
		// Return as many whole lines as fit and say how to get the rest.
		cut := bytes.LastIndexByte(chunk[:MaxReadBytes], '\n')
		if cut < 0 {
			return out, errorf(CodeTooLarge, "read_file: line %d of %s is longer than %d bytes; it cannot be shown", start, rel, MaxReadBytes)
		}
		chunk = chunk[:cut+1]
		n := bytes.Count(chunk, []byte{'\n'})
		out.EndLine = start + n - 1
	}
	if !utf8.Valid(chunk) {
		chunk = bytes.ToValidUTF8(chunk, []byte("\uFFFD"))
	}
	out.Content = string(chunk)
	return out, nil
}
