package conntrack

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/header"
)

func snat(lo, hi string, minPort, maxPort uint16) NAT {
	n := NAT{Kind: SNAT, MinAddr: ip(lo), MinPort: minPort, MaxPort: maxPort}
	if hi != "" {
		n.MaxAddr = ip(hi)
	}
	return n
}

func dnat(lo, hi string, minPort, maxPort uint16) NAT {
	n := snat(lo, hi, minPort, maxPort)
	n.Kind = DNAT
	return n
}

// exec passes p (keeping its metadata) through a and checks the state.
func exec(t *testing.T, tr *Tracker, p *Packet, a *Action, now int64, want string) Rewrite {
	t.Helper()
	rw := tr.Execute(p, a, now)
	if w := state(t, want); p.CT.State != w {
		t.Fatalf("ct_state %s, want %s", p.CT.State, w)
	}
	return rw
}

func checkHeader(t *testing.T, p *Packet, src string, sport uint16, dst string, dport uint16) {
	t.Helper()
	if p.Src != ip(src) || p.SrcPort != sport || p.Dst != ip(dst) || p.DstPort != dport {
		t.Fatalf("packet %v:%d > %v:%d, want %s:%d > %s:%d", p.Src.IP(p.IPv6), p.SrcPort, p.Dst.IP(p.IPv6), p.DstPort, src, sport, dst, dport)
	}
}

// TestSNATRoundTrip: the source is translated going out, the reply's
// destination translated back, as in OVS's "SNAT with port range" tests,
// and a second connection finds the one port taken.
func TestSNATRoundTrip(t *testing.T) {
	for _, fam := range []struct{ name, c, s, nat string }{
		{"v4", "10.1.1.1", "10.1.1.2", "10.1.1.240"},
		{"v6", "fc00::1", "fc00::2", "fc00::240"},
	} {
		t.Run(fam.name, func(t *testing.T) {
			tr := newTracker(t)
			out := &Action{Commit: true, NAT: snat(fam.nat, "", 34568, 0)}
			in := &Action{NAT: NAT{Kind: NATExisting}}
			syn := tcp(fam.c, fam.s, 40000, 80, TCPSyn, 1000, 0, 65535, 0)
			if rw := exec(t, tr, syn, out, t0, "+trk+new+snat"); rw != RewriteSrc|RewriteSrcPort {
				t.Errorf("rewrite %b", rw)
			}
			checkHeader(t, syn, fam.nat, 34568, fam.s, 80)

			synack := tcp(fam.s, fam.nat, 80, 34568, TCPSyn|TCPAck, 5000, 1001, 65535, 0)
			if rw := exec(t, tr, synack, in, t0+1, "+trk+est+rpl+dnat"); rw != RewriteDst|RewriteDstPort {
				t.Errorf("rewrite %b", rw)
			}
			checkHeader(t, synack, fam.s, 80, fam.c, 40000)

			ack := tcp(fam.c, fam.s, 40000, 80, TCPAck, 1001, 5001, 65535, 0)
			exec(t, tr, ack, out, t0+2, "+trk+est+snat")
			checkHeader(t, ack, fam.nat, 34568, fam.s, 80)

			// The only port is taken: a second connection to the same
			// server is refused, and goes on untranslated.
			syn2 := tcp(fam.c, fam.s, 40001, 80, TCPSyn, 1, 0, 65535, 0)
			if rw := exec(t, tr, syn2, out, t0+3, "+trk+new"); rw != 0 {
				t.Errorf("refused commit rewrote %b", rw)
			}
			checkHeader(t, syn2, fam.c, 40001, fam.s, 80)
			if s := tr.Stats(); s.Refused[RefusedNATExhausted] != 1 || s.Entries != 1 {
				t.Errorf("stats %+v", s)
			}
			// To another server the port is free.
			exec(t, tr, tcp(fam.c, "10.1.1.3", 40001, 80, TCPSyn, 1, 0, 65535, 0), &Action{Commit: true, NAT: snat("10.1.1.240", "", 34568, 0)}, t0+4, "+trk+new+snat")
		})
	}
	tr := newTracker(t)
	run(tr, tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPSyn, 1000, 0, 65535, 0), &Action{Commit: true, NAT: snat("10.1.1.240", "", 34568, 0)}, t0)
	checkDump(t, tr, t0,
		"tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=40000,dport=80),reply=(src=10.1.1.2,dst=10.1.1.240,sport=80,dport=34568),protoinfo=(state=SYN_SENT)")
}

