package test

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// The connection table's verbs (dump-conntrack, flush-conntrack,
// ct-set-limits, ct-set-maxconns...) on connections that frames made, as
// system-traffic.at tests them. Where OVS injects a packet with
// ovs-ofctl packet-out in_port=N, these tests send the frame out of host
// N's eth0 (host N is behind port N).

// ovsStation is made-up station n of system-traffic.at's packets: MAC
// 50:54:00:00:00:0n (n < 16), address 10.1.1.n in the rig's subnet.
func (r *rig) ovsStation(n int) (net.HardwareAddr, net.IP) {
	return net.HardwareAddr{0x50, 0x54, 0, 0, 0, byte(n)}, net.ParseIP(r.n.ipv4(n)).To4()
}

// ovsPacket is a frame from made-up station src to dst (ovsStation)
// carrying l4 over IPv4: OVS's UDP_PKT and the like.
func (r *rig) ovsPacket(t testing.TB, src, dst int, l4 ...gopacket.SerializableLayer) []byte {
	t.Helper()
	smac, sip := r.ovsStation(src)
	dmac, dip := r.ovsStation(dst)
	ip := &layers.IPv4{Version: 4, TTL: 64, SrcIP: sip, DstIP: dip}
	switch l := l4[0].(type) {
	case *layers.UDP:
		ip.Protocol = layers.IPProtocolUDP
		l.SetNetworkLayerForChecksum(ip)
	case *layers.TCP:
		ip.Protocol = layers.IPProtocolTCP
		l.SetNetworkLayerForChecksum(ip)
	case *layers.SCTP:
		ip.Protocol = layers.IPProtocolSCTP
	}
	eth := &layers.Ethernet{SrcMAC: smac, DstMAC: dmac, EthernetType: layers.EthernetTypeIPv4}
	return serializeLayers(t, append([]gopacket.SerializableLayer{eth, ip}, l4...)...)
}

// udpPacket is OVS's UDP_PKT: UDP from made-up station src to dst, from
// port sport to dport.
func (r *rig) udpPacket(t testing.TB, src, dst int, sport, dport uint16) []byte {
	t.Helper()
	return r.ovsPacket(t, src, dst, &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)})
}

// sctpInit is an SCTP INIT from made-up station src to dst, from port
// sport to dport, as "conntrack - ct flush" sends.
func (r *rig) sctpInit(t testing.TB, src, dst int, sport, dport uint16) []byte {
	t.Helper()
	return r.ovsPacket(t, src, dst,
		&layers.SCTP{SrcPort: layers.SCTPPort(sport), DstPort: layers.SCTPPort(dport)},
		&layers.SCTPInit{SCTPChunk: layers.SCTPChunk{Type: layers.SCTPChunkTypeInit}, InitiateTag: 0x70e18ccc,
			OutboundStreams: 10, InboundStreams: 10})
}

// inject sends frames out of host n's eth0, into the bridge's port n, as
// ovs-ofctl packet-out in_port=n does.
func (r *rig) inject(t testing.TB, n int, frames ...[]byte) {
	t.Helper()
	openRaw(t, r.hosts[n-1].ns, nil).send(t, frames...)
}

