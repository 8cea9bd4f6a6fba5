package vswitch

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port/porttest"
	"github.com/xswitch/xswitch/tunnel"
)

// Trace runs the forwarders' own translation and NORMAL: what it says a
// packet does is what forwarding does with it. Each test traces a packet
// NORMAL leaves somewhere out of, then forwards the same frame and checks
// that it left by exactly the ports trace gave.

// traced returns the trace of frame from ofport in, and the notes of its
// steps in one string.
func traced(t *testing.T, b *Bridge, in uint16, fr []byte) (TraceResult, string) {
	t.Helper()
	var k flow.Key
	if !flow.NewExtractor().Extract(fr, in, &k) {
		t.Fatalf("the test frame does not extract: %x", fr)
	}
	res := b.Trace(k.Headers)
	var notes []string
	for _, s := range res.Steps {
		notes = append(notes, s.Notes...)
	}
	return res, strings.Join(notes, "\n")
}

// leftBy injects fr on port from and returns the OpenFlow ports (of
// ports, numbered from 1) it left by: a batch is released after its
// frames are sent.
func leftBy(t *testing.T, from *porttest.Port, ports []*porttest.Port, fr []byte) []uint16 {
	t.Helper()
	before := make([]uint64, len(ports))
	for i, p := range ports {
		before[i] = p.Counts().Transmitted
	}
	released := from.Counts().Released
	from.Inject(fr)
	waitFor(t, "the frame's batch released", func() bool { return from.Counts().Released > released })
	var out []uint16
	for i, p := range ports {
		if p.Counts().Transmitted > before[i] {
			out = append(out, uint16(i+1))
		}
	}
	return out
}

func TestTraceOfAVLANThePortDoesNotCarry(t *testing.T) {
	b := newTestBridge(t)
	ports := newPorts(3)
	for i, c := range []VLANConfig{access(10), access(10), trunk(10, 20)} {
		if _, err := b.AddPort(ports[i], PortOptions{VLAN: c}); err != nil {
			t.Fatal(err)
		}
	}
	// Tagged for VLAN 20 on an access port of VLAN 10: dropped.
	fr := tagged(20, frame(broadcast, mac(1), "to VLAN 20"))
	res, notes := traced(t, b, 1, fr)
	if len(res.Outputs) != 0 || !strings.Contains(notes, "port 1 (p1) does not carry VLAN 20: dropped") {
		t.Errorf("trace: outputs %v, notes\n%s", res.Outputs, notes)
	}
	if got := leftBy(t, ports[0], ports, fr); len(got) != 0 {
		t.Errorf("forwarding sent the frame trace drops out of ports %v", got)
	}
	if s := b.Ports()[0].Stats; s.RxVLANDropped != 1 {
		t.Errorf("port 1 counted %d VLAN drops; want 1", s.RxVLANDropped)
	}
	// Untagged from the same port: VLAN 10, flooded to the ports that
	// carry it.
	fr = frame(broadcast, mac(1), "in VLAN 10")
	res, notes = traced(t, b, 1, fr)
	if got := leftBy(t, ports[0], ports, fr); !slices.Equal(got, res.Outputs) || !slices.Equal(got, []uint16{2, 3}) {
		t.Errorf("trace says %v (notes\n%s), forwarding sent to %v; want both 2,3", res.Outputs, notes, got)
	}
}

