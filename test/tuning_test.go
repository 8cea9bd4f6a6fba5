package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestPinnedBusyPollingForwarder runs the daemon with --cpus and
// --busy-poll, checks from /proc that exactly one of its threads is pinned
// to that CPU, and that pmd-stats-show reports the placement and the time
// the thread spent busy and idle.
func TestPinnedBusyPollingForwarder(t *testing.T) {
	testenv.RequireRoot(t)
	cpus := testenv.AllowedCPUs(t)
	cpu := cpus[len(cpus)-1]
	r := newRig(t, 2, "--cpus", strconv.Itoa(cpu), "--busy-poll")
	requirePing(t, r.hosts[0].ns, r.hosts[1].addr, 56)

	// The Go runtime never clones a new thread from a locked one, so the
	// forwarding thread's affinity stays its own.
	if len(cpus) == 1 {
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
	if want := "forwarding thread: CPU " + strconv.Itoa(cpu) + ", busy-polling when idle"; !strings.Contains(text, want) {
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

// TestTwoForwardingThreads runs a bridge with a forwarding thread on each
// of two CPUs: each polls one port's queue and transmits to the other's,
// so a TCP transfer's data and its acknowledgements cross from one thread
// to the other all the time, and learning on one serves lookups on the
// other. Every byte must arrive.
func TestTwoForwardingThreads(t *testing.T) {
	testenv.RequireRoot(t)
	cpus := testenv.AllowedCPUs(t)
	if len(cpus) < 2 {
		t.Skipf("this process may use only CPU %d: two forwarding threads need two CPUs", cpus[0])
	}
	list := fmt.Sprintf("%d,%d", cpus[0], cpus[1])
	r := newRig(t, 2, "--cpus", list)
	sender, receiver := r.hosts[0], r.hosts[1]
	transferTCP(t, sender.ns, receiver.ns, receiver.addr, receiver.addr, tcpPayloadSize)

	for _, cpu := range cpus[:2] {
		if n := pinnedThreads(t, r.d.pid(), strconv.Itoa(cpu)); n != 1 {
			t.Errorf("%d of the daemon's threads may run only on CPU %d; want 1", n, cpu)
		}
	}
	if text := r.d.x(t, "pmd-stats-show", r.br); !strings.Contains(text, "forwarding threads: one on each of CPUs "+list) {
		t.Errorf("pmd-stats-show does not list the two threads:\n%s", text)
	}
	// Each station was learned by the thread that polls its port, in the
	// table both threads share.
	var fdb jsonFDB
	r.d.xJSON(t, &fdb, "fdb-show", r.br)
	ports := map[int]bool{}
	for _, e := range fdb.Entries {
		ports[e.Port] = true
	}
	if len(ports) != 2 {
		t.Errorf("fdb-show after the transfer: %+v; want stations on both ports", fdb.Entries)
	}
}
