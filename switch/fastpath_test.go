package vswitch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/datapath/datapathtest"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port/porttest"
)

// sweepRig is a fast path over a datapath in memory with one entry
// installed by hand, NORMAL's from a station on port 1 to one on port 2,
// in a MAC table that ages entries after 3 s: what the sweeper reads and
// what it credits and checks.
type sweepRig struct {
	fp       *fastPath
	dp       *datapathtest.Fake
	fdb      *macTable
	in, out  *bridgePort
	rule     *flow.Entry
	key      datapath.Key
	src, dst uint64 // the stations' MAC-table keys
}

const sweepAging = 3 * time.Second

func newSweepRig(t *testing.T) *sweepRig {
	t.Helper()
	place := threadPlace{fdb: newMACTable(64, sweepAging), tracker: conntrack.New(conntrack.Config{}),
		tables: new([flow.NumTables]tableCounters), drops: new(dropCounters)}
	dp := datapathtest.New()
	fp, err := newFastPath(dp, &place)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.close() })
	r := &sweepRig{fp: fp, dp: dp, fdb: place.fdb,
		in: &bridgePort{Port: porttest.New("p1"), ofport: 1, slot: 0}, out: &bridgePort{Port: porttest.New("p2"), ofport: 2, slot: 1},
		rule: rules(t, "actions=NORMAL").Entries()[0]}
	h := flow.Headers{InPort: 1, DlSrc: [6]byte{2, 0, 0, 0, 0, 1}, DlDst: [6]byte{2, 0, 0, 0, 0, 2}, DlType: flow.EtherTypeIPv4}
	r.src, r.dst = macKey(h.DlSrc[:], 0), macKey(h.DlDst[:], 0)
	srcDep, _ := r.fdb.learn(r.src, 0, 0)
	r.fdb.learn(r.dst, 1, 0)
	dstDep, _ := r.fdb.lookupDep(r.dst, 0)
	r.key = datapath.NewKey(&h, nil, fp.generation())
	installed := &fpInstalled{key: r.key, rules: []*flow.Entry{r.rule},
		lookups: []tableLookup{{table: 0, matched: true}}, macDeps: []macDep{srcDep, dstDep},
		in: r.in, out: r.out, via: r.out, entry: datapath.Entry{Out: 1}}
	fp.installed[r.key] = installed
	fp.index(installed)
	if n, err := dp.Install(false, []datapath.Key{r.key}, []datapath.Entry{installed.entry}); n != 1 {
		t.Fatal(err)
	}
	return r
}

// carry has the entry carry packets more 100-byte frames, as if the
// program had.
func (r *sweepRig) carry(t *testing.T, packets uint64) {
	t.Helper()
	if !r.dp.Carry(false, r.key, packets, 100) {
		t.Fatal("the entry is not in the datapath")
	}
}

func (r *sweepRig) sweep(t *testing.T, at time.Duration) {
	t.Helper()
	if err := r.fp.sweep(r.fdb, int64(at)); err != nil {
		t.Fatal(err)
	}
}

func (r *sweepRig) installed() bool {
	_, ok := r.fp.installed[r.key]
	return ok
}

// The sweeper credits what the kernel carried to the rule, the table and
// both ports, once; it refreshes the source, as learning would, and so
// keeps the entry while the station keeps sending; and it deletes the
// entry once the destination, which sends nothing, ages out.
func TestSweeperCreditsAndFollowsTheMACTable(t *testing.T) {
	r := newSweepRig(t)
	r.carry(t, 10)
	r.sweep(t, 2*time.Second)
	r.sweep(t, 2*time.Second) // nothing new: nothing credited twice
	if packets, bytes, _ := r.rule.Stats(); packets != 10 || bytes != 1000 {
		t.Errorf("the rule counted %d frames, %d bytes; want 10, 1000", packets, bytes)
	}
	if rx, tx := r.in.counters.rxPackets.Load(), r.out.counters.txPackets.Load(); rx != 10 || tx != 10 {
		t.Errorf("ports counted rx %d, tx %d; want 10 each", rx, tx)
	}
	if n := r.fp.tables[0].matched.Load(); n != 10 {
		t.Errorf("table 0 matched %d; want 10", n)
	}
	if n := r.fp.hits.Load(); n != 10 {
		t.Errorf("fast path hits %d; want 10", n)
	}
	// 4 s after both were learned: the source, refreshed at 2 s by the
	// fast path's traffic, is fresh; the destination is not.
	at := 4 * time.Second
	if _, ok := r.fdb.lookup(r.src, int64(at)); !ok {
		t.Error("the source aged out although the fast path carried its frames")
	}
	if _, ok := r.fdb.lookup(r.dst, int64(at)); ok {
		t.Fatal("the test's destination did not age: the test tests nothing")
	}
	r.carry(t, 5)
	r.sweep(t, at)
	if r.installed() {
		t.Error("the entry survived the aging of the station it sends to")
	}
	if packets, _, _ := r.rule.Stats(); packets != 15 {
		t.Errorf("the rule counted %d frames; want the 15 the entry carried before it was deleted", packets)
	}
}

