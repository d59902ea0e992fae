package gitops

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRevertProperty: random agent edits of a few files (recorded in the
// ledger), then random user edits (new lines anywhere, changes of the
// original lines, sometimes of the agent's own lines), then a revert.
// Invariant: every line the user wrote is still on disk, or its file is a
// named conflict and untouched; in every file that reverted cleanly no
// agent line is left and every original line the user kept is back.
// AGENTD_REVERT_SEED=<seed> replays one sequence.
func TestRevertProperty(t *testing.T) {
	sequences := 300
	if testing.Short() || raceOn {
		sequences = 100
	}
	first := uint64(1)
	if v := os.Getenv("AGENTD_REVERT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		first, sequences = n, 1
	}
	prev := syncWrites
	syncWrites = false // logic, not durability
	defer func() { syncWrites = prev }()
	root := t.TempDir()
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	for seed := first; seed < first+uint64(sequences); seed++ {
		rng := rand.New(rand.NewPCG(seed, 38))
		owner := fmt.Sprintf("run/s%d", seed)
		type fileCase struct {
			path              string
			orig, agent, user []string
			userLines         []string
			keptOrig          []string
			touchedAgent      bool
		}
		var cases []*fileCase
		for fi := range 1 + rng.IntN(3) {
			fc := &fileCase{path: fmt.Sprintf("s%d/f%d.txt", seed, fi)}
			n := 3 + rng.IntN(15)
			for i := range n {
				fc.orig = append(fc.orig, fmt.Sprintf("orig %d", i))
			}
			// The agent replaces or inserts lines at a few points.
			changed := map[int]bool{}
			for i, l := range fc.orig {
				switch rng.IntN(6) {
				case 0:
					fc.agent = append(fc.agent, fmt.Sprintf("AGENT %d", i))
					changed[i] = true
				case 1:
					fc.agent = append(fc.agent, fmt.Sprintf("AGENT new %d", i), l)
				default:
					fc.agent = append(fc.agent, l)
				}
			}
			writeTree(t, root, map[string]string{fc.path: join(fc.orig)})
			agentWrite(t, s, owner, fc.path, text(join(fc.agent)))
			// The user inserts lines, changes original lines the agent
			// left, now and then one of the agent's.
			k := 0
			for _, l := range fc.agent {
				r := rng.IntN(8)
				isAgent := strings.HasPrefix(l, "AGENT")
				// An agent line that replaced an original one: a clean
				// revert brings the original back.
				if n, ok := strings.CutPrefix(l, "AGENT "); ok && !strings.HasPrefix(n, "new") && r != 2 {
					fc.keptOrig = append(fc.keptOrig, "orig "+n)
				}
				switch {
				case r == 0:
					u := fmt.Sprintf("USER %d", k)
					k++
					fc.user = append(fc.user, u, l)
					fc.userLines = append(fc.userLines, u)
					if !isAgent {
						fc.keptOrig = append(fc.keptOrig, l)
					}
				case r == 1 && !isAgent:
					u := fmt.Sprintf("USER changed %s", l)
					fc.user = append(fc.user, u)
					fc.userLines = append(fc.userLines, u)
				case r == 2 && isAgent && rng.IntN(3) == 0:
					u := fmt.Sprintf("USER over %s", l)
					fc.user = append(fc.user, u)
					fc.userLines = append(fc.userLines, u)
					fc.touchedAgent = true
				default:
					fc.user = append(fc.user, l)
					if !isAgent {
						fc.keptOrig = append(fc.keptOrig, l)
					}
				}
			}
			putState(t, root, fc.path, text(join(fc.user)))
			cases = append(cases, fc)
		}
		opts := RevertOptions{}
		if rng.IntN(2) == 0 {
			opts.OnConflict = KeepConflicts
		}
		res, err := s.Revert(ctx, []string{owner}, opts)
		if err != nil {
			t.Fatalf("seed %d (replay: AGENTD_REVERT_SEED=%d): %v", seed, seed, err)
		}
		conflicted := map[string]bool{}
		for _, c := range res.Conflicts {
			conflicted[c.Path] = true
		}
		fail := func(f string, a ...any) {
			t.Helper()
			t.Fatalf("seed %d (replay: AGENTD_REVERT_SEED=%d): %s\nresult: %+v", seed, seed, fmt.Sprintf(f, a...), res)
		}
		for _, fc := range cases {
			got := readText(t, root, fc.path)
			if fc.touchedAgent && !conflicted[fc.path] {
				fail("%s: the user changed an agent line, no conflict:\n%s", fc.path, got)
			}
			if conflicted[fc.path] || (len(res.Conflicts) > 0 && opts.OnConflict == RefuseOnConflict) {
				if got != join(fc.user) {
					fail("%s: a conflicting (or refused) file was changed:\n%s", fc.path, got)
				}
				continue
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			has := map[string]bool{}
			for _, l := range lines {
				has[l] = true
				if strings.HasPrefix(l, "AGENT") {
					fail("%s: agent line %q left after a clean revert:\n%s", fc.path, l, got)
				}
			}
			for _, u := range append(fc.userLines, fc.keptOrig...) {
				if !has[u] {
					fail("%s: line %q lost:\nuser's:\n%s\nnow:\n%s", fc.path, u, join(fc.user), got)
				}
			}
		}
	}
}

func join(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
