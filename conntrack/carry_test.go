package conntrack

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeStore is a fast path's store in memory, counting what the tracker
// asks of it.
type fakeStore struct {
	conns                            map[Handle]KernelConn
	puts, peeks, takes, merges, dels int
	refuse                           bool
}

func newFakeStore() *fakeStore { return &fakeStore{conns: map[Handle]KernelConn{}} }

func (s *fakeStore) PutConn(h Handle, k *KernelConn) error {
	if s.refuse {
		return errors.New("full")
	}
	s.puts++
	s.conns[h] = *k
	return nil
}

func (s *fakeStore) PeekConn(h Handle) (KernelConn, bool) {
	s.peeks++
	k, ok := s.conns[h]
	return k, ok
}

func (s *fakeStore) TakeConn(h Handle) (KernelConn, bool) {
	s.takes++
	k, ok := s.conns[h]
	delete(s.conns, h)
	return k, ok
}

func (s *fakeStore) MergeConn(h Handle, k *KernelConn) bool {
	s.merges++
	cur, ok := s.conns[h]
	if ok {
		cur.Merge(k)
		s.conns[h] = cur
	}
	return ok
}

func (s *fakeStore) DeleteConn(h Handle) {
	s.dels++
	delete(s.conns, h)
}

// carried sets up an established connection that store carries.
func carried(t *testing.T) (*Tracker, *tcpSession, *fakeStore, CarrierID, Handle) {
	t.Helper()
	tr := newTracker(t)
	s := newSession(tr)
	s.play(t, handshake)
	store := newFakeStore()
	id, err := tr.AddCarrier(store)
	if err != nil {
		t.Fatal(err)
	}
	h := onlyHandle(t, tr, s.now)
	if !tr.Carry(h, id) || store.puts != 1 || tr.Carried() != 1 {
		t.Fatalf("an established connection was not carried: %d puts, %d carried", store.puts, tr.Carried())
	}
	if !tr.Carry(h, id) || store.puts != 1 {
		t.Errorf("carrying a carried connection again put it again (%d puts)", store.puts)
	}
	return tr, s, store, id, h
}

// A carried connection's packet that reaches the tracker is judged with
// what the fast path made of the connection. One the fast path would have
// judged too leaves it carried, the tracker's judgement merged into the
// store; one that may change its state (a FIN) takes it back, once.
func TestCarriedConnectionIsJudgedWithTheStoresState(t *testing.T) {
	tr, s, store, _, h := carried(t)
	k := store.conns[h]
	k.TCP[0].SeqLo += 100000
	k.TCP[0].SeqHi = k.TCP[0].SeqLo + 60000
	k.Expires += int64(time.Hour)
	store.conns[h] = k
	p := tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPAck|TCPPsh, k.TCP[0].SeqLo, k.TCP[1].SeqLo, 65535, 100)
	if got := run(tr, p, commit, s.now); got.State != state(t, "+trk+est") {
		t.Errorf("data at the edge the fast path moved the window to: %s, want +trk+est", got.State)
	}
	if store.takes != 0 || store.merges != 1 || tr.Carried() != 1 {
		t.Errorf("%d takes, %d merges, %d carried; want the connection left carried and the packet merged", store.takes, store.merges, tr.Carried())
	}
	if got := store.conns[h].TCP[0].SeqLo; got != k.TCP[0].SeqLo+100 {
		t.Errorf("the store's edge is %d after the tracker's packet, want %d", got, k.TCP[0].SeqLo+100)
	}
	if got := store.conns[h].Expires; got != k.Expires {
		t.Errorf("the merge moved the store's expiry back, to %d from %d", got, k.Expires)
	}
	fin := tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPAck|TCPFin, k.TCP[0].SeqLo+100, k.TCP[1].SeqLo, 65535, 0)
	run(tr, fin, commit, s.now)
	if store.takes != 1 || len(store.conns) != 0 || tr.Carried() != 0 {
		t.Errorf("after a FIN: %d takes, the store holds %d, %d carried; want the connection taken back once", store.takes, len(store.conns), tr.Carried())
	}
	run(tr, fin, commit, s.now)
	if store.takes != 1 {
		t.Errorf("a packet of a connection no longer carried took it back again")
	}
}

// KernelConn's Merge keeps the later of each edge, modulo 2^32, the
// larger window and the later expiry, whichever side has them.
func TestKernelConnMerge(t *testing.T) {
	k := KernelConn{Expires: 10, TCP: [2]KernelTCPEnd{{SeqLo: 0xfffffff0, SeqHi: 100, MaxWin: 5}, {SeqLo: 7, SeqHi: 9, MaxWin: 50}}}
	add := KernelConn{Expires: 5, TCP: [2]KernelTCPEnd{{SeqLo: 0x10, SeqHi: 90, MaxWin: 6}, {SeqLo: 8, SeqHi: 8, MaxWin: 40}}}
	k.Merge(&add)
	want := KernelConn{Expires: 10, TCP: [2]KernelTCPEnd{{SeqLo: 0x10, SeqHi: 100, MaxWin: 6}, {SeqLo: 8, SeqHi: 9, MaxWin: 50}}}
	if k != want {
		t.Errorf("merged %+v, want %+v", k, want)
	}
}

