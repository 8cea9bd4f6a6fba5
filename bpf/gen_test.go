package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
)

func TestMaxQueuesMatchesXsksMap(t *testing.T) {
	spec, err := LoadXsk()
	if err != nil {
		t.Fatalf("load the generated collection spec: %v", err)
	}
	m, ok := spec.Maps["xsks_map"]
	if !ok {
		t.Fatal("xsks_map missing from the generated object")
	}
	if m.MaxEntries != MaxQueues {
		t.Fatalf("xsks_map has %d entries, MaxQueues is %d: update one to match the other", m.MaxEntries, MaxQueues)
	}
}

// TestProgramLoadsFragsAware loads the program into the kernel, so that a
// change the verifier rejects fails here rather than at the first
// add-port, and checks that it is frags-aware: only then does veth attach
// it natively beyond one page of MTU, and does a socket bound with
// XDP_USE_SG receive a frame in several buffers.
func TestProgramLoadsFragsAware(t *testing.T) {
	testenv.RequireRoot(t)
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadXsk()
	if err != nil {
		t.Fatal(err)
	}
	if flags := spec.Programs[XskProgXskRedirect].Flags; flags&unix.BPF_F_XDP_HAS_FRAGS == 0 {
		t.Fatalf("program flags %#x lack BPF_F_XDP_HAS_FRAGS: its section must be xdp.frags", flags)
	}
	var objs XskObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatalf("the verifier refused the program: %v", err)
	}
	defer objs.Close()

	// With no socket in xsks_map, every frame passes, a jumbo one (in
	// several buffers, as BPF_PROG_RUN hands a frags-aware program a frame
	// longer than a page) included, even with no length allowed at all.
	for _, size := range []int{64, 9014} {
		ret, err := objs.XskRedirect.Run(&ebpf.RunOptions{Data: make([]byte, size)})
		if err != nil {
			t.Fatalf("run on a %d-byte frame: %v", size, err)
		}
		if ret != xdpPass {
			t.Errorf("a %d-byte frame on a queue without a socket: action %d, want XDP_PASS (%d)", size, ret, xdpPass)
		}
	}
	var counts []uint64
	if err := objs.Oversize.Lookup(uint32(0), &counts); err != nil {
		t.Fatal(err)
	}
	for cpu, n := range counts {
		if n != 0 {
			t.Errorf("oversize count on CPU %d = %d, want 0: the frames had no socket", cpu, n)
		}
	}
}

// A port's entry program replaces its own, so it must be frags-aware as
// that one is, or veth would refuse it beyond one page of MTU; and so
// must the fast path's, which it tail-calls, and which tail-calls the
// port's own: the kernel calls only between programs that agree.
func TestFastpathProgramsAreFragsAware(t *testing.T) {
	fastpath, err := LoadFastpath()
	if err != nil {
		t.Fatal(err)
	}
	entry, err := LoadEntry()
	if err != nil {
		t.Fatal(err)
	}
	for name, prog := range map[string]*ebpf.ProgramSpec{"fastpath": fastpath.Programs[FastpathProgFastpath], "entry": entry.Programs[EntryProgFastpathEntry]} {
		if prog.Flags&unix.BPF_F_XDP_HAS_FRAGS == 0 {
			t.Errorf("the %s program's flags %#x lack BPF_F_XDP_HAS_FRAGS: its section must be xdp.frags", name, prog.Flags)
		}
	}
}

// The redirect drop counter loads and attaches to its tracepoints, and
// reads zero for a device that dropped nothing.
func TestRedirectCounterAttaches(t *testing.T) {
	testenv.RequireRoot(t)
	c, err := AttachRedirectCounter()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := c.Drops(0, 0, 1); n != 0 {
		t.Errorf("lo dropped %d redirected frames, want 0", n)
	}
}

func TestFastpathSpecCopiesAreApart(t *testing.T) {
	a, err := fastpathSpecCopy()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Variables[FastpathVarRecordKey].Set(uint8(1)); err != nil {
		t.Fatal(err)
	}
	a.Maps[FastpathMapCtConns].MaxEntries = 3
	b, err := fastpathSpecCopy()
	if err != nil {
		t.Fatal(err)
	}
	var record uint8
	if err := b.Variables[FastpathVarRecordKey].Get(&record); err != nil || record != 0 {
		t.Errorf("a later copy's record_key = %d (%v), want 0: one copy changed the parsed file", record, err)
	}
	if n := b.Maps[FastpathMapCtConns].MaxEntries; n == 3 {
		t.Error("a later copy's ct_conns has the size an earlier copy was given")
	}
}
