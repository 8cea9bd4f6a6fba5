package conntrack

import (
	"encoding/binary"
	"testing"

	"github.com/xswitch/xswitch/header"
)

// fragmentL3 splits the whole IP packet b into fragments of at most size
// bytes of data each (a multiple of 8), as a host does: IPv4's header
// copied into each, IPv6's followed by a fragment header.
func fragmentL3(t *testing.T, b []byte, ipv6 bool, id uint32, size int) [][]byte {
	t.Helper()
	hl := header.IPv6Len
	if !ipv6 {
		hl = header.IPv4(b).HeaderLen()
	}
	data := b[hl:]
	var out [][]byte
	for off := 0; off < len(data); off += size {
		end := min(off+size, len(data))
		more := uint16(0)
		if end < len(data) {
			more = 1
		}
		var f []byte
		if ipv6 {
			fh := make([]byte, header.IPv6FragmentLen)
			fh[0] = b[header.IPv6NextHeaderOffset]
			binary.BigEndian.PutUint16(fh[2:], uint16(off)|more)
			binary.BigEndian.PutUint32(fh[4:], id)
			f = append(append(append([]byte{}, b[:hl]...), fh...), data[off:end]...)
			f[header.IPv6NextHeaderOffset] = header.ProtoIPv6Fragment
			header.IPv6(f).SetPayloadLen(uint16(len(f) - header.IPv6Len))
		} else {
			f = append(append([]byte{}, b[:hl]...), data[off:end]...)
			ip := header.IPv4(f)
			ip.SetTotalLen(uint16(len(f)))
			ip.SetID(uint16(id))
			binary.BigEndian.PutUint16(f[header.IPv4FlagsOffset:], more<<13|uint16(off/8))
			ip.SetChecksum(0)
			ip.SetChecksum(ip.ComputeChecksum())
		}
		out = append(out, f)
	}
	return out
}

// reassembled is the transport part of the datagram whose fragments are
// frags, in order, and the last fragment's addresses.
func reassembled(frags [][]byte, ipv6 bool) (l4 []byte, src, dst []byte) {
	for _, f := range frags {
		hl := header.IPv6Len + header.IPv6FragmentLen
		src, dst = f[header.IPv6SrcOffset:header.IPv6DstOffset], f[header.IPv6DstOffset:header.IPv6Len]
		if !ipv6 {
			hl = header.IPv4(f).HeaderLen()
			src, dst = f[header.IPv4SrcOffset:header.IPv4DstOffset], f[header.IPv4DstOffset:header.IPv4DstOffset+4]
		}
		l4 = append(l4, f[hl:]...)
	}
	return l4, src, dst
}

// TestFragmentsTrackedByTheirFirst: the fragments of a UDP datagram too
// long for the path, each tracked and translated on its own, are of the
// datagram's connection, with its state, and leave the switch as the
// fragments of the translated datagram: every fragment's addresses
// translated, the first's port too, and the transport checksum holding
// over the datagram they reassemble to (the slow, obvious check). The
// answer comes back the same way, translated back.
func TestFragmentsTrackedByTheirFirst(t *testing.T) {
	for _, fam := range []struct{ name, c, s, nat string }{
		{"v4", "10.1.1.1", "10.1.1.2", "10.1.1.240"},
		{"v6", "fc00::1", "fc00::2", "fc00::240"},
	} {
		t.Run(fam.name, func(t *testing.T) {
			tr := newTracker(t)
			ipv6 := isV6(fam.c)
			out := udp(fam.c, fam.s, 5000, 53).Header
			out.Payload = 3000
			a := &Action{Commit: true, NAT: snat(fam.nat, "", 6000, 6000)}
			frags := fragmentL3(t, l3Bytes(t, &out), ipv6, 77, 1400)
			if len(frags) != 3 {
				t.Fatalf("%d fragments, want 3", len(frags))
			}
			var conn Handle
			for i, f := range frags {
				p := &Packet{}
				p.Decode(f, false)
				rw := exec(t, tr, p, a, t0, "+trk+new+snat")
				if conn == 0 {
					conn = p.CT.Conn
				}
				if p.CT.Conn != conn || p.CT.Orig.SrcPort != 5000 || p.CT.Orig.DstPort != 53 {
					t.Fatalf("fragment %d: connection %v, original tuple %+v; want the first's, %v, ports 5000 and 53", i, p.CT.Conn, p.CT.Orig, conn)
				}
				if !ApplyNAT(f, &p.Header, rw) {
					t.Fatalf("fragment %d: ApplyNAT refused it", i)
				}
				if !ipv6 && !header.IPv4(f).ChecksumValid() {
					t.Fatalf("fragment %d: IPv4 header checksum broken", i)
				}
			}
			checkDump(t, tr, t0, "udp,orig=(src="+fam.c+",dst="+fam.s+",sport=5000,dport=53),reply=(src="+fam.s+",dst="+fam.nat+",sport=53,dport=6000)")
			l4, src, dst := reassembled(frags, ipv6)
			checkDatagram(t, l4, src, dst, fam.nat, 6000, ipv6)

			back := udp(fam.s, fam.nat, 53, 6000).Header
			back.Payload = 2000
			frags = fragmentL3(t, l3Bytes(t, &back), ipv6, 78, 1400)
			for i, f := range frags {
				p := &Packet{}
				p.Decode(f, false)
				rw := exec(t, tr, p, &Action{NAT: NAT{Kind: NATExisting}}, t0+sec, "+trk+est+rpl+dnat")
				if p.CT.Conn != conn || !ApplyNAT(f, &p.Header, rw) {
					t.Fatalf("answer's fragment %d: connection %v (want %v), or ApplyNAT refused it", i, p.CT.Conn, conn)
				}
			}
			l4, src, dst = reassembled(frags, ipv6)
			if got := addrOf(dst, ipv6); got != ip(fam.c) {
				t.Fatalf("answer's destination %v, want %s", got.IP(ipv6), fam.c)
			}
			if binary.BigEndian.Uint16(l4[header.DstPortOffset:]) != 5000 || !validSum(pseudoHeader(src, dst, len(l4), ipv6), l4) {
				t.Fatalf("answer reassembled: port %d, checksum holds %v", binary.BigEndian.Uint16(l4[header.DstPortOffset:]),
					validSum(pseudoHeader(src, dst, len(l4), ipv6), l4))
			}
		})
	}
}

