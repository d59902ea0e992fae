package repomap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A parse stops when its context is done (the progress callback asks the
// host), and the same parser then parses the next file whole.
func TestParseCancelled(t *testing.T) {
	var b strings.Builder
	b.WriteString("package big\n\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "func F%d(x int) int { return x*%d + len(\"%d\") }\n", i, i, i)
	}
	src := []byte(b.String())
	var w parsers
	defer w.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if syms, err := symbolsOf(ctx, &w, langGo, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled parse: %d symbols, err %v; want context.Canceled", len(syms), err)
	}
	syms, err := symbolsOf(context.Background(), &w, langGo, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(syms) != 20000 || syms[19999].Name != "F19999" || syms[19999].Line != 20002 {
		t.Fatalf("after a cancelled parse: %d symbols, last %+v; want 20000, F19999 at line 20002", len(syms), syms[len(syms)-1])
	}
}

// Every language of lang.go is in parsers.wasm, under the same index.
func TestEveryLanguageParses(t *testing.T) {
	srcs := map[*lang]string{
		langGo: "package p\nfunc A() {}\n", langJS: "function A() {}\n", langTS: "function A(): void {}\n",
		langTSX: "function A() { return <div/> }\n", langPython: "def A():\n    pass\n", langRust: "fn A() {}\n",
		langLua: "function A() end\n", langJava: "class A {}\n", langC: "int A(void) { return 0; }\n",
		langCPP: "class A { void f(); };\n",
	}
	var w parsers
	defer w.close()
	for _, l := range allLangs {
		syms, err := symbolsOf(context.Background(), &w, l, []byte(srcs[l]))
		if err != nil || len(syms) == 0 || syms[0].Name != "A" {
			t.Errorf("%s: %+v, %v; want A first", l.name, syms, err)
		}
	}
}
