package platform

import (
	"fmt"
	"strings"
)

// WindowsMaxPath is the length (in UTF-16 units, counted here in
// characters of the absolute path) past which Windows programs that do
// not opt into long paths cannot open a file.
const WindowsMaxPath = 260

var reservedNames = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true,
	"COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true,
	"COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true,
	"LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
	"CONIN$": true, "CONOUT$": true,
}

// WindowsNameProblem says why Windows cannot have a file of this name
// (one path component), or "" when it can: a reserved device name (CON,
// NUL, COM1...; with any extension: "nul.txt" is the null device too), a
// character Windows forbids, or a trailing dot or space (which Windows
// strips, so the file would get another name). The rule is the same on
// every OS, so that it can be tested anywhere; NameProblem applies it only
// on Windows.
func WindowsNameProblem(name string) string {
	if name == "" || name == "." || name == ".." {
		return ""
	}
	stem := name
	if i := strings.IndexByte(stem, '.'); i >= 0 {
		stem = stem[:i]
	}
	stem = strings.TrimRight(stem, " ")
	if reservedNames[strings.ToUpper(stem)] {
		return fmt.Sprintf("%q is a reserved device name on Windows (like CON, NUL, COM1); rename it", name)
	}
	for _, r := range name {
		if r < 32 || strings.ContainsRune(`<>:"|?*\`, r) {
			return fmt.Sprintf("%q has the character %q, which Windows forbids in file names; rename it", name, r)
		}
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return fmt.Sprintf("%q ends with a dot or a space, which Windows strips from file names; rename it", name)
	}
	return ""
}