// conntrackWith is what `dump-conntrack | grep sub | sort` prints, sub and
// the lines in the rig's addresses; strip removes what each line has
// from its match on.
func conntrackWith(dump, sub string, strip *regexp.Regexp) []string {
	var lines []string
	for _, line := range strings.Split(dump, "\n") {
		if strings.Contains(line, sub) {
			if strip != nil {
				line = strip.ReplaceAllString(line, "")
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return lines
}

// waitConntrackWith waits, for at most 3 s, until the lines of
// dump-conntrack that contain sub are want (all written with OVS's
// addresses), as the frames just sent reach the tracker.
func (r *rig) waitConntrackWith(t testing.TB, sub string, strip *regexp.Regexp, want ...string) {
	t.Helper()
	sub, want = r.n.fromOVS(sub), r.fromOVS(want)
	deadline := time.Now().Add(3 * time.Second)
	for {
		dump := r.d.x(t, "dump-conntrack")
		got := conntrackWith(dump, sub, strip)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dump-conntrack | grep %q:\n%s\nwant:\n%s\nwhole dump:\n%s", sub,
				strings.Join(got, "\n"), strings.Join(want, "\n"), dump)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConntrackFlush is OVS's "conntrack - ct flush": UDP, ICMP and SCTP
// connections committed in zones 0 and 5 with a mark and a label, and
// flush-conntrack (also under its dpctl/ name, and with the bridge named
// where OVS names the datapath) deletes exactly those its arguments name: a whole tuple of either direction, a zone,
// parts of the original or the reply tuple (ports, addresses, an ICMP
// id), a mark or labels with or without a mask; bad arguments are
// refused with OVS's words and delete nothing.
func TestConntrackFlush(t *testing.T) {
	const (
		from1 = "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),mark=170"
		from2 = "udp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),reply=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),zone=5,labels=0xaa00000000"
	)
	protoinfo := regexp.MustCompile(`,protoinfo=.*$`)
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,ip,action=ct(commit,exec(set_field:0xaa->ct_mark)),2
priority=100,in_port=2,ip,action=ct(zone=5,commit,exec(set_field:0xaa00000000->ct_label)),1
`)
		udp1, udp2 := r.udpPacket(t, 1, 2, 1, 2), r.udpPacket(t, 2, 1, 2, 1)
		flush := func(args ...string) {
			t.Helper()
			r.d.x(t, append([]string{"flush-conntrack"}, r.fromOVS(args)...)...)
		}
		from := func(sub string, want ...string) {
			t.Helper()
			r.waitConntrackWith(t, sub, nil, want...)
		}
		both := func() {
			t.Helper()
			r.inject(t, 1, udp1)
			r.inject(t, 2, udp2)
			from("10.1.1.1,", from1, from2)
		}

		// A whole tuple, of the reply direction.
		r.inject(t, 1, udp1)
		from("orig=(src=10.1.1.1,", from1)
		flush("ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1")
		from("orig=(src=10.1.1.1,")

		// A whole tuple in a zone.
		r.inject(t, 2, udp2)
		from("orig=(src=10.1.1.2,", from2)
		flush("zone=5", "ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2")
		from("dst=10.1.1.2")

		// ICMP, by its id.
		if sent, received, out := ping(t, r.hosts[1].ns, r.hosts[0].addr, 56, 3); sent != 3 || received != 3 {
			t.Fatalf("ping from port 2: %d of %d replies, want all 3:\n%s", received, sent, out)
		}
		dump := r.d.x(t, "dump-conntrack")
		icmp := conntrackWith(dump, r.n.fromOVS("orig=(src=10.1.1.2,"), nil)
		id := regexp.MustCompile(`,id=([0-9]+),`).FindStringSubmatch(strings.Join(icmp, "\n"))
		if len(icmp) != 1 || id == nil {
			t.Fatalf("dump-conntrack has no one ICMP connection from port 2:\n%s", dump)
		}
		want := fmt.Sprintf("icmp,orig=(src=10.1.1.2,dst=10.1.1.1,id=%s,type=8,code=0),reply=(src=10.1.1.1,dst=10.1.1.2,id=%s,type=0,code=0),zone=5,labels=0xaa00000000", id[1], id[1])
		from("orig=(src=10.1.1.2,", want)
		flush("zone=5", "ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=1,icmp_id="+id[1]+",icmp_type=8,icmp_code=0")
		from("orig=(src=10.1.1.2,")

		// Parts of the original tuple, then of the reply one.
		for _, step := range [][2][]string{
			{{"ct_nw_proto=17,ct_tp_src=1"}, {"ct_nw_proto=17,ct_tp_src=2"}},
			{{"ct_nw_proto=17,ct_tp_dst=2"}, {"ct_nw_proto=17,ct_tp_dst=1"}},
			{{"ct_nw_src=10.1.1.1"}, {"ct_nw_src=10.1.1.2"}},
			{{"ct_nw_dst=10.1.1.2"}, {"ct_nw_dst=10.1.1.1"}},
			{{"", "ct_nw_src=10.1.1.2"}, {"zone=5", "", "ct_nw_src=10.1.1.1"}},
			{{"mark=0xaa"}, {"labels=0xaa00000000"}},
			{{"mark=2/2"}, {"labels=0x0200000000/0x0200000000"}},
		} {
			both()
			flush(step[0]...)
			from("10.1.1.1,", from2)
			flush(step[1]...)
			from("10.1.1.1,")
		}
		both()
		flush()
		from("10.1.1.1,")

		// SCTP, by its ports.
		r.inject(t, 1, r.sctpInit(t, 1, 2, 1, 2))
		r.inject(t, 2, r.sctpInit(t, 2, 1, 2, 1))
		r.waitConntrackWith(t, "10.1.1.1,", protoinfo,
			"sctp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),mark=170",
			"sctp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),reply=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),zone=5,labels=0xaa00000000")
		flush("ct_nw_src=10.1.1.1,ct_nw_proto=132,ct_tp_src=1,ct_tp_dst=2")
		r.waitConntrackWith(t, "10.1.1.1,", protoinfo,
			"sctp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),reply=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),zone=5,labels=0xaa00000000")
		flush("ct_nw_src=10.1.1.2,ct_nw_proto=132,ct_tp_src=2,ct_tp_dst=1")
		from("10.1.1.1,")

		// Bad arguments: refused, and nothing deleted.
		both()
		for _, bad := range []struct {
			args []string
			says string
		}{
			{[]string{"zone=invalid", "ct_nw_src=10.1.1.1", "ct_nw_dst=10.1.1.1"}, "failed to parse zone"},
			{[]string{"zone=1", "ct_nw_src=10.1.1.1,invalid=invalid", "ct_nw_dst=10.1.1.1"}, "invalid conntrack tuple field: invalid"},
			{[]string{"zone=1", "ct_nw_src=invalid", "ct_nw_dst=10.1.1.1"}, "failed to parse field ct_nw_src"},
			{[]string{"zone=1", "ct_nw_src=10.1.1.1", "ct_nw_dst=10.1.1.1", "invalid"}, "invalid arguments"},
			// ovs-appctl refuses this one before dpctl reads it ("command
			// takes at most 6 arguments"); xswitch's reading refuses it.
			{[]string{"zone=1", "mark=1", "labels=1", "ct_nw_src=10.1.1.1", "ct_nw_dst=10.1.1.1", "invalid", "invalid"}, "invalid arguments"},
			{[]string{"mark=invalid"}, "failed to parse mark"},
			{[]string{"labels=invalid"}, "failed to parse labels"},
		} {
			if stderr, _ := r.d.xErr(t, append([]string{"flush-conntrack"}, r.fromOVS(bad.args)...)...); !strings.Contains(stderr, bad.says) {
				t.Errorf("flush-conntrack %s: %q, want it to say %q", strings.Join(bad.args, " "), stderr, bad.says)
			}
		}
		from("10.1.1.1,", from1, from2)

		// A zone.
		flush("zone=5")
		from("10.1.1.1,", from1)
		r.inject(t, 2, udp2)
		from("10.1.1.1,", from1, from2)
		flush("zone=0")
		from("10.1.1.1,", from2)
		flush()
		from("10.1.1.1,")

		// OVS's other forms name the datapath: here, a bridge.
		both()
		r.d.x(t, "dpctl/flush-conntrack", r.br, "zone=5")
		from("10.1.1.1,", from1)
		r.d.x(t, "flush-conntrack", r.br)
		from("10.1.1.1,")
		if stderr, _ := r.d.xErr(t, "flush-conntrack", "one-bad-dp"); !strings.Contains(stderr, `no bridge "one-bad-dp"`) {
			t.Errorf("flush-conntrack one-bad-dp: %q, want it to name the bridge that is not there", stderr)
		}
	})
}

// injectCounted sends frames into port n, as inject does, and waits
// until the rule whose dump-flows line holds marker has counted them:
// until the tracker has seen them.
func (r *rig) injectCounted(t testing.TB, n int, marker string, frames ...[]byte) {
	t.Helper()
	before := flowPackets(t, r.d, r.br, marker)
	r.inject(t, n, frames...)
	deadline := time.Now().Add(3 * time.Second)
	for flowPackets(t, r.d, r.br, marker) < before+len(frames) {
		if time.Now().After(deadline) {
			t.Fatalf("the rule of %q counted %d of the %d frames sent into port %d",
				marker, flowPackets(t, r.d, r.br, marker)-before, len(frames), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConntrackLimitByZone is OVS's "conntrack - limit by zone": a zone's
// limit, its own or the default, caps the connections committed in it
// (the packets beyond it go on uncommitted), ct-get-limits says each
// zone's limit and count in OVS's words, ct-del-limits takes a zone's
// own limit or the default away, and limits out of range are refused.
// Where OVS goes on with limits in its database (ovs-vsctl
// set-zone-limit), xswitch keeps those ct-set-limits sets in its
// configuration: a restart brings them back, and not the connections.
func TestConntrackLimitByZone(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,udp,action=ct(zone=1,commit),2
priority=100,in_port=2,udp,action=ct(zone=3,commit),1
`)
		const port1, port2 = "udp,in_port=1 actions", "udp,in_port=2 actions"
		limits := func(want string, args ...string) {
			t.Helper()
			if got := r.d.x(t, append([]string{"ct-get-limits"}, args...)...); got != want {
				t.Errorf("ct-get-limits %s:\n%s\nwant:\n%s", strings.Join(args, " "), got, want)
			}
		}
		// OVS says "invalid default limit" and "failed to parse field
		// limit"; xswitch names the value and the range.
		for _, bad := range []struct{ arg, says string }{
			{"default=-1", `bad default limit "-1": want a number 0-4294967295`},
			{"default=4294967296", `bad default limit "4294967296": want a number 0-4294967295`},
			{"zone=1,limit=-1", `bad limit "-1": want a number 0-4294967295`},
			{"zone=1,limit=4294967296", `bad limit "4294967296": want a number 0-4294967295`},
		} {
			if stderr, _ := r.d.xErr(t, "ct-set-limits", bad.arg); !strings.Contains(stderr, bad.says) {
				t.Errorf("ct-set-limits %s: %q, want it to say %q", bad.arg, stderr, bad.says)
			}
		}
		limits("default limit=0\n")

		r.d.x(t, "ct-set-limits", "zone=1,limit=0")
		r.injectCounted(t, 1, port1, r.udpPacket(t, 1, 2, 1, 2))
		limits("default limit=0\nzone=1,limit=0,count=0\n")
		r.d.x(t, "ct-del-limits", "zone=1")
		r.d.x(t, "ct-set-limits", "default=3")
		limits("default limit=3\n")

		udpFrom := func(src, dst, n int) [][]byte {
			var frames [][]byte
			for i := 2; i < 2+n; i++ {
				frames = append(frames, r.udpPacket(t, src, dst, 1, uint16(i)))
			}
			return frames
		}
		r.injectCounted(t, 1, port1, udpFrom(1, 2, 5)...)
		limits("default limit=3\nzone=1,limit=3,count=3\n", "zone=1")
		r.injectCounted(t, 2, port2, udpFrom(3, 4, 5)...)
		limits("default limit=3\nzone=1,limit=3,count=3\nzone=3,limit=3,count=3\n", "zone=1,3")

		r.d.x(t, "flush-conntrack")
		r.d.x(t, "ct-set-limits", "default=10", "zone=1,limit=5", "zone=2,limit=3", "zone=3,limit=3", "zone=4,limit=15")
		r.d.x(t, "ct-del-limits", "zone=2,4,5")
		limits("default limit=10\nzone=1,limit=5,count=0\nzone=2,limit=10,count=0\nzone=3,limit=3,count=0\nzone=4,limit=10,count=0\n", "zone=1,2,3,4")
		r.injectCounted(t, 1, port1, udpFrom(1, 2, 9)...)
		limits("default limit=10\nzone=1,limit=5,count=5\nzone=2,limit=10,count=0\nzone=3,limit=3,count=0\nzone=4,limit=10,count=0\nzone=5,limit=10,count=0\n", "zone=1,2,3,4,5")
		limits("default limit=10\nzone=1,limit=5,count=5\nzone=3,limit=3,count=0\n")
		r.waitConntrackWith(t, "orig=(src=10.1.1.1,", nil,
			"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),zone=1",
			"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=3),reply=(src=10.1.1.2,dst=10.1.1.1,sport=3,dport=1),zone=1",
			"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=4),reply=(src=10.1.1.2,dst=10.1.1.1,sport=4,dport=1),zone=1",
			"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=5),reply=(src=10.1.1.2,dst=10.1.1.1,sport=5,dport=1),zone=1",
			"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=6),reply=(src=10.1.1.2,dst=10.1.1.1,sport=6,dport=1),zone=1")
		r.injectCounted(t, 2, port2, udpFrom(3, 4, 5)...)
		limits("default limit=10\nzone=1,limit=5,count=5\nzone=3,limit=3,count=3\n", "zone=1,3")
		r.waitConntrackWith(t, "orig=(src=10.1.1.3,", nil,
			"udp,orig=(src=10.1.1.3,dst=10.1.1.4,sport=1,dport=2),reply=(src=10.1.1.4,dst=10.1.1.3,sport=2,dport=1),zone=3",
			"udp,orig=(src=10.1.1.3,dst=10.1.1.4,sport=1,dport=3),reply=(src=10.1.1.4,dst=10.1.1.3,sport=3,dport=1),zone=3",
			"udp,orig=(src=10.1.1.3,dst=10.1.1.4,sport=1,dport=4),reply=(src=10.1.1.4,dst=10.1.1.3,sport=4,dport=1),zone=3")

		// The default's own verbs.
		r.d.x(t, "ct-set-limits", "default=15", "zone=4,limit=4")
		limits("default limit=15\nzone=4,limit=4,count=0\n", "zone=4")
		r.d.x(t, "ct-del-limits", "default")
		limits("default limit=0\nzone=4,limit=4,count=0\n", "zone=4")
		r.d.x(t, "ct-set-limits", "default=15")
		limits("default limit=15\nzone=4,limit=4,count=0\n", "zone=4")
		r.d.x(t, "ct-del-limits", "default", "zone=4")
		limits("default limit=0\nzone=4,limit=0,count=0\n", "zone=4")

		// A restart keeps the limits, not the connections.
		limits("default limit=0\nzone=1,limit=5,count=5\nzone=3,limit=3,count=3\n")
		r.d.stop(t, syscall.SIGTERM)
		r.d.start(t)
		limits("default limit=0\nzone=1,limit=5,count=0\nzone=3,limit=3,count=0\n")
	})
}

// TestConntrackSYNFloodFillsTheTable is OVS's "conntrack - get_nconns and
// get/set_maxconns" with a SYN flood: behind a stateful firewall, with
// the table held to 100 connections (ct-set-maxconns), 1000 SYNs of a
// made-up host fill it; the commits past it are refused and counted, the
// connection established before goes on carrying data, and new ones
// fail until flush-conntrack takes the flood's away.
func TestConntrackSYNFloodFillsTheTable(t *testing.T) {
	metrics := freeTCPAddr(t)
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,tcp,action=ct(commit),2
priority=100,in_port=2,tcp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=2,tcp,ct_state=+trk+est,action=1
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		want := func(verb, out string) {
			t.Helper()
			if got := r.d.x(t, verb); got != out {
				t.Errorf("%s printed %q, want %q", verb, got, out)
			}
		}
		want("ct-get-maxconns", "3000000\n")
		want("ct-get-nconns", "0\n")
		serveTCP(t, ns1.ns, ns1.addr, 80, "ns1")
		held, err := dialTCP(ns0.ns, 0, net.JoinHostPort(ns1.addr, "80"))
		if err != nil {
			t.Fatalf("TCP through the firewall: %v", err)
		}
		defer held.Close()
		if got, err := exchange(held); err != nil || got != "ns1" {
			t.Fatalf("TCP through the firewall: answer %q, %v", got, err)
		}
		want("ct-get-nconns", "1\n")

		if stderr, _ := r.d.xErr(t, "ct-set-maxconns", "one-bad-dp", "10"); !strings.Contains(stderr, `no bridge "one-bad-dp"`) {
			t.Errorf("ct-set-maxconns one-bad-dp 10: %q, want it to name the bridge that is not there", stderr)
		}
		if got := r.d.x(t, "ct-set-maxconns", "100"); got != "setting maxconns successful\n" {
			t.Errorf("ct-set-maxconns 100 printed %q", got)
		}
		want("ct-get-maxconns", "100\n")

		const flood = 1000
		var syns [][]byte
		for i := range flood {
			syns = append(syns, r.ovsPacket(t, 100, 2, &layers.TCP{SrcPort: layers.TCPPort(10000 + i), DstPort: 80, Seq: uint32(i), SYN: true, Window: 64240}))
		}
		r.injectCounted(t, 1, "tcp,in_port=1 actions", syns...)
		want("ct-get-nconns", "100\n")
		refused := scrapeMetrics(t, metrics).value(t, "xswitch_conntrack_refused_total", map[string]string{"reason": "full"})
		if refused != flood-99 {
			t.Errorf("xswitch_conntrack_refused_total{reason=\"full\"} is %v, want the %d SYNs past the 99 the table had room for", refused, flood-99)
		}
		for range 3 {
			if got, err := exchange(held); err != nil || got != "ns1" {
				t.Errorf("the connection established before the flood, with the table full: answer %q, %v", got, err)
			}
		}
		// Its SYN goes out uncommitted; the SYN-ACK finds no connection.
		wantNoAnswer(t, ns0.ns, ns1.addr, 80)

		r.d.x(t, "flush-conntrack", "ct_nw_src="+r.n.ipv4(100))
		want("ct-get-nconns", "1\n")
		wantAnswer(t, ns0.ns, ns1.addr, 80, "ns1")
		if got, err := exchange(held); err != nil || got != "ns1" {
			t.Errorf("the connection established before the flood, after it: answer %q, %v", got, err)
		}
		r.d.x(t, "flush-conntrack")
		want("ct-get-nconns", "0\n")
		want("ct-get-maxconns", "100\n")
	}, "--metrics-addr", metrics)
}

