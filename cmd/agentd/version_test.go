package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/repomap"
)

// `agentd version` names the version and commit the build was given
// (make build, make release) and the target it runs on.
func TestVersionNamesCommitAndTarget(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agentd")
	out, err := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X main.version=9.8.7-test -X main.commit=abc1234", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	r := runCmd(t, cmd, nil)
	want := "agentd 9.8.7-test (commit abc1234, " + runtime.GOOS + "/" + runtime.GOARCH + ", " + repomap.Parsers() + " parsers)\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("agentd version: exit %d, stdout %q; want 0 and %q", r.code, r.stdout, want)
	}
	// Without -X main.commit the line still names a commit field.
	r = agentd(t, "", "version")
	if !strings.Contains(r.stdout, "(commit ") || !strings.Contains(r.stdout, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("agentd version without ldflags: %q", r.stdout)
	}
}
