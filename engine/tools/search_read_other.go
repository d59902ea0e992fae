//go:build !unix

package tools

import (
	"io"
	"os"
)

// readFileInto reads the file at abs into buf (grown as needed).
func readFileInto(abs string, buf []byte, sizeHint int64) ([]byte, error) {
	f, err := os.Open(abs)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	if want := int(sizeHint) + 1; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf[:0], err
		}
	}
}
