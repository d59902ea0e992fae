package rpc

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd/agentd/engine"
)

// TestCoalescerRateLimits emits 2,000 output chunks over 2 s (virtual
// time): at most one send per 50 ms interval per step/stream reaches the
// client, nothing is lost, and the order of the text is kept.
func TestCoalescerRateLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sends []engine.Event
		c := newCoalescer(50*time.Millisecond, func(ev engine.Event) {
			mu.Lock()
			sends = append(sends, ev)
			mu.Unlock()
		})
		var want strings.Builder
		for i := 0; i < 2000; i++ {
			text := string(rune('a'+i%26)) + "\n"
			want.WriteString(text)
			c.add(engine.Event{Type: engine.EventStepOutput, StepID: "s", Stream: "stdout", Text: text})
			time.Sleep(time.Millisecond)
		}
		c.stop()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		var got strings.Builder
		for _, ev := range sends {
			got.WriteString(ev.Text)
		}
		if got.String() != want.String() {
			t.Errorf("coalesced text differs: %d bytes, want %d", got.Len(), want.Len())
		}
		// 2 s of output at one send per 50 ms: about 40, never 2,000.
		if len(sends) > 45 || len(sends) < 30 {
			t.Errorf("%d sends for 2,000 chunks over 2 s, want about 40", len(sends))
		}
	})
}

// TestCoalescerKeepsStreamsApart checks that stdout and stderr of two steps
// are coalesced separately and flushed before a later event.
func TestCoalescerKeepsStreamsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sends []engine.Event
		c := newCoalescer(50*time.Millisecond, func(ev engine.Event) { sends = append(sends, ev) })
		c.add(engine.Event{StepID: "a", Stream: "stdout", Text: "1"}) // sent at once
		c.add(engine.Event{StepID: "a", Stream: "stdout", Text: "2"})
		c.add(engine.Event{StepID: "a", Stream: "stderr", Text: "x"})
		c.add(engine.Event{StepID: "b", Stream: "stdout", Text: "y"})
		c.add(engine.Event{StepID: "a", Stream: "stdout", Text: "3"})
		c.flush()
		got := []string{}
		for _, ev := range sends {
			got = append(got, ev.StepID+"/"+ev.Stream+"="+ev.Text)
		}
		want := "a/stdout=1 a/stdout=23 a/stderr=x b/stdout=y"
		if strings.Join(got, " ") != want {
			t.Errorf("sends = %v, want %s", got, want)
		}
		c.stop()
	})
}
