package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Detaching, as ovs-vswitchd --detach does: `xswitch daemon --detach`
// starts the daemon again in the background, in a session of its own, and
// returns only once it serves, with its start-up error if it fails. The
// two talk over a pipe that the background daemon finds through
// readyFDEnv: "ready\n" once it serves, or its error.

const readyFDEnv = "XSWITCH_READY_FD"

const readyWord = "ready\n"

// detach starts the daemon in the background with args (this command's,
// without --detach) and waits until it serves or fails.
func detach(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--detach: finding this program: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return err
	}
	defer devNull.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), readyFDEnv+"=3") // ExtraFiles[0]
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("--detach: starting the daemon: %w", err)
	}
	// The pipe closes once the daemon has said its word, or when it dies.
	said, _ := io.ReadAll(r)
	if string(said) == readyWord {
		return cmd.Process.Release()
	}
	waitErr := cmd.Wait()
	if msg := strings.TrimSpace(string(said)); msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("the daemon exited while starting: %v", waitErr)
}

// withoutDetach returns args with --detach taken out.
func withoutDetach(args []string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		return a == "--detach" || strings.HasPrefix(a, "--detach=")
	})
}

// detachedParent is the pipe to the `daemon --detach` that started this
// daemon, or nil.
type detachedParent struct{ pipe *os.File }

func parentWaiting() (*detachedParent, error) {
	value := os.Getenv(readyFDEnv)
	if value == "" {
		return nil, nil
	}
	os.Unsetenv(readyFDEnv)
	fd, err := strconv.Atoi(value)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q is not a descriptor", readyFDEnv, value)
	}
	return &detachedParent{pipe: os.NewFile(uintptr(fd), "ready pipe")}, nil
}

// ready tells the parent that the daemon serves.
func (p *detachedParent) ready() {
	if p != nil && p.pipe != nil {
		p.pipe.WriteString(readyWord)
		p.pipe.Close()
		p.pipe = nil
	}
}

// failed tells the parent why the daemon did not start.
func (p *detachedParent) failed(err error) {
	if p != nil && p.pipe != nil {
		p.pipe.WriteString(err.Error())
		p.pipe.Close()
		p.pipe = nil
	}
}