// An entry of an old generation is deleted, its last counts credited.
func TestSweeperDeletesStaleEntries(t *testing.T) {
	r := newSweepRig(t)
	r.carry(t, 3)
	r.fp.bump()
	r.sweep(t, time.Second)
	if r.installed() {
		t.Error("an entry of an old generation survived the sweep")
	}
	if _, ok := r.dp.Entry(false, r.key); ok {
		t.Error("the stale entry is still in the datapath")
	}
	if packets, _, _ := r.rule.Stats(); packets != 3 {
		t.Errorf("the rule counted %d frames; want 3", packets)
	}
}

// An entry that carries nothing for fastPathIdle is deleted.
func TestSweeperDeletesIdleEntries(t *testing.T) {
	r := newSweepRig(t)
	fresh := func(at time.Duration) { // the stations send, in user space
		r.fdb.learn(r.dst, 1, int64(at))
		r.fdb.learn(r.src, 0, int64(at))
	}
	fresh(fastPathIdle / 2)
	r.sweep(t, fastPathIdle/2)
	if !r.installed() {
		t.Fatal("an entry idle for less than fastPathIdle was deleted")
	}
	fresh(fastPathIdle)
	r.sweep(t, fastPathIdle+time.Second)
	if r.installed() {
		t.Error("an entry idle for longer than fastPathIdle survived")
	}
}

