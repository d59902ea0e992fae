package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"
)

// errNoAnswer is returned by a prompt when standard input is closed.
var errNoAnswer = errors.New("no answer: standard input is closed (use --yes to allow everything)")

// console owns the terminal for `agentd run`: scrolling lines above, one
// status line at the bottom on a terminal, and prompts that pause both.
// Every write goes through it so lines, the status line and prompts never
// interleave.
type console struct {
	mu     sync.Mutex
	out    io.Writer
	tty    bool // out is a terminal: redraw a status line
	color  bool
	status string
	drawn  bool
	over   bool // Done: no status line any more

	lines chan string // lines read from stdin by a single reader goroutine
	want  chan struct{}
	asked bool // a line was asked for and not yet received
	eof   bool // stdin is closed
	once  sync.Once
	in    io.Reader
}

func newConsole(out io.Writer, in io.Reader) *console {
	c := &console{out: out, in: in}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.tty = true
		c.color = os.Getenv("NO_COLOR") == ""
	}
	return c
}

func (c *console) width() int {
	if f, ok := c.out.(*os.File); ok && c.tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 10 {
			return w
		}
	}
	return 100
}

func (c *console) clearStatus() {
	if c.tty && c.drawn {
		io.WriteString(c.out, "\r\x1b[K")
		c.drawn = false
	}
}

func (c *console) drawStatus() {
	if c.tty && c.status != "" {
		s := c.status
		if w := c.width() - 1; len([]rune(s)) > w {
			s = string([]rune(s)[:w])
		}
		io.WriteString(c.out, s)
		c.drawn = true
	}
}

// Println prints a line above the status line.
func (c *console) Println(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearStatus()
	io.WriteString(c.out, s+"\n")
	c.drawStatus()
}

// Write runs f with the console held and the status line cleared, so what
// f writes (JSON lines to stdout, a full diff) never mixes with a prompt.
func (c *console) Write(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearStatus()
	f()
	c.drawStatus()
}

// Hold runs f with the console held and the status line cleared (an
// editor taking over the terminal).
func (c *console) Hold(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearStatus()
	f()
}

// SetStatus replaces the status line (a no-op off a terminal).
func (c *console) SetStatus(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tty || c.over {
		return
	}
	c.clearStatus()
	c.status = s
	c.drawStatus()
}

// Done removes the status line for good.
func (c *console) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearStatus()
	c.status = ""
	c.over = true
}

func (c *console) paint(code, s string) string {
	if !c.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (c *console) startReader() {
	c.once.Do(func() {
		c.lines = make(chan string)
		c.want = make(chan struct{}, 1)
		// One reader goroutine reads a line only when a prompt asks for
		// one, so nothing reads the terminal while an editor runs on it.
		// It ends when stdin does.
		go func() {
			defer close(c.lines)
			sc := bufio.NewScanner(c.in)
			for range c.want {
				if !sc.Scan() {
					return
				}
				c.lines <- sc.Text()
			}
		}()
	})
}

// Prompt shows text (which may span lines) and the question, and reads one
// answer. It holds the console, so nothing else prints meanwhile; it returns
// when an answer arrives, stdin closes, or ctx is done.
func (c *console) Prompt(ctx context.Context, text, question string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearStatus()
	defer c.drawStatus()
	if text != "" {
		io.WriteString(c.out, strings.TrimRight(text, "\n")+"\n")
	}
	io.WriteString(c.out, c.paint("1", question)+" ")
	c.startReader()
	if c.eof {
		io.WriteString(c.out, "\n")
		return "", errNoAnswer
	}
	if !c.asked {
		c.asked = true
		c.want <- struct{}{}
	}
	select {
	case line, ok := <-c.lines:
		c.asked = false
		if !ok {
			c.eof = true
			io.WriteString(c.out, "\n")
			return "", errNoAnswer
		}
		if !c.tty {
			io.WriteString(c.out, line+"\n")
		}
		return strings.TrimSpace(line), nil
	case <-ctx.Done():
		io.WriteString(c.out, "\n")
		return "", ctx.Err()
	}
}

// Choose asks until the answer is one of the keys (first letters), the
// empty answer choosing def.
func (c *console) Choose(ctx context.Context, text, question string, keys string, def byte) (byte, error) {
	for {
		ans, err := c.Prompt(ctx, text, question)
		if err != nil {
			return 0, err
		}
		text = ""
		if ans == "" && def != 0 {
			return def, nil
		}
		if ans != "" && strings.IndexByte(keys, strings.ToLower(ans)[0]) >= 0 {
			return strings.ToLower(ans)[0], nil
		}
		question = fmt.Sprintf("please answer one of [%s]:", strings.Join(strings.Split(keys, ""), "/"))
	}
}
