package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/platform"
	"github.com/agentd/agentd/journal"
)

// ApprovalRule is a remembered "always" answer (protocol.md Rule).
type ApprovalRule struct {
	ID       string         `json:"id"`
	Category tools.Category `json:"category"`
	Tool     string         `json:"tool,omitempty"`
	// Command is a glob over command lines, matched as ApprovalPolicy's
	// allowCommands (allow rules) or denyCommands (deny rules): `*` crosses
	// '/', and an allow rule covers a compound line (a && b; c | d) only if
	// it covers every part. A rule remembered from an answer holds the
	// exact command line with its glob characters escaped.
	Command   string    `json:"command,omitempty"`
	Allow     bool      `json:"allow"`
	CreatedAt time.Time `json:"createdAt"`
	Reason    string    `json:"reason,omitempty"`
}

// Matches reports whether the rule answers req.
func (r ApprovalRule) Matches(req ApprovalRequest) bool {
	if r.Category != req.Category {
		return false
	}
	if r.Tool != "" && r.Tool != req.Tool {
		return false
	}
	if r.Command != "" {
		if req.Command == "" {
			return false
		}
		_, ok := matchAny([]string{r.Command}, req.Command, r.Allow)
		return ok
	}
	return true
}

// ErrNoSuchRule is wrapped by errors about unknown rule ids.
var ErrNoSuchRule = errors.New("no such rule")

// UnknownRuleError is a rule id the store does not hold (Revoke, Keep);
// it wraps ErrNoSuchRule. Front ends add where to list the rules.
type UnknownRuleError struct{ ID string }

func (e *UnknownRuleError) Error() string { return fmt.Sprintf("no remembered rule %q", e.ID) }

// Unwrap makes errors.Is(err, ErrNoSuchRule) hold.
func (e *UnknownRuleError) Unwrap() error { return ErrNoSuchRule }

// ApprovalRules is a workspace's store of remembered approval rules, one
// file in its journal shared by every front end and process: the editor
// server and `agentd run` read it at each question, so a rule remembered
// in one applies in the other. The engine consults it before asking the
// Approver and adds to it when the answer says Always (Config.Journal).
type ApprovalRules struct {
	path string
	mu   sync.Mutex
}

// NewRules returns the store kept in the file at path.
func NewRules(path string) *ApprovalRules { return &ApprovalRules{path: path} }

type rulesFile struct {
	Seq   int            `json:"seq"`
	Rules []ApprovalRule `json:"rules"`
}

func (s *ApprovalRules) read() (rulesFile, error) {
	var f rulesFile
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("reading the approval rules %s: %w", s.path, err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("the approval rules %s are damaged: %w (fix or remove the file; agentd then asks again)", s.path, err)
	}
	return f, nil
}

// update changes the file under a lock shared with other processes.
func (s *ApprovalRules) update(f func(*rulesFile) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking the approval rules %s: %w (check that the state dir is writable)", s.path, err)
	}
	defer lock.Close()
	if err := platform.Lock(lock); err != nil {
		return fmt.Errorf("locking the approval rules %s: %w", s.path, err)
	}
	defer platform.Unlock(lock)
	rf, err := s.read()
	if err != nil {
		return err
	}
	if err := f(&rf); err != nil {
		return err
	}
	return journal.WriteJSONFile(s.path, rf)
}

// List returns the rules, oldest first.
func (s *ApprovalRules) List() ([]ApprovalRule, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	if f.Rules == nil {
		f.Rules = []ApprovalRule{}
	}
	return f.Rules, nil
}

// Match returns the newest rule that answers req.
func (s *ApprovalRules) Match(req ApprovalRequest) (*ApprovalRule, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	for i := len(f.Rules) - 1; i >= 0; i-- {
		if f.Rules[i].Matches(req) {
			r := f.Rules[i]
			return &r, nil
		}
	}
	return nil, nil
}

// Remember records an "always" answer to req: the category, the tool and,
// for commands, the exact command line.
func (s *ApprovalRules) Remember(req ApprovalRequest, allow bool, reason string) (ApprovalRule, error) {
	r := ApprovalRule{Category: req.Category, Tool: req.Tool, Command: escapeGlob(req.Command), Allow: allow,
		CreatedAt: time.Now().UTC(), Reason: reason}
	err := s.update(func(f *rulesFile) error {
		f.Seq++
		r.ID = fmt.Sprintf("rule-%d", f.Seq)
		f.Rules = append(f.Rules, r)
		return nil
	})
	return r, err
}

// Import adds rules kept elsewhere by an older build, keeping their ids,
// unless the store has rules already.
func (s *ApprovalRules) Import(rules []ApprovalRule) error {
	if len(rules) == 0 {
		return nil
	}
	return s.update(func(f *rulesFile) error {
		if len(f.Rules) > 0 {
			return nil
		}
		f.Rules = append(f.Rules, rules...)
		for _, r := range rules {
			var n int
			if _, err := fmt.Sscanf(r.ID, "rule-%d", &n); err == nil && n > f.Seq {
				f.Seq = n
			}
		}
		return nil
	})
}

// Revoke removes the rules with the given ids; an unknown id is an error
// wrapping ErrNoSuchRule and nothing is removed.
func (s *ApprovalRules) Revoke(ids ...string) error {
	return s.update(func(f *rulesFile) error {
		drop := map[string]bool{}
		for _, id := range ids {
			drop[id] = true
		}
		kept := f.Rules[:0:0]
		for _, r := range f.Rules {
			if drop[r.ID] {
				delete(drop, r.ID)
				continue
			}
			kept = append(kept, r)
		}
		for _, id := range ids {
			if drop[id] {
				return &UnknownRuleError{ID: id}
			}
		}
		f.Rules = kept
		return nil
	})
}

// Keep removes every rule whose id is not in ids; an unknown id is an
// error wrapping ErrNoSuchRule and nothing is removed.
func (s *ApprovalRules) Keep(ids []string) error {
	return s.update(func(f *rulesFile) error {
		keep := map[string]bool{}
		known := map[string]bool{}
		for _, r := range f.Rules {
			known[r.ID] = true
		}
		for _, id := range ids {
			if !known[id] {
				return &UnknownRuleError{ID: id}
			}
			keep[id] = true
		}
		kept := f.Rules[:0:0]
		for _, r := range f.Rules {
			if keep[r.ID] {
				kept = append(kept, r)
			}
		}
		f.Rules = kept
		return nil
	})
}

// escapeGlob quotes the glob characters of a command line so that a
// remembered command matches itself only.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '{', '}', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
