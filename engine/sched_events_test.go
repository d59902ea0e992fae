package engine

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestSchedEventsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"emit":["x","y"]}},
			{"id":"b","tool":"op","args":{},"dependsOn":["a"]}
		]`)
		st, rec := runPlan(t, e, p, RunOptions{})
		if st.Status != RunCompleted {
			t.Fatal(st.Status)
		}
		want := []string{"runStarted", "stepStarted:a", "stepFinished:a", "stepStarted:b", "stepFinished:b", "runFinished"}
		if got := rec.trace(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("events\n got %v\nwant %v", got, want)
		}
		evs := rec.all()
		for i, ev := range evs {
			if i > 0 && ev.Seq <= evs[i-1].Seq {
				t.Errorf("seq not increasing at %d: %d after %d", i, ev.Seq, evs[i-1].Seq)
			}
			if ev.State == nil || ev.State.Steps != nil || ev.RunID != st.RunID {
				t.Errorf("event %d: state %v run %q", i, ev.State, ev.RunID)
			}
		}
		last := evs[len(evs)-1]
		if last.Status != string(RunCompleted) || last.State.Status != RunCompleted || last.State.Progress != 1 {
			t.Errorf("runFinished %+v state %+v", last, last.State)
		}
		var out string
		for _, ev := range rec.of(EventStepOutput) {
			if ev.StepID != "a" || ev.Stream != "stdout" {
				t.Errorf("output event %+v", ev)
			}
			out += ev.Text
		}
		if out != "xy" {
			t.Errorf("output %q", out)
		}
	})
}

// blockingSub blocks in OnEvent until released.
type blockingSub struct {
	release chan struct{}
	rec     recorder
	once    sync.Once
	first   chan struct{}
}

func (b *blockingSub) OnEvent(e Event) {
	b.rec.OnEvent(e)
	b.once.Do(func() { close(b.first) })
	<-b.release
}

func TestSchedSlowSubscriberDoesNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		var emits []string
		for range 50 {
			emits = append(emits, `"chunk"`)
		}
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"emit":[`+strings.Join(emits, ",")+`]}},
			{"id":"b","tool":"op","args":{"sleep":"1s"},"dependsOn":["a"]}
		]`)
		slow := &blockingSub{release: make(chan struct{}), first: make(chan struct{})}
		fast := &recorder{}
		r, err := e.Start(t.Context(), p, RunOptions{Subscribers: []Subscriber{slow, fast}})
		if err != nil {
			t.Fatal(err)
		}
		<-slow.first
		select {
		case <-r.Done():
		case <-time.After(time.Hour):
			t.Fatal("the run did not finish while a subscriber was stuck")
		}
		if time.Since(h.t0) != time.Second {
			t.Errorf("run took %v with a stuck subscriber, want 1s", time.Since(h.t0))
		}
		close(slow.release)
		st, err := r.Wait(t.Context())
		if err != nil || st.Status != RunCompleted {
			t.Fatal(err, st.Status)
		}
		fastOut := fast.of(EventStepOutput)
		slowEv := slow.rec.all()
		slowOut := slow.rec.of(EventStepOutput)
		var fastText string
		for _, ev := range fastOut {
			fastText += ev.Text
		}
		if fastText != strings.Repeat("chunk", 50) {
			t.Errorf("fast subscriber's output text %q", fastText)
		}
		var text string
		for _, ev := range slowOut {
			text += ev.Text
		}
		if text != strings.Repeat("chunk", 50) {
			t.Errorf("slow subscriber's output text %q", text)
		}
		if len(slowOut) >= 50 {
			t.Errorf("slow subscriber got %d output events; backed-up chunks should be coalesced", len(slowOut))
		}
		if slowEv[len(slowEv)-1].Type != EventRunFinished {
			t.Errorf("slow subscriber's last event %s", slowEv[len(slowEv)-1].Type)
		}
		for i := 1; i < len(slowEv); i++ {
			if slowEv[i].Seq <= slowEv[i-1].Seq {
				t.Fatalf("slow subscriber got events out of order")
			}
		}
	})
}

func TestSchedUnsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"sleep":"1s"}},
			{"id":"b","tool":"op","args":{"sleep":"1s"},"dependsOn":["a"]}
		]`)
		r, err := e.Start(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		unsub := r.Subscribe(rec)
		time.Sleep(1500 * time.Millisecond)
		unsub()
		r.Wait(t.Context())
		for _, ev := range rec.all() {
			if ev.StepID == "b" && ev.Type == EventStepFinished || ev.Type == EventRunFinished {
				t.Errorf("event after unsubscribe: %v", ev.Type)
			}
		}
		if len(rec.of(EventStepFinished)) != 1 {
			t.Errorf("events before unsubscribe: %v", rec.trace())
		}
	})
}