// TestSNATPortRangeExhaustion fills a range and checks that every
// connection got its own port and the next is refused and counted.
func TestSNATPortRangeExhaustion(t *testing.T) {
	for _, random := range []bool{false, true} {
		t.Run(fmt.Sprint("random=", random), func(t *testing.T) {
			tr := newTracker(t)
			n := snat("10.1.1.240", "", 2000, 2009)
			n.Random = random
			a := &Action{Commit: true, NAT: n}
			used := map[uint16]bool{}
			for i := range 10 {
				p := udp("10.1.1.1", "10.1.1.2", uint16(5000+i), 53)
				exec(t, tr, p, a, t0, "+trk+new+snat")
				if p.SrcPort < 2000 || p.SrcPort > 2009 || used[p.SrcPort] {
					t.Fatalf("connection %d got port %d (used %v)", i, p.SrcPort, used)
				}
				used[p.SrcPort] = true
				// The reply maps back.
				back := udp("10.1.1.2", "10.1.1.240", 53, p.SrcPort)
				exec(t, tr, back, &Action{NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+dnat")
				checkHeader(t, back, "10.1.1.2", 53, "10.1.1.1", uint16(5000+i))
			}
			exec(t, tr, udp("10.1.1.1", "10.1.1.2", 6000, 53), a, t0, "+trk+new")
			if s := tr.Stats(); s.Refused[RefusedNATExhausted] != 1 || s.Entries != 10 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// TestSNATKeepsPortWhenFree: without a port range the source port stays
// if free, else another of its class is taken.
func TestSNATKeepsPortWhenFree(t *testing.T) {
	tr := newTracker(t)
	a := &Action{Commit: true, NAT: snat("10.1.1.240", "", 0, 0)}
	for i, c := range []struct {
		client     string
		port       uint16
		low, high  uint16
		wantSame   bool
		wantInPort bool
	}{
		{"10.1.1.1", 40000, 1024, 65535, true, true},
		{"10.1.1.3", 40000, 1024, 65535, false, true},
		{"10.1.1.1", 700, 600, 1023, true, true},
		{"10.1.1.3", 700, 600, 1023, false, true},
		{"10.1.1.1", 100, 1, 511, true, true},
		{"10.1.1.3", 100, 1, 511, false, true},
	} {
		p := tcp(c.client, "10.1.1.2", c.port, 80, TCPSyn, 1, 0, 1000, 0)
		exec(t, tr, p, a, t0, "+trk+new+snat")
		if (p.SrcPort == c.port) != c.wantSame || p.SrcPort < c.low || p.SrcPort > c.high {
			t.Errorf("case %d: port %d from %d, want same=%v in [%d,%d]", i, p.SrcPort, c.port, c.wantSame, c.low, c.high)
		}
	}
}

// TestDNAT: the destination is translated to a backend, the reply's
// source back to the address the client asked for.
func TestDNAT(t *testing.T) {
	tr := newTracker(t)
	a := &Action{Commit: true, NAT: dnat("10.1.1.2", "", 8080, 0)}
	p := tcp("10.1.1.1", "172.1.1.2", 40000, 80, TCPSyn, 1, 0, 1000, 0)
	if rw := exec(t, tr, p, a, t0, "+trk+new+dnat"); rw != RewriteDst|RewriteDstPort {
		t.Errorf("rewrite %b", rw)
	}
	checkHeader(t, p, "10.1.1.1", 40000, "10.1.1.2", 8080)
	back := tcp("10.1.1.2", "10.1.1.1", 8080, 40000, TCPSyn|TCPAck, 100, 2, 1000, 0)
	if rw := exec(t, tr, back, &Action{NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+snat"); rw != RewriteSrc|RewriteSrcPort {
		t.Errorf("rewrite %b", rw)
	}
	checkHeader(t, back, "172.1.1.2", 80, "10.1.1.1", 40000)
	checkDump(t, tr, t0, "tcp,orig=(src=10.1.1.1,dst=172.1.1.2,sport=40000,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=8080,dport=40000),protoinfo=(state=ESTABLISHED)")
}

// TestDNATLoadBalancing: a range of backends, picked by hash, spreads
// clients over all of them; each client's replies map back.
func TestDNATLoadBalancing(t *testing.T) {
	tr := newTracker(t)
	a := &Action{Commit: true, NAT: dnat("10.1.2.10", "10.1.2.12", 0, 0)}
	seen := map[Addr]int{}
	for i := range 300 {
		client := fmt.Sprintf("10.1.1.%d", 1+i%250)
		p := tcp(client, "10.1.1.100", uint16(1024+i), 80, TCPSyn, 1, 0, 1000, 0)
		exec(t, tr, p, a, t0, "+trk+new+dnat")
		seen[p.Dst]++
		back := tcp(p.Dst.IP(false).String(), client, 80, uint16(1024+i), TCPSyn|TCPAck, 7, 2, 1000, 0)
		exec(t, tr, back, &Action{NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+snat")
		checkHeader(t, back, "10.1.1.100", 80, client, uint16(1024+i))
	}
	if len(seen) != 3 {
		t.Fatalf("backends used: %v", seen)
	}
	for b, n := range seen {
		if n < 50 {
			t.Errorf("backend %v got %d of 300", b.IP(false), n)
		}
	}
}

// TestNATPersistent: with persistent, all of a source's connections get
// one address.
func TestNATPersistent(t *testing.T) {
	tr := newTracker(t)
	n := snat("10.2.0.1", "10.2.0.200", 0, 0)
	n.Persistent = true
	a := &Action{Commit: true, NAT: n}
	for _, client := range []string{"10.1.1.1", "10.1.1.2", "10.1.1.3"} {
		var first Addr
		for i := range 20 {
			p := udp(client, fmt.Sprintf("10.3.0.%d", i+1), uint16(3000+i), 53)
			exec(t, tr, p, a, t0, "+trk+new+snat")
			if i == 0 {
				first = p.Src
			} else if p.Src != first {
				t.Fatalf("%s: connection %d got %v, the first %v", client, i, p.Src.IP(false), first.IP(false))
			}
		}
	}
	// Without persistent, one source's connections spread.
	tr = newTracker(t)
	a.NAT.Persistent = false
	addrs := map[Addr]bool{}
	for i := range 20 {
		p := udp("10.1.1.1", fmt.Sprintf("10.3.0.%d", i+1), uint16(3000+i), 53)
		exec(t, tr, p, a, t0, "+trk+new+snat")
		addrs[p.Src] = true
	}
	if len(addrs) < 5 {
		t.Errorf("20 connections got %d addresses without persistent", len(addrs))
	}
}

// TestNATExistingOnNew: nat without arguments commits a new connection
// untranslated.
func TestNATExistingOnNew(t *testing.T) {
	tr := newTracker(t)
	p := udp("10.1.1.1", "10.1.1.2", 1, 2)
	if rw := exec(t, tr, p, &Action{Commit: true, NAT: NAT{Kind: NATExisting}}, t0, "+trk+new"); rw != 0 {
		t.Errorf("rewrite %b", rw)
	}
	checkDump(t, tr, t0, "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1)")
}

// TestDNATWithAdditionalSNAT is OVS's test of that name: a second
// ct(commit,nat(src=...)) in the same zone after a DNAT does not
// translate again, but its exec sets mark and label.
func TestDNATWithAdditionalSNAT(t *testing.T) {
	tr := newTracker(t)
	p := tcp("10.1.1.1", "172.1.1.2", 40000, 8080, TCPSyn, 1, 0, 1000, 0)
	exec(t, tr, p, &Action{Commit: true, NAT: dnat("10.1.1.2", "", 80, 0)}, t0, "+trk+new+dnat")
	second := &Action{Commit: true, NAT: snat("10.1.1.240", "", 0, 0), SetMark: true, Mark: 0xac, MarkMask: ^uint32(0),
		SetLabel: true, Label: Label{Lo: 0xac}, LabelMask: Label{^uint64(0), ^uint64(0)}}
	if rw := exec(t, tr, p, second, t0, "+trk+new+dnat"); rw != 0 {
		t.Errorf("second ct translated again: %b", rw)
	}
	checkHeader(t, p, "10.1.1.1", 40000, "10.1.1.2", 80)
	if p.CT.Mark != 0xac || p.CT.Label != (Label{Lo: 0xac}) {
		t.Errorf("mark %#x label %+v", p.CT.Mark, p.CT.Label)
	}
	checkDump(t, tr, t0, "tcp,orig=(src=10.1.1.1,dst=172.1.1.2,sport=40000,dport=8080),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=40000),mark=172,labels=0xac,protoinfo=(state=SYN_SENT)")
}

// TestNATInAnotherZone: a packet translated in one zone is tracked by its
// translated headers in the next zone, and translated again there.
func TestNATInAnotherZone(t *testing.T) {
	tr := newTracker(t)
	p := udp("10.1.1.1", "10.9.9.9", 1000, 53)
	exec(t, tr, p, &Action{Zone: 1, Commit: true, NAT: snat("10.2.2.2", "", 0, 0)}, t0, "+trk+new+snat")
	exec(t, tr, p, &Action{Zone: 2, Commit: true, NAT: snat("10.3.3.3", "", 0, 0)}, t0, "+trk+new+snat")
	checkHeader(t, p, "10.3.3.3", 1000, "10.9.9.9", 53)
	// The reply comes back through zone 2, then zone 1.
	back := udp("10.9.9.9", "10.3.3.3", 53, 1000)
	exec(t, tr, back, &Action{Zone: 2, NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+dnat")
	exec(t, tr, back, &Action{Zone: 1, NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+dnat")
	checkHeader(t, back, "10.9.9.9", 53, "10.1.1.1", 1000)
}

// ovsFrame decodes one of OVS's test frames (Ethernet, IPv4) into a
// packet; l3 is the frame's IP packet, which ApplyNAT rewrites.
func ovsFrame(t *testing.T, s string) (p *Packet, frame []byte) {
	t.Helper()
	frame, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	p = &Packet{}
	p.Decode(frame[header.EthernetLen:], true)
	if p.Malformed {
		t.Fatalf("frame %s does not decode", s)
	}
	return p, frame
}

// TestSNATWithICMPID is OVS's "conntrack - SNAT with icmp_id": three
// hosts ping with the same identifier through SNAT to one address; the
// identifiers are made unique, counting up from the first.
func TestSNATWithICMPID(t *testing.T) {
	tr := newTracker(t)
	table0 := &Action{NAT: NAT{Kind: NATExisting}}
	table1 := &Action{Commit: true, NAT: snat("10.0.0.201", "", 0, 0)}
	for i, f := range []string{
		"62cf3bde230262cf3bde230108004500001c00010000400166de0a0000010a0000020800f60b01f40000",
		"62cf3bde230262cf3bde230108004500001c00010000400166dc0a0000030a0000020800f60b01f40000",
		"62cf3bde230262cf3bde230108004500001c00010000400166db0a0000040a0000020800f60b01f40000",
	} {
		p, frame := ovsFrame(t, f)
		tr.Execute(p, table0, t0)
		if p.CT.State != StateTracked|StateNew {
			t.Fatalf("packet %d: %s", i, p.CT.State)
		}
		rw := tr.Execute(p, table1, t0)
		if !ApplyNAT(frame[header.EthernetLen:], &p.Header, rw) {
			t.Fatalf("packet %d: ApplyNAT failed", i)
		}
		// The frame, read again, is the translated packet, checksums
		// included.
		var again Packet
		again.Decode(frame[header.EthernetLen:], true)
		if again.Header != p.Header {
			t.Errorf("packet %d: frame reads %+v, want %+v", i, again.Header, p.Header)
		}
	}
	checkDump(t, tr, t0,
		"icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=500,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.201,id=500,type=0,code=0)",
		"icmp,orig=(src=10.0.0.3,dst=10.0.0.2,id=500,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.201,id=501,type=0,code=0)",
		"icmp,orig=(src=10.0.0.4,dst=10.0.0.2,id=500,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.201,id=502,type=0,code=0)")
}

// TestICMPRelatedWithNAT is OVS's "conntrack - ICMP from different source
// related with NAT": ICMP errors from a router about a DNATed UDP
// connection, in each direction, come out translated byte for byte as
// OVS sends them, quoted headers and checksums included.
func TestICMPRelatedWithNAT(t *testing.T) {
	const client, server = 1, 2
	tr := newTracker(t)
	zone := uint16(42)
	// The flow tables of the test.
	pipeline := func(p *Packet, frame []byte, inPort int) {
		t.Helper()
		rw := tr.Execute(p, &Action{Zone: zone, NAT: NAT{Kind: NATExisting}}, t0)
		switch {
		case inPort == client && p.CT.State&(StateTracked|StateNew) == StateTracked|StateNew:
			rw |= tr.Execute(p, &Action{Zone: zone, Commit: true, NAT: dnat("192.168.10.20", "", 0, 0)}, t0)
		case isICMP(false, p.Proto) && p.CT.State&(StateTracked|StateRelated|StateReply) == StateTracked|StateRelated:
			rw |= tr.Execute(p, &Action{Zone: zone, Commit: true, NAT: NAT{Kind: NATExisting}}, t0)
		}
		if !ApplyNAT(frame[header.EthernetLen:], &p.Header, rw) {
			t.Fatal("ApplyNAT failed")
		}
	}
	send := func(s string, inPort int) (*Packet, string) {
		p, frame := ovsFrame(t, s)
		pipeline(p, frame, inPort)
		return p, hex.EncodeToString(frame)
	}

	send("00000000102000000000201008004500001C000040000A11C762C0A8140AC0A814140001000200080000", client)
	send("00000000201000000000102008004500001C000040000A11D162C0A80A14C0A8140A0002000100080000", server)
	p, got := send("000000001020000000002000080045000038011F0000FF011140C0A81401C0A814140304F778000005784500001C000040000A11C762C0A81414C0A8140A0002000100080000", client)
	if want := "000000001020000000002000080045000038011f0000ff011b40c0a81401c0a80a140304f778000005784500001c000040000a11d162c0a80a14c0a8140a0002000100080000"; got != want {
		t.Errorf("error to the server:\n got %s\nwant %s", got, want)
	}
	if p.CT.State != StateTracked|StateRelated|StateDstNAT {
		t.Errorf("error to the server: %s", p.CT.State)
	}
	checkDump(t, tr, t0, "udp,orig=(src=192.168.20.10,dst=192.168.20.20,sport=1,dport=2),reply=(src=192.168.10.20,dst=192.168.20.10,sport=2,dport=1),zone=42")

	tr.Flush(&Filter{Zone: &zone}, t0)
	send("00000000102000000000201008004500001C000040000A11C762C0A8140AC0A814140001000200080000", client)
	p, got = send("000000002010000000002000080045000038011F0000FF01114AC0A81401C0A8140A0304F778000005784500001C000040000A11D162C0A8140AC0A80A140001000200080000", server)
	if want := "000000002010000000002000080045000038011f0000ff011137c0a81414c0a8140a0304f778000005784500001c000040000a11c762c0a8140ac0a814140001000200080000"; got != want {
		t.Errorf("error to the client:\n got %s\nwant %s", got, want)
	}
	if p.CT.State != StateTracked|StateRelated|StateReply|StateSrcNAT {
		t.Errorf("error to the client: %s", p.CT.State)
	}
}

// TestICMPv6RelatedWithSNAT: an ICMPv6 packet too big about an SNATed
// TCP connection reaches the client with the quoted header translated
// back, and the checksums right.
func TestICMPv6RelatedWithSNAT(t *testing.T) {
	tr := newTracker(t)
	syn := tcp("fc00::1", "fc00::2", 40000, 80, TCPSyn, 1, 0, 1000, 0)
	exec(t, tr, syn, &Action{Commit: true, NAT: snat("fc00::240", "", 0, 0)}, t0, "+trk+new+snat")
	// The router on the way quotes the translated packet.
	quoted := *syn
	frame := ipv6ICMPError("fc00::9", "fc00::240", 2, &quoted)
	var p Packet
	p.Decode(frame, true)
	if p.Malformed || !p.Inner.Valid {
		t.Fatalf("error does not decode: %+v", p.Header)
	}
	rw := exec(t, tr, &p, &Action{NAT: NAT{Kind: NATExisting}}, t0, "+trk+rel+rpl+dnat")
	if rw != RewriteDst|RewriteInner {
		t.Errorf("rewrite %b", rw)
	}
	if !ApplyNAT(frame, &p.Header, rw) {
		t.Fatal("ApplyNAT failed")
	}
	var again Packet
	again.Decode(frame, true)
	if again.Malformed || again.Dst != ip("fc00::1") || again.Inner.Src != ip("fc00::1") || again.Inner.SrcPort != 40000 {
		t.Errorf("translated error reads %+v", again.Header)
	}
	if !strings.Contains(dump(tr, t0)[0], "reply=(src=fc00::2,dst=fc00::240,sport=80,dport=40000)") {
		t.Errorf("dump %q", dump(tr, t0))
	}
}

// TestAddrInRange: the address a hash picks is in the range, every
// address of a small range is picked, across the middle of an IPv6
// address (where OVS's 64-bit halves carry), and a full IPv4 range does
// not divide by zero.
func TestAddrInRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi string
		n      int
	}{
		{"10.0.0.250", "10.0.1.4", 11},
		{"fc00::ffff:ffff:ffff:fffe", "fc00:0:0:1::2", 5},
		{"fc00::1", "fc00::1", 1},
	} {
		lo, hi, v6 := ip(c.lo), ip(c.hi), isV6(c.lo)
		seen := map[Addr]bool{}
		for h := range uint32(1000) {
			a := addrInRange(lo, hi, h*2654435761, v6)
			if bytes.Compare(a[:], lo[:]) < 0 || bytes.Compare(a[:], hi[:]) > 0 {
				t.Fatalf("%s-%s: %v out of range", c.lo, c.hi, a.IP(v6))
			}
			seen[a] = true
		}
		if len(seen) != c.n {
			t.Errorf("%s-%s: %d addresses picked, want %d", c.lo, c.hi, len(seen), c.n)
		}
	}
	if a := addrInRange(ip("0.0.0.0"), ip("255.255.255.255"), 0x01020304, false); a != ip("1.2.3.4") {
		t.Errorf("full range picked %v", a.IP(false))
	}
}
