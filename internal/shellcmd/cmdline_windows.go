package shellcmd

import (
	"os/exec"
	"syscall"
)

// setCmdLine gives cmd.exe its command line as written: Go's own quoting
// of Args would escape the quotes cmd.exe's /s /c reads.
func setCmdLine(cmd *exec.Cmd, line string) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `"` + cmd.Path + `" ` + line}
}
