package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentd/agentd/session"
)

// watchInterrupts handles Ctrl-C (and SIGTERM, SIGHUP) during a run. The first
// cancels the run and says what it waits for; the second kills every
// process group the run's commands started, including commands that ignore
// SIGTERM, so none survives agentd; a third exits at once. SIGHUP (the
// terminal was closed) cancels and kills the commands at once. It returns a
// func that stops watching.
//
// It keeps the signals caught for the whole run: without that, the second
// Ctrl-C would kill agentd at once and leave its commands running.
func watchInterrupts(con *console, cancel context.CancelCauseFunc) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		if sig == syscall.SIGHUP {
			// The terminal is gone: nobody can press Ctrl-C again, so
			// stop at once and leave no command running.
			cancel(errHangup)
			session.KillAllCommands()
			return
		}
		n := session.RunningCommands()
		msg := "cancelling"
		if n > 0 {
			msg += fmt.Sprintf(": waiting up to %s for %d command%s to stop", session.CommandKillGrace(), n, plural(n))
		}
		// Cancel first: a prompt holding the console ends with the run.
		cancel(signalCause(sig))
		con.Println(con.paint("33", msg+" (Ctrl-C again to kill now)"))
		select {
		case <-sigs:
		case <-done:
			return
		}
		k := session.KillAllCommands()
		con.Println(con.paint("31", fmt.Sprintf("killed %d command%s; Ctrl-C again to quit without waiting for the run to end", k, plural(k))))
		select {
		case <-sigs:
			// The commands are dead; whatever still holds the run up
			// (a tool ignoring its context) is not worth waiting for.
			os.Exit(exitCancelled)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// Why the terminal stopped a run: the run's error in its state and summary.
var (
	errInterrupted = errors.New("interrupted (Ctrl-C)")
	errTerminated  = errors.New("terminated (SIGTERM)")
	errQuit        = errors.New("stopped at the terminal (q)")
	errHangup      = errors.New("the terminal was closed (SIGHUP)")
)

// signalCause is the run's error for a signal (an os.Signal, or the cause
// signal.NotifyContext gave its context: "terminated signal received").
func signalCause(v any) error {
	if s, ok := v.(os.Signal); ok && s == syscall.SIGTERM {
		return errTerminated
	}
	if e, ok := v.(error); ok && strings.HasPrefix(e.Error(), syscall.SIGTERM.String()) {
		return errTerminated
	}
	return errInterrupted
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
