package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

func initRaw(t testing.TB, rc *rawClient) {
	t.Helper()
	rc.call(1, "initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}})
	r := rc.response()
	if r.Err() != nil {
		t.Fatalf("initialize: %v", r.Err())
	}
}

// malformed returns the i-th kind of bad input and whether it is a valid
// frame carrying a call with id (then the answer must be an error for id).
func malformed(i int, id int64) (data []byte, errFor int64, wantCode jsonrpc2.Code) {
	valid := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"agentd/run/list","params":{}}`, id)
	switch i % 14 {
	case 0: // misspelled header: no Content-Length at all
		return []byte(fmt.Sprintf("Content-Lenght: %d\r\n\r\n%s", len(valid), valid)), 0, 0
	case 1: // header line without a colon
		return []byte("this is not a header\r\n\r\n"), 0, 0
	case 2: // non-numeric length
		return []byte("Content-Length: abc\r\n\r\n{}"), 0, 0
	case 3: // negative length
		return []byte("Content-Length: -5\r\n\r\n{}"), 0, 0
	case 4: // too short: the body is cut, the rest runs into the next frame
		return []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(valid)-20, valid)), 0, 0
	case 5: // invalid JSON
		return frame(`{"jsonrpc":"2.0","id":1,"method":}`), 0, 0
	case 6: // JSON that is not JSON-RPC
		return frame(`[1,2,3]`), 0, 0
	case 7: // wrong parameter type
		return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"agentd/run/get","params":{"runId":5}}`, id)), id, jsonrpc2.InvalidParams
	case 8: // unknown method
		return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"agentd/nope","params":{}}`, id)), id, jsonrpc2.MethodNotFound
	case 9: // declared length over the limit (never allocated)
		return []byte("Content-Length: 99999999999999\r\n\r\nxxxxxxxx"), 0, 0
	case 10: // digits that overflow int64
		return []byte("Content-Length: 999999999999999999999999999\r\n\r\n"), 0, 0
	case 11: // a method that is not a string
		return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":7}`, id)), id, jsonrpc2.InvalidRequest
	case 12: // params of the wrong JSON type entirely
		return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"agentd/plan/get","params":[1]}`, id)), id, jsonrpc2.InvalidParams
	default: // a notification that is malformed (no answer)
		return frame(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":"x"}`), 0, 0
	}
}

// TestMalformedFramesInterleaved interleaves 1,400 malformed inputs with
// valid requests: every valid request is answered with a result, every
// answerable bad request with its error, and the server stays up.
func TestMalformedFramesInterleaved(t *testing.T) {
	rc := startRaw(t, Options{MaxMessageSize: 1 << 20}, nil)
	// Requests before initialize get -32008.
	rc.call(2, "agentd/run/list", map[string]any{})
	if r := rc.response(); errCode(r.Err()) != CodeNotInitialized {
		t.Fatalf("before initialize: %v, want -32008", r.Err())
	}
	initRaw(t, rc)

	const n = 1400
	wantOK := map[int64]bool{}
	wantErr := map[int64]jsonrpc2.Code{}
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		badID := int64(100000 + i)
		data, errFor, code := malformed(i, badID)
		buf.Write(data)
		if errFor != 0 {
			wantErr[errFor] = code
		}
		id := int64(10 + i)
		buf.Write(frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"agentd/run/list","params":{}}`, id)))
		wantOK[id] = true
	}
	// A final request marks the end; the server answers in order of reading.
	buf.Write(frame(`{"jsonrpc":"2.0","id":3,"method":"agentd/plan/list","params":{}}`))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := rc.conn.Write(buf.Bytes()); err != nil {
			t.Errorf("write: %v", err)
		}
	}()
	nullErrors := 0
	for {
		r := rc.response()
		id, isNum := respID(r)
		if isNum && id == 3 {
			if r.Err() != nil {
				t.Fatalf("final request: %v", r.Err())
			}
			break
		}
		switch {
		case isNum && wantOK[id]:
			if r.Err() != nil {
				t.Fatalf("valid request %d: %v", id, r.Err())
			}
			delete(wantOK, id)
		case isNum && wantErr[id] != 0:
			if got := errCode(r.Err()); got != wantErr[id] {
				t.Errorf("bad request %d: code %d (%v), want %d", id, got, r.Err(), wantErr[id])
			}
			delete(wantErr, id)
		case !r.ID().IsValid():
			// an error for a frame without a readable id
			if r.Err() == nil {
				t.Errorf("null-id response without an error")
			}
			nullErrors++
		default:
			t.Fatalf("unexpected response %v: %v", r.ID(), r.Err())
		}
	}
	wg.Wait()
	if len(wantOK) > 0 {
		t.Errorf("%d valid requests were not answered", len(wantOK))
	}
	if len(wantErr) > 0 {
		t.Errorf("%d bad requests were not answered", len(wantErr))
	}
	if nullErrors < n/2 {
		t.Errorf("only %d malformed frames were answered with an error", nullErrors)
	}
}

func TestHugeContentLengthIsNotAllocated(t *testing.T) {
	rc := startRaw(t, Options{}, nil)
	initRaw(t, rc)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rc.writeRaw([]byte("Content-Length: 1099511627776\r\n\r\n"))
	r := rc.response()
	if errCode(r.Err()) != jsonrpc2.InvalidRequest || r.ID().IsValid() {
		t.Fatalf("got %v %v, want invalid request with null id", r.ID(), r.Err())
	}
	rc.call(4, "agentd/plan/list", map[string]any{})
	if r := rc.response(); r.Err() != nil {
		t.Fatalf("after the huge frame: %v", r.Err())
	}
	runtime.ReadMemStats(&after)
	if grown := int64(after.TotalAlloc) - int64(before.TotalAlloc); grown > 64<<20 {
		t.Errorf("allocated %d bytes while refusing the frame", grown)
	}
}

// TestCancelStorm sends thousands of requests, each followed at once by
// $/cancelRequest: each is answered (cancelled or not), nothing panics, and
// the server keeps serving.
func TestCancelStorm(t *testing.T) {
	rc := startRaw(t, Options{}, func(s *Server) {
		s.methods["test/block"] = method{async: true, call: func(s *Server, ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	})
	initRaw(t, rc)
	const n = 3000
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		id := int64(1000 + i)
		buf.Write(frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test/block"}`, id)))
		buf.Write(frame(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%d}}`, id)))
		if i%3 == 0 { // cancels of unknown ids are harmless
			buf.Write(frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"nope"}}`))
		}
	}
	go func() { _, _ = rc.conn.Write(buf.Bytes()) }()
	seen := map[int64]bool{}
	for len(seen) < n {
		r := rc.response()
		id, _ := respID(r)
		if errCode(r.Err()) != CodeCancelled {
			t.Fatalf("request %d: %v, want -32800", id, r.Err())
		}
		seen[id] = true
	}
	rc.call(5, "agentd/plan/list", map[string]any{})
	if r := rc.response(); r.Err() != nil {
		t.Fatalf("after the storm: %v", r.Err())
	}
}
