package datapath

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
)

// walkChunk is how many entries Walk reads with one system call.
const walkChunk = 256

// Kernel is a bridge's fast path in the kernel: its shared maps, and the
// counter of redirects that never left.
type Kernel struct {
	shared *bpf.FastpathShared
	ncpu   int
	// redirects counts the redirected frames each interface did not
	// take; nil if it could not be attached.
	redirects *bpf.RedirectCounter
	txPortsID ebpf.MapID // the redirect counter's key for tx_ports

	// Scratch for batched map operations, reused under the caller's
	// serialisation: the per-CPU maps take ncpu values a key.
	keys   []Key
	l2Keys []bpf.FastpathFpL2Key
	values []Entry
}

// KernelConfig is how NewKernelWith makes a bridge's maps.
type KernelConfig struct {
	// MaxConns is how many tracked connections the programs may carry at
	// once (PutConn); 0 takes bpf.DefaultMaxConns. A connection's memory
	// is taken when it is put, not up front.
	MaxConns uint32
}

// NewKernel makes a bridge's maps, empty, at generation 0, as the zero
// KernelConfig says.
func NewKernel() (*Kernel, error) { return NewKernelWith(KernelConfig{}) }

// NewKernelWith makes a bridge's maps, empty, at generation 0, as cfg
// says.
func NewKernelWith(cfg KernelConfig) (*Kernel, error) {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	shared, err := bpf.NewFastpathShared(cfg.MaxConns)
	if err != nil {
		return nil, err
	}
	k := &Kernel{shared: shared, ncpu: ncpu}
	// Without it, refused redirects count as sent: a figure wrong, not
	// a frame lost.
	k.redirects, _ = bpf.AttachRedirectCounter()
	if info, err := shared.TxPorts.Info(); err == nil {
		k.txPortsID, _ = info.ID()
	}
	return k, nil
}

// Shared are the maps, for loading a program by hand (tests).
func (k *Kernel) Shared() *bpf.FastpathShared { return k.shared }

func (k *Kernel) Publish(gen uint64, mask *flow.Headers, l2 bool) error {
	st := bpf.FastpathFpState{Generation: gen}
	switch {
	case l2:
		st.Masked = uint32(bpf.FastpathFpMaskKindFP_MASK_L2)
	case mask != nil:
		st.Masked, st.Mask = uint32(bpf.FastpathFpMaskKindFP_MASK_BITS), bpf.KeyOf(mask)
	}
	return k.shared.SetState(&st)
}

func (k *Kernel) Install(l2 bool, keys []Key, entries []Entry) (int, error) {
	k.values = k.values[:0]
	for i := range entries {
		for range k.ncpu {
			k.values = append(k.values, entries[i])
		}
	}
	if !l2 {
		return k.shared.Flows.BatchUpdate(keys, k.values, nil)
	}
	k.l2Keys = k.l2Keys[:0]
	for i := range keys {
		k.l2Keys = append(k.l2Keys, keys[i].L2())
	}
	return k.shared.FlowsL2.BatchUpdate(k.l2Keys, k.values, nil)
}

func (k *Kernel) Remove(l2 bool, key Key) (Counts, error) {
	k.values = k.values[:0]
	for range k.ncpu {
		k.values = append(k.values, Entry{})
	}
	var err error
	if l2 {
		l2Key := key.L2()
		err = k.shared.FlowsL2.LookupAndDelete(&l2Key, &k.values)
	} else {
		err = k.shared.Flows.LookupAndDelete(&key, &k.values)
	}
	return sum(k.values), err
}

func (k *Kernel) Delete(l2 bool, keys []Key) {
	if !l2 {
		deleteKeys(k.shared.Flows, keys)
		return
	}
	k.l2Keys = k.l2Keys[:0]
	for i := range keys {
		k.l2Keys = append(k.l2Keys, keys[i].L2())
	}
	deleteKeys(k.shared.FlowsL2, k.l2Keys)
}

func (k *Kernel) Walk(fn func(key Key, l2 bool, carried Counts)) error {
	if len(k.keys) < walkChunk {
		k.keys = make([]Key, walkChunk)
		k.l2Keys = make([]bpf.FastpathFpL2Key, walkChunk)
	}
	if len(k.values) < walkChunk*k.ncpu {
		k.values = make([]Entry, walkChunk*k.ncpu)
	}
	keys, l2Keys, values := k.keys[:walkChunk], k.l2Keys[:walkChunk], k.values[:walkChunk*k.ncpu]
	perCPU := func(i int) []Entry { return values[i*k.ncpu : (i+1)*k.ncpu] }
	err := batchEach(k.shared.Flows, keys, values, func(i int) { fn(keys[i], false, sum(perCPU(i))) })
	return errors.Join(err, batchEach(k.shared.FlowsL2, l2Keys, values, func(i int) { fn(l2Keys[i].Key(), true, sum(perCPU(i))) }))
}

func (k *Kernel) Drops() map[string]uint64 { return k.shared.DropCounts() }

