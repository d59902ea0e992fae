package plans

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// Bounds of reading a plan from a file (agentd run PLAN, agentd/plan/load
// with a uri). Tests may change them.
var (
	// MaxPlanSize is the largest plan file read.
	MaxPlanSize int64 = 4 << 20
	// PlanReadTimeout bounds reading one plan file.
	PlanReadTimeout = 10 * time.Second
)

// ErrPlanFile is wrapped by errors about a plan file that cannot be used
// as one (not a regular file, too large); the message never holds the
// file's content.
var ErrPlanFile = errors.New("not a usable plan file")

// ReadPlanFile reads a plan file the user named (on the command line): a
// regular file of at most MaxPlanSize, read within PlanReadTimeout and
// ctx. FIFOs, devices and directories are refused without being read, so
// neither /dev/zero nor a FIFO nobody writes can stall or exhaust agentd.
func ReadPlanFile(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, PlanReadTimeout)
	defer cancel()
	// O_NONBLOCK: opening a FIFO does not wait for a writer; it is refused
	// below by its type.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read plan: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read plan %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("plan %s: %w: it is a %s, not a regular file", path, ErrPlanFile, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxPlanSize {
		return nil, fmt.Errorf("plan %s: %w: %d bytes, more than the %d a plan may have", path, ErrPlanFile, fi.Size(), MaxPlanSize)
	}
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(f, MaxPlanSize+1))
		ch <- result{data, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("cannot read plan %s: %w", path, r.err)
		}
		if int64(len(r.data)) > MaxPlanSize {
			return nil, fmt.Errorf("plan %s: %w: it grew past %d bytes while being read", path, ErrPlanFile, MaxPlanSize)
		}
		return r.data, nil
	case <-ctx.Done():
		f.Close() // ends the read
		<-ch
		return nil, fmt.Errorf("reading plan %s: %w (a plan file is read within %s)", path, ctx.Err(), PlanReadTimeout)
	}
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}
