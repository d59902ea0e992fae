package tools

import (
	"reflect"
	"regexp"
	"testing"
)

// The prefilter never loses a match: searching with it finds exactly what
// trying every line finds.
func FuzzPrefilter(f *testing.F) {
	seeds := [][2]string{
		{`foo`, "a foo\nbar"}, {`(?i)stop kelvin`, "ſtop KELVIN\nstop kelvin"}, {`\S{3}`, "ab cd éfg\n"},
		{`mutex_lock|spin_lock`, "spin_lock(x)\nmutex_lock"}, {`[A-Z]{2}_[0-9]`, "AB_1 x\nab_1"}, {`a\S{2}b`, "aééb axyb"},
		{`^\s*$`, "\n  \nx\n"}, {`(?i)k`, "\u212a\nk\nK"}, {`x$`, "ax\r\nx"}, {`é+`, "\xc3\xa9\xff\xc3"}, {"\ufffd", "\xff\nx"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		re, err := regexp.Compile(pattern)
		if err != nil || len(pattern) > 64 {
			return
		}
		with := &codeSearch{re: re, find: newPrefilter(pattern), min: minLen(pattern)}
		without := &codeSearch{re: re}
		got := with.searchData("f", []byte(text), 1<<30)
		want := without.searchData("f", []byte(text), 1<<30)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pattern %q on %q:\nwith prefilter %+v\nwithout        %+v", pattern, text, got, want)
		}
	})
}