func TestTraceOfABlockedPort(t *testing.T) {
	b := newTestBridge(t)
	ports := newPorts(3)
	for _, p := range ports {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// mac(2) behind port 2, which then discards.
	leftBy(t, ports[1], ports, frame(broadcast, mac(2), "2 is here"))
	slot := b.port("p2").slot
	b.onEachForwarder(func(f *forwarder) { f.setSTPState(slot, stpDiscarding) })

	toTwo := frame(mac(2), mac(1), "to 2")
	res, notes := traced(t, b, 1, toTwo)
	if len(res.Outputs) != 0 || !strings.Contains(notes, "learned that 02:00:00:00:00:02 is on port 2 (p2)") ||
		!strings.Contains(notes, "port 2 (p2) is discarding (RSTP): not sent") {
		t.Errorf("trace of a frame to a station behind a discarding port: outputs %v, notes\n%s", res.Outputs, notes)
	}
	if got := leftBy(t, ports[0], ports, toTwo); len(got) != 0 {
		t.Errorf("forwarding sent out of %v what trace says goes nowhere", got)
	}
	bcast := frame(broadcast, mac(1), "to all")
	res, notes = traced(t, b, 1, bcast)
	if got := leftBy(t, ports[0], ports, bcast); !slices.Equal(got, res.Outputs) || !slices.Equal(got, []uint16{3}) {
		t.Errorf("a broadcast: trace says %v (notes\n%s), forwarding sent to %v; want both 3 alone", res.Outputs, notes, got)
	}
	// From the discarding port itself: dropped before the tables.
	if res, _ := traced(t, b, 2, frame(broadcast, mac(2), "from 2")); len(res.Outputs) != 0 ||
		res.Dropped != "port 2 (p2) is discarding (RSTP): dropped before the flow table" {
		t.Errorf("trace from the discarding port: %+v", res)
	}
}

func TestTraceOfSplitHorizon(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{Key: 42}, tunnel.Config{Key: 42})
	far, other := mac(2), mac(3)
	// far behind the second tunnel (ofport 3).
	tb.wire.Inject(tb.fromRemote(t, 1, 42, frame(broadcast, far, "far is here")))
	waitTransmitted(t, tb.access, 1)
	tb.access.Transmitted()
	tb.sent(t)

	toFar := frame(far, other, "from the first tunnel to far")
	h := flow.Key{}
	if !flow.NewExtractor().Extract(toFar, 2, &h) {
		t.Fatal("the test frame does not extract")
	}
	h.TunID, h.TunSrc, h.TunDst = 42, tbRemote(0).As4(), tbLocal.As4()
	res := tb.b.Trace(h.Headers)
	var notes []string
	for _, s := range res.Steps {
		notes = append(notes, s.Notes...)
	}
	all := strings.Join(notes, "\n")
	if len(res.Outputs) != 0 || !strings.Contains(all, "port 3 (tunb) is a tunnel, as the input port is: not sent (split horizon)") {
		t.Errorf("trace from a tunnel to a station behind another: outputs %v, notes\n%s", res.Outputs, all)
	}
	released := tb.wire.Counts().Released
	tb.wire.Inject(tb.fromRemote(t, 0, 42, toFar))
	waitFor(t, "the frame's batch released", func() bool { return tb.wire.Counts().Released > released })
	waitPortStats(t, tb.b, "tuna", func(s PortStats) bool { return s.RxSplitHorizonDropped == 1 })
	if got := tb.sent(t); len(got) != 0 {
		t.Errorf("forwarding sent %d frames through a tunnel that trace says split horizon holds back", len(got))
	}
	// A broadcast from the first tunnel floods to the access port alone.
	bcast := frame(broadcast, other, "from the first tunnel to all")
	if !flow.NewExtractor().Extract(bcast, 2, &h) {
		t.Fatal("the test frame does not extract")
	}
	h.TunID, h.TunSrc, h.TunDst = 42, tbRemote(0).As4(), tbLocal.As4()
	if res := tb.b.Trace(h.Headers); !slices.Equal(res.Outputs, []uint16{1}) {
		t.Errorf("trace of a broadcast from a tunnel: outputs %v; want the access port, 1, alone", res.Outputs)
	}
}

// Trace says which buckets of a group a packet takes and why, and
// forwarding takes the same: every bucket of an all group; the first live
// bucket of a fast failover group, the next once its port's link is down.
func TestTraceOfGroups(t *testing.T) {
	b := newTestBridge(t)
	ports := newPorts(3)
	for _, p := range ports {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	groups := flow.NewGroupTable()
	for _, text := range []string{
		"group_id=1,type=all,bucket=mod_dl_src:02:00:00:00:00:99,output:2,bucket=output:3",
		"group_id=2,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3",
	} {
		g, err := flow.ParseGroup(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if groups, err = groups.Add(g, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	b.SetFlows(rules(t, "priority=10,dl_dst=02:00:00:00:00:0a,actions=group:1", "priority=10,dl_dst=02:00:00:00:00:0b,actions=group:2").
		WithGroups(groups))

	toAll := frame(mac(10), mac(1), "to every bucket")
	res, notes := traced(t, b, 1, toAll)
	if !slices.Equal(res.Outputs, []uint16{2, 3}) || !strings.Contains(notes, "type all: each of its 2 buckets on a copy of the frame") {
		t.Errorf("trace of an all group: outputs %v, notes\n%s", res.Outputs, notes)
	}
	if got := leftBy(t, ports[0], ports, toAll); !slices.Equal(got, []uint16{2, 3}) {
		t.Errorf("an all group's frame left by %v, want 2 and 3", got)
	}

	toFF := frame(mac(11), mac(1), "to the first live bucket")
	for _, c := range []struct {
		p2Up bool
		want uint16
		note string
	}{
		{true, 2, "type fast failover: bucket 0, the first live one"},
		{false, 3, "type fast failover: bucket 1, the first live one"},
		{true, 2, "type fast failover: bucket 0, the first live one"},
	} {
		if err := b.SetPortLink(ports[1].Name(), c.p2Up); err != nil {
			t.Fatal(err)
		}
		res, notes := traced(t, b, 1, toFF)
		if !slices.Equal(res.Outputs, []uint16{c.want}) || !strings.Contains(notes, c.note) {
			t.Errorf("port 2 up %v: trace of a fast failover group: outputs %v, notes\n%s", c.p2Up, res.Outputs, notes)
		}
		if got := leftBy(t, ports[0], ports, toFF); !slices.Equal(got, []uint16{c.want}) {
			t.Errorf("port 2 up %v: the fast failover group's frame left by %v, want %d", c.p2Up, got, c.want)
		}
	}
}
