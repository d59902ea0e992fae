//go:build unix

package tools

import (
	"fmt"
	"syscall"
)

// readFileInto reads the file at abs into buf (grown as needed) with plain
// system calls: open (not following a final symlink), read, close. os.Open
// would also try to register the descriptor with the poller, one more
// system call per file, which shows on 80k-file trees.
func readFileInto(abs string, buf []byte, sizeHint int64) ([]byte, error) {
	fd, err := openNoFollow(abs)
	if err != nil {
		return buf[:0], fmt.Errorf("open %s: %w", abs, err)
	}
	defer syscall.Close(fd)
	want := int(sizeHint) + 1 // +1 to see EOF in one read for files that did not grow
	if cap(buf) < want {
		buf = make([]byte, 0, max(want, 64<<10))
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf[:0], fmt.Errorf("read %s: %w", abs, err)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func openNoFollow(abs string) (int, error) {
	for {
		fd, err := syscall.Open(abs, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err == syscall.EINTR {
			continue
		}
		return fd, err
	}
}
