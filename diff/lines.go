package diff

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
)

// binarySniffLen is how much of a file git inspects to decide whether it is
// binary (xdiff's FIRST_FEW_BYTES).
const binarySniffLen = 8000

// IsBinary reports whether data looks binary the way git decides: a NUL byte
// in the first 8000 bytes.
func IsBinary(data []byte) bool {
	if len(data) > binarySniffLen {
		data = data[:binarySniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// BlobID returns the git object id (SHA-1) of data stored as a blob, as
// `git hash-object` prints it.
func BlobID(data []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// splitLines cuts s into lines that keep their terminator ("\n" or "\r\n";
// the last line may have none). The lines share s's memory.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// cutEOL splits a raw line into its text and terminator.
func cutEOL(raw string) (text, eol string) {
	n := len(raw)
	if n > 0 && raw[n-1] == '\n' {
		if n > 1 && raw[n-2] == '\r' {
			return raw[:n-2], raw[n-2:]
		}
		return raw[:n-1], raw[n-1:]
	}
	return raw, ""
}
