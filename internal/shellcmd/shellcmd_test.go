package shellcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The test binary is also the helper the tests start: as an editor it
// appends a line to the file it is given; as a program it prints the
// arguments it received, as JSON.
func TestMain(m *testing.M) {
	switch os.Getenv("SHELLCMD_HELPER") {
	case "edit":
		f, err := os.OpenFile(os.Args[len(os.Args)-1], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintf(f, "edited with %d extra words\n", len(os.Args)-2)
		f.Close()
		os.Exit(0)
	case "args":
		json.NewEncoder(os.Stdout).Encode(os.Args[1:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestQuoteFor(t *testing.T) {
	for _, c := range []struct {
		sh       Shell
		in, want string
	}{
		{POSIX, "undo", "undo"},
		{POSIX, "/tmp/my ws", "'/tmp/my ws'"},
		{POSIX, "it's", `'it'\''s'`},
		{POSIX, "", "''"},
		{POSIX, "user@host", "user@host"},
		{PowerShell, `C:\Users\me\ws`, `C:\Users\me\ws`},
		{PowerShell, `C:\My Work\ws`, `'C:\My Work\ws'`},
		{PowerShell, "it's", "'it''s'"},
		{PowerShell, "@args", "'@args'"},
		{PowerShell, "a$b", "'a$b'"},
		{Cmd, `C:\Users\me\ws`, `C:\Users\me\ws`},
		{Cmd, `C:\My Work\ws`, `"C:\My Work\ws"`},
		{Cmd, `C:\My Work\`, `"C:\My Work\\"`},
		{Cmd, `say "hi"`, `"say \"hi\""`},
		{Cmd, "a&b", `"a&b"`},
		{Cmd, "", `""`},
	} {
		if got := QuoteFor(c.sh, c.in); got != c.want {
			t.Errorf("QuoteFor(%v, %q) = %s, want %s", c.sh, c.in, got, c.want)
		}
	}
	if got := JoinFor(PowerShell, `C:\Program Files\agentd.exe`, "undo", "--workspace", `C:\ws`); got != `& 'C:\Program Files\agentd.exe' undo --workspace C:\ws` {
		t.Errorf("PowerShell: a quoted program needs the call operator: %s", got)
	}
	if got := JoinFor(PowerShell, "agentd", "undo"); got != "agentd undo" {
		t.Errorf("PowerShell: %s", got)
	}
}

func TestCurrent(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		goos string
		env  func(string) string
		want Shell
	}{
		{"linux", env("PROMPT", "$P$G"), POSIX},
		{"windows", env(), PowerShell},
		{"windows", env("PROMPT", "$P$G"), Cmd},
		{"windows", env("PROMPT", "$P$G", "AGENTD_SHELL", "pwsh"), PowerShell},
		{"windows", env("AGENTD_SHELL", "cmd"), Cmd},
	} {
		if got := currentFor(c.goos, c.env); got != c.want {
			t.Errorf("%s: %v, want %v", c.goos, got, c.want)
		}
	}
	if editorFor("windows", env()) != "notepad" || editorFor("linux", env()) != "vi" || editorFor("windows", env("EDITOR", "code -w")) != "code -w" {
		t.Error("the default editor")
	}
}

// helperCopy is the test binary copied into a folder whose name has a
// space, as C:\Program Files does.
func helperCopy(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "my tools")
	os.MkdirAll(dir, 0o755)
	dst := filepath.Join(dir, "helper"+filepath.Ext(self))
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return dst
}

// A command printed for pasting, run by the shell it is quoted for (sh;
// cmd.exe on Windows), reaches the program with the words as they were.
func TestJoinRunsInTheShell(t *testing.T) {
	helper := helperCopy(t)
	words := []string{"undo", "--workspace", filepath.Join(t.TempDir(), "my ws"), "it's", `say "hi"`, "a&b|c", `trail\`}
	var cmd *exec.Cmd
	if runtime.GOOS == "windows" {
		cmd = exec.Command(comspec())
		setCmdLine(cmd, `/d /s /c "`+JoinFor(Cmd, append([]string{helper}, words...)...)+`"`)
	} else {
		cmd = exec.Command("/bin/sh", "-c", JoinFor(POSIX, append([]string{helper}, words...)...))
	}
	cmd.Env = append(os.Environ(), "SHELLCMD_HELPER=args")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(got, "\x00") != strings.Join(words, "\x00") {
		t.Errorf("the program got %q, want %q", got, words)
	}
}

// The editor round trip: $EDITOR (with its own words, the program in a
// folder with a space) opens a file in a folder with a space, through sh
// on POSIX and cmd.exe on Windows, and what it writes is there after.
func TestEditCommandRoundTrip(t *testing.T) {
	helper := helperCopy(t)
	dir := filepath.Join(t.TempDir(), "plans here")
	os.MkdirAll(dir, 0o755)
	file := filepath.Join(dir, "the plan.json")
	os.WriteFile(file, []byte("{}\n"), 0o644)
	sh := POSIX
	if runtime.GOOS == "windows" {
		sh = Cmd
	}
	ed := QuoteFor(sh, helper) + " --wait"
	cmd := EditCommand(t.Context(), ed, file)
	cmd.Env = append(os.Environ(), "SHELLCMD_HELPER=edit")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the editor %s: %v: %s", ed, err, out)
	}
	data, _ := os.ReadFile(file)
	if string(data) != "{}\nedited with 1 extra words\n" {
		t.Errorf("after the editor the file is %q", data)
	}
}
