package greet

import "testing"

func TestHello(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Ada", "Hello, Ada!"},
		{"  Grace ", "Hello, Grace!"},
		{"", "Hello, world!"},
	} {
		if got := Hello(tc.in); got != tc.want {
			t.Errorf("Hello(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestHelloAll(t *testing.T) {
	if got, want := HelloAll([]string{"a", "b"}), "Hello, a!\nHello, b!\n"; got != want {
		t.Errorf("HelloAll = %q, want %q", got, want)
	}
}
