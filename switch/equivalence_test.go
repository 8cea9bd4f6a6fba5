package vswitch

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/porttest"
)

// fastPathBed is a forwarder with the fast path, driven one frame at a
// time, and each port's entry into the bridge's XDP fast path,
// run with BPF_PROG_RUN: what the kernel would do with a frame, and then
// what user space does with it, can be compared frame by frame while
// the ports, the MAC table and the table change between frames.
type fastPathBed struct {
	f     *forwarder
	fp    *fastPath
	cls   *flow.Classifier
	ports []*porttest.Port
	bps   []*bridgePort
	progs []*bpf.FastpathPort
}

func newFastPathBed(t *testing.T, macTableSize int, configs ...VLANConfig) *fastPathBed {
	t.Helper()
	testenv.RequireRoot(t)
	dp, err := datapath.NewKernel()
	if err != nil {
		t.Fatal(err)
	}
	bed := newBed(t, dp, macTableSize, configs...)
	const loopback = 1 // BPF_PROG_RUN does not send: any device will do
	for _, bp := range bed.bps {
		objs, err := bpf.LoadFastpathProgram(bpf.FastpathConfig{InPort: bp.ofport, Slot: bp.slot, MaxFrameLen: 1 << 16, SocketQueues: 1,
			RecordKey: true, Shared: dp.Shared()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { objs.Close() })
		if err := dp.Shared().TxPorts.Put(uint32(bp.slot), uint32(loopback)); err != nil {
			t.Fatal(err)
		}
		bed.progs = append(bed.progs, objs)
	}
	return bed
}

// newBed is a forwarder with the fast path over dp, and a port of each
// of configs that takes part in it, but no programs: newFastPathBed adds
// the kernel's, and a datapath in memory needs none.
func newBed(t *testing.T, dp datapath.Datapath, macTableSize int, configs ...VLANConfig) *fastPathBed {
	t.Helper()
	opts := Options{BatchSize: 64, MACTableSize: macTableSize, MACAging: time.Hour, CacheSize: 256}.withDefaults()
	place := firstOf(1, opts)
	fp, err := newFastPath(dp, &place)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.close() })
	place.fp, place.meters = fp, newMeterBank(dp, place.epoch)
	bed := &fastPathBed{fp: fp, cls: flow.NewClassifier()}
	fp.publish(bed.cls, normalTable())
	if bed.f, err = newForwarder(opts, bed.cls, place); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bed.f.stopped = true })
	for i, c := range configs {
		p := porttest.New(fmt.Sprintf("p%d", i+1))
		t.Cleanup(func() { p.Close() })
		bp := &bridgePort{Port: p, ofport: uint16(i + 1), vlan: compileVLAN(c)}
		bp.slot = bed.f.addPort(bp)
		bp.takesRedirects.Store(true)
		bp.fastPathIn.Store(true)
		bed.ports, bed.bps = append(bed.ports, p), append(bed.bps, bp)
	}
	fp.entriesChanged()
	return bed
}

// kernel is what port in's program does with frame: whether an entry
// took it, and then whether it redirected it (to slot out, as out) or
// dropped it, or gave it to user space after all.
type kernelVerdict struct {
	hit, redirected bool
	// punted: an entry took the frame but its connection's operation
	// gave it to user space, as it came.
	punted bool
	slot   uint32
	frame  []byte
}