// checkDatagram checks the reassembled UDP datagram l4 between src and
// dst: from natAddr and natPort, its checksum holding.
func checkDatagram(t *testing.T, l4, src, dst []byte, natAddr string, natPort uint16, ipv6 bool) {
	t.Helper()
	if from := addrOf(src, ipv6); from != ip(natAddr) || binary.BigEndian.Uint16(l4[header.SrcPortOffset:]) != natPort {
		t.Fatalf("reassembled datagram from %v port %d, want %s port %d", from.IP(ipv6), binary.BigEndian.Uint16(l4), natAddr, natPort)
	}
	if !validSum(pseudoHeader(src, dst, len(l4), ipv6), l4) {
		t.Fatal("the reassembled datagram's UDP checksum does not hold")
	}
}

func addrOf(b []byte, ipv6 bool) Addr {
	if ipv6 {
		return Addr(b)
	}
	return AddrFrom4([4]byte(b))
}

// pseudoHeader is the sum of UDP's pseudo-header.
func pseudoHeader(src, dst []byte, n int, ipv6 bool) uint32 {
	sum := header.Sum(header.Sum(0, src), dst)
	if ipv6 {
		return header.Sum(sum, []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 0, 0, 0, header.ProtoUDP})
	}
	return header.Sum(sum, []byte{0, header.ProtoUDP, byte(n >> 8), byte(n)})
}

// TestFragmentsThatCannotBeKeyed: a later fragment is +inv without its
// first (never seen, seen in another zone, too long ago), as are TCP's
// fragments; a fragmented echo request is one connection; fragments of a
// protocol without ports are keyed by their addresses alone.
func TestFragmentsThatCannotBeKeyed(t *testing.T) {
	tr := newTracker(t)
	first := udp("10.1.1.1", "10.1.1.2", 1, 2)
	first.Fragment, first.FragmentID = true, 9
	later := &Packet{Header: Header{Src: ip("10.1.1.1"), Dst: ip("10.1.1.2"), Proto: header.ProtoUDP,
		Fragment: true, LaterFragment: true, FragmentID: 9}}
	laterOf := func(id uint32) *Packet {
		p := *later
		p.FragmentID = id
		return &p
	}
	tcpFirst := tcp("10.1.1.1", "10.1.1.2", 1, 2, TCPSyn, 1, 0, 1000, 0)
	tcpFirst.Fragment = true
	echo := icmpMsg("10.1.1.1", "10.1.1.2", 8, 0, 3)
	echo.Fragment, echo.FragmentID = true, 10
	echoLater := &Packet{Header: Header{Src: ip("10.1.1.1"), Dst: ip("10.1.1.2"), Proto: header.ProtoICMP,
		Fragment: true, LaterFragment: true, FragmentID: 10}}
	gre := other("10.1.1.1", "10.1.1.2", 47)
	gre.Fragment, gre.LaterFragment = true, true
	for _, c := range []struct {
		what string
		p    *Packet
		a    *Action
		at   int64
		want string
	}{
		{"a later fragment before its first", later, commit, t0, "+trk+inv"},
		{"the first", first, commit, t0, "+trk+new"},
		{"the later fragment after it", later, commit, t0, "+trk+new"},
		{"a later fragment of another datagram", laterOf(8), commit, t0, "+trk+inv"},
		{"the later fragment in another zone", later, inZone(*commit, 1), t0, "+trk+inv"},
		{"the later fragment long after", later, commit, t0 + fragmentTimeout, "+trk+inv"},
		{"TCP's first fragment", tcpFirst, commit, t0, "+trk+inv"},
		{"a fragmented echo request's first", echo, commit, t0, "+trk+new"},
		{"and its later fragment", echoLater, commit, t0, "+trk+new"},
		{"a later fragment of GRE", gre, commit, t0, "+trk+new"},
	} {
		if md := run(tr, c.p, c.a, c.at); md.State != state(t, c.want) {
			t.Errorf("%s: %s, want %s", c.what, md.State, c.want)
		}
	}
	checkDump(t, tr, t0,
		"icmp,orig=(src=10.1.1.1,dst=10.1.1.2,id=3,type=8,code=0),reply=(src=10.1.1.2,dst=10.1.1.1,id=3,type=0,code=0)",
		"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1)",
		"47,orig=(src=10.1.1.1,dst=10.1.1.2,sport=0,dport=0),reply=(src=10.1.1.2,dst=10.1.1.1,sport=0,dport=0)")
}
