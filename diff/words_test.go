package diff

import (
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		old, new string
		want     []Span
	}{
		{"same", "same", nil},
		{"return foo(a, b)", "return bar(a, b)", []Span{{7, 10, Delete}, {7, 10, Insert}}},
		{"x := 1", "x := 1 // note", []Span{{6, 14, Insert}}},
		{"a b c", "a x c", []Span{{2, 3, Delete}, {2, 3, Insert}}},
		{"f(a,b)", "f(a)", []Span{{3, 5, Delete}}},
		{"héllo wörld", "héllo world", []Span{{7, 13, Delete}, {7, 12, Insert}}},
		{"", "new", []Span{{0, 3, Insert}}},
	}
	for _, tc := range tests {
		got := Words(tc.old, tc.new)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Words(%q, %q) = %v, want %v", tc.old, tc.new, got, tc.want)
		}
		// Removing the deleted spans from old and the inserted ones from
		// new leaves the same text.
		if keep(tc.old, got, Delete) != keep(tc.new, got, Insert) {
			t.Errorf("Words(%q, %q): unchanged parts differ", tc.old, tc.new)
		}
	}
}

func keep(s string, spans []Span, kind LineKind) string {
	out, pos := "", 0
	for _, sp := range spans {
		if sp.Kind == kind {
			out += s[pos:sp.Start]
			pos = sp.End
		}
	}
	return out + s[pos:]
}
