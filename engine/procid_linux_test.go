package engine

import (
	"os"
	"os/exec"
	"testing"
)

// A process's identity is stable, differs between processes, and is empty
// for one that is gone.
func TestProcIdentity(t *testing.T) {
	self := procIdentity(os.Getpid())
	if self == "" || self != procIdentity(os.Getpid()) || self != selfIdentity() {
		t.Fatalf("identity of this process: %q, again %q, selfIdentity %q", self, procIdentity(os.Getpid()), selfIdentity())
	}
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	other := procIdentity(child.Process.Pid)
	child.Process.Kill()
	child.Wait()
	if other == "" {
		t.Fatalf("identity of a child process: %q (this one: %q)", other, self)
	}
	if gone := procIdentity(child.Process.Pid); gone != "" {
		t.Fatalf("identity of a process that is gone: %q", gone)
	}
}
