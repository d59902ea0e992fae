//go:build unix && !linux

package cachefile

// populateFlag: no MAP_POPULATE here; pages fault in as they are read.
const populateFlag = 0
