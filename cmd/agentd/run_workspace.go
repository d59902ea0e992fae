package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// defaultWorkspace decides, for agentd run without --workspace, whether the
// current folder is the workspace. It is when it holds the plan file, at
// its top or in a folder just below (plans/p.json): a plan kept there is
// meant for that project. Otherwise (a plan from
// elsewhere, or --request) agentd asks on a terminal and refuses without
// one, saying which folder it would use and how to choose; running in the
// wrong folder would snapshot and change it. It returns the folder, or ""
// and the exit code with the reason printed.
func defaultWorkspace(o runOptions, in io.Reader, stderr io.Writer) (string, int) {
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "agentd run: cannot tell the current folder (%v); choose the workspace with --workspace DIR\n", err)
		return "", exitUsage
	}
	var why string
	if o.planPath != "" {
		plan, err := filepath.Abs(o.planPath)
		if err == nil && isUnder(plan, cwd) && depthUnder(plan, cwd) <= 1 {
			return ".", exitOK
		}
		why = fmt.Sprintf("the plan %s is not in the current folder %s or a folder just below it (as plans/), so that folder may not be the workspace it was written for", o.planPath, cwd)
	} else {
		why = fmt.Sprintf("no workspace was given for the plan --request makes; the current folder is %s", cwd)
	}
	if isTerminal(in) {
		fmt.Fprintf(stderr, "agentd run: %s.\nRun it in %s? [y/N] ", why, cwd)
		switch strings.ToLower(strings.TrimSpace(readLine(in))) {
		case "y", "yes":
			return ".", exitOK
		}
		fmt.Fprintf(stderr, "agentd run: not started. Choose the workspace with --workspace DIR.\n")
		return "", exitUsage
	}
	fmt.Fprintf(stderr, "agentd run: %s.\nTo run it there, pass --workspace %s; to run it elsewhere, --workspace DIR.\n", why, shq(cwd))
	return "", exitUsage
}

// depthUnder is how many folders below dir the file at path lies (0: in
// dir itself), after resolving links; path must lie under dir. A plan kept
// for a project lies at its top or in a folder of plans there; one deeper
// down (the agentd checkout's examples/plans/) is more likely written for
// another folder, so it is not taken as the current folder's.
func depthUnder(path, dir string) int {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(dir, filepath.Dir(path))
	if err != nil || rel == "." {
		return 0
	}
	return strings.Count(filepath.ToSlash(rel), "/") + 1
}

// isUnder reports whether path lies in dir (or a folder below it), after
// resolving links in both.
func isUnder(path, dir string) bool {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// readLine reads one line a byte at a time, so nothing after it is taken
// from the terminal's input before the run's own prompts read it.
func readLine(in io.Reader) string {
	var b strings.Builder
	var c [1]byte
	for {
		n, err := in.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				break
			}
			b.WriteByte(c[0])
		}
		if err != nil {
			break
		}
	}
	return b.String()
}
