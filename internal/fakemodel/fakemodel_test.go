package fakemodel

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, c *http.Client, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// The in-memory transport and the TCP server answer the same.
func TestTransportsAgree(t *testing.T) {
	for _, stream := range []string{"false", "true"} {
		var bodies []string
		for _, mem := range []bool{false, true} {
			s := New()
			s.Push(Reply{Text: "hello world", ToolCalls: []ToolCall{{ID: "c", Name: "f", Args: `{"a":1}`}}})
			base, client := BaseURL, s.Client()
			if !mem {
				base, client = s.Start(t), http.DefaultClient
			}
			resp, body := post(t, client, base+"/v1/chat/completions", `{"model":"m","stream":`+stream+`}`)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			bodies = append(bodies, body)
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].API != "openai" || reqs[0].JSON["model"] != "m" || s.Pending() != 0 {
				t.Errorf("recorded %+v", reqs)
			}
		}
		if bodies[0] != bodies[1] {
			t.Errorf("stream=%s: tcp %q != mem %q", stream, bodies[0], bodies[1])
		}
		if stream == "true" && !strings.HasSuffix(bodies[0], "data: [DONE]\n\n") {
			t.Errorf("stream not terminated: %q", bodies[0])
		}
	}
}

func TestCutStreamBreaksTheBody(t *testing.T) {
	for _, mem := range []bool{false, true} {
		s := New()
		s.Push(Reply{Text: "some longer answer", Fault: FaultCutStream})
		base, client := BaseURL, s.Client()
		if !mem {
			base, client = s.Start(t), http.DefaultClient
		}
		resp, err := client.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(bufio.NewReader(resp.Body))
		resp.Body.Close()
		if err == nil {
			t.Errorf("mem=%v: a cut stream read to a clean end", mem)
		}
	}
}

func TestNoScriptedReplyIs500(t *testing.T) {
	s := New()
	resp, body := post(t, s.Client(), BaseURL+"/v1/chat/completions", `{}`)
	if resp.StatusCode != 500 || !strings.Contains(body, "no reply scripted") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}
