package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/shellcmd"
)

// This file builds every command agentd prints for the user to paste
// ("Undo the whole run: ...", "undo with: ..."): one builder, so each hint
// names the binary as it was invoked and the --workspace and --state-dir
// the command needs, and works when pasted from any folder.

// invokedBinary is how a pasted command reaches this binary: os.Args[0]
// made absolute when it holds a slash (./bin/agentd); the bare name when
// $PATH finds this very file under it; else the executable's absolute path.
var invokedBinary = sync.OnceValue(func() string {
	exe, exeErr := os.Executable()
	a0 := os.Args[0]
	if strings.ContainsAny(a0, "/"+string(filepath.Separator)) {
		if abs, err := filepath.Abs(a0); err == nil {
			return abs
		}
	} else if p, err := exec.LookPath(a0); err == nil && sameFile(p, exe) {
		return a0
	}
	if exeErr != nil {
		return "agentd"
	}
	return exe
})

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// hintCommand is "BINARY ARGS... --workspace ROOT [--state-dir DIR]",
// quoted for the shell the user pastes into (internal/shellcmd: POSIX; on
// Windows PowerShell, or cmd.exe when that is where agentd runs). --workspace is always named, even when it is
// the current folder, so the hint works pasted from another folder (or
// another terminal); --state-dir when one was given (made absolute;
// without it the default applies wherever it is pasted).
func hintCommand(wsRoot, stateDir string, args ...string) string {
	parts := append([]string{invokedBinary()}, args...)
	if wsRoot != "" {
		parts = append(parts, "--workspace", wsRoot)
	}
	if stateDir != "" {
		if abs, err := filepath.Abs(stateDir); err == nil {
			stateDir = abs
		}
		parts = append(parts, "--state-dir", stateDir)
	}
	return shellcmd.Join(parts...)
}

// shq quotes s for the shell the user pastes into (internal/shellcmd: a
// POSIX shell; on Windows PowerShell or cmd.exe).
func shq(s string) string { return shellcmd.Quote(s) }

// libraryHint matches a command that a library message names for the user
// ('agentd snapshot doctor', (agentd snapshot restore ID --overwrite)):
// the libraries do not know the binary, the workspace or the state dir.
var libraryHint = regexp.MustCompile(`'agentd ([a-z][a-zA-Z0-9 ._/-]*)'|\(agentd ([a-z][a-zA-Z0-9 ._/-]*)\)`)

// pasteable rewrites the agentd commands named in a library's message into
// hints that work when pasted (hintCommand), keeping their quotes.
func pasteable(msg, wsRoot, stateDir string) string {
	return libraryHint.ReplaceAllStringFunc(msg, func(m string) string {
		open, close := m[:1], m[len(m)-1:]
		args := strings.Fields(m[len("'agentd ") : len(m)-1])
		return open + hintCommand(wsRoot, stateDir, args...) + close
	})
}
