package workspace

import (
	"crypto/sha256"
	"encoding/hex"
)

// Hash is the hex sha256 of content, the form of FileChange.BaseHash.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
