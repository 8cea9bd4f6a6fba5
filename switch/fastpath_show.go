package vswitch

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
)

// What the fast path tells the control plane: its counters, its entries
// as OVS's datapath flows, and whether it would carry a flow.

// FastPathStats are a bridge's fast path counters: frames carried in the
// kernel (Hits, as of the last sweep or SyncFastPath), entries installed,
// refused by the kernel (a full map), and deleted by the sweeper; the
// entries installed now; and the frames the programs dropped, by
// bpf.DropReasons, as of now (a rule's drops among them, which the
// sweeper also credits to the pipeline's).
type FastPathStats struct {
	Hits, Installs, InstallFailures, Evictions uint64
	Entries                                    int
	Drops                                      map[string]uint64
}

// FastPathStats reports the fast path's counters, and whether the bridge
// has a fast path.
func (b *Bridge) FastPathStats() (FastPathStats, bool) {
	fp := b.fp
	if fp == nil {
		return FastPathStats{}, false
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return FastPathStats{Hits: fp.hits.Load(), Installs: fp.installs.Load(), InstallFailures: fp.installFailures.Load(),
		Evictions: fp.evictions.Load(), Entries: len(fp.installed), Drops: fp.dp.Drops()}, true
}

// FastPathEntry is one entry of the fast path, as dump-fastpath shows it.
type FastPathEntry struct {
	Headers flow.Headers  // under Mask
	Mask    *flow.Headers // nil: exact
	// Actions are what the XDP program does to the frame, in the shape of
	// OVS's datapath actions (ovs-appctl dpctl/dump-flows).
	Actions        string
	Packets, Bytes uint64
	Idle           time.Duration // since it last carried a frame (or was installed)
	Stale          bool          // of an old generation: a miss until the sweeper deletes it
}

// FastPathEntries lists the fast path's entries, with their counts as of
// now (it syncs first).
func (b *Bridge) FastPathEntries() []FastPathEntry {
	b.SyncFastPath()
	fp := b.fp
	b.mu.Lock()
	if fp == nil || len(b.fwds) == 0 {
		b.mu.Unlock()
		return nil
	}
	now := b.fwds[0].now()
	b.mu.Unlock()
	fp.mu.Lock()
	defer fp.mu.Unlock()
	current := datapath.KeyGen(fp.generation())
	out := make([]FastPathEntry, 0, len(fp.installed))
	for k, r := range fp.installed {
		out = append(out, FastPathEntry{Headers: k.Headers(), Mask: r.mask, Actions: r.datapathActions(), Packets: r.packets, Bytes: r.bytes,
			Idle: time.Duration(now - r.active), Stale: k.Gen != current})
	}
	slices.SortFunc(out, func(x, y FastPathEntry) int { return cmp.Compare(y.Packets, x.Packets) })
	return out
}

// datapathActions writes what the entry does to a frame as OVS writes
// datapath actions: push_vlan(tpid=0x8100,tci=…), pop_vlan,
// set(eth(src=…)), set(ipv4 field), output:N, or drop.
func (r *fpInstalled) datapathActions() string {
	var parts []string
	for _, op := range r.entry.Ops {
		switch op.Type {
		case datapath.OpSetDlSrc:
			parts = append(parts, fmt.Sprintf("set(eth(src=%s))", net.HardwareAddr(op.Mac[:])))
		case datapath.OpSetDlDst:
			parts = append(parts, fmt.Sprintf("set(eth(dst=%s))", net.HardwareAddr(op.Mac[:])))
		case datapath.OpPopVLAN:
			parts = append(parts, "pop_vlan")
		case datapath.OpPushVLAN:
			if op.Mask != 0 {
				// The outer tag's TCI, DEI and all, from the frame.
				parts = append(parts, fmt.Sprintf("push_vlan(tpid=0x%04x,tci=outer)", be16(op.Tpid)))
			} else {
				parts = append(parts, fmt.Sprintf("push_vlan(tpid=0x%04x,tci=0x%04x)", be16(op.Tpid), be16(op.Tci)|flow.VLANCFI))
			}
		case datapath.OpSetTCI:
			parts = append(parts, fmt.Sprintf("set(vlan(tci=0x%04x/0x%04x))", be16(op.Tci), be16(op.Mask)))
		case datapath.OpSetL3, datapath.OpSetL4:
			header := "ip"
			if op.Type == datapath.OpSetL4 {
				header = "l4"
			}
			parts = append(parts, fmt.Sprintf("set(%s(offset=%d,value=0x%x))", header, op.Off, op.Value[:op.Len]))
		case datapath.OpTunnelPush:
			parts = append(parts, fmt.Sprintf("tnl_push(tnl_port(%d),vni=%d)", r.out.ofport, op.Delta))
		case datapath.OpConntrack:
			// The connection's state the entry was made for (est, or
			// new: seen one way), as dump-conntrack -m names it, and
			// the frames' direction in it (bpf.ConntrackOp's bits).
			state, dir := "est", "orig"
			if op.Len&2 != 0 {
				state = "new"
			}
			if op.Len&1 != 0 {
				dir = "reply"
			}
			parts = append(parts, fmt.Sprintf("ct(%s,id=%d,%s)", state, op.Delta, dir))
		}
	}
	if r.out != nil && r.out.tunnel != nil {
		parts = append(parts, fmt.Sprintf("output:%s", r.out.tunnel.Underlay().Name()))
		return strings.Join(parts, ",")
	}
	if r.out == nil {
		parts = append(parts, "drop")
	} else {
		parts = append(parts, fmt.Sprintf("output:%d", r.out.ofport))
	}
	return strings.Join(parts, ",")
}

// fastPathVerdict says whether the fast path would carry the flow with
// headers h in the kernel ("yes"), or why not ("no (why)"), working its
// decision out as the forwarder would but learning nothing. It runs on
// the forwarder, under Bridge.mu.
func (f *forwarder) fastPathVerdict(h flow.Headers) string {
	switch {
	case f.fp == nil:
		return "no (the daemon runs with --fast-path off)"
	case h.DlType < 0x600 || h.DlSrc[0]&1 != 0:
		return "no (the program leaves 802.3 frames and multicast sources to user space)"
	}
	slot, ok := f.slot(h.InPort)
	if !ok {
		return fmt.Sprintf("no (port %d is not up on the bridge)", h.InPort)
	}
	if !f.ports[slot].fastPathIn.Load() {
		return fmt.Sprintf("no (port %d runs without the fast path: %s)", h.InPort, f.ports[slot].fastPathOff)
	}
	tr := translator{in: xlateIn{view: &f.view}}
	var d decision
	tr.translate(f.flows.Load(), &h, &d, f.now())
	if _, why := f.fastPathEntry(&d, &h, nil); why != "" {
		return "no (" + why + ")"
	}
	return "yes"
}
