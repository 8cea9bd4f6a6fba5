package test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// mplsFrame is a UDP datagram from src to dst over IPv4, of TOS tos and
// TTL ttl, under the label stack entries labels (none: a plain IPv4
// frame), serialized from scratch.
func mplsFrame(t testing.TB, dst, src net.HardwareAddr, tos, ttl uint8, labels ...layers.MPLS) []byte {
	t.Helper()
	typ := layers.EthernetTypeIPv4
	if len(labels) > 0 {
		typ = layers.EthernetTypeMPLSUnicast
	}
	ls := []gopacket.SerializableLayer{&layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: typ}}
	for i := range labels {
		ls = append(ls, &labels[i])
	}
	ip := &layers.IPv4{Version: 4, TOS: tos, TTL: ttl, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IP{10, 99, 0, 1}, DstIP: net.IP{10, 99, 0, 2}}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 5000}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	ls = append(ls, ip, udp, gopacket.Payload("a datagram under labels, long enough for no padding"))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

// TestMPLSOnTheWire sends frames from made-up stations between two
// namespaces through rules that match on mpls_label and mpls_bos, pop a
// label, push one, copy a label's TTL into the IPv4 header under it, and
// drop the labels no rule names: a labelled frame arrives popped, as the
// IPv4 frame under its label; an IPv4 frame arrives with the label
// pushed, its TC, TTL and bottom of stack as OVS works them out of the IP
// header; the rule of the frame's label is the one that takes it; every
// frame byte for byte, with the fast path on (which leaves MPLS to user
// space, and says so) and off.
func TestMPLSOnTheWire(t *testing.T) {
	onTheWire(t, func(t *testing.T, w *wire) {
		popped, passed, dropped, pushed, copied := madeUp(1), madeUp(2), madeUp(3), madeUp(4), madeUp(5)
		w.addFlows(t, fmt.Sprintf(`priority=100,in_port=%[1]d,mpls,mpls_label=100,mpls_bos=1 actions=pop_mpls:0x0800,output:%[2]d
priority=100,in_port=%[1]d,mpls,mpls_label=150 actions=copy_ttl_in,pop_mpls:0x0800,output:%[2]d
priority=100,in_port=%[1]d,mpls,mpls_label=200 actions=output:%[2]d
priority=90,in_port=%[1]d,mpls actions=drop
priority=100,in_port=%[1]d,ip,dl_src=%[3]s,nw_dst=10.99.0.2 actions=push_mpls:0x8847,set_mpls_label:300,output:%[2]d
priority=0 actions=NORMAL
`, w.inA, w.inB, pushed))
		lse := func(label uint32, tc uint8, bottom bool, ttl uint8) layers.MPLS {
			return layers.MPLS{Label: label, TrafficClass: tc, StackBottom: bottom, TTL: ttl}
		}
		send := map[string][]byte{
			"popped":  mplsFrame(t, w.bMAC, popped, 0x10, 33, lse(100, 2, true, 9)),
			"passed":  mplsFrame(t, w.bMAC, passed, 0, 33, lse(200, 1, false, 7), lse(201, 0, true, 7)),
			"dropped": mplsFrame(t, w.bMAC, dropped, 0, 33, lse(250, 0, true, 9)),
			// DSCP 46: TC 6, the DSCP's low bits, as OVS takes them.
			"pushed": mplsFrame(t, w.bMAC, pushed, 0xb8, 17),
			"copied": mplsFrame(t, w.bMAC, copied, 0, 33, lse(150, 0, true, 77)),
		}
		want := map[string][]byte{
			"popped": mplsFrame(t, w.bMAC, popped, 0x10, 33),
			"passed": send["passed"],
			"pushed": mplsFrame(t, w.bMAC, pushed, 0xb8, 17, lse(300, 6, true, 17)),
			// The label's TTL in the IPv4 header, its checksum right.
			"copied": mplsFrame(t, w.bMAC, copied, 0, 77),
		}
		if tr := w.d.x(t, "trace", w.br, fmt.Sprintf("in_port=%d,mpls,mpls_label=200", w.inA)); w.fastPath &&
			!strings.Contains(tr, "no (an MPLS frame, which the program leaves to user space)") {
			t.Errorf("trace of a labelled frame does not say the fast path leaves it to user space:\n%s", tr)
		}
		stationFrames(t, w.a.ns, w.b.ns, []string{"popped", "passed", "dropped", "pushed", "copied"}, send, want)
	})
}