// The sweep reads the store of a connection past its time in the
// tracker, and keeps it while the fast path's packets re-armed it; past
// that too, it goes, from the store as well.
func TestSweepReadsTheStoreOfACarriedConnection(t *testing.T) {
	tr, s, store, _, h := carried(t)
	k := store.conns[h]
	own := k.Expires
	k.Expires += int64(time.Hour)
	store.conns[h] = k
	if n := tr.Sweep(own + 1); n != 0 || store.peeks != 1 {
		t.Fatalf("past the tracker's time, before the fast path's: %d swept, %d reads of the store", n, store.peeks)
	}
	if e := tr.Dump(nil, own+1); len(e) != 1 || e[0].Expires != k.Expires {
		t.Errorf("dumped %+v, want the fast path's expiry %d", e, k.Expires)
	}
	if n := tr.Sweep(k.Expires); n != 1 || store.dels != 1 || len(store.conns) != 0 || tr.Carried() != 0 {
		t.Errorf("past both: %d swept, %d deletes from the store, which holds %d; %d carried", n, store.dels, len(store.conns), tr.Carried())
	}
	_ = s
}

// Flushing a carried connection deletes it from the store.
func TestFlushDeletesFromTheStore(t *testing.T) {
	tr, s, store, _, _ := carried(t)
	if n := tr.Flush(nil, s.now); n != 1 || store.dels != 1 || len(store.conns) != 0 || tr.Carried() != 0 {
		t.Errorf("flushed %d, %d deletes, the store holds %d, %d carried", n, store.dels, len(store.conns), tr.Carried())
	}
}

// Turning sequence checking on or off takes every carried connection
// back, since the store holds the old setting; removing a store takes
// back what it carries, and nothing goes into it after.
func TestSettingsAndRemovalTakeConnectionsBack(t *testing.T) {
	tr, _, store, id, h := carried(t)
	tr.SetTCPSeqCheck(true)
	if store.takes != 0 {
		t.Error("setting sequence checking to what it was took connections back")
	}
	tr.SetTCPSeqCheck(false)
	if store.takes != 1 || tr.Carried() != 0 {
		t.Errorf("sequence checking turned off: %d takes, %d carried", store.takes, tr.Carried())
	}
	if !tr.Carry(h, id) || store.conns[h].SeqCheck {
		t.Fatal("not carried again, or with the old setting")
	}
	tr.RemoveCarrier(id)
	if store.takes != 2 || tr.Carried() != 0 {
		t.Errorf("store removed: %d takes, %d carried", store.takes, tr.Carried())
	}
	if tr.Carry(h, id) {
		t.Error("carried by a removed store")
	}
}

// A store that refuses a connection does not carry it; one that lost it
// leaves the tracker's state as it was; a connection that is not
// established is not carried.
func TestCarryRefusals(t *testing.T) {
	tr := newTracker(t)
	s := newSession(tr)
	s.play(t, handshake[:1])
	store := newFakeStore()
	id, _ := tr.AddCarrier(store)
	h := onlyHandle(t, tr, s.now)
	if tr.Carry(h, id) || store.puts != 0 {
		t.Error("a connection after its SYN was carried")
	}
	s.play(t, handshake[1:])
	store.refuse = true
	if tr.Carry(h, id) || tr.Carried() != 0 {
		t.Error("carried by a store that refused it")
	}
	store.refuse = false
	if !tr.Carry(h, id) {
		t.Fatal("not carried")
	}
	delete(store.conns, h)
	p := tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPAck, s.next[0], s.next[1], 65535, 0)
	if got := run(tr, p, commit, s.now); got.State != state(t, "+trk+est") || tr.Carried() != 0 {
		t.Errorf("after the store lost it: %s, %d carried", got.State, tr.Carried())
	}
	if d := strings.Join(dump(tr, s.now), "\n"); !strings.Contains(d, "ESTABLISHED") {
		t.Errorf("dump: %s", d)
	}
}

// A handle names one connection: once it is gone, its slot's next
// connection is not carried through it.
func TestCarryThroughAStaleHandle(t *testing.T) {
	tr, s, store, id, h := carried(t)
	tr.Flush(nil, s.now)
	run(tr, udp("10.1.1.1", "10.1.1.2", 3, 4), commit, s.now)
	run(tr, udp("10.1.1.2", "10.1.1.1", 4, 3), commit, s.now)
	if next := onlyHandle(t, tr, s.now); next.slot() != h.slot() {
		t.Fatalf("the slot was not reused (%d, then %d)", h.slot(), next.slot())
	}
	if tr.Carry(h, id) || len(store.conns) != 0 {
		t.Error("the slot's next connection was carried through the old handle")
	}
}