func (bed *fastPathBed) kernel(t *testing.T, in int, frame []byte) kernelVerdict {
	t.Helper()
	prog := bed.progs[in]
	out := make([]byte, len(frame)+64)
	opts := &ebpf.RunOptions{Data: frame, DataOut: out}
	ret, err := prog.Fastpath.Run(opts)
	if err != nil {
		t.Fatal(err)
	}
	var rec bpf.FastpathFpParsed
	if err := prog.Parsed.Lookup(uint32(0), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Hit == 0 {
		if ret != xdpPass {
			t.Fatalf("a frame no entry took: action %d, want XDP_PASS (to user space)", ret)
		}
		return kernelVerdict{}
	}
	switch ret {
	case xdpPass:
		return kernelVerdict{punted: true}
	case xdpRedirect:
		return kernelVerdict{hit: true, redirected: true, slot: rec.Out, frame: opts.DataOut}
	case xdpDrop:
		return kernelVerdict{hit: true}
	}
	t.Fatalf("an entry's frame: action %d", ret)
	return kernelVerdict{}
}

// userSpace forwards frame from port in and returns what left, and where.
func (bed *fastPathBed) userSpace(in int, frame []byte) (sent [][]byte, on []int) {
	bed.ports[in].Inject(frame)
	forwardAll(bed.f)
	for i, p := range bed.ports {
		for _, fr := range p.Transmitted() {
			sent, on = append(sent, fr), append(on, i)
		}
	}
	return sent, on
}

// TestFastPathAndUserSpaceAgreeThroughEvents is the fast path's property
// test: between frames, random events change what decisions are or what
// they rely on (spanning tree states, ports that stop and start taking
// redirects, stations that move, are evicted or flushed, new tables,
// sweeps); for every frame the kernel would carry, it sends it to the
// port user space sends it to, with the same bytes, or drops it where
// user space sends nothing.
func TestFastPathAndUserSpaceAgreeThroughEvents(t *testing.T) {
	var frames, carried, redirected, dropped int
	events := map[string]int{}
	for seed := range uint64(12) {
		rnd := rand.New(rand.NewPCG(seed, 26))
		// 16 MAC-table slots for 14 stations, each behind a port: sets
		// fill, and evict.
		bed := newFastPathBed(t, 16, trunk(), trunk(), access(10), trunk())
		setDifferentialMeters(t, bed.f.meters)
		stations := make([]station, 14)
		for i := range stations {
			stations[i] = station{mac: []byte{2, 0, 0, 0, byte(seed), byte(i + 1)}, port: i % len(bed.ports), vlan: -1}
			if i%3 != 0 {
				stations[i].vlan = []int{0, 10, 20}[i%3]
			}
		}
		table := []string{"actions=NORMAL"}
		// Traffic comes in flows: most frames are of one of the few
		// flows the stations have going, which change now and then.
		flows := make([][]byte, 10)
		for step := range 2000 {
			if rnd.IntN(50) == 0 {
				events[bed.randomEvent(t, rnd, &table, stations)]++
			}
			i := rnd.IntN(len(flows))
			if flows[i] == nil || rnd.IntN(8) == 0 {
				flows[i] = randomFrame(t, rnd, stations)
			}
			fr := flows[i]
			in := stations[fr[11]-1].port // where its source is now
			k := bed.kernel(t, in, fr)

			sent, on := bed.userSpace(in, bytes.Clone(fr)) // rewritten in place
			frames++
			if !k.hit {
				continue
			}
			carried++
			context := fmt.Sprintf("seed %d step %d, table:\n%s\nframe %x from port %d", seed, step, strings.Join(table, "\n"), fr, in+1)
			switch {
			case !k.redirected && len(sent) > 0:
				t.Fatalf("the fast path dropped what user space sent %d times (to port %d)\n%s", len(sent), on[0]+1, context)
			case !k.redirected:
				dropped++
			case len(sent) != 1:
				t.Fatalf("the fast path sent to slot %d what user space sent %d times\n%s", k.slot, len(sent), context)
			case bed.bps[on[0]].slot != uint16(k.slot) || !bytes.Equal(sent[0], k.frame):
				t.Fatalf("user space sent %x to port %d; the fast path %x to slot %d\n%s", sent[0], on[0]+1, k.frame, k.slot, context)
			default:
				redirected++
			}
		}
	}
	t.Logf("%d frames, %d carried by an entry (%d sent, %d dropped); events %v", frames, carried, redirected, dropped, events)
	if redirected < frames/20 || dropped < frames/50 {
		t.Errorf("only %d of %d frames sent and %d dropped by the fast path: the test hardly tests it", redirected, frames, dropped)
	}
	for _, e := range []string{"stp", "redirects", "table", "flush", "sweep", "move"} {
		if events[e] < 20 {
			t.Errorf("only %d %s events: the test hardly tests them", events[e], e)
		}
	}
}

// station is a MAC address behind a port, in a VLAN whose tag its frames
// carry (-1: untagged).
type station struct {
	mac  []byte
	port int
	vlan int
}

// randomEvent changes the bridge as the control plane, the spanning tree
// or the port watcher would, or moves a station, and says what it
// changed.
func (bed *fastPathBed) randomEvent(t *testing.T, rnd *rand.Rand, table *[]string, stations []station) string {
	f, slot := bed.f, bed.bps[rnd.IntN(len(bed.bps))].slot
	switch rnd.IntN(7) {
	case 6:
		// As Bridge.SetPortLink has it: the groups that watch the port
		// see it go down or up.
		f.ports[slot].linkDown.Store(rnd.IntN(2) == 0)
		f.liveness++
		bed.fp.entriesChanged()
		return "link"
	case 5:
		stations[rnd.IntN(len(stations))].port = rnd.IntN(len(bed.ports))
		return "move"
	case 0:
		f.setSTPState(slot, []stpState{stpForwarding, stpForwarding, stpLearning, stpDiscarding}[rnd.IntN(4)])
		return "stp"
	case 1:
		// As Bridge.watchRedirects finds it.
		f.ports[slot].takesRedirects.Store(rnd.IntN(3) != 0)
		bed.fp.entriesChanged()
		return "redirects"
	case 2:
		*table = []string{"actions=NORMAL"}
		if rnd.IntN(3) != 0 {
			*table = append(randomOffloadPipeline(rnd), "priority=0,actions=NORMAL")
		}
		bed.fp.publish(bed.cls, withRandomGroup(t, rnd, (*table)...))
		return "table"
	case 3:
		f.flushMACs(slot)
		return "flush"
	}
	if err := bed.fp.sweep(f.fdb, f.now()); err != nil {
		t.Fatal(err)
	}
	return "sweep"
}

// randomFrame is a frame between two of the stations, or from one to
// all: plain, or UDP over IPv4 of a few TTLs and ports; tagged in its
// source's VLAN with a PCP and DEI, or untagged. The last byte of each
// station's address is its number, from 1.
func randomFrame(t *testing.T, rnd *rand.Rand, stations []station) (fr []byte) {
	from, to := stations[rnd.IntN(len(stations))], stations[rnd.IntN(len(stations))]
	for rnd.IntN(5) != 0 && to.vlan != from.vlan { // mostly within its VLAN
		to = stations[rnd.IntN(len(stations))]
	}
	src, dst := from.mac, to.mac
	if rnd.IntN(10) == 0 {
		dst = broadcast
	}
	fr = frame(dst, src, "payload of the frame")
	if rnd.IntN(3) != 0 {
		fr = udpFrame(t, dst, src, net.IPv4(10, 0, 0, src[5]), net.IPv4(10, 0, 0, dst[5]),
			uint16(1000+rnd.IntN(2)), 53, []byte("payload of the frame"))
		ip := header.IPv4(fr[header.EthernetLen:])
		ip.SetTTL([]byte{1, 64}[rnd.IntN(2)])
		ip.SetChecksum(ip.ComputeChecksum())
	}
	if from.vlan >= 0 {
		fr = tagged([]uint16{0, 0xa000, 0xb000}[rnd.IntN(3)]|uint16(from.vlan), fr)
	}
	return fr
}

// An entry queued in an older generation, installed after a newer one of
// the same flow (by another thread, say), leaves the newer one be: the
// flow stays in the kernel.
func TestOlderInstallLeavesTheNewerEntry(t *testing.T) {
	bed := newFastPathBed(t, 64, trunk(), trunk())
	a, b := bed.stations()
	fr := frame(b, a, "a to b")
	var older fpPending
	for i := range 2 {
		// The batch's end installs what it queued: keep a copy.
		bed.ports[0].Inject(bytes.Clone(fr))
		q := bed.f.queues[0]
		n := q.q.Receive(bed.f.frames)
		bed.f.forwardFrom(q.slot, bed.f.frames[:n], nil)
		q.q.Release(bed.f.frames[:n])
		if i == 0 {
			if len(bed.f.fpPending) != 0 || len(bed.fp.installed) != 1 {
				t.Fatalf("the first frame's entry: %d pending, %d installed", len(bed.f.fpPending), len(bed.fp.installed))
			}
			for _, r := range bed.fp.installed {
				older = fpPending{key: r.key, flow: r.entry, meta: r}
			}
			bed.fp.bump()
		}
	}
	if k := bed.kernel(t, 0, fr); !k.hit {
		t.Fatal("the newer entry does not take the flow")
	}
	bed.f.fpPending = append(bed.f.fpPending, older)
	bed.f.installPending(bed.f.now())
	if k := bed.kernel(t, 0, fr); !k.hit || !k.redirected || k.slot != uint32(bed.bps[1].slot) {
		t.Errorf("after an older entry's install, the flow's frame: %+v; want it sent to slot %d by the newer entry", k, bed.bps[1].slot)
	}
}

// TestFastPathAndUserSpaceAgreeOnTheNewFields: under tables that match on
// ARP's hardware addresses, the IPv6 flow label, SCTP ports and neighbour
// discovery's target, with masked keys and with exact ones, the kernel
// does with each frame what user space does, or leaves it to user space:
// the parser reads the label and ARP's addresses into bytes of the key
// that their frames do not use (bpf.KeyOf), and leaves neighbour
// discovery to user space. Each frame goes through user space first, to
// install its entry.
func TestFastPathAndUserSpaceAgreeOnTheNewFields(t *testing.T) {
	arp := func(sha, tha [6]byte, op uint16) []byte {
		return linkLayer(nil, header.EtherTypeARP, arpSpec{op: op, sha: sha, tha: tha, spa: [4]byte{10, 0, 0, 1}, tpa: [4]byte{10, 0, 0, 2}}.build(t)[header.EthernetLen:])
	}
	withLabel := func(label uint32, proto layers.IPProtocol, port uint16) []byte {
		s := baseSpec()
		s.v6, s.proto, s.flowLabel, s.tpDst = true, proto, label, port
		return s.build(t)
	}
	sctp4 := func(src, dst uint16) []byte {
		s := baseSpec()
		s.proto, s.tpSrc, s.tpDst = layers.IPProtocolSCTP, src, dst
		return s.build(t)
	}
	nd := func(typ uint8, target byte) []byte {
		return ndSpec{typ: typ, target: [16]byte{0: 0xfd, 15: target}, sll: []byte{2, 0, 0, 0, 0, 1}}.build(t)
	}
	notND := nd(135, 2)
	notND[header.EthernetLen+header.IPv6Len+1] = 1 // code 1: no neighbour discovery, and a bad checksum, which no one checks
	frames := map[string][]byte{
		"arp sha 1":        arp([6]byte{2, 0, 0, 0, 0, 1}, [6]byte{}, 1),
		"arp sha 2":        arp([6]byte{2, 0, 0, 0, 0, 2}, [6]byte{}, 1),
		"arp tha 1":        arp([6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}, 2),
		"arp tha 3":        arp([6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 3}, 2),
		"udp6 label 0x10":  withLabel(0x10, layers.IPProtocolUDP, 53),
		"udp6 label 0x11":  withLabel(0x11, layers.IPProtocolUDP, 53),
		"udp6 label 0x20":  withLabel(0x20, layers.IPProtocolUDP, 53),
		"udp6 label 0x10f": withLabel(0x10f, layers.IPProtocolUDP, 53),
		"sctp6 to 443":     withLabel(0x10, layers.IPProtocolSCTP, 443),
		"sctp to 443":      sctp4(1000, 443),
		"sctp to 444":      sctp4(1000, 444),
		"sctp from 5":      sctp4(0x105, 80),
		"solicitation 2":   nd(135, 2),
		"solicitation 3":   nd(135, 3),
		"advertisement 2":  nd(136, 2),
		"type 135 code 1":  notND,
	}
	tables := [][]string{
		{"priority=10,arp,arp_sha=02:00:00:00:00:01,actions=output:2", "priority=9,arp,arp_tha=02:00:00:00:00:01,actions=drop",
			"priority=0,actions=output:3"},
		{"priority=10,udp6,ipv6_label=0x10/0xf0,actions=output:2", "priority=9,ipv6,ipv6_label=0x10f,actions=drop", "priority=0,actions=output:3"},
		{"priority=10,sctp,tp_dst=443,actions=output:2", "priority=9,sctp,sctp_src=5/0xff,actions=drop",
			"priority=8,sctp6,sctp_dst=443,actions=output:2", "priority=0,actions=output:3"},
		{"priority=10,icmp6,icmp_type=135,nd_target=fd00::2,actions=output:2", "priority=9,icmp6,icmp_type=135,actions=drop",
			"priority=0,actions=output:3"},
	}
	// A rewrite that reads the header makes every key exact.
	var exact []string
	for _, table := range tables {
		exact = append(exact, table...)
	}
	tables = append(tables, append([]string{"priority=20,ip,nw_ttl=1,actions=mod_nw_ttl:9,output:2"}, exact...))

	names := slices.Sorted(maps.Keys(frames))
	hits := map[string]int{}
	for i, table := range tables {
		bed := newFastPathBed(t, 64, trunk(), trunk(), trunk())
		bed.fp.publish(bed.cls, rules(t, table...))
		for round := range 2 {
			for _, name := range names {
				fr := frames[name]
				k := bed.kernel(t, 0, fr)
				sent, on := bed.userSpace(0, bytes.Clone(fr))
				if !k.hit {
					continue
				}
				hits[name]++
				context := fmt.Sprintf("table %d round %d, frame %s %x", i, round, name, fr)
				switch {
				case !k.redirected && len(sent) > 0:
					t.Errorf("%s: the fast path dropped what user space sent to port %d", context, on[0]+1)
				case k.redirected && (len(sent) != 1 || bed.bps[on[0]].slot != uint16(k.slot) || !bytes.Equal(sent[0], k.frame)):
					t.Errorf("%s: the fast path sent %x to slot %d; user space %x to %v", context, k.frame, k.slot, sent, on)
				}
			}
		}
	}
	for _, name := range names {
		nd := strings.HasPrefix(name, "solicitation") || strings.HasPrefix(name, "advertisement")
		switch {
		case nd && hits[name] > 0:
			t.Errorf("%s: carried by the fast path %d times, but neighbour discovery is user space's", name, hits[name])
		case !nd && hits[name] < len(tables):
			t.Errorf("%s: carried by the fast path %d times, want at least %d: the test hardly tests it", name, hits[name], len(tables))
		}
	}
}

// TestFastPathAndUserSpaceAgreeOnMPLS: the fast path leaves MPLS to user
// space, saying so: the parser hands MPLS frames over, and no entry
// carries a decision that pushes, pops or sets a label; under the same
// tables it carries the rest, and agrees with user space on them.
func TestFastPathAndUserSpaceAgreeOnMPLS(t *testing.T) {
	bed := newFastPathBed(t, 64, trunk(), trunk(), trunk())
	bed.fp.publish(bed.cls, rules(t,
		"priority=10,mpls,mpls_label=100,actions=pop_mpls:0x0800,output:2",
		"priority=10,mpls,mpls_label=200,actions=output:3",
		"priority=10,udp,tp_dst=5000,nw_ttl=9,actions=push_mpls:0x8847,set_mpls_label:7,output:2",
		"priority=10,udp,tp_dst=5000,nw_ttl=10,actions=mod_nw_ttl:11,output:2",
		"priority=0,actions=output:3"))
	frames := map[string][]byte{
		"mpls 100":   mplsSpec{labels: []layers.MPLS{lse(100, 0, true, 5)}, ttl: 9}.build(t),
		"mpls 200":   mplsSpec{tags: []uint16{10}, labels: []layers.MPLS{lse(200, 0, false, 5), lse(201, 0, true, 5)}, ttl: 9}.build(t),
		"mpls other": mplsSpec{labels: []layers.MPLS{lse(300, 0, true, 5)}, v6: true, ttl: 9}.build(t),
		"ip to push": mplsSpec{ttl: 9}.build(t),
		"ip":         mplsSpec{ttl: 10}.build(t),
		"ipv6":       mplsSpec{v6: true, ttl: 10}.build(t),
	}
	names := slices.Sorted(maps.Keys(frames))
	hits := map[string]int{}
	for round := range 3 {
		for _, name := range names {
			fr := frames[name]
			k := bed.kernel(t, 0, fr)
			sent, on := bed.userSpace(0, bytes.Clone(fr))
			if len(sent) != 1 {
				t.Fatalf("%s: user space sent it %d times", name, len(sent))
			}
			if !k.hit {
				continue
			}
			hits[name]++
			if !k.redirected || bed.bps[on[0]].slot != uint16(k.slot) || !bytes.Equal(sent[0], k.frame) {
				t.Errorf("round %d, %s: the fast path sent %x to slot %d; user space %x to port %d", round, name, k.frame, k.slot, sent[0], on[0]+1)
			}
		}
	}
	for _, name := range names {
		mpls := strings.HasPrefix(name, "mpls") || name == "ip to push"
		switch {
		case mpls && hits[name] > 0:
			t.Errorf("%s: carried by the fast path %d times, but MPLS is user space's", name, hits[name])
		case !mpls && hits[name] == 0:
			t.Errorf("%s: never carried by the fast path", name)
		}
		var k flow.Key
		bed.f.extractor.Extract(frames[name], bed.bps[0].ofport, &k)
		why := bed.f.fastPathVerdict(k.Headers)
		if mpls != strings.Contains(why, "MPLS") {
			t.Errorf("%s: the fast path says %q", name, why)
		}
	}
}
