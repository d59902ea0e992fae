package gitops

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// extract writes a snapshot's files with the git CLI (the oracle).
func extract(t *testing.T, storeDir, id string) map[string]string {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", fmt.Sprintf("%s --git-dir=%s -c tar.umask=022 archive --format=tar %s | tar -x -p -C %s", gitBin(t), storeDir, id, dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", id, err, out)
	}
	st := treeState(t, dir, false)
	for k := range st {
		if strings.HasSuffix(k, "/") {
			delete(st, k)
		}
	}
	return st
}
