package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// agentdBinary builds cmd/agentd once per test process.
func agentdBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentd-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "agentd")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/agentd/agentd/cmd/agentd").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("building agentd: %v", binErr)
	}
	return binPath
}

// TestNodeClient runs rpc/testdata/node/client-test.js, which drives the
// built binary with vscode-languageserver-protocol. npm installs the pinned
// package into the git-ignored node_modules when it is missing.
func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for this test (apt-get install nodejs npm): %v", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is required for this test (apt-get install npm): %v", err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "node"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "vscode-languageserver-protocol")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	bin := agentdBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client-test.js", bin)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("node client-test.js:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	var passed, failed int
	if _, serr := fmt.Sscanf(last, "%d passed, %d failed", &passed, &failed); serr != nil {
		t.Fatalf("no \"N passed, N failed\" line (exit: %v)", err)
	}
	if failed > 0 || err != nil || passed == 0 {
		t.Fatalf("node client: %d passed, %d failed (exit: %v)", passed, failed, err)
	}
}

// proc is the built binary serving over real stdio pipes.
type proc struct {
	cmd    *exec.Cmd
	stream jsonrpc2.Stream
	stdin  io.WriteCloser
}

type pipeRWC struct {
	io.Reader
	io.WriteCloser
}

func startProc(t testing.TB, root string) *proc {
	t.Helper()
	cmd := exec.Command(agentdBinary(t), "serve", "--state-dir", t.TempDir(), "--log-level", "error")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, stream: jsonrpc2.NewStream(pipeRWC{bufio.NewReader(stdout), stdin})}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
		}
	})
	return p
}

func (p *proc) roundTrip(t testing.TB, id int64, method string, params json.RawMessage) *jsonrpc2.Response {
	if _, err := p.stream.Write(context.Background(), jsonrpc2.NewCall(jsonrpc2.NewNumberID(id), method, jsonrpc2.RawMessage(params))); err != nil {
		t.Fatal(err)
	}
	for {
		m, _, err := p.stream.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*jsonrpc2.Response); ok {
			return r
		}
	}
}

func (p *proc) initialize(t testing.TB, root string) {
	params := fmt.Sprintf(`{"processId":null,"rootUri":%q,"capabilities":{}}`, pathToURI(root))
	if r := p.roundTrip(t, 1, "initialize", json.RawMessage(params)); r.Err() != nil {
		t.Fatalf("initialize: %v", r.Err())
	}
}

func rssKiB(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				return strconv.Atoi(f[1])
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS")
}

// BenchmarkStartToInitialize measures spawning `agentd serve` until the
// initialize answer arrives, over real stdio pipes.
func BenchmarkStartToInitialize(b *testing.B) {
	agentdBinary(b)
	root := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := startProc(b, root)
		p.initialize(b, root)
		b.StopTimer()
		_ = p.stdin.Close()
		_ = p.cmd.Wait()
		b.StartTimer()
	}
}
