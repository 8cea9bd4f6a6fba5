package conntrack

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/xswitch/xswitch/header"
)

// The tracker does not reassemble datagrams, as OVS's ipf does; it keys
// their fragments instead, as Cilium does: the first fragment, which
// holds the transport header, is tracked as its datagram would be, and
// what it said of the transport header (ports, ICMP type and identifier)
// is remembered for a while under the datagram's addresses, protocol and
// identification, in the zone of the ct() it passed. A later fragment in
// that zone takes it, and with it its datagram's connection and state. A
// later fragment that comes before its first, or without it, cannot be
// keyed: it is +inv. So are fragments of TCP and SCTP (TCP's windows and
// SCTP's checksum need the whole segment) and of ICMP errors. Protocols
// without ports are keyed by their addresses, every fragment alike.

// fragmentSlots is how many datagrams the tracker remembers the first
// fragment of at once; a newer datagram whose first fragment hashes to
// the slot of an older one's takes it.
const fragmentSlots = 1024

// fragmentTimeout is how long a first fragment's transport header serves
// its datagram's later fragments: as long as OVS's ipf keeps an
// incomplete datagram.
const fragmentTimeout = int64(15 * time.Second)

// fragments is a tracker's memory of recent first fragments, a
// direct-mapped table that allocates nothing.
type fragments struct {
	mu    sync.Mutex
	slots [fragmentSlots]firstFragment
}

// datagram names one IP datagram, in one zone.
type datagram struct {
	src, dst Addr
	id       uint32
	zone     uint16
	proto    uint8
	ipv6     bool
}

// firstFragment is what a datagram's first fragment said of its
// transport header.
type firstFragment struct {
	datagram
	expires            int64
	srcPort, dstPort   uint16
	icmpType, icmpCode uint8
	icmpID             uint16
}

func (d *datagram) hash(seed uint64) uint64 {
	le := binary.LittleEndian
	h := mix(seed^le.Uint64(d.src[:8]), le.Uint64(d.src[8:]))
	h = mix(h^le.Uint64(d.dst[:8]), le.Uint64(d.dst[8:]))
	return mix(h^uint64(d.id), uint64(d.zone)|uint64(d.proto)<<16|uint64(b2u(d.ipv6))<<24)
}

// key gives fragment h the transport header of its datagram, for zone:
// a first fragment's is remembered, a later one takes its first's. It
// reports false for a fragment the tracker cannot key.
func (f *fragments) key(h *Header, zone uint16, seed uint64, now int64) bool {
	switch {
	case h.Proto == header.ProtoTCP || h.Proto == header.ProtoSCTP:
		return false
	case !hasPorts(h.Proto) && !isICMP(h.IPv6, h.Proto):
		return true
	case !h.LaterFragment && isICMP(h.IPv6, h.Proto) && icmpError(h.IPv6, h.ICMPType):
		return false
	}
	d := datagram{src: h.Src, dst: h.Dst, id: h.FragmentID, zone: zone, proto: h.Proto, ipv6: h.IPv6}
	f.mu.Lock()
	defer f.mu.Unlock()
	slot := &f.slots[d.hash(seed)%fragmentSlots]
	if !h.LaterFragment {
		*slot = firstFragment{datagram: d, expires: now + fragmentTimeout, srcPort: h.SrcPort, dstPort: h.DstPort,
			icmpType: h.ICMPType, icmpCode: h.ICMPCode, icmpID: h.ICMPID}
		return true
	}
	if slot.datagram != d || now >= slot.expires {
		return false
	}
	h.SrcPort, h.DstPort = slot.srcPort, slot.dstPort
	h.ICMPType, h.ICMPCode, h.ICMPID = slot.icmpType, slot.icmpCode, slot.icmpID
	return true
}
