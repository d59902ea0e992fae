package tools

import (
	"encoding/json"
	"path"
	"strings"
)

// ReadPaths are the paths a command line names (CommandPaths): the engine
// asks before running a command that names a sensitive file, as it asks
// before read_file reads one, since what the command prints goes to a
// model (approval.ReadGate).
func (t *runCommandTool) ReadPaths(raw json.RawMessage) []string {
	a, err := decodeArgs[RunCommandArgs](t.name, raw)
	if err != nil {
		return nil
	}
	return CommandPaths(a.Command, a.Cwd)
}

// CommandPaths are the words of a shell command line that may name a
// file, relative to the workspace when they are relative to cwd (itself
// relative to the workspace): each word as the shell would split it
// (quotes and backslashes undone; |, &, ;, <, >, (, ), ` and newlines end
// a word), and the value of a word NAME=VALUE or --option=VALUE. Words
// starting with '-' are options and left out. Which of them is a file is
// for the caller to decide (the sensitive list matches names and follows
// links). Not found: what the shell expands ($VAR, $(…), globs such as
// .e*, ~user), and whatever a command reads without naming it (grep -r,
// a script, a program's own config).
func CommandPaths(line, cwd string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				cur.WriteString(line[i+1:])
				i = len(line)
			} else {
				cur.WriteString(line[i+1 : i+1+j])
				i += j + 1
			}
		case c == '"':
			inWord = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`\n", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
		case c == '\\':
			if i+1 < len(line) {
				i++
				if line[i] != '\n' {
					inWord = true
					cur.WriteByte(line[i])
				}
			}
		case strings.IndexByte(" \t\r\n|&;<>()`", c) >= 0:
			end()
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	end()
	var out []string
	seen := map[string]bool{}
	for _, w := range words {
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			_, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			w = v
		}
		if w == "" {
			continue
		}
		p := w
		if cwd != "" && !path.IsAbs(w) && !isWindowsAbs(w) && !strings.HasPrefix(w, "~") {
			p = path.Join(cwd, w)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// isWindowsAbs: C:\… or C:/… or \\server\….
func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
}
