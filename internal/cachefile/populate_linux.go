package cachefile

import "golang.org/x/sys/unix"

const populateFlag = unix.MAP_POPULATE
