package conntrack

import (
	"net/netip"
	"testing"
	"time"

	"github.com/xswitch/xswitch/header"
)

// sec is a second on the tracker's clock; t0 is a start far from zero,
// as a monotonic clock is.
const (
	sec = int64(time.Second)
	t0  = 1000 * sec
)

func ip(s string) Addr { return AddrFrom(netip.MustParseAddr(s)) }

func isV6(s string) bool { return netip.MustParseAddr(s).Is6() }

func tcp(src, dst string, sport, dport uint16, flags uint8, seq, ack uint32, win uint16, payload uint32) *Packet {
	return &Packet{Header: Header{IPv6: isV6(src), Src: ip(src), Dst: ip(dst), Proto: header.ProtoTCP,
		SrcPort: sport, DstPort: dport, TCPFlags: flags, Seq: seq, Ack: ack, Window: win, Payload: payload}}
}

func udp(src, dst string, sport, dport uint16) *Packet {
	return &Packet{Header: Header{IPv6: isV6(src), Src: ip(src), Dst: ip(dst), Proto: header.ProtoUDP, SrcPort: sport, DstPort: dport}}
}

func other(src, dst string, proto uint8) *Packet {
	return &Packet{Header: Header{IPv6: isV6(src), Src: ip(src), Dst: ip(dst), Proto: proto}}
}

func icmpMsg(src, dst string, typ, code uint8, id uint16) *Packet {
	proto := uint8(header.ProtoICMP)
	if isV6(src) {
		proto = header.ProtoICMPv6
	}
	return &Packet{Header: Header{IPv6: isV6(src), Src: ip(src), Dst: ip(dst), Proto: proto, ICMPType: typ, ICMPCode: code, ICMPID: id}}
}

// icmpErr is an ICMP error from src to dst quoting packet q (whose
// headers are taken as quoted).
func icmpErr(src, dst string, typ, code uint8, q *Packet) *Packet {
	p := icmpMsg(src, dst, typ, code, 0)
	p.Inner = Quoted{Valid: true, Src: q.Src, Dst: q.Dst, Proto: q.Proto, SrcPort: q.SrcPort, DstPort: q.DstPort,
		ICMPType: q.ICMPType, ICMPCode: q.ICMPCode, ICMPID: q.ICMPID}
	return p
}

func newTracker(t testing.TB) *Tracker {
	t.Helper()
	return New(Config{Seed: 0x5eed})
}

var (
	track  = &Action{}
	commit = &Action{Commit: true}
)

func inZone(a Action, zone uint16) *Action {
	a.Zone = zone
	return &a
}

// run passes a fresh copy of p (no metadata from an earlier pipeline)
// through a and returns its metadata.
func run(tr *Tracker, p *Packet, a *Action, now int64) CT {
	q := *p
	q.CT = CT{}
	tr.Execute(&q, a, now)
	return q.CT
}

// state parses "+trk+est" into bits, to write expectations as OVS does.
func state(t testing.TB, s string) State {
	t.Helper()
	var out State
	for s != "" {
		if s[0] != '+' {
			t.Fatalf("bad state %q", s)
		}
		s = s[1:]
		end := 0
		for end < len(s) && s[end] != '+' {
			end++
		}
		name := s[:end]
		s = s[end:]
		found := false
		for i, n := range stateNames {
			if n == name {
				out |= 1 << i
				found = true
			}
		}
		if !found {
			t.Fatalf("bad state name %q", name)
		}
	}
	return out
}

// dump is the table's dump-conntrack lines.
func dump(tr *Tracker, now int64) []string {
	var out []string
	for _, e := range tr.Dump(nil, now) {
		out = append(out, e.Format(false, false))
	}
	return out
}

func checkDump(t *testing.T, tr *Tracker, now int64, want ...string) {
	t.Helper()
	got := dump(tr, now)
	if len(got) != len(want) {
		t.Fatalf("dump:\n%q\nwant:\n%q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("dump line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
