// Package shellcmd is the one place that knows the user's shell: how a
// command agentd prints for pasting is quoted for the shell that will run
// it (a POSIX shell; on Windows PowerShell or cmd.exe), and how the
// user's editor is started ($VISUAL/$EDITOR through sh -c on POSIX,
// %VISUAL%/%EDITOR% through cmd.exe on Windows, notepad by default).
//
// It is pure Go with no cgo, so its tests run under Wine (mk/wine.mk).
package shellcmd

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Shell is a shell a printed command is quoted for.
type Shell int

const (
	POSIX      Shell = iota // sh, bash, zsh: 'single quotes'
	PowerShell              // 'single quotes' with '' inside; & before a quoted program
	Cmd                     // cmd.exe: "double quotes"
)

func (s Shell) String() string {
	switch s {
	case PowerShell:
		return "powershell"
	case Cmd:
		return "cmd"
	}
	return "sh"
}

// Current is the shell the user pastes into: POSIX off Windows; on
// Windows, $AGENTD_SHELL when it says "cmd" or "powershell", else cmd.exe
// when PROMPT is set (cmd.exe sets it for what it starts, PowerShell does
// not), else PowerShell (the default of Windows Terminal).
func Current() Shell { return currentFor(runtime.GOOS, os.Getenv) }

func currentFor(goos string, getenv func(string) string) Shell {
	if goos != "windows" {
		return POSIX
	}
	switch strings.ToLower(strings.TrimSpace(getenv("AGENTD_SHELL"))) {
	case "cmd", "cmd.exe":
		return Cmd
	case "powershell", "pwsh", "powershell.exe", "pwsh.exe":
		return PowerShell
	}
	if getenv("PROMPT") != "" {
		return Cmd
	}
	return PowerShell
}

// plain reports whether s needs no quoting in any of the shells.
func plain(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '=' || r == ',' || r == '+' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// QuoteFor quotes one word for sh. '@' stays plain for a POSIX shell (it
// is special to PowerShell only at a word's start); a Windows path's '\'
// is plain in the Windows shells.
func QuoteFor(sh Shell, s string) string {
	switch sh {
	case PowerShell:
		if plain(strings.ReplaceAll(s, `\`, "/")) {
			return s
		}
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	case Cmd:
		if plain(strings.ReplaceAll(s, `\`, "/")) {
			return s
		}
		// The program's own parsing (CommandLineToArgvW, Go's) reads \" as
		// a quote; backslashes before one are doubled.
		var b strings.Builder
		b.WriteByte('"')
		bs := 0
		for _, r := range s {
			switch r {
			case '\\':
				bs++
				continue
			case '"':
				b.WriteString(strings.Repeat(`\`, 2*bs+1))
			default:
				b.WriteString(strings.Repeat(`\`, bs))
			}
			bs = 0
			b.WriteRune(r)
		}
		b.WriteString(strings.Repeat(`\`, 2*bs))
		b.WriteByte('"')
		return b.String()
	}
	if s != "" && (plain(s) || plainAt(s)) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func plainAt(s string) bool { return plain(strings.ReplaceAll(s, "@", "x")) }

// Quote quotes one word for the current shell.
func Quote(s string) string { return QuoteFor(Current(), s) }

// JoinFor is a command line for sh: each word quoted; in PowerShell a
// quoted program is preceded by the call operator (& 'C:\Program
// Files\agentd.exe' undo), which it needs to run a string.
func JoinFor(sh Shell, args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = QuoteFor(sh, a)
	}
	line := strings.Join(q, " ")
	if sh == PowerShell && len(args) > 0 && q[0] != args[0] {
		line = "& " + line
	}
	return line
}

// Join is a command line for the current shell.
func Join(args ...string) string { return JoinFor(Current(), args...) }

// Editor is the user's editor command: $VISUAL, $EDITOR, else vi (notepad
// on Windows).
func Editor() string { return editorFor(runtime.GOOS, os.Getenv) }

func editorFor(goos string, getenv func(string) string) string {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if e := strings.TrimSpace(getenv(v)); e != "" {
			return e
		}
	}
	if goos == "windows" {
		return "notepad"
	}
	return "vi"
}

// EditCommand is the command that opens file in the editor ed (a command
// line, with arguments as the user wrote it in $EDITOR): sh -c 'ed "$1"'
// on POSIX; on Windows cmd.exe /c ed "file", as %EDITOR% is written for
// cmd.exe. Its stdio is the caller's to set.
func EditCommand(ctx context.Context, ed, file string) *exec.Cmd {
	return editCommandFor(ctx, runtime.GOOS, ed, file)
}

func editCommandFor(ctx context.Context, goos, ed, file string) *exec.Cmd {
	if goos == "windows" {
		// cmd.exe takes the rest of its command line as written: the
		// editor's own words as the user set them, the file quoted.
		cmd := exec.CommandContext(ctx, comspec())
		setCmdLine(cmd, `/d /s /c "`+ed+" "+QuoteFor(Cmd, file)+`"`)
		return cmd
	}
	return exec.CommandContext(ctx, "/bin/sh", "-c", ed+` "$1"`, "agentd", file)
}

// comspec is cmd.exe: %ComSpec%, else cmd.exe on the PATH.
func comspec() string {
	if c := os.Getenv("ComSpec"); c != "" {
		return c
	}
	return "cmd.exe"
}
