package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// Context the user attaches to a request (an editor's context chips: a
// file, a selection, the Problems of a file, the git diff). Each item is
// told to the planner (or the question's model) as a block after the
// request; its size is the tokens of that very block, by the estimate the
// chat's condensing uses (EstimateTokens), so a chip shows before sending
// what the item will take of the request. The front end sends items and
// shows the sizes: the reading (the diff is read here, not by the editor)
// and the counting are the core's.

// ContextEntry is one attached item: a file (URI), a range of it (URI and
// Range), a text the editor has and the daemon does not (Text, with a
// Title: the Problems of a file), or Kind "diff": the workspace's diff
// against HEAD in the user's own repository.
type ContextEntry struct {
	URI   string           `json:"uri,omitempty"`
	Range *workspace.Range `json:"range,omitempty"`
	Text  string           `json:"text,omitempty"`
	Title string           `json:"title,omitempty"`
	Kind  string           `json:"kind,omitempty"`
	// Image is a pasted image (context_image.go): sent as an image.
	Image *ContextImage `json:"image,omitempty"`
}

// ContextSize is an item's size: its title as the planner is told it, its
// tokens, and why it cannot be sent (Error) or what to know (Note).
type ContextSize struct {
	Title   string `json:"title"`
	Tokens  int    `json:"tokens"`
	Clipped bool   `json:"clipped,omitempty"`
	Note    string `json:"note,omitempty"`
	Error   string `json:"error,omitempty"`
}

// MaxContextEntryBytes bounds one item's text as the planner is told it;
// past it the item is clipped (and says so).
var MaxContextEntryBytes = 64 << 10

// EstimateTokens is the size of s in tokens as agentd estimates it: a
// token taken as 4 bytes, the estimate ChatContextTokens is counted in.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// contextBlock reads item into the block the planner is told: a title
// and the text.
func (s *Session) contextBlock(ctx context.Context, it ContextEntry) (title, text string, note string, err error) {
	switch {
	case it.Kind == "diff":
		var out tools.GitDiffOutput
		if !s.gitRead(ctx, tools.GitArgs{Action: "diff", Ref: "HEAD"}, &out) {
			return "", "", "", fmt.Errorf("the workspace's git diff could not be read: is the workspace in a git repository with a commit?")
		}
		if out.Diff == "" {
			note = "no changes against HEAD"
		}
		if out.Truncated {
			note = "the diff was cut at the git tool's bound"
		}
		return "git diff against HEAD", out.Diff, note, nil
	case it.Kind != "":
		return "", "", "", fmt.Errorf("unknown context kind %q: use \"diff\", or give uri or text", it.Kind)
	case it.URI != "":
		if s.WS == nil {
			return "", "", "", fmt.Errorf("no workspace is open")
		}
		rel, _, err := s.WS.Resolve(it.URI)
		if err != nil {
			return "", "", "", fmt.Errorf("%s: %w", it.URI, err)
		}
		data, err := s.WS.ReadFile(ctx, rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", "", "", fmt.Errorf("%s: no such file in the workspace; check the path (relative to the workspace root)", rel)
			}
			return "", "", "", fmt.Errorf("%s could not be read: %w", rel, err)
		}
		if pat := s.WS.SensitiveMatcher()(rel); pat != "" {
			note = "a sensitive file (" + pat + "): agentd asks before the model sees it"
		}
		if it.Range == nil {
			return rel, string(data), note, nil
		}
		lines := strings.SplitAfter(string(data), "\n")
		from, to := it.Range.Start.Line, it.Range.End.Line
		// A range ending at character 0 of a line (a linewise selection)
		// ends on the line before, as plan/create's selection does.
		if it.Range.End.Character == 0 && to > from {
			to--
		}
		if from < 0 || from >= len(lines) || to < from {
			return "", "", "", fmt.Errorf("%s: lines %d-%d are not in the file (%d lines)", rel, from+1, to+1, len(lines))
		}
		to = min(to, len(lines)-1)
		return fmt.Sprintf("%s (lines %d-%d)", rel, from+1, to+1), strings.Join(lines[from:to+1], ""), note, nil
	case it.Text != "":
		title := it.Title
		if title == "" {
			title = "text"
		}
		return title, it.Text, "", nil
	}
	return "", "", "", fmt.Errorf("an empty context item: give uri, text or kind \"diff\"")
}

// renderBlock is the block as the request carries it.
func renderBlock(title, text string) (string, bool) {
	clipped := len(text) > MaxContextEntryBytes
	if clipped {
		text = text[:MaxContextEntryBytes] + "\n[clipped]"
	}
	return fmt.Sprintf("\n### %s\n```\n%s\n```\n", title, strings.TrimRight(text, "\n")), clipped
}

// ContextSizes is each item's size in tokens (agentd/context/size); an
// image is checked by check (the model must take images).
func (s *Session) ContextSizes(ctx context.Context, items []ContextEntry, check ImageCheck) []ContextSize {
	out := make([]ContextSize, len(items))
	for i, it := range items {
		if it.Image != nil {
			out[i] = imageSize(it.Image, check)
			continue
		}
		title, text, note, err := s.contextBlock(ctx, it)
		if err != nil {
			out[i] = ContextSize{Error: err.Error()}
			continue
		}
		block, clipped := renderBlock(title, text)
		out[i] = ContextSize{Title: title, Tokens: EstimateTokens(block), Clipped: clipped, Note: note}
	}
	return out
}

// ContextText is the items as the request carries them, after the user's
// words ("" for none). A sensitive file is asked about first (ask, as the
// planner's own reads are); denied, it is left out with a line that says
// so. An item that cannot be read fails the request, naming it.
func (s *Session) ContextText(ctx context.Context, items []ContextEntry, ask func(context.Context, approval.ApprovalRequest) (approval.ApprovalDecision, error)) (string, error) {
	if len(items) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("\n\n## Context the user attached\n")
	for i, it := range items {
		if it.Image != nil { // sent as an image (ContextImages)
			b.WriteString(imageBlock(i+1, it.Image))
			continue
		}
		title, text, _, err := s.contextBlock(ctx, it)
		if err != nil {
			return "", fmt.Errorf("context item %d: %w", i+1, err)
		}
		if it.URI != "" && s.WS != nil {
			rel, _, _ := s.WS.Resolve(it.URI)
			g := approval.ReadGate{WS: s.WS, RunID: "plan", StepID: "context", Planning: true, Ask: ask}
			v, err := g.Check(ctx, "read_file", []string{rel})
			if err != nil {
				return "", err
			}
			if !v.Allowed {
				fmt.Fprintf(&b, "\n### %s\n(not read: %s)\n", title, v.Reason)
				continue
			}
		}
		block, _ := renderBlock(title, text)
		b.WriteString(block)
	}
	return b.String(), nil
}
