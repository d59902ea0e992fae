package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentd/agentd/engine/llm"
)

// sizeFlag is a byte size given as 1048576, 512KiB, 50MiB, 1GiB (KB, MB,
// GB and K, M, G mean the same powers of 1024). 0: the default.
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*s), 10)
}

func (s *sizeFlag) Type() string { return "size" }

func (s *sizeFlag) Set(v string) error {
	t := strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffixes []string
		m        int64
	}{{[]string{"GiB", "GB", "G"}, 1 << 30}, {[]string{"MiB", "MB", "M"}, 1 << 20}, {[]string{"KiB", "KB", "K"}, 1 << 10}, {[]string{"B"}, 1}} {
		for _, suf := range u.suffixes {
			if len(t) > len(suf) && strings.EqualFold(t[len(t)-len(suf):], suf) {
				t, mult = strings.TrimSpace(t[:len(t)-len(suf)]), u.m
				goto parse
			}
		}
	}
parse:
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a size: write e.g. 50MiB, 512KiB or 1048576", v)
	}
	*s = sizeFlag(n * float64(mult))
	return nil
}

// configMaxFileSize is "maxFileSize" of the user's config file
// (~/.config/agentd/config.json, as llm.ConfigPath finds it): a size
// string ("50MiB") or a number of bytes; 0 when it is not set.
func configMaxFileSize() (sizeFlag, error) {
	path := llm.ConfigPath(os.Getenv)
	if path == "" {
		return 0, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, nil // no config file: the default
	}
	var c struct {
		MaxFileSize json.RawMessage `json:"maxFileSize"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.MaxFileSize) == 0 {
		return 0, nil
	}
	var s sizeFlag
	var str string
	if json.Unmarshal(c.MaxFileSize, &str) != nil {
		str = string(c.MaxFileSize)
	}
	if err := s.Set(str); err != nil {
		return 0, fmt.Errorf("%s: maxFileSize: %v", path, err)
	}
	return s, nil
}
