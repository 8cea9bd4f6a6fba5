// Package datapathtest has a datapath.Datapath in memory, for testing
// the fast path's policy without root: it keeps what the kernel's maps
// would, and the test plays the programs by setting what entries carried.
package datapathtest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
)

// Fake is a datapath.Datapath in memory. Capacity, if not 0, is how many
// entries each table takes, and how many connections, as the kernel's
// maps refuse more.
type Fake struct {
	Capacity int

	mu sync.Mutex
	// Gen, Mask and L2 are what was published last.
	Gen     uint64
	Mask    *flow.Headers
	L2      bool
	entries [2]map[datapath.Key]*fakeEntry // by l2, keyed as the map is
	conns   map[conntrack.Handle]datapath.Conn
	tunnels map[uint32]port.TunnelHeader
	in      map[datapath.TunnelKey]datapath.TunnelIn
	meters  []datapath.Meter
	// MeterCounts are what the programs counted of each meter slot: the
	// test plays them.
	MeterCounts []datapath.MeterCounts
}

type fakeEntry struct {
	entry   datapath.Entry
	carried datapath.Counts
}

// New makes an empty Fake.
func New() *Fake {
	return &Fake{entries: [2]map[datapath.Key]*fakeEntry{{}, {}}, conns: map[conntrack.Handle]datapath.Conn{},
		tunnels: map[uint32]port.TunnelHeader{}, in: map[datapath.TunnelKey]datapath.TunnelIn{},
		meters: make([]datapath.Meter, flow.MaxMeters), MeterCounts: make([]datapath.MeterCounts, flow.MaxMeters)}
}

// stored is key as the l2 table or the other keeps it.
func stored(l2 bool, key datapath.Key) datapath.Key {
	if l2 {
		l2Key := key.L2()
		return l2Key.Key()
	}
	return key
}

func table(l2 bool) int {
	if l2 {
		return 1
	}
	return 0
}

func (f *Fake) Publish(gen uint64, mask *flow.Headers, l2 bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Gen, f.Mask, f.L2 = gen, mask, l2
	return nil
}

func (f *Fake) Install(l2 bool, keys []datapath.Key, entries []datapath.Entry) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.entries[table(l2)]
	for i, key := range keys {
		key = stored(l2, key)
		if _, there := m[key]; !there && f.Capacity > 0 && len(m) >= f.Capacity {
			return i, fmt.Errorf("update entry %d: the map is full (its %d entries)", i, f.Capacity)
		}
		m[key] = &fakeEntry{entry: entries[i]}
	}
	return len(keys), nil
}

func (f *Fake) Remove(l2 bool, key datapath.Key) (datapath.Counts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.entries[table(l2)]
	key = stored(l2, key)
	e, ok := m[key]
	if !ok {
		return datapath.Counts{}, errors.New("key does not exist")
	}
	delete(m, key)
	return e.carried, nil
}

func (f *Fake) Delete(l2 bool, keys []datapath.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, key := range keys {
		delete(f.entries[table(l2)], stored(l2, key))
	}
}

func (f *Fake) Walk(fn func(key datapath.Key, l2 bool, carried datapath.Counts)) error {
	f.mu.Lock()
	var all [2]map[datapath.Key]datapath.Counts
	for t, m := range f.entries {
		all[t] = map[datapath.Key]datapath.Counts{}
		for k, e := range m {
			all[t][k] = e.carried
		}
	}
	f.mu.Unlock()
	for t, m := range all {
		for k, c := range m {
			fn(k, t == 1, c)
		}
	}
	return nil
}

// Drops are none: there are no programs to drop frames.
func (f *Fake) Drops() map[string]uint64 {
	counts := map[string]uint64{}
	for _, reason := range bpf.DropReasons {
		counts[reason] = 0
	}
	return counts
}

// AttachPort fails: there are no programs to attach.
func (f *Fake) AttachPort(slot, ofport uint16, ifindex int, host port.XDPHost, underlay bool) (func(), error) {
	return nil, errors.New("the fake datapath runs no programs")
}

func (f *Fake) RedirectDrops(slot uint16, ifindex int) uint64 { return 0 }

func (f *Fake) SetTunnelIn(key datapath.TunnelKey, in datapath.TunnelIn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in[key] = in
	return nil
}

func (f *Fake) DeleteTunnelIn(key datapath.TunnelKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.in, key)
}

func (f *Fake) SetTunnelHeaders(place uint32, h port.TunnelHeader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tunnels[place] = h
	return nil
}

func (f *Fake) MeterSlots() []datapath.Meter { return f.meters }

func (f *Fake) AddMeterCounts(slot uint32, c *datapath.MeterCounts) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.Add(&f.MeterCounts[slot])
	return nil
}

func (f *Fake) ResetMeterCounts(slot uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.MeterCounts[slot] = datapath.MeterCounts{}
	return nil
}

// PutConn keeps c as the programs' state of h: a test plays the
// programs by putting what they would have made of it.
func (f *Fake) PutConn(h conntrack.Handle, c *datapath.Conn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, there := f.conns[h]; !there && f.Capacity > 0 && len(f.conns) >= f.Capacity {
		return fmt.Errorf("enter connection %#x: the map is full (its %d entries)", uint64(h), f.Capacity)
	}
	f.conns[h] = *c
	return nil
}

func (f *Fake) Conn(h conntrack.Handle) (datapath.Conn, error) { return f.conn("read", h, false) }

func (f *Fake) TakeConn(h conntrack.Handle) (datapath.Conn, error) { return f.conn("take", h, true) }

// MergeConn merges c into h's connection as the programs' ct_merge does,
// their counters kept.
func (f *Fake) MergeConn(h conntrack.Handle, c *datapath.Conn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.conns[h]
	if !ok {
		return fmt.Errorf("merge into connection %#x: %w", uint64(h), datapath.ErrNoConn)
	}
	k, add := datapath.KernelConnOf(&cur), datapath.KernelConnOf(c)
	k.Merge(&add)
	merged := datapath.ConnOf(k)
	for i := range merged.Dir {
		merged.Dir[i].LastSeen, merged.Dir[i].Packets, merged.Dir[i].Bytes = cur.Dir[i].LastSeen, cur.Dir[i].Packets, cur.Dir[i].Bytes
	}
	f.conns[h] = merged
	return nil
}

func (f *Fake) DeleteConn(h conntrack.Handle) error {
	_, err := f.conn("delete", h, true)
	return err
}

// conn returns h's connection, deleting it if remove, or fails to do what
// with it.
func (f *Fake) conn(what string, h conntrack.Handle, remove bool) (datapath.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.conns[h]
	if !ok {
		return c, fmt.Errorf("%s connection %#x: %w", what, uint64(h), datapath.ErrNoConn)
	}
	if remove {
		delete(f.conns, h)
	}
	return c, nil
}

func (f *Fake) Close() error { return nil }

// Carry has the entry of key carry packets more frames of size bytes
// each, as the program would. It reports whether there is such an entry.
func (f *Fake) Carry(l2 bool, key datapath.Key, packets, size uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[table(l2)][stored(l2, key)]
	if ok {
		e.carried.Packets += packets
		e.carried.Bytes += packets * size
	}
	return ok
}

// Entry returns the entry under key, if there is one.
func (f *Fake) Entry(l2 bool, key datapath.Key) (datapath.Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[table(l2)][stored(l2, key)]
	if !ok {
		return datapath.Entry{}, false
	}
	return e.entry, true
}

// Len is how many entries both tables hold.
func (f *Fake) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.entries[0]) + len(f.entries[1])
}
