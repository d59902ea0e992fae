package main

import (
	"strconv"

	"github.com/agentd/agentd/session"
)

// sizeFlag is a byte size given as 1048576, 512KiB, 50MiB, 1GiB, parsed
// as the config's maxFileSize is (session.ParseSize). 0: not given, so
// the session takes the config's maxFileSize, else the default.
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*s), 10)
}

func (s *sizeFlag) Type() string { return "size" }

func (s *sizeFlag) Set(v string) error {
	n, err := session.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}
