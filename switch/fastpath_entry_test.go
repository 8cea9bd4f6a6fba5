package vswitch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/testenv"
)

const (
	xdpDrop     = 1
	xdpPass     = 2
	xdpRedirect = 4
)

// fastPathProgram is the XDP fast path loaded for frames from OpenFlow
// port 1, with every port of tx_ports the loopback device: BPF_PROG_RUN
// does not send, it says what the program would do and hands back the
// frame as it left it.
func fastPathProgram(tb testing.TB) *bpf.FastpathPort {
	tb.Helper()
	testenv.RequireRoot(tb)
	objs, err := bpf.LoadFastpathProgram(bpf.FastpathConfig{InPort: 1, MaxFrameLen: 1 << 16, SocketQueues: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	const loopback = 1
	for slot := range uint32(8) {
		if err := objs.TxPorts.Put(slot, uint32(loopback)); err != nil {
			tb.Fatalf("tx_ports[%d] = lo: %v", slot, err)
		}
	}
	return objs
}

// randomOffloadPipeline is one table of rules with the actions the fast
// path carries, and some it does not: a few rewrites, then where the
// frame goes.
func randomOffloadPipeline(rnd *rand.Rand) []string {
	var flows []string
	for range 1 + rnd.IntN(4) {
		var actions []string
		// IP rewrites need an IP match.
		udp := rnd.IntN(4) != 0
		udp6 := udp && rnd.IntN(3) == 0
		kinds := 6
		if udp {
			kinds = 14
		}
		for range rnd.IntN(4) {
			rewrite := randomRewrite(rnd, kinds)
			if udp6 && (strings.HasPrefix(rewrite, "mod_nw_src") || strings.HasSuffix(rewrite, "->ip_dst")) {
				rewrite = "mod_tp_dst:" + strconv.Itoa(rnd.IntN(65536)) // IPv4's address, which IPv6 has not
			}
			actions = append(actions, rewrite)
		}
		switch rnd.IntN(8) {
		case 7:
			actions = append(actions, "group:1") // randomGroup's
			if rnd.IntN(3) == 0 {
				actions = append(actions, randomRewrite(rnd, kinds), "output:2") // after the group's copies
			}
		case 0, 1:
			actions = append(actions, "NORMAL")
		case 2, 3:
			actions = append(actions, fmt.Sprintf("output:%d", 2+rnd.IntN(2)))
		case 4:
			actions = append(actions, "IN_PORT")
		case 5:
			actions = append(actions, "output:2,output:3") // two outputs: user space's
		case 6:
			if len(actions) == 0 {
				actions = []string{"drop"}
			}
		}
		if rnd.IntN(4) == 0 {
			// Through one of differentialMeters: first, in place of a
			// drop, which no other action may accompany.
			meter := fmt.Sprintf("meter:%d", 1+rnd.IntN(3))
			if len(actions) == 1 && actions[0] == "drop" {
				actions = nil
			}
			actions = append([]string{meter}, actions...)
		}
		match := ""
		switch rnd.IntN(3) {
		case 0:
			match = fmt.Sprintf("dl_dst=02:00:00:00:00:%02x,", 1+rnd.IntN(3))
		case 1:
			match = "dl_vlan=0xffff,"
		}
		switch {
		case udp6:
			match += "udp6,"
		case udp:
			match += "udp,"
		}
		flows = append(flows, fmt.Sprintf("priority=%d,%sactions=%s", rnd.IntN(3), match, strings.Join(actions, ",")))
	}
	return flows
}

// randomRewrite is one of the rewrites the fast path carries, of the
// first kinds (6: those of frames that need not be IP).
func randomRewrite(rnd *rand.Rand, kinds int) string {
	switch rnd.IntN(kinds) {
	case 0:
		return fmt.Sprintf("mod_dl_src:02:00:00:00:00:%02x", rnd.IntN(256))
	case 1:
		return fmt.Sprintf("set_field:00:00:00:00:%02x:00/00:00:00:00:ff:00->eth_dst", rnd.IntN(256))
	case 2:
		return []string{"push_vlan:0x8100", "push_vlan:0x88a8"}[rnd.IntN(2)]
	case 3:
		return "strip_vlan"
	case 4:
		return fmt.Sprintf("mod_vlan_vid:%d", rnd.IntN(4096))
	case 5:
		return fmt.Sprintf("mod_vlan_pcp:%d", rnd.IntN(8))
	case 6:
		return fmt.Sprintf("mod_nw_src:10.%d.%d.%d", rnd.IntN(256), rnd.IntN(256), rnd.IntN(256))
	case 7:
		return fmt.Sprintf("set_field:%d.0.0.0/255.0.0.0->ip_dst", rnd.IntN(256))
	case 8:
		return fmt.Sprintf("mod_tp_src:%d", rnd.IntN(65536))
	case 9:
		return fmt.Sprintf("set_field:0x%x/0xff00->udp_dst", rnd.IntN(65536))
	case 10:
		return "dec_ttl"
	case 11:
		return fmt.Sprintf("mod_nw_ttl:%d", rnd.IntN(256))
	case 12:
		return fmt.Sprintf("mod_nw_tos:%d", rnd.IntN(64)<<2)
	}
	return fmt.Sprintf("mod_nw_ecn:%d", rnd.IntN(4))
}

// randomGroup is group 1, which randomOffloadPipeline's rules may send
// to: of any type, each bucket rewriting (IP rewrites leave other frames
// alone) and sending to port 2 or 3; a fast failover bucket watches a
// port.
func randomGroup(rnd *rand.Rand) string {
	typ := []string{"all", "select", "indirect", "ff"}[rnd.IntN(4)]
	n := 1 + rnd.IntN(3)
	if typ == "indirect" {
		n = 1
	}
	g := "group_id=1,type=" + typ
	for range n {
		var actions []string
		if typ == "ff" {
			actions = append(actions, fmt.Sprintf("watch_port:%d", 1+rnd.IntN(3)))
		}
		for range rnd.IntN(3) {
			actions = append(actions, randomRewrite(rnd, 14))
		}
		actions = append(actions, fmt.Sprintf("output:%d", 2+rnd.IntN(2)))
		g += ",bucket=" + strings.Join(actions, ",")
	}
	return g
}

// withRandomGroup is the table of flows with randomGroup's group 1.
func withRandomGroup(t testing.TB, rnd *rand.Rand, flows ...string) *flow.Table {
	t.Helper()
	g, err := flow.ParseGroup(randomGroup(rnd), nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := flow.NewGroupTable().Add(g, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A version of its own: followers of tables (tableReaders) take a
	// version's changes from the version they followed, as the one it
	// was made from, and test tables of one number are unrelated.
	return flow.NewTable(rules(t, flows...).Entries(), 1000+uniqueVersions.Add(2)).WithGroups(groups)
}

// uniqueVersions numbers withRandomGroup's tables, two by two, as
// WithGroups takes the next number, and past those of other test tables.
var uniqueVersions atomic.Uint64

// differentialMeters are the meters randomOffloadPipeline's rules send
// frames through: one whose rate no frame exceeds, one whose dscp_remark
// band every frame exceeds, one whose drop band every frame exceeds
// (setDifferentialMeters puts their bands' times an hour ahead), so that
// both paths take the same band whenever they run a frame.
var differentialMeters = []string{
	"meter=1 kbps bands=type=drop rate=4000000000",
	"meter=2 pktps bands=type=dscp_remark rate=1 prec_level=1",
	"meter=3 pktps bands=type=drop rate=1",
}

// setDifferentialMeters gives mb differentialMeters, meters 2 and 3
// exceeded for the next hour.
func setDifferentialMeters(t *testing.T, mb *meterBank) {
	t.Helper()
	if err := mb.set(meterTable(t, differentialMeters...)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{2, 3} {
		mb.slots[mb.slot(id)].Bands[0].Tat = uint64(monoAt(time.Now()) + int64(time.Hour))
	}
}

// TestFastPathDoesWhatUserSpaceDoes is the fast path's differential test:
// for random pipelines and frames, whenever a decision has a fast path
// entry, the XDP program running that entry on the frame sends out of
// the same port the very bytes user space sent, or drops it where user
// space sent nothing.
func TestFastPathDoesWhatUserSpaceDoes(t *testing.T) {
	objs := fastPathProgram(t)
	const generation = 1
	if err := objs.State.Put(uint32(0), bpf.FastpathFpState{Generation: generation}); err != nil {
		t.Fatal(err)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	var carried, redirected, dropped, frames, ipRewrites, ip6Rewrites, grouped, metered int
	for seed := range uint64(150) {
		rnd := rand.New(rand.NewPCG(seed, 13))
		text := randomOffloadPipeline(rnd)
		f, ports := vlanForwarder(t, trunk(), trunk(), access(10))
		for _, p := range f.ports {
			p.takesRedirects.Store(true)
		}
		f.flows.Publish(withRandomGroup(t, rnd, text...))
		// The program's meters, in maps of its own, are user space's.
		setDifferentialMeters(t, f.meters)
		for slot := range uint32(len(differentialMeters)) {
			if err := objs.Meters.Put(slot, f.meters.slots[slot]); err != nil {
				t.Fatal(err)
			}
		}
		// Stations for NORMAL to resolve: 2 on port 2 in VLANs 0, 10
		// and 20; 3 on port 3, the access port of VLAN 10.
		send(f, ports, 1, frame(broadcast, mac(2), "hello"), tagged(10, frame(broadcast, mac(2), "hello")),
			tagged(20, frame(broadcast, mac(2), "hello")))
		send(f, ports, 2, frame(broadcast, mac(3), "hello"))
		for _, p := range ports {
			p.Transmitted()
		}
		for range 8 {
			in := frame(mac(byte(1+rnd.IntN(3))), mac(1), "payload of the frame")
			ttl := []uint8{0, 1, 2, 64, 64, 255}[rnd.IntN(6)]
			sport, dport := uint16(rnd.IntN(65536)), uint16(rnd.IntN(65536))
			switch rnd.IntN(6) {
			case 0, 1, 2:
				in = udpFrame(t, mac(byte(1+rnd.IntN(3))), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2),
					sport, dport, []byte("payload of the frame"))
				ip := header.IPv4(in[header.EthernetLen:])
				ip.SetTTL(ttl) // and the header checksum with it
				ip.SetChecksum(ip.ComputeChecksum())
			case 3, 4:
				in = ipFrame(t, true, 1, byte(1+rnd.IntN(3)), &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)},
					[]byte("payload of the frame"))
				header.IPv6(in[header.EthernetLen:]).SetHopLimit(ttl)
			}
			if rnd.IntN(2) == 0 {
				// PCP and DEI, which the key does not keep, and the VID.
				in = tagged(uint16(rnd.IntN(16))<<12|[]uint16{0, 10, 20}[rnd.IntN(3)], in)
			}
			frames++
			send(f, ports, 0, bytes.Clone(in))
			var sent [][]byte
			var sentOn []int
			for i, p := range ports {
				for _, fr := range p.Transmitted() {
					sent, sentOn = append(sent, fr), append(sentOn, i)
				}
			}
			var k flow.Key
			if !f.extractor.Extract(in, 1, &k) {
				t.Fatalf("the test frame does not extract: %x", in)
			}
			d, ok := f.decisions.get(f.flows.Load(), &k.Headers)
			if !ok {
				t.Fatalf("no decision for %+v", k.Headers)
			}
			entry, why := f.fastPathEntry(d, &k.Headers, nil)
			if why != "" {
				continue
			}
			carried++
			if len(d.groupHits) > 0 {
				grouped++
			}
			if entry.Ops[0].Type == datapath.OpMeter {
				metered++
			}
			for _, o := range entry.Ops {
				if o.Type == datapath.OpSetL3 || o.Type == datapath.OpSetL4 {
					ipRewrites++
					if k.DlType == flow.EtherTypeIPv6 {
						ip6Rewrites++
					}
					break
				}
			}
			key := bpf.KeyOf(&k.Headers)
			key.Gen = generation
			values := make([]bpf.FastpathFpFlow, cpus)
			for i := range values {
				values[i] = entry
			}
			if err := objs.Flows.Put(key, values); err != nil {
				t.Fatal(err)
			}
			out := make([]byte, len(in)+64)
			opts := &ebpf.RunOptions{Data: in, DataOut: out}
			ret, err := objs.Fastpath.Run(opts)
			if err != nil {
				t.Fatal(err)
			}
			got := opts.DataOut
			context := fmt.Sprintf("pipeline:\n%s\nframe %x\nentry %+v", strings.Join(text, "\n"), in, entry)
			switch {
			case len(sent) > 1:
				t.Fatalf("an entry for a decision that sent %d frames\n%s", len(sent), context)
			case len(sent) == 0:
				if ret != xdpDrop {
					t.Fatalf("user space sent nothing; the fast path's action is %d\n%s", ret, context)
				}
				dropped++
			default:
				if ret != xdpRedirect || int(entry.Out) != sentOn[0] || !bytes.Equal(got, sent[0]) {
					t.Fatalf("user space sent %x on port %d; the fast path (action %d) %x to slot %d\n%s",
						sent[0], sentOn[0]+1, ret, got, entry.Out, context)
				}
				redirected++
			}
			if err := objs.Flows.Delete(key); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d frames: %d decisions with a fast path entry (%d sent, %d dropped; %d rewrite IP or L4 fields, %d of them IPv6, %d through a group, %d metered)",
		frames, carried, redirected, dropped, ipRewrites, ip6Rewrites, grouped, metered)
	if redirected < frames/5 || dropped == 0 || ipRewrites < frames/20 || ip6Rewrites < frames/100 || grouped < frames/50 || metered < frames/20 {
		t.Errorf("only %d of %d decisions sent and %d dropped in the fast path: the test hardly tests it", redirected, frames, dropped)
	}
}

// TestFastPathMissesGoToUserSpace: a frame without an entry, or with one
// of another generation, or to a port gone from tx_ports, is passed on to
// user space untouched; on a queue without a socket, to the host.
func TestFastPathMissesGoToUserSpace(t *testing.T) {
	objs := fastPathProgram(t)
	if err := objs.State.Put(uint32(0), bpf.FastpathFpState{Generation: 2}); err != nil {
		t.Fatal(err)
	}
	in := frame(mac(2), mac(1), "no entry")
	var k flow.Key
	flow.NewExtractor().Extract(in, 1, &k)
	run := func() uint32 {
		ret, err := objs.Fastpath.Run(&ebpf.RunOptions{Data: in})
		if err != nil {
			t.Fatal(err)
		}
		return ret
	}
	if ret := run(); ret != xdpPass {
		t.Errorf("no entry: action %d, want XDP_PASS", ret)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	stale := make([]bpf.FastpathFpFlow, cpus)
	for i := range stale {
		stale[i] = bpf.FastpathFpFlow{Out: bpf.FPDrop}
	}
	staleKey := bpf.KeyOf(&k.Headers)
	staleKey.Gen = 1
	if err := objs.Flows.Put(staleKey, stale); err != nil {
		t.Fatal(err)
	}
	if ret := run(); ret != xdpPass {
		t.Errorf("an entry of an older generation: action %d, want XDP_PASS", ret)
	}

	// An entry of the current generation to a slot of tx_ports that its
	// interface left (unregistered): user space sends the frame, and
	// counts what its port cannot take.
	current := bpf.KeyOf(&k.Headers)
	current.Gen = 2
	gone := make([]bpf.FastpathFpFlow, cpus)
	for i := range gone {
		gone[i] = bpf.FastpathFpFlow{Out: 9} // fastPathProgram fills slots 0-7
	}
	if err := objs.Flows.Put(current, gone); err != nil {
		t.Fatal(err)
	}
	if ret := run(); ret != xdpPass {
		t.Errorf("an entry to an empty slot of tx_ports: action %d, want XDP_PASS", ret)
	}
	for i := range gone {
		gone[i].Out = 1
	}
	if err := objs.Flows.Put(current, gone); err != nil {
		t.Fatal(err)
	}
	if ret := run(); ret != xdpRedirect {
		t.Fatalf("an entry to slot 1: action %d, want XDP_REDIRECT", ret)
	}

	// The same entry, on a port whose queue 0 has no socket: a queue
	// without a socket is the host's, fast path or not.
	hostOnly, err := bpf.LoadFastpathProgram(bpf.FastpathConfig{InPort: 1, MaxFrameLen: 1 << 16, SocketQueues: 0, Shared: objs.FastpathShared})
	if err != nil {
		t.Fatal(err)
	}
	defer hostOnly.Close()
	if ret, err := hostOnly.Fastpath.Run(&ebpf.RunOptions{Data: in}); err != nil || ret != xdpPass {
		t.Errorf("a frame on a queue without a socket: action %d (%v), want XDP_PASS", ret, err)
	}
}

// TestFastPathMasksTheKey: with the bridge's key mask, one entry serves
// every frame equal to its key under the mask, and no other, whether the
// program masks the key bit by bit or looks up the Ethernet fields alone.
func TestFastPathMasksTheKey(t *testing.T) {
	t.Run("bits", func(t *testing.T) { testMaskedLookup(t, false) })
	t.Run("l2", func(t *testing.T) { testMaskedLookup(t, true) })
}

func testMaskedLookup(t *testing.T, l2 bool) {
	objs := fastPathProgram(t)
	mask := keyMask(rules(t, "actions=NORMAL"))
	if !isL2Mask(mask) {
		t.Fatalf("NORMAL's key mask %+v is not the L2 mask", mask)
	}
	st := bpf.FastpathFpState{Generation: 1, Masked: uint32(bpf.FastpathFpMaskKindFP_MASK_BITS), Mask: bpf.KeyOf(mask)}
	if l2 {
		st = bpf.FastpathFpState{Generation: 1, Masked: uint32(bpf.FastpathFpMaskKindFP_MASK_L2)}
	}
	if err := objs.State.Put(uint32(0), st); err != nil {
		t.Fatal(err)
	}
	udp := func(dst []byte, src net.IP, port uint16) []byte {
		return udpFrame(t, dst, mac(1), src, net.IPv4(10, 0, 0, 2), port, 53, []byte("payload"))
	}
	first := udp(mac(2), net.IPv4(10, 0, 0, 1), 1000)
	var k flow.Key
	flow.NewExtractor().Extract(first, 1, &k)
	masked := (&flow.Key{Headers: k.Headers}).And(&flow.Key{Headers: *mask}).Headers
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	values := make([]bpf.FastpathFpFlow, cpus)
	for i := range values {
		values[i] = bpf.FastpathFpFlow{Out: 1}
	}
	key := bpf.KeyOf(&masked)
	key.Gen = 1
	var err2 error
	if l2 {
		err2 = objs.FlowsL2.Put(key.L2(), values)
	} else {
		err2 = objs.Flows.Put(key, values)
	}
	if err2 != nil {
		t.Fatal(err2)
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		want  uint32
	}{
		{"the frame the entry was made from", first, xdpRedirect},
		{"another source address and port", udp(mac(2), net.IPv4(10, 9, 9, 9), 2000), xdpRedirect},
		{"another destination MAC", udp(mac(3), net.IPv4(10, 0, 0, 1), 1000), xdpPass},
	} {
		ret, err := objs.Fastpath.Run(&ebpf.RunOptions{Data: tc.frame})
		if err != nil {
			t.Fatal(err)
		}
		if ret != tc.want {
			t.Errorf("%s: action %d, want %d", tc.name, ret, tc.want)
		}
	}
}