func TestKeyMask(t *testing.T) {
	base := flow.Headers{InPort: 0xffff, DlType: 0xffff, VLANTCI: 0xffff, TunID: ^uint64(0),
		DlDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, DlSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	withPort := base
	withPort.NwProto, withPort.TpDst = 0xff, 0xffff
	withNet := withPort
	withNet.NwSrc = [4]byte{0xff, 0xff, 0xff, 0}
	for _, tc := range []struct {
		name  string
		flows []string
		want  *flow.Headers
	}{
		{"NORMAL", []string{"actions=NORMAL"}, &base},
		{"a port", []string{"priority=5,udp,tp_dst=53,actions=drop", "actions=NORMAL"}, &withPort},
		{"and a subnet", []string{"priority=5,udp,tp_dst=53,actions=drop", "priority=4,ip,nw_src=10.1.2.0/24,actions=output:2", "actions=NORMAL"}, &withNet},
		{"tags and MACs", []string{"dl_vlan=5,actions=strip_vlan,mod_dl_dst:02:00:00:00:00:09,output:2", "actions=push_vlan:0x8100,NORMAL"}, &base},
		{"registers", []string{"actions=load:0x5->NXM_NX_REG0[],resubmit(,1)", "table=1,reg0=5,actions=NORMAL"}, &base},
		{"dec_ttl", []string{"ip,actions=dec_ttl,NORMAL"}, nil},
		{"an IP rewrite", []string{"ip,actions=mod_nw_src:10.0.0.1,NORMAL"}, nil},
		{"move", []string{"ip,actions=move:NXM_OF_IP_SRC[]->NXM_NX_REG0[],resubmit(,1)", "table=1,actions=NORMAL"}, nil},
		{"set_field to a header", []string{"ip,actions=set_field:10.0.0.1->ip_dst,NORMAL"}, nil},
	} {
		got := keyMask(rules(t, tc.flows...))
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: key mask %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Frames equal under the key mask get the same decision, and so the same
// fast path entry: the masked entry is as good as an exact one. Random
// tables of the actions the mask allows, random frames, and for each a
// second frame that differs from it only outside the mask, both worked
// out afresh.
func TestMaskedFramesGetTheSameDecision(t *testing.T) {
	matches := []string{"", "udp,", "tcp,tp_dst=80,", "ip,nw_src=10.0.0.0/8,", "udp,tp_src=0x1000/0xf000,", "dl_vlan=10,",
		"dl_dst=02:00:00:00:00:02,", "ip,nw_tos=4,", "icmp,", "ipv6,", "arp,", "ipv6,ipv6_exthdr=+esp,", "ipv6,ipv6_exthdr=-nonext,"}
	actions := []string{"NORMAL", "output:2", "output:3", "drop", "IN_PORT", "strip_vlan,output:2", "mod_vlan_vid:7,output:3",
		"mod_dl_src:02:00:00:00:00:09,NORMAL", "load:0x1->NXM_NX_REG1[],resubmit(,1)"}
	var compared, carried int
	for seed := range uint64(100) {
		rnd := rand.New(rand.NewPCG(seed, 29))
		var flows []string
		for i := range 1 + rnd.IntN(5) {
			flows = append(flows, fmt.Sprintf("priority=%d,%sactions=%s", 10+i, matches[rnd.IntN(len(matches))], actions[rnd.IntN(len(actions))]))
		}
		flows = append(flows, "table=1,reg1=1,actions=output:2", "priority=0,actions=NORMAL")
		f, ports := vlanForwarder(t, trunk(), trunk(), access(10))
		for _, p := range f.ports {
			p.takesRedirects.Store(true)
		}
		table := rules(t, flows...)
		f.flows.Publish(table)
		mask := keyMask(table)
		if mask == nil {
			t.Fatalf("the test's table %q has an exact key mask", flows)
		}
		send(f, ports, 1, frame(broadcast, mac(2), "hello"), tagged(10, frame(broadcast, mac(2), "hello")))
		send(f, ports, 0, frame(broadcast, mac(1), "hello"), tagged(10, frame(broadcast, mac(1), "hello")))
		f.fpView = &fpView{table: table, mask: mask}
		for range 20 {
			a := randomHeaders(rnd)
			b := underMask(a, randomHeaders(rnd), mask)
			if f.entryKey(&a) != f.entryKey(&b) {
				t.Fatalf("%+v and %+v differ under the mask", a, b)
			}
			ea, whyA := entryFor(f, a)
			eb, whyB := entryFor(f, b)
			compared++
			if whyA != whyB || ea != eb {
				t.Fatalf("table %q: frames equal under mask %+v decided differently:\n%+v: %+v %q\n%+v: %+v %q", flows, *mask, a, ea, whyA, b, eb, whyB)
			}
			if whyA == "" {
				carried++
			}
		}
	}
	if carried < compared/4 {
		t.Errorf("only %d of %d pairs had a fast path entry: the test hardly tests it", carried, compared)
	}
}

// An IPv6 packet with extension headers has no entry: the program leaves
// such packets to user space, and its key has no ipv6_exthdr, so that the
// entry would take the packet without them, which the table may send
// elsewhere.
func TestFastPathLeavesIPv6ExtensionHeadersToUserSpace(t *testing.T) {
	f, _ := vlanForwarder(t, trunk(), trunk(), access(10))
	for _, p := range f.ports {
		p.takesRedirects.Store(true)
	}
	table := rules(t, "priority=10,ipv6,ipv6_exthdr=+hop,actions=drop", "priority=0,actions=output:2")
	f.flows.Publish(table)
	f.fpView = &fpView{table: table, mask: keyMask(table)}
	h := flow.Headers{InPort: 1, DlSrc: [6]byte{2, 0, 0, 0, 0, 1}, DlDst: [6]byte{2, 0, 0, 0, 0, 2}, DlType: flow.EtherTypeIPv6,
		NwProto: flow.ProtoUDP, TpSrc: 1000, TpDst: 53}
	if _, why := entryFor(f, h); why != "" {
		t.Fatalf("the packet without extension headers: no entry (%s)", why)
	}
	for _, bits := range []uint16{flow.ExtHdrHop, flow.ExtHdrFrag, flow.ExtHdrDest | flow.ExtHdrRouter} {
		h.IPv6ExtHdr = bits
		if _, why := entryFor(f, h); !strings.Contains(why, "IPv6 extension headers") {
			t.Errorf("ipv6_exthdr %#x: why = %q, want the program leaves extension headers to user space", bits, why)
		}
	}
}

// entryFor works the decision for h out afresh, without learning, and
// returns its fast path entry.
func entryFor(f *forwarder, h flow.Headers) (datapath.Entry, string) {
	tr := translator{in: xlateIn{view: &f.view}}
	var d decision
	tr.translate(f.flows.Load(), &h, &d, 0)
	return f.fastPathEntry(&d, &h, nil)
}

// randomHeaders are the headers of a plausible frame from port 1, to one
// of the stations the test's forwarder learned, or to anyone.
func randomHeaders(rnd *rand.Rand) flow.Headers {
	h := flow.Headers{InPort: 1, DlSrc: [6]byte{2, 0, 0, 0, 0, 1}, DlDst: [6]byte{2, 0, 0, 0, 0, byte(1 + rnd.IntN(3))}}
	if rnd.IntN(3) == 0 {
		h.VLANTCI = flow.VLANCFI | uint16(rnd.IntN(8))<<13 | []uint16{0, 10, 20}[rnd.IntN(3)]
	}
	switch rnd.IntN(4) {
	case 0:
		h.DlType = flow.EtherTypeARP
		h.NwProto = uint8(1 + rnd.IntN(2))
	case 1:
		h.DlType = flow.EtherTypeIPv6
		h.NwProto = []uint8{flow.ProtoUDP, flow.ProtoTCP, flow.ProtoICMPv6, header.ProtoESP, header.ProtoIPv6NoNext}[rnd.IntN(5)]
		h.IPv6ExtHdr = parsedExtHdr(h.NwProto)
		h.IPv6Src[0], h.IPv6Dst[15] = 0xfd, byte(rnd.IntN(256))
	default:
		h.DlType = flow.EtherTypeIPv4
		h.NwProto = []uint8{flow.ProtoUDP, flow.ProtoTCP, flow.ProtoICMP}[rnd.IntN(3)]
		h.NwSrc = [4]byte{byte(rnd.IntN(2) * 10), 0, 0, byte(rnd.IntN(256))}
		h.NwDst = [4]byte{10, 0, 0, byte(rnd.IntN(256))}
		h.NwTOS, h.NwTTL = uint8(rnd.IntN(4))<<2, uint8(rnd.IntN(256))
	}
	if h.DlType != flow.EtherTypeARP && h.IPv6ExtHdr == 0 {
		h.TpSrc, h.TpDst = uint16(rnd.IntN(65536)), []uint16{80, 53, uint16(rnd.IntN(65536))}[rnd.IntN(3)]
	}
	return h
}

// parsedExtHdr is the ipv6_exthdr of an IPv6 packet of protocol proto
// without extension headers, the only kind the program reads.
func parsedExtHdr(proto uint8) uint16 {
	var w flow.ExtHdrWalk
	w.Next(proto)
	return w.Bits()
}

// underMask returns b with a's bits where mask has them.
func underMask(a, b flow.Headers, mask *flow.Headers) flow.Headers {
	mix8 := func(x, y, m uint8) uint8 { return x&m | y&^m }
	mix16 := func(x, y, m uint16) uint16 { return x&m | y&^m }
	mixBytes := func(x, y, m []byte) {
		for i := range y {
			y[i] = mix8(x[i], y[i], m[i])
		}
	}
	b.InPort, b.DlType, b.VLANTCI = mix16(a.InPort, b.InPort, mask.InPort), mix16(a.DlType, b.DlType, mask.DlType), mix16(a.VLANTCI, b.VLANTCI, mask.VLANTCI)
	b.NwProto, b.NwTOS = mix8(a.NwProto, b.NwProto, mask.NwProto), mix8(a.NwTOS, b.NwTOS, mask.NwTOS)
	b.NwTTL, b.NwFrag = mix8(a.NwTTL, b.NwTTL, mask.NwTTL), mix8(a.NwFrag, b.NwFrag, mask.NwFrag)
	b.TpSrc, b.TpDst = mix16(a.TpSrc, b.TpSrc, mask.TpSrc), mix16(a.TpDst, b.TpDst, mask.TpDst)
	mixBytes(a.DlDst[:], b.DlDst[:], mask.DlDst[:])
	mixBytes(a.DlSrc[:], b.DlSrc[:], mask.DlSrc[:])
	mixBytes(a.NwSrc[:], b.NwSrc[:], mask.NwSrc[:])
	mixBytes(a.NwDst[:], b.NwDst[:], mask.NwDst[:])
	mixBytes(a.IPv6Src[:], b.IPv6Src[:], mask.IPv6Src[:])
	mixBytes(a.IPv6Dst[:], b.IPv6Dst[:], mask.IPv6Dst[:])
	if b.DlType == flow.EtherTypeIPv6 {
		b.IPv6ExtHdr = parsedExtHdr(b.NwProto)
	}
	return b
}

// TestReadersFollowEditsByTheirChanges: following a table through random
// one-rule adds, replacements, modifications and deletes (and a big edit
// now and then, which lists no changes), the count of rules that read
// headers is always the one a look at every rule gives, and so is the key
// mask.
func TestReadersFollowEditsByTheirChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	actions := []string{"output:1", "NORMAL", "dec_ttl,output:1", "mod_nw_src:10.0.0.9,output:2", "load:1->reg0,output:1", "drop"}
	rule := func() flow.Rule {
		r, err := flow.ParseRule(fmt.Sprintf("priority=%d,ip,nw_dst=10.0.0.%d,actions=%s",
			1+rng.IntN(3), rng.IntN(40), actions[rng.IntN(len(actions))]), nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var readers tableReaders
	tab := flow.NewTable(nil, 0)
	now := time.Now()
	for step := range 2000 {
		switch op := rng.IntN(10); {
		case op < 5:
			tab = tab.Add(rule(), now)
		case op < 7 && tab.Len() > 0:
			r := rule()
			tab, _ = tab.Modify(flow.Filter{Match: r.Match}, false, r.Actions, nil, false)
		case op < 9 && tab.Len() > 0:
			e := tab.Entries()[rng.IntN(tab.Len())]
			tab, _ = tab.Delete(flow.Filter{Match: e.Match, Priority: e.Priority, HasPriority: true}, true)
		default:
			rs := make([]flow.Rule, 100)
			for i := range rs {
				rs[i] = rule()
			}
			tab = tab.AddAll(rs, now)
		}
		if got, want := readers.follow(tab), countReaders(tab.Entries()); got != want {
			t.Fatalf("step %d: followed %d rules that read headers, the table has %d", step, got, want)
		}
		if got, want := keyMaskOf(tab, readers.n > 0), keyMask(tab); (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Fatalf("step %d: key mask %v, want %v", step, got, want)
		}
	}
}

// newPolicyBed is a forwarder with the fast path over a datapath in
// memory, and a trunk port for each of ports: the fast path's policy,
// without root.
func newPolicyBed(t *testing.T, ports int) (*fastPathBed, *datapathtest.Fake) {
	t.Helper()
	dp := datapathtest.New()
	configs := make([]VLANConfig, ports)
	for i := range configs {
		configs[i] = trunk()
	}
	return newBed(t, dp, 64, configs...), dp
}

// stations has a station, a, send from port 1 and another, b, from port
// 2, so that the MAC table knows both.
func (bed *fastPathBed) stations() (a, b []byte) {
	a, b = mac(1), mac(2)
	bed.userSpace(0, frame(broadcast, a, "a is here"))
	bed.userSpace(1, frame(broadcast, b, "b is here"))
	return a, b
}

// entries are the datapath's entries, by the source MAC address of
// their key.
func entries(t *testing.T, dp *datapathtest.Fake) map[[6]byte]datapath.Entry {
	t.Helper()
	out := map[[6]byte]datapath.Entry{}
	err := dp.Walk(func(k datapath.Key, l2 bool, _ datapath.Counts) {
		e, ok := dp.Entry(l2, k)
		if !ok {
			t.Fatalf("the datapath walked over key %+v, which it does not have", k)
		}
		out[k.DlSrc] = e
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A flow whose frames reach user space gets one entry, at the end of its
// batch, in the current generation, that sends where user space sent;
// floods get none.
func TestUserSpaceInstallsOneEntryPerFlow(t *testing.T) {
	bed, dp := newPolicyBed(t, 2)
	a, b := bed.stations()
	if n := dp.Len(); n != 0 {
		t.Fatalf("floods installed %d entries; want none", n)
	}
	for range 3 {
		bed.ports[0].Inject(frame(b, a, "a to b"))
	}
	forwardAll(bed.f)
	got := entries(t, dp)
	e, ok := got[[6]byte(a)]
	if len(got) != 1 || !ok {
		t.Fatalf("entries after a's frames to b: %v; want one, of a's flow", got)
	}
	if e.Out != uint32(bed.bps[1].slot) {
		t.Errorf("a's entry sends to slot %d; want b's port's, %d", e.Out, bed.bps[1].slot)
	}
	if n := bed.fp.installs.Load(); n != 1 {
		t.Errorf("%d installs for one flow's three frames; want 1", n)
	}
	err := dp.Walk(func(k datapath.Key, _ bool, _ datapath.Counts) {
		if k.Gen != datapath.KeyGen(bed.fp.generation()) {
			t.Errorf("the entry is of generation %d; the bridge's is %d", k.Gen, bed.fp.generation())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An entry the datapath refuses (its map full) is forgotten and counted;
// its flow goes on in user space, and once there is room, a later frame
// installs it.
func TestRefusedInstallIsOfferedAgain(t *testing.T) {
	bed, dp := newPolicyBed(t, 2)
	a, b := bed.stations()
	bed.userSpace(0, frame(b, a, "a to b"))
	dp.Capacity = 1
	if sent, on := bed.userSpace(1, frame(a, b, "b to a")); len(sent) != 1 || on[0] != 0 {
		t.Fatalf("b's frame to a, its entry refused, went to ports %v; want 0", on)
	}
	if n := bed.fp.installFailures.Load(); n != 1 {
		t.Errorf("%d install failures; want 1", n)
	}
	if _, ok := entries(t, dp)[[6]byte(b)]; ok || len(bed.fp.installed) != 1 {
		t.Fatalf("the refused entry is kept: %d installed", len(bed.fp.installed))
	}
	dp.Capacity = 0
	time.Sleep(2 * reofferAfter) // the forwarder's clock is the wall's
	bed.userSpace(1, frame(a, b, "b to a"))
	if _, ok := entries(t, dp)[[6]byte(b)]; !ok {
		t.Error("b's flow is not installed once the datapath has room")
	}
}

// A station that moves takes the entries that sent to it out of the
// datapath at the end of the batch that saw it move, and what they
// carried until then is credited.
func TestAMovedStationRetiresTheEntriesToIt(t *testing.T) {
	bed, dp := newPolicyBed(t, 3)
	a, b := bed.stations()
	bed.userSpace(0, frame(b, a, "a to b"))
	var key datapath.Key
	var l2 bool
	if err := dp.Walk(func(k datapath.Key, isL2 bool, _ datapath.Counts) { key, l2 = k, isL2 }); err != nil || dp.Len() != 1 {
		t.Fatalf("%d entries, %v; want a's", dp.Len(), err)
	}
	rx := bed.bps[0].counters.rxPackets.Load()
	dp.Carry(l2, key, 5, 100)
	bed.userSpace(2, frame(broadcast, b, "b moved"))
	if n := dp.Len(); n != 0 {
		t.Errorf("%d entries after b moved; want a's to b gone", n)
	}
	if n := bed.fp.evictions.Load(); n != 1 {
		t.Errorf("%d evictions; want 1", n)
	}
	if got := bed.bps[0].counters.rxPackets.Load() - rx; got != 5 {
		t.Errorf("port 1 was credited %d frames of the retired entry; want the 5 it carried", got)
	}
}
