package vswitch

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/porttest"
)

func newTestBridge(t *testing.T) *Bridge {
	t.Helper()
	b, err := New("br0", normalTable(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// waitTransmitted waits until p has transmitted n frames in all.
func waitTransmitted(t *testing.T, p *porttest.Port, n uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Counts().Transmitted < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s transmitted %d frames; want %d", p.Name(), p.Counts().Transmitted, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBridgeForwardsLearnsAndForgets(t *testing.T) {
	b := newTestBridge(t)
	p1, p2, p3 := porttest.New("p1"), porttest.New("p2"), porttest.New("p3")
	for i, p := range []*porttest.Port{p1, p2, p3} {
		n, err := b.AddPort(p, PortOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n != uint16(i+1) {
			t.Fatalf("port %s got ofport %d; want %d", p.Name(), n, i+1)
		}
	}
	p1.Inject(frame(broadcast, mac(1), "from 1")) // wakes the sleeping forwarder
	waitTransmitted(t, p2, 1)
	waitTransmitted(t, p3, 1)

	fdb := b.FDB()
	if len(fdb) != 1 || fdb[0].Port != 1 || fdb[0].MAC != [6]byte(mac(1)) {
		t.Fatalf("FDB = %+v; want mac(1) on port 1", fdb)
	}
	stats := b.Ports()
	if stats[0].Stats.RxPackets != 1 || stats[1].Stats.TxPackets != 1 || stats[2].Stats.TxPackets != 1 {
		t.Fatalf("counters do not count: %+v", stats)
	}

	if err := b.RemovePort("p1"); err != nil {
		t.Fatal(err)
	}
	if fdb := b.FDB(); len(fdb) != 0 {
		t.Fatalf("FDB after removing the port = %+v; want empty", fdb)
	}
	if err := b.RemovePort("p1"); err == nil {
		t.Fatal("removing a removed port succeeded")
	}
	// The freed number is reused, as in OVS.
	if n, err := b.AddPort(porttest.New("p4"), PortOptions{}); err != nil || n != 1 {
		t.Fatalf("AddPort = %d, %v; want 1", n, err)
	}
}

func TestBridgeRejectsDuplicates(t *testing.T) {
	b := newTestBridge(t)
	if _, err := b.AddPort(porttest.New("p1"), PortOptions{OFPort: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddPort(porttest.New("p1"), PortOptions{}); err == nil {
		t.Fatal("a second port of the same name was added")
	}
	if _, err := b.AddPort(porttest.New("p2"), PortOptions{OFPort: 7}); err == nil {
		t.Fatal("a second port with ofport 7 was added")
	}
	if n, err := b.AddPort(porttest.New("p3"), PortOptions{}); err != nil || n != 1 {
		t.Fatalf("AddPort = %d, %v; want 1", n, err)
	}
}

func TestBridgePinsItsForwarder(t *testing.T) {
	cpus := testenv.AllowedCPUs(t)
	cpu := cpus[len(cpus)-1]
	b, err := New("br0", normalTable(), Options{CPUs: []int{cpu}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var got unix.CPUSet
	var getErr error
	b.fwds[0].do(func() { getErr = unix.SchedGetaffinity(0, &got) })
	if getErr != nil {
		t.Fatal(getErr)
	}
	if got.Count() != 1 || !got.IsSet(cpu) {
		t.Errorf("forwarding thread may run on %d CPUs (CPU %d: %v); want only CPU %d", got.Count(), cpu, got.IsSet(cpu), cpu)
	}
	if _, err := New("br1", normalTable(), Options{CPUs: []int{1 << 20}}); err == nil {
		t.Error("a bridge pinned to CPU 1048576 was created")
	}
}

func TestBusyPollingBridgeForwardsAndCountsIdleTime(t *testing.T) {
	b, err := New("br0", normalTable(), Options{BusyPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p1, p2 := porttest.New("p1"), porttest.New("p2")
	for _, p := range []*porttest.Port{p1, p2} {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p1.Inject(frame(broadcast, mac(1), "from 1"))
	waitTransmitted(t, p2, 1)
	// Spinning without frames is idle time, as sleeping is.
	waitForwarderTime(t, b, 0, 10*time.Millisecond)

	// And it is spinning, not sleeping: with no frames at all, the
	// forwarding thread still spends its time on the CPU.
	f := b.fwds[0]
	cpuTime := func() time.Duration {
		var ru unix.Rusage
		f.do(func() { unix.Getrusage(unix.RUSAGE_THREAD, &ru) })
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	const wall = 200 * time.Millisecond
	before := cpuTime()
	time.Sleep(wall)
	if used := cpuTime() - before; used < wall/8 {
		t.Errorf("the idle busy-polling thread used %v of CPU in %v; want a good part of it, even on a busy machine (a sleeping one uses next to none)", used, wall)
	}
}

func TestBridgeForwardsWithSeveralThreads(t *testing.T) {
	cpus := testenv.AllowedCPUs(t)
	cpu := cpus[len(cpus)-1]
	// Two threads on one CPU: what matters here is that they share the
	// bridge's state correctly, which the race detector watches.
	b, err := New("br0", normalTable(), Options{CPUs: []int{cpu, cpu}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.fwds) != 2 {
		t.Fatalf("%d forwarding threads; want one per CPU listed, 2", len(b.fwds))
	}
	p1, p2, p3 := porttest.New("p1"), porttest.New("p2"), porttest.New("p3")
	for _, p := range []*porttest.Port{p1, p2, p3} {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The queues are dealt out in turn: p1's and p3's to the first thread,
	// p2's to the second.
	for i, want := range [][]string{{"p1", "p3"}, {"p2"}} {
		var got []string
		f := b.fwds[i]
		f.do(func() {
			for _, q := range f.queues {
				got = append(got, f.ports[q.slot].Name())
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("thread %d polls the queues of %v; want %v", i, got, want)
		}
	}

	// p1's station is learned by the first thread; the second finds it
	// when p2's station answers, and sends the answer to p1 alone.
	p1.Inject(frame(broadcast, mac(1), "from 1"))
	waitTransmitted(t, p2, 1)
	waitTransmitted(t, p3, 1)
	p2.Inject(frame(mac(1), mac(2), "from 2 to 1"))
	waitTransmitted(t, p1, 1)
	if n := p3.Counts().Transmitted; n != 1 {
		t.Errorf("p3 transmitted %d frames; want only the broadcast: the answer was flooded", n)
	}
	if fdb := b.FDB(); len(fdb) != 2 {
		t.Errorf("FDB = %+v; want both stations", fdb)
	}
	if err := b.RemovePort("p1"); err != nil {
		t.Fatal(err)
	}
	if fdb := b.FDB(); len(fdb) != 1 || fdb[0].Port != 2 {
		t.Errorf("FDB after removing p1 = %+v; want p2's station only", fdb)
	}
	if hits, misses, _ := b.CacheStats(); hits+misses != 2 {
		t.Errorf("cache hits %d + misses %d; want the 2 frames received, summed over the threads", hits, misses)
	}
}
