package diff

import (
	"bytes"
	"compress/zlib"
	"strconv"
	"strings"
)

// maxLiteral bounds the bytes (old and new side together) a binary diff
// carries as a git "literal" patch; larger binary diffs name only the blob
// ids, and `git apply` then needs the new blob in its object store.
const maxLiteral = 4 << 20

// binaryData holds both sides of a binary diff small enough to be written
// out whole. It is not exported (nor serialized): a FileDiff read back
// from JSON or parsed from a patch renders without it.
type binaryData struct {
	old, new []byte
}

// git's base85 alphabet (base85.c).
const en85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// writeBinaryPatch writes "GIT binary patch" with the new content as the
// forward literal and the old content as the reverse one, as git diff
// --binary does (without its delta encoding): `git apply` applies it with
// no objects at hand, and `git apply -R` reverts it.
func writeBinaryPatch(sb *strings.Builder, b *binaryData) {
	sb.WriteString("GIT binary patch\n")
	writeLiteral(sb, b.new)
	writeLiteral(sb, b.old)
}

// writeLiteral writes one "literal" block: the zlib-deflated data in lines
// of at most 52 bytes, each prefixed with its length (A-Z: 1-26, a-z:
// 27-52) and base85-encoded, then a blank line.
func writeLiteral(sb *strings.Builder, data []byte) {
	sb.WriteString("literal ")
	sb.WriteString(strconv.Itoa(len(data)))
	sb.WriteByte('\n')
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(data)
	w.Close()
	buf := z.Bytes()
	for len(buf) > 0 {
		n := min(52, len(buf))
		if n <= 26 {
			sb.WriteByte(byte('A' + n - 1))
		} else {
			sb.WriteByte(byte('a' + n - 27))
		}
		encode85(sb, buf[:n])
		sb.WriteByte('\n')
		buf = buf[n:]
	}
	sb.WriteByte('\n')
}

// encode85 writes data in git's base85: each group of 4 bytes (the last
// one zero-padded) as 5 characters, most significant first.
func encode85(sb *strings.Builder, data []byte) {
	for len(data) > 0 {
		var acc uint32
		for i := 0; i < 4; i++ {
			acc <<= 8
			if i < len(data) {
				acc |= uint32(data[i])
			}
		}
		var out [5]byte
		for i := 4; i >= 0; i-- {
			out[i] = en85[acc%85]
			acc /= 85
		}
		sb.Write(out[:])
		data = data[min(4, len(data)):]
	}
}
