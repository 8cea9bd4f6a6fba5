package vswitch

import (
	"fmt"
	"slices"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/port"
)

// Tunnel ports (port.Tunnel).
//
// A tunnel port has no queues. Its frames arrive on its underlay, which
// the bridge takes in as a port of its own when the first tunnel over it
// is added: a hidden one, with a slot but no OpenFlow port number, never
// flooded to nor learned on, whose queues the forwarders poll like any
// port's. A batch from an underlay is decapsulated frame by frame (the
// underlay counts and drops what is malformed), each frame claimed by the
// tunnel whose remote, UDP port and VNI it carries (the rest counted as
// from an unknown remote or of a wrong VNI, and dropped), and the frames
// of each tunnel then go through the pipeline as a batch from that port,
// their outer headers' VNI and addresses in the key as tun_id, tun_src and
// tun_dst.
//
// A frame sent to a tunnel port is queued with how it leaves (its VNI, for
// a tunnel whose key is flow, and the hash of its flow, which picks the
// outer UDP source port), and the port encapsulates the group and sends it
// through the underlay.
//
// NORMAL keeps split horizon: a frame that came from a tunnel never leaves
// by a tunnel, flooded or sent to a station learned there. Tunnels to
// several hosts thus make a full mesh without loops, as the kernel's vxlan
// device does with its several remotes: each host sends its own frames to
// every other, and none relays.

// addTunnel takes in the underlay of t, a tunnel about to join the bridge,
// unless it has it already, and checks that no tunnel of the bridge
// receives what t would. It returns the underlay's slot. It runs under
// b.mu.
func (b *Bridge) addTunnel(t port.Tunnel) (uint16, error) {
	u := t.Underlay()
	ep := t.Endpoint()
	for _, q := range b.ports {
		if q.tunnel == nil || q.tunnel.Underlay() != u {
			continue
		}
		if other := q.tunnel.Endpoint(); other.Remote == ep.Remote && other.DstPort == ep.DstPort &&
			(other.KeyFlow && ep.KeyFlow || !other.KeyFlow && !ep.KeyFlow && other.Key == ep.Key) {
			return 0, fmt.Errorf("port %q already receives what tunnel %q would (the same remote, UDP port and key)", q.Name(), t.Name())
		}
	}
	for _, ul := range b.underlays {
		if ul.underlay == u {
			return ul.slot, nil
		}
	}
	ul := &bridgePort{Port: u, underlay: u}
	var slot uint16
	b.onEachForwarder(func(f *forwarder) { slot = f.addPort(ul) })
	ul.slot = slot
	b.underlays = append(b.underlays, ul)
	b.attachFastPath(ul)
	return slot, nil
}

// underlayOf is the hidden port of tunnel t's underlay. It runs under
// b.mu.
func (b *Bridge) underlayOf(t *bridgePort) *bridgePort {
	for _, ul := range b.underlays {
		if ul.slot == t.underlaySlot {
			return ul
		}
	}
	panic("vswitch: a tunnel without its underlay") // addTunnel made it
}

// removeTunnel lets go of the underlay of a tunnel that is leaving the
// bridge: the forwarders stop polling it when no other tunnel of the
// bridge is over it. Closing it is the tunnels' business (tunnel.Port
// holds it). It runs under b.mu.
func (b *Bridge) removeTunnel(t *bridgePort) {
	for i, ul := range b.underlays {
		if ul.slot != t.underlaySlot {
			continue
		}
		if !slices.ContainsFunc(b.ports, func(q *bridgePort) bool { return q != t && q.tunnel != nil && q.underlaySlot == ul.slot }) {
			b.onEachForwarder(func(f *forwarder) { f.removePort(ul) })
			if b.fp != nil {
				b.fp.detach(ul)
			}
			b.underlays = append(b.underlays[:i], b.underlays[i+1:]...)
		}
		return
	}
}

// The fast path's tunnels. The fast path, called from the underlay's
// entry program (bpf/entry.c) for the tunnels' datagrams, takes a
// tunnel's frames apart in the kernel (tunnels_in says which tunnel a
// remote and VNI are, as claim does) and runs their entries; an entry
// that sends to a tunnel ends with FP_OP_TUNNEL_PUSH, which writes the
// tunnel's outer headers from the tunnels map, and an output to the
// underlay. A tunnel's headers change when the way to its remote does (a
// new next hop): they are written to the other of the tunnel's two places
// in the map, and a new generation sends every entry back to user space,
// which installs them anew with the new place; the sweeper looks for
// such changes, and an unreachable remote makes its entries misses too,
// so that user space counts what it drops.

// fpTunnel is what the tunnels map holds for one tunnel.
type fpTunnel struct {
	version uint64 // of the port's headers written there
	half    uint32 // which of its two places holds them
	ok      bool   // the remote could be reached then
	written bool
}

// addTunnel has the underlays' programs take tunnel p's frames.
func (fp *fastPath) addTunnel(p *bridgePort) error {
	key, in := tunnelsInEntry(p)
	if err := fp.dp.SetTunnelIn(key, in); err != nil {
		return err
	}
	fp.mu.Lock()
	fp.tunnels[p] = &fpTunnel{}
	fp.tunnelHeaders(p)
	fp.mu.Unlock()
	return nil
}

// removeTunnel undoes addTunnel.
func (fp *fastPath) removeTunnel(p *bridgePort) {
	key, _ := tunnelsInEntry(p)
	fp.dp.DeleteTunnelIn(key)
	fp.mu.Lock()
	delete(fp.tunnels, p)
	fp.mu.Unlock()
}

// tunnelsInEntry is what tunnels_in holds for tunnel p.
func tunnelsInEntry(p *bridgePort) (datapath.TunnelKey, datapath.TunnelIn) {
	ep := p.tunnel.Endpoint()
	vni := ep.Key
	if ep.KeyFlow {
		vni = datapath.AnyVNI
	}
	return datapath.TunnelKeyOf(ep.Remote, ep.DstPort, p.underlaySlot, vni), datapath.TunnelInOf(p.ofport, ep.Local)
}

// tunnelHeaders returns where in the tunnels map tunnel p's outer headers
// are, writing them there first if they changed, and false while its
// remote cannot be reached. It runs under fp.mu.
func (fp *fastPath) tunnelHeaders(p *bridgePort) (index uint32, ok bool) {
	t := fp.tunnels[p]
	if t == nil {
		return 0, false
	}
	h, version, ok := p.tunnel.Header()
	if !t.written || version != t.version {
		if ok {
			half := 1 - t.half
			if err := fp.dp.SetTunnelHeaders(datapath.TunnelPlace(p.slot, half), h); err != nil {
				return 0, false
			}
			t.half = half
		}
		if t.written {
			// Entries made with the old headers, or with none, are
			// misses, and the decisions work theirs out again.
			fp.entriesChanged()
		}
		*t = fpTunnel{version: version, half: t.half, ok: ok, written: true}
	}
	return datapath.TunnelPlace(p.slot, t.half), t.ok
}

// checkTunnels follows the changes of every tunnel's headers, so that no
// entry sends with old ones. It runs under fp.mu.
func (fp *fastPath) checkTunnels() {
	for p := range fp.tunnels {
		fp.tunnelHeaders(p)
	}
}
