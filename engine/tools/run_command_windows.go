//go:build windows

package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows run_command runs the command line through cmd.exe
// (`cmd.exe /d /s /c "<command>"`): it is on every Windows, starts in
// milliseconds where PowerShell takes most of a second, and reads the
// lines plans and models write for a build (`go test ./... && npm test`,
// `make`, `set X=1 && ...`) as sh does on POSIX. A PowerShell command is run
// as `powershell -NoProfile -Command "..."` from it. /d skips AutoRun
// macros from the registry, /s keeps the line's quotes as written.
//
// The shell is started suspended inside a Job object that kills everything
// in it when its last handle closes (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE),
// then resumed; every process it starts joins the job. Stopping a command
// (cancel, timeout, agentd exiting) terminates the job: the whole tree, at
// once. Windows has no SIGTERM for console programs started this way, so
// there is no grace period: the exit code of a stopped command is 1.

var (
	jobsMu sync.Mutex
	jobs   = map[*exec.Cmd]windows.Handle{}
)

// shellCommand is the shell invocation of a command line.
func shellCommand(line string) *exec.Cmd {
	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = filepath.Join(os.Getenv("SystemRoot"), "System32", "cmd.exe")
	}
	cmd := exec.Command(comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Go would quote the line for argv parsing, which cmd.exe does
		// not do: the command line is given as is.
		CmdLine: fmt.Sprintf(`%s /d /s /c "%s"`, syscall.EscapeArg(comspec), line),
	}
	return cmd
}

// shellName names the shell in messages.
func shellName() string { return "cmd.exe" }

func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
}

var (
	ntdll           = windows.NewLazySystemDLL("ntdll.dll")
	ntResumeProcess = ntdll.NewProc("NtResumeProcess")
)

// startedGroup puts the suspended process into a new Job object and lets
// it run. Without a job (the call failing) the process is killed: a
// command whose tree could not be stopped later does not run.
func startedGroup(cmd *exec.Cmd) error {
	fail := func(what string, err error) error {
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s: %w", what, err)
	}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fail("create a job object", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fail("set up the job object", err)
	}
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return fail("open the shell process", err)
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(job, ph); err != nil {
		windows.CloseHandle(job)
		return fail("put the shell into its job object", err)
	}
	if r, _, _ := ntResumeProcess.Call(uintptr(ph)); r != 0 {
		windows.CloseHandle(job)
		return fail("resume the shell", windows.NTStatus(r))
	}
	jobsMu.Lock()
	jobs[cmd] = job
	jobsMu.Unlock()
	return nil
}

// signalGroup terminates the command's job: the shell and every process
// it started. Windows has no graceful stop here, so kill is the same.
func signalGroup(cmd *exec.Cmd, _ bool) {
	jobsMu.Lock()
	job, ok := jobs[cmd]
	jobsMu.Unlock()
	if ok {
		_ = windows.TerminateJobObject(job, 1)
		return
	}
	_ = cmd.Process.Kill()
}

// releaseGroup closes the job's handle once the command is reaped.
func releaseGroup(cmd *exec.Cmd) {
	jobsMu.Lock()
	job, ok := jobs[cmd]
	delete(jobs, cmd)
	jobsMu.Unlock()
	if ok {
		windows.CloseHandle(job) // kills what is left (KILL_ON_JOB_CLOSE)
	}
}

func exitStatus(cmd *exec.Cmd, _ error) (int, string) {
	if cmd.ProcessState == nil {
		return -1, ""
	}
	return cmd.ProcessState.ExitCode(), ""
}