// tcpSegment is a TCP segment from made-up station src to dst (see
// ovsStation), ports sport to dport, with flags from "SAFRP" (SYN, ACK,
// FIN, RST, PSH), window 64240 and no options.
func (r *rig) tcpSegment(t testing.TB, src, dst int, sport, dport uint16, seq, ack uint32, flags string, payload string) []byte {
	t.Helper()
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: seq, Ack: ack, Window: 64240,
		SYN: strings.Contains(flags, "S"), ACK: strings.Contains(flags, "A"), FIN: strings.Contains(flags, "F"),
		RST: strings.Contains(flags, "R"), PSH: strings.Contains(flags, "P")}
	return r.ovsPacket(t, src, dst, tcp, gopacket.Payload(payload))
}

// TestConntrackInvalidTCP: in a TCP connection between two made-up
// stations, built of raw frames through a stateful firewall, a segment
// beyond the receiver's window and RSTs with a sequence number out of it
// are +inv, dropped and counted by the rule of invalid frames, while the
// connection goes on: a segment in the window passes, and a RST in it
// too. With sequence checking off (ct-disable-tcp-seq-chk, as OVS's) the
// same out-of-window segments of another connection pass.
func TestConntrackInvalidTCP(t *testing.T) {
	const a, b = 11, 12 // made-up stations 10.1.1.11 behind port 1, 10.1.1.12 behind port 2
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,tcp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=1,tcp,ct_state=+trk+new,action=ct(commit),2
priority=100,in_port=1,tcp,ct_state=+trk+est,action=2
priority=100,in_port=2,tcp,ct_state=+trk+est,action=1
priority=200,tcp,ct_state=+trk+inv,action=drop
`)
		macA, _ := r.ovsStation(a)
		macB, _ := r.ovsStation(b)
		arrivals := map[int]*frameCounter{1: startCounting(t, r.hosts[1].ns, macA), 2: startCounting(t, r.hosts[0].ns, macB)}
		arrived := map[int]int{1: 0, 2: 0}
		invalid := 0
		// send sends a segment into port in and checks that it crosses the
		// bridge, or is dropped as +inv.
		send := func(what string, in int, frame []byte, passes bool) {
			t.Helper()
			r.injectCounted(t, in, "tcp,ct_state=-trk actions", frame)
			if passes {
				arrived[in]++
			} else {
				invalid++
			}
			deadline := time.Now().Add(time.Second)
			for arrivals[in].peek() < arrived[in] && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // for one that should not arrive
			if got := arrivals[in].peek(); got != arrived[in] {
				t.Errorf("%s: %d frames from port %d's station arrived, want %d (the segment passes: %v)", what, got, in, arrived[in], passes)
				arrived[in] = got
			}
			if got := flowPackets(t, r.d, r.br, "ct_state=+inv+trk actions=drop"); got != invalid {
				t.Errorf("%s: the rule of invalid frames counted %d, want %d", what, got, invalid)
				invalid = got
			}
		}
		// open makes connection sport->80: a's ISN 1000, b's 5000, 5
		// bytes each way.
		open := func(sport uint16) {
			t.Helper()
			send("SYN", 1, r.tcpSegment(t, a, b, sport, 80, 1000, 0, "S", ""), true)
			send("SYN-ACK", 2, r.tcpSegment(t, b, a, 80, sport, 5000, 1001, "SA", ""), true)
			send("ACK", 1, r.tcpSegment(t, a, b, sport, 80, 1001, 5001, "A", ""), true)
			send("data", 1, r.tcpSegment(t, a, b, sport, 80, 1001, 5001, "PA", "hello"), true)
			send("data back", 2, r.tcpSegment(t, b, a, 80, sport, 5001, 1006, "PA", "howdy"), true)
		}
		far := uint32(1 << 30) // beyond any window, ahead or (wrapping) behind
		open(40000)
		send("a segment beyond the window", 1, r.tcpSegment(t, a, b, 40000, 80, 1006+far, 5006, "PA", "later"), false)
		send("a RST beyond the window", 1, r.tcpSegment(t, a, b, 40000, 80, 1006+far, 0, "R", ""), false)
		send("a RST from behind the window", 2, r.tcpSegment(t, b, a, 80, 40000, 5006-far, 0, "R", ""), false)
		send("a segment in the window, after those", 1, r.tcpSegment(t, a, b, 40000, 80, 1006, 5006, "PA", "again"), true)
		send("a RST in the window", 1, r.tcpSegment(t, a, b, 40000, 80, 1011, 0, "R", ""), true)

		r.d.x(t, "ct-disable-tcp-seq-chk")
		open(40001)
		send("a segment beyond the window, unchecked", 1, r.tcpSegment(t, a, b, 40001, 80, 1006+far, 5006, "PA", "later"), true)
		send("a RST from behind the window, unchecked", 2, r.tcpSegment(t, b, a, 80, 40001, 5006-far, 0, "R", ""), true)
		r.d.x(t, "ct-enable-tcp-seq-chk")
	})
}

// ctTimeouts is the seconds each UDP connection of dump-conntrack -s has
// left, by its original source port.
func (r *rig) ctTimeouts(t testing.TB) map[int]int {
	t.Helper()
	left := map[int]int{}
	line := regexp.MustCompile(`^udp,orig=\(src=[^,]+,dst=[^,]+,sport=(\d+),.*,timeout=(\d+)`)
	for _, l := range strings.Split(r.d.x(t, "dump-conntrack", "-s"), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			left[atoi(m[1])] = atoi(m[2])
		}
	}
	return left
}

func atoi(s string) int { return int(atou(s)) }

// TestConntrackIdleConnectionsExpire: a UDP connection that has seen
// both ways lives OVS's 30 s without a packet (its default "UDP
// multiple" timeout), as dump-conntrack -s counts down, and not longer:
// behind a firewall that lets in only established UDP, the reply of a
// connection idle for 22 s passes, and that of one idle for 32 s is new
// and dropped; the sweep has taken the expired one out of the table. The
// daemon has no flag to shorten the timeouts, so this test takes 32 s,
// its two runs side by side.
func TestConntrackIdleConnectionsExpire(t *testing.T) {
	const a, b = 11, 12 // made-up stations behind ports 1 and 2
	inBothModesAtOnce(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,udp,action=ct(commit),2
priority=100,in_port=2,udp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=2,udp,ct_state=+trk+est,action=1
priority=100,in_port=2,udp,ct_state=+trk+new,action=drop
`)
		const established, dropped = "udp,ct_state=+est+trk,in_port=2 actions", "udp,ct_state=+new+trk,in_port=2 actions"
		// open makes connection sport->9 with a datagram each way.
		open := func(sport uint16) {
			t.Helper()
			r.injectCounted(t, 1, "udp,in_port=1 actions", r.udpPacket(t, a, b, sport, 9))
			r.injectCounted(t, 2, established, r.udpPacket(t, b, a, 9, sport))
		}
		start := time.Now()
		open(1000)
		time.Sleep(10 * time.Second)
		open(1001)
		left := r.ctTimeouts(t)
		if l := left[1000]; l < 17 || l > 20 {
			t.Errorf("10 s after its last packet, the first connection has %d s left, want about 20: %v", l, left)
		}
		if l := left[1001]; l < 28 || l > 30 {
			t.Errorf("just after its last packet, the second connection has %d s left, want about 30: %v", l, left)
		}

		time.Sleep(32*time.Second - time.Since(start))
		left = r.ctTimeouts(t)
		if _, ok := left[1000]; ok || len(left) != 1 || left[1001] > 8 {
			t.Errorf("32 s after the first connection's last packet, 22 s after the second's, dump-conntrack -s has %v, want only the second's, with at most 8 s left", left)
		}
		r.injectCounted(t, 2, established, r.udpPacket(t, b, a, 9, 1001))
		r.injectCounted(t, 2, dropped, r.udpPacket(t, b, a, 9, 1000))
	})
}
