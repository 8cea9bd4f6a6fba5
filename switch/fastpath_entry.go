package vswitch

import (
	"encoding/binary"
	"fmt"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// What a decision becomes in the in-kernel fast path's flows map
// (bpf/fastpath.c); fastpath.go installs the entries and retires them.
//
// A decision holds for one flow.Headers, so its entry is worked out
// against that exact key: every rewrite is a constant, and every VLAN
// operation knows whether the frame has a tag, and every checksum update
// is a constant delta. What the program can carry for now: rewrites of
// the MAC addresses; pushing, popping and changing a tag; NORMAL's VLAN
// forms; IPv4 addresses, TOS and TTL, dec_ttl, and TCP/UDP ports over
// IPv4, their checksums updated; the IPv6 hop limit; a meter (the
// program reads its bands from the meter's slot as each frame runs); one
// output to a port that forwards, a group's bucket included (a bracket
// whose copy goes nowhere leaves the frame as it was); a drop the rules
// chose; and a ct(), in the entry of one connection, for a frame that
// leaves it in its state (fastpath_conntrack.go). Everything else stays with
// user space: packet-ins, floods and several outputs (the program
// redirects a frame once), IPv6 addresses, traffic class and ports,
// SCTP ports (whose CRC32c the program does not compute), the fields
// that set_field writes as such (ARP's, ICMP's, neighbour discovery's,
// the flow label), output(max_len=), and a VLAN operation after a pop
// (the key does not say whether a second tag is left); IPv6
// neighbour discovery, whose target address the program's key has no
// room for (bpf.KeyOf); and MPLS, frames and pushes alike, whose label
// stack the program's key has no room for either (its parser hands MPLS
// frames to user space); and IPv6 packets with extension headers, which
// the program's parser hands to user space too, so that its key has no
// ipv6_exthdr. A frame from a tunnel comes taken apart by its underlay's
// program; one sent to a tunnel leaves with the tunnel's outer headers
// pushed, through its underlay.

// fastPathEntry returns the fast path's entry for decision d of the flow
// with headers h, or why the XDP program cannot carry it. conn is what
// the frame's first ct() made of it, when d has one (nil otherwise): the
// entry is then its connection's (fastpath_conntrack.go).
func (f *forwarder) fastPathEntry(d *decision, h *flow.Headers, conn *connOffer) (e datapath.Entry, why string) {
	ops := e.Ops[:0]
	// why an operation op, setTCI or setTOS refused is not what it said
	why = fmt.Sprintf("more than the %d operations the program runs", len(e.Ops))
	k := flow.Key{Headers: *h}
	tagKnown := true // false after a pop: a second tag may be left
	// metered: a meter runs before the operations that follow, and its
	// remark may change the DSCP the key says.
	metered := false
	out, outputs := uint32(0), 0
	// The tun_id a frame leaves a tunnel whose key is flow with, and how
	// much longer than it came the operations so far made the frame.
	tunnelID, lenDelta := uint32(h.TunID), 0
	op := func(o datapath.Op) bool {
		if len(ops) == len(e.Ops) {
			return false
		}
		ops = append(ops, o)
		return true
	}
	tagged := func() bool { return k.VLANTCI&flow.VLANCFI != 0 }
	// setTCI changes the outer tag's bits under mask to tci, pushing an
	// 802.1Q tag first if there is none, as mod_vlan_vid and
	// mod_vlan_pcp do.
	setTCI := func(tci, mask uint16) bool {
		switch {
		case !tagKnown:
			why = "a VLAN operation after a pop"
			return false
		case tagged():
			return op(datapath.Op{Type: datapath.OpSetTCI, Tci: be16(tci), Mask: be16(mask)})
		}
		lenDelta += header.VLANTagLen
		return op(datapath.Op{Type: datapath.OpPushVLAN, Tpid: be16(header.EtherTypeVLAN), Tci: be16(tci & mask)})
	}
	// setTTL and setTOS write the TTL (hop limit) and the TOS byte; the
	// IPv4 header's words they share are known: the protocol, and the
	// version and length (the program takes no IPv4 options).
	setTTL := func(ttl uint8) bool {
		switch k.DlType {
		case flow.EtherTypeIPv4:
			return op(datapath.Op{Type: datapath.OpSetL3, Off: header.IPv4TTLOffset, Len: 1, Csums: datapath.CsumL3, Value: [4]byte{ttl},
				Delta: header.Delta16(uint16(k.NwTTL)<<8|uint16(k.NwProto), uint16(ttl)<<8|uint16(k.NwProto))})
		case flow.EtherTypeIPv6:
			return op(datapath.Op{Type: datapath.OpSetL3, Off: header.IPv6HopLimitOffset, Len: 1, Value: [4]byte{ttl}})
		}
		return true
	}
	setTOS := func(tos uint8) bool {
		switch k.DlType {
		case flow.EtherTypeIPv4:
			const versionIHL = header.IPv4VersionIHL << 8
			return op(datapath.Op{Type: datapath.OpSetL3, Off: header.IPv4TOSOffset, Len: 1, Csums: datapath.CsumL3, Value: [4]byte{tos},
				Delta: header.Delta16(versionIHL|uint16(k.NwTOS), versionIHL|uint16(tos))})
		case flow.EtherTypeIPv6:
			// The traffic class shares its bytes with the flow label,
			// which the key has not.
			why = "an IPv6 traffic class rewrite"
			return false
		}
		return true
	}
	// setAddr and setPort write an IPv4 address or a transport port;
	// setPort says why it cannot.
	setAddr := func(dst bool, addr [4]byte) bool {
		old, off := k.NwSrc, uint8(header.IPv4SrcOffset)
		if dst {
			old, off = k.NwDst, header.IPv4DstOffset
		}
		return op(datapath.Op{Type: datapath.OpSetL3, Off: off, Len: 4, Csums: datapath.CsumL3 | l4Csum(&k), Value: addr,
			Delta: header.Delta32(binary.BigEndian.Uint32(old[:]), binary.BigEndian.Uint32(addr[:]))})
	}
	// setAddr6 writes an IPv6 address, a word at a time and only the
	// words that change.
	setAddr6 := func(dst bool, addr [16]byte) bool {
		csums := l4Csum(&k)
		if csums == 0 {
			// ICMPv6's checksum covers the addresses too.
			why = "an IPv6 address rewrite of a packet neither TCP nor UDP"
			return false
		}
		old, off := k.IPv6Src, uint8(header.IPv6SrcOffset)
		if dst {
			old, off = k.IPv6Dst, header.IPv6DstOffset
		}
		for i := 0; i < len(addr); i += 4 {
			from, to := binary.BigEndian.Uint32(old[i:]), binary.BigEndian.Uint32(addr[i:])
			if from != to && !op(datapath.Op{Type: datapath.OpSetL3, Off: off + uint8(i), Len: 4, Csums: csums, Value: [4]byte(addr[i:]),
				Delta: header.Delta32(from, to)}) {
				return false
			}
		}
		return true
	}
	setPort := func(dst bool, port uint16) bool {
		if k.NwProto == flow.ProtoSCTP {
			why = "an SCTP port rewrite"
			return false
		}
		old, off := k.TpSrc, uint8(header.SrcPortOffset)
		if dst {
			old, off = k.TpDst, header.DstPortOffset
		}
		var value [4]byte
		binary.BigEndian.PutUint16(value[:], port)
		return op(datapath.Op{Type: datapath.OpSetL4, Off: off, Len: 2, Csums: l4Csum(&k), Value: value,
			Delta: header.Delta16(old, port)})
	}
	// toTunnel ends the entry with tunnel slot's outer headers and an
	// output to its underlay, for frames short enough to fit them.
	toTunnel := func(slot uint16) bool {
		p := f.ports[slot]
		f.fp.mu.Lock()
		index, reachable := f.fp.tunnelHeaders(p)
		f.fp.mu.Unlock()
		if !reachable {
			why = fmt.Sprintf("tunnel %d cannot reach its remote", p.ofport)
			return false
		}
		ep := p.tunnel.Endpoint()
		vni := ep.Key
		if ep.KeyFlow {
			vni = tunnelID
		}
		if !op(datapath.Op{Type: datapath.OpTunnelPush, Tunnel: index, Delta: vni}) {
			return false
		}
		e.MaxLen = uint32(p.Info().MaxFrame - lenDelta)
		out = uint32(p.underlaySlot)
		return true
	}
	// brackets are the clone brackets open (groups.go): what the entry
	// was at each start, for one whose frame goes nowhere.
	type bracket struct {
		ops, outputs, lenDelta int
		k                      flow.Key
		tagKnown               bool
		tunnelID               uint32
	}
	var brackets [maxCloneNest]bracket
	open := 0
	if len(d.controllers) > 0 {
		return e, "a packet-in to the controller, which user space makes"
	}
	if k.IsND() {
		return e, "IPv6 neighbour discovery, which the program leaves to user space"
	}
	if k.IsMPLS() {
		return e, "an MPLS frame, which the program leaves to user space"
	}
	if h.IPv6ExtHdr&^(flow.ExtHdrESP|flow.ExtHdrNoNext) != 0 {
		// The entry would serve the packet without them, whose
		// ipv6_exthdr differs.
		return e, "IPv6 extension headers, which the program leaves to user space"
	}
	// final is the decision whose actions end the entry's: d's, or the
	// recirculation's of d's ct(table=N).
	final, actions, conntracked := d, d.actions, false
	for i := 0; i < len(actions); i++ {
		a := &actions[i]
		if outputs > 0 && a.Type != actCloneEnd {
			return e, "several outputs"
		}
		ok := true
		switch a.Type {
		case actCloneStart:
			brackets[open] = bracket{ops: len(ops), outputs: outputs, lenDelta: lenDelta, k: k, tagKnown: tagKnown, tunnelID: tunnelID}
			open++
			continue
		case actCloneEnd:
			open--
			if b := &brackets[open]; outputs == b.outputs {
				// The copy went nowhere: the frame goes on as it was.
				ops, k, tagKnown, tunnelID, lenDelta = ops[:b.ops], b.k, b.tagKnown, b.tunnelID, b.lenDelta
			}
			continue
		case flow.ActSetDlSrc, flow.ActSetDlDst:
			mac := k.DlSrc
			typ := datapath.OpSetDlSrc
			if a.Type == flow.ActSetDlDst {
				mac, typ = k.DlDst, datapath.OpSetDlDst
			}
			a.SetAddress(mac[:])
			ok = op(datapath.Op{Type: typ, Mac: mac})
		case flow.ActStripVLAN:
			if !tagKnown {
				return e, "a VLAN operation after a pop"
			}
			if tagged() {
				ok = op(datapath.Op{Type: datapath.OpPopVLAN})
				tagKnown = false
				lenDelta -= header.VLANTagLen
			}
		case flow.ActPushVLAN:
			if !tagKnown {
				return e, "a VLAN operation after a pop"
			}
			// The new tag copies the outer one's TCI, if there is one,
			// from the frame: the key has no DEI.
			push := datapath.Op{Type: datapath.OpPushVLAN, Tpid: be16(a.Value)}
			if tagged() {
				push.Mask = 0xffff
			}
			ok = op(push)
			lenDelta += header.VLANTagLen
		case flow.ActSetVLANVID:
			ok = setTCI(a.Value, header.VLANVIDMask)
		case flow.ActSetVLANPCP:
			ok = setTCI(a.Value<<header.VLANPCPShift, header.VLANPCPMask)
		case flow.ActSetNwSrc, flow.ActSetNwDst:
			if k.DlType != flow.EtherTypeIPv4 {
				break // not IPv4: the rewrite leaves the frame alone
			}
			addr := k.NwSrc
			if a.Type == flow.ActSetNwDst {
				addr = k.NwDst
			}
			a.SetAddress(addr[:])
			ok = setAddr(a.Type == flow.ActSetNwDst, addr)
		case flow.ActSetTpSrc, flow.ActSetTpDst:
			if !k.HasPorts() {
				break
			}
			port := k.TpSrc
			if a.Type == flow.ActSetTpDst {
				port = k.TpDst
			}
			ok = setPort(a.Type == flow.ActSetTpDst, a.MaskedPort(port))
		case flow.ActSetNwTTL, flow.ActDecTTL:
			ttl := uint8(a.Value)
			if a.Type == flow.ActDecTTL {
				if k.NwTTL <= 1 {
					return e, "dec_ttl drops it, counted as a ttl drop"
				}
				ttl = k.NwTTL - 1
			}
			ok = setTTL(ttl)
		case flow.ActSetNwTOS, flow.ActSetNwECN:
			if metered {
				return e, "a TOS rewrite after a meter, whose remark it would not know"
			}
			mask := uint8(header.DSCPMask)
			if a.Type == flow.ActSetNwECN {
				mask = header.ECNMask
			}
			ok = setTOS(k.NwTOS&^mask | uint8(a.Value)&mask)
		case flow.ActOutput, flow.ActInPort:
			slot, found := f.slot(a.Port)
			switch {
			case !found || !f.forwards(slot):
				return e, fmt.Sprintf("port %d does not forward", a.Port)
			case !f.ports[slot].takesRedirects.Load():
				return e, fmt.Sprintf("port %d takes no redirects (see show)", a.Port)
			case a.Value != 0:
				return e, "output with max_len"
			}
			out, outputs = uint32(slot), outputs+1
			if f.ports[slot].tunnel != nil {
				ok = toTunnel(slot)
			}
		case actNormalTo:
			switch {
			case !f.forwards(a.Port):
				return e, fmt.Sprintf("NORMAL's port %d does not forward", f.ports[a.Port].ofport)
			case !f.ports[a.Port].takesRedirects.Load():
				return e, fmt.Sprintf("NORMAL's port %d takes no redirects (see show)", f.ports[a.Port].ofport)
			case !tagKnown:
				return e, "a VLAN operation after a pop"
			}
			switch formOut(&f.ports[a.Port].vlan, a.Value, tagged(), k.VLANTCI&header.VLANVIDMask) {
			case formUntagged:
				ok = op(datapath.Op{Type: datapath.OpPopVLAN})
				lenDelta -= header.VLANTagLen
			case formRetagged:
				ok = setTCI(a.Value, header.VLANVIDMask)
			}
			out, outputs = uint32(a.Port), outputs+1
			if ok && f.ports[a.Port].tunnel != nil {
				ok = toTunnel(a.Port)
			}
		case actSetTunnelID:
			tunnelID = uint32(a.Imm.Lo)
		case actConntrack:
			switch {
			case conn == nil:
				return e, "ct(), whose frames the kernel carries per connection, once user space saw it established"
			case conntracked || &final.cts[a.Port] != conn.step:
				return e, "several ct() actions"
			case open > 0:
				return e, "ct() in a clone bracket"
			case len(ops) > 0:
				return e, "a rewrite or a meter before ct(): the program judges a connection's frames first"
			case final.cts[a.Port].action.Force:
				return e, "ct(force), which may end the connection"
			case conn.next != nil && i != len(actions)-1:
				return e, "ct(table=N) with actions after it, which fork the frame"
			}
			conntracked = true
			if !op(datapath.ConntrackOp(conn.handle, conn.reply, conn.oneWay)) {
				return e, why
			}
			if !natOps(&k, &conn.natted, setAddr, setAddr6, setPort) {
				return e, why
			}
			if conn.next != nil {
				if len(conn.next.controllers) > 0 {
					return e, "a packet-in to the controller, which user space makes"
				}
				final, actions, i = conn.next, conn.next.actions, -1
			}
			continue
		case actMeter:
			switch {
			case a.Port == noMeterSlot:
				return e, fmt.Sprintf("meter %d, which the bridge does not have", a.Meter)
			case len(ops) > b2i(conntracked):
				return e, "a meter after a rewrite: the program runs a meter first (after a connection's operation), if at all"
			}
			ok = op(datapath.Op{Type: datapath.OpMeter, Tunnel: uint32(a.Port), Delta: a.Meter, Len: ipVersion(k.DlType)})
			metered = true
		default:
			return e, unoffloaded(a.Type)
		}
		if !ok {
			return e, why
		}
		a.ApplyToKey(&k)
	}
	dropped := d.dropped
	if final != d && dropped == dropRule {
		dropped = final.dropped
	}
	switch {
	case outputs == 1:
		e.Out = out
	case dropped == dropRule:
		e.Out = datapath.OutDrop
		if !metered {
			// The rewrites of a frame that goes nowhere are not run;
			// a meter's are, for it counts the frame as rewritten, and
			// a connection's, which judges the frame before all.
			clear(e.Ops[b2i(conntracked):])
		}
	default:
		return e, fmt.Sprintf("a %s drop, which user space counts", DropReasons[dropped])
	}
	return e, ""
}

// unoffloaded says what an action the program does not run is.
func unoffloaded(t flow.ActionType) string {
	switch t {
	case actNormalFlood, flow.ActFlood, flow.ActAll:
		return "a flood"
	case actNormalDrop:
		return "NORMAL drops it, which user space counts"
	case flow.ActNormal:
		return "NORMAL runs per frame: its source is not learned, or the decision relies on too many MAC-table entries"
	case flow.ActPushMPLS, flow.ActPopMPLS, flow.ActSetMPLSLabel, flow.ActSetMPLSTC, flow.ActSetMPLSTTL, flow.ActCopyTTLIn:
		return "an MPLS push, pop, set or TTL copy, which the program leaves to user space"
	case flow.ActCTClear:
		return "ct_clear, which the program leaves to user space"
	}
	return "an action the program does not run"
}

// ipVersion is the version of the IP header of frames of EtherType
// dlType, whose DSCP a meter's remark changes: 0 for none.
func ipVersion(dlType uint16) uint8 {
	switch dlType {
	case flow.EtherTypeIPv4:
		return 4
	case flow.EtherTypeIPv6:
		return 6
	}
	return 0
}

// l4Csum names the checksum a change of the IPv4 pseudo-header or of the
// ports updates, if the frame has one: SCTP's CRC32c covers no
// pseudo-header.
func l4Csum(k *flow.Key) uint8 {
	switch {
	case !k.HasPorts():
		return 0
	case k.NwProto == flow.ProtoTCP:
		return datapath.CsumTCP
	case k.NwProto == flow.ProtoUDP:
		return datapath.CsumUDP
	}
	return 0
}

// be16 puts a 16-bit value in the frame's byte order, as the program's
// entries keep them.
func be16(v uint16) uint16 { return datapath.NetworkOrder(v) }
