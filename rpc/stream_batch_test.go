package rpc

import (
	"context"
	"fmt"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// TestStreamDeferredWritesKeepOrder checks that batched notifications wait
// for their delay, leave with the next immediate message in order, and go
// out on their own when the delay passes.
func TestStreamDeferredWritesKeepOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, c := net.Pipe()
		st := newStream(a, 0, testLogger(t))
		got := make(chan string, 16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := newStream(c, 0, testLogger(t))
			for {
				body, _, err := r.ReadFrame(context.Background())
				if err != nil {
					return
				}
				got <- string(body)
			}
		}()
		note := func(i int) []byte {
			return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":%d}`, i))
		}
		expect := func(want ...int) {
			t.Helper()
			synctest.Wait()
			for _, i := range want {
				select {
				case m := <-got:
					if m != string(note(i)) {
						t.Fatalf("got %s, want %s", m, note(i))
					}
				default:
					t.Fatalf("frame %d not written", i)
				}
			}
			select {
			case m := <-got:
				t.Fatalf("unexpected frame %s", m)
			default:
			}
		}
		for i := 1; i <= 2; i++ {
			if err := st.writeDeferred(note(i), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		expect() // still waiting for their delay
		if _, err := st.WriteFrame(context.Background(), note(3)); err != nil {
			t.Fatal(err)
		}
		expect(1, 2, 3)
		if err := st.writeDeferred(note(4), 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		expect()
		time.Sleep(5 * time.Millisecond) // fake time: the delay passes
		expect(4)
		if err := st.writeDeferred(note(5), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		<-done
		if err := st.writeDeferred(note(6), time.Hour); err == nil {
			t.Error("writeDeferred after Close succeeded")
		}
	})
}
