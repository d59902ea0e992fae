package fsprobe

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/internal/fileset"
)

func TestProbe(t *testing.T) {
	s, err := fileset.Open(os.Getenv("PROBE"))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	err = s.Walk(context.Background(), fileset.Options{}, func(e fileset.Entry) error { n.Add(1); return nil })
	t.Logf("files %d err %v", n.Load(), err)
}