func (k *Kernel) AttachPort(slot, ofport uint16, ifindex int, host port.XDPHost, underlay bool) (func(), error) {
	if most := k.shared.TxPorts.MaxEntries(); uint32(slot) >= most {
		return nil, fmt.Errorf("the fast path has room for %d ports", most)
	}
	sockets := host.XDPSockets()
	cfg := bpf.FastpathConfig{InPort: ofport, Slot: slot, MaxFrameLen: uint32(sockets.MaxFrame), SocketQueues: sockets.Queues,
		Shared: k.shared, Sockets: sockets.Map, Oversize: sockets.Oversize, SocketProgram: sockets.Program}
	if underlay {
		listener, ok := host.(interface{ TunnelListen() *ebpf.Map })
		if !ok {
			return nil, errors.New("the underlay's XDP program does not say what it listens on")
		}
		cfg.TunnelListen = listener.TunnelListen()
	}
	entry, err := bpf.LoadFastpathProgram(cfg)
	if err != nil {
		return nil, err
	}
	if err := k.shared.TxPorts.Put(uint32(slot), uint32(ifindex)); err != nil {
		entry.Close()
		return nil, fmt.Errorf("enter the interface in tx_ports: %w", err)
	}
	if err := host.SetXDPProgram(entry.Fastpath); err != nil {
		entry.Close()
		k.shared.TxPorts.Delete(uint32(slot))
		return nil, err
	}
	return func() {
		host.SetXDPProgram(nil)
		k.shared.TxPorts.Delete(uint32(slot))
		entry.Close()
	}, nil
}

func (k *Kernel) RedirectDrops(slot uint16, ifindex int) uint64 {
	if k.redirects == nil {
		return 0
	}
	return k.redirects.Drops(k.txPortsID, uint32(slot), ifindex)
}

func (k *Kernel) SetTunnelIn(key TunnelKey, in TunnelIn) error {
	if err := k.shared.TunnelsIn.Put(&key, &in); err != nil {
		return fmt.Errorf("enter the tunnel in tunnels_in: %w", err)
	}
	return nil
}

func (k *Kernel) DeleteTunnelIn(key TunnelKey) { k.shared.TunnelsIn.Delete(&key) }

func (k *Kernel) SetTunnelHeaders(place uint32, h port.TunnelHeader) error {
	value := bpf.FastpathFpTunnel{Hdr: h.Bytes, IpSum: h.IPSum}
	return k.shared.Tunnels.Put(place, &value)
}

func (k *Kernel) MeterSlots() []Meter { return k.shared.MeterSlots() }

func (k *Kernel) AddMeterCounts(slot uint32, c *MeterCounts) error {
	return k.shared.AddMeterCounts(slot, c)
}

func (k *Kernel) ResetMeterCounts(slot uint32) error { return k.shared.ResetMeterCounts(slot) }

func (k *Kernel) PutConn(h conntrack.Handle, c *Conn) error {
	if err := k.shared.CtConns.Update(uint64(h), c, ebpf.UpdateLock); err != nil {
		return fmt.Errorf("enter connection %#x in ct_conns: %w", uint64(h), err)
	}
	return nil
}

func (k *Kernel) Conn(h conntrack.Handle) (Conn, error) {
	var c Conn
	return c, connErr("read", h, k.shared.CtConns.LookupWithFlags(uint64(h), &c, ebpf.LookupLock))
}

func (k *Kernel) TakeConn(h conntrack.Handle) (Conn, error) {
	var c Conn
	return c, connErr("take", h, k.shared.TakeConn(uint64(h), &c))
}

func (k *Kernel) MergeConn(h conntrack.Handle, c *Conn) error {
	return connErr("merge into", h, k.shared.MergeConn(uint64(h), c))
}

func (k *Kernel) DeleteConn(h conntrack.Handle) error {
	return connErr("delete", h, k.shared.CtConns.Delete(uint64(h)))
}

// connErr is the error of doing what to connection h in ct_conns, if err
// says it failed.
func connErr(what string, h conntrack.Handle, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return fmt.Errorf("%s connection %#x: %w", what, uint64(h), ErrNoConn)
	}
	return fmt.Errorf("%s connection %#x in ct_conns: %w", what, uint64(h), err)
}

func (k *Kernel) Close() error {
	var err error
	if k.redirects != nil {
		err = k.redirects.Close()
	}
	return errors.Join(err, k.shared.Close())
}

// sum adds an entry's per-CPU counts up.
func sum(perCPU []Entry) Counts {
	var c Counts
	for i := range perCPU {
		c.Packets += perCPU[i].Packets
		c.Bytes += perCPU[i].Bytes
		c.Metered += perCPU[i].Metered
		c.MeteredBytes += perCPU[i].MeteredBytes
	}
	return c
}

// deleteKeys deletes keys from m, as many as it can with each system
// call: a key found missing is skipped.
func deleteKeys[K any](m *ebpf.Map, keys []K) {
	for len(keys) > 0 {
		n, err := m.BatchDelete(keys, nil)
		if err == nil || n >= len(keys) {
			return
		}
		keys = keys[n+1:]
	}
}

// batchEach reads all of m, a chunk of len(keys) at a time into keys and
// values, and calls fn with each entry's index in the chunk.
func batchEach[K any](m *ebpf.Map, keys []K, values []Entry, fn func(i int)) error {
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, values, nil)
		for i := range n {
			fn(i)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
