package session

import (
	"context"
	"strings"
	"testing"
)

// A question turn is kept with the chat (after a restart too) and the
// turns after it are told the question, what was read and the answer; a
// question asked now is told to be answered in words, a request to be
// planned.
func TestChatQuestionTurnIsToldToLaterTurns(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.NewChat(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("more\n", answerLines+5)
	if _, _, err := s.ChatStore().AddAnswer(ctx, c.ID, Turn{Request: "how is the discount computed?", Answer: "A tenth of the total.\n" + long,
		Read: []string{"read_file cart/discount.go (the discount rule)"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Chat(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 1 || !got.Turns[0].Question || got.Title != "how is the discount computed?" {
		t.Fatalf("after a restart: title %q, turns %+v", got.Title, got.Turns)
	}
	plan, err := s.ChatContext(c.ID, "in the editor")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The user asked a question: how is the discount computed?", "Read to answer it: read_file cart/discount.go",
		"The answer given:\nA tenth of the total.", "(6 more lines of the answer left out)", "plan only this"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the next request's context lacks %q:\n%s", want, plan)
		}
	}
	q, err := s.ChatStore().QuestionContext(c.ID, "in the editor")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, "answer it in words") || strings.Contains(q, "plan only this") {
		t.Errorf("a question's context:\n%s", q)
	}
}
