package tools

import (
	"slices"
	"testing"
)

func TestCommandPaths(t *testing.T) {
	for _, c := range []struct {
		line, cwd string
		want      []string
	}{
		{"cat .env", "", []string{"cat", ".env"}},
		{`cat 'a b/.env' "c\"d" e\ f`, "", []string{"cat", "a b/.env", `c"d`, "e f"}},
		{"cat<.env|wc -l>out.txt", "", []string{"cat", ".env", "wc", "out.txt"}},
		{"FOO=x.key tool --config=.env -v", "", []string{"x.key", "tool", ".env"}},
		{"cat ../.env /etc/passwd ~/.ssh/id_rsa", "src", []string{"src/cat", ".env", "/etc/passwd", "~/.ssh/id_rsa"}},
		{"(cd sub && cat `echo id_rsa`); true", "", []string{"cd", "sub", "cat", "echo", "id_rsa", "true"}},
	} {
		if got := CommandPaths(c.line, c.cwd); !slices.Equal(got, c.want) {
			t.Errorf("CommandPaths(%q, %q) = %q, want %q", c.line, c.cwd, got, c.want)
		}
	}
}
