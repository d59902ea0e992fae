package main

import "testing"

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "50MiB": 50 << 20, "512kb": 512 << 10, "1G": 1 << 30, "1.5MiB": 3 << 19} {
		var s sizeFlag
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, bad := range []string{"", "big", "-1MiB", "0"} {
		var s sizeFlag
		if err := s.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
