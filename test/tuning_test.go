package test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestPinnedBusyPollingForwarder runs the daemon with --cpus and
// --busy-poll, checks from /proc that exactly one of its threads is pinned
// to that CPU, and that pmd-stats-show reports the placement and the time
// the thread spent busy and idle.
func TestPinnedBusyPollingForwarder(t *testing.T) {
	testenv.RequireRoot(t)
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := range len(allowed) * 64 {
		if allowed.IsSet(i) {
			cpu = i // the last CPU this process may use
		}
	}
	r := newRig(t, 2, "--cpus", strconv.Itoa(cpu), "--busy-poll")
	requirePing(t, r.hosts[0].ns, r.hosts[1].addr, 56)

	// The Go runtime never clones a new thread from a locked one, so the
	// forwarding thread's affinity stays its own.
	if allowed.Count() == 1 {
		t.Logf("this process may use only CPU %d, where every thread runs: pinning cannot be told apart here", cpu)
	} else if pinned := pinnedThreads(t, r.d.pid(), strconv.Itoa(cpu)); pinned != 1 {
		t.Errorf("%d of the daemon's threads may run only on CPU %d; want 1, the bridge's forwarding thread", pinned, cpu)
	}

	var pmd jsonPMDStats
	r.d.xJSON(t, &pmd, "pmd-stats-show", r.br)
	if len(pmd.Bridges) != 1 {
		t.Fatalf("pmd-stats-show lists %d bridges, want 1", len(pmd.Bridges))
	}
	f := pmd.Bridges[0].Forwarder
	if len(f.CPUs) != 1 || f.CPUs[0] != cpu || !f.BusyPoll || f.BusySec <= 0 || f.IdleSec <= 0 {
		t.Errorf("pmd-stats-show forwarder = %+v, want CPU %d, busy-poll, some busy and some idle time", f, cpu)
	}
	text := r.d.x(t, "pmd-stats-show", r.br)
	if want := "forwarding thread: CPUs " + strconv.Itoa(cpu) + ", busy-polls when idle"; !strings.Contains(text, want) {
		t.Errorf("pmd-stats-show does not say %q:\n%s", want, text)
	}
}

// pinnedThreads counts the threads of process pid whose allowed CPUs are
// exactly cpus, as /proc lists them (Cpus_allowed_list).
func pinnedThreads(t *testing.T, pid int, cpus string) int {
	t.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "status"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of process %d: %v", pid, err)
	}
	n := 0
	for _, path := range tasks {
		status, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) == cpus {
				n++
			}
		}
	}
	return n
}
