//go:build !unix

package repomap

import "os"

func mapFile(name string) ([]byte, error) { return os.ReadFile(name) }
