package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

func main() {
	ctx := context.Background()
	ws, err := workspace.Open(os.Args[1], workspace.Options{})
	if err != nil {
		panic(err)
	}
	s, err := gitops.Open(ctx, ws, gitops.Options{StateDir: os.Args[2]})
	if err != nil {
		panic(err)
	}
	f0, _ := os.Create("/tmp/prof/cpu0.out")
	pprof.StartCPUProfile(f0)
	t := time.Now()
	sn, err := s.Snapshot(ctx, gitops.SnapshotOptions{})
	fmt.Println("first", time.Since(t), sn.Files, err)
	pprof.StopCPUProfile()
	if len(os.Args) > 3 && os.Args[3] == "watch" {
		if err := s.Watch(ctx); err != nil {
			panic(err)
		}
		t = time.Now()
		_, err = s.Snapshot(ctx, gitops.SnapshotOptions{})
		fmt.Println("base", time.Since(t), err)
	}
	f, _ := os.Create("/tmp/prof/cpu.out")
	pprof.StartCPUProfile(f)
	for i := 0; i < 5; i++ {
		t = time.Now()
		_, err = s.Snapshot(ctx, gitops.SnapshotOptions{})
		fmt.Println("nochange", time.Since(t), err)
	}
	pprof.StopCPUProfile()
}
