package vswitch

import (
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port/porttest"
)

// packetOutBridge is a running bridge with three ports, numbered 1 to 3.
func packetOutBridge(t *testing.T) (*Bridge, []*porttest.Port) {
	t.Helper()
	b := newTestBridge(t)
	ports := newPorts(3)
	for _, p := range ports {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return b, ports
}

func parseActions(t *testing.T, text string) []flow.Action {
	t.Helper()
	r, err := flow.ParseRule("actions="+text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Actions
}

func packetOut(t *testing.T, b *Bridge, inPort uint16, actions string, fr []byte) {
	t.Helper()
	if err := b.PacketOut(inPort, parseActions(t, actions), fr); err != nil {
		t.Fatalf("PacketOut(%d, %s): %v", inPort, actions, err)
	}
}

// A packet-out is sent when PacketOut returns: to a port, back out of its
// input port with IN_PORT only, and through the tables with TABLE.
func TestPacketOutOutputs(t *testing.T) {
	b, ports := packetOutBridge(t)
	fr := frame(mac(9), mac(1), "from the controller")

	packetOut(t, b, flow.ControllerPort, "output:2", fr)
	wantFrames(t, ports[1], fr)

	packetOut(t, b, 1, "output:1,output:3", fr)
	wantFrames(t, ports[0]) // its own input port: not without IN_PORT
	wantFrames(t, ports[2], fr)

	packetOut(t, b, 1, "IN_PORT", fr)
	wantFrames(t, ports[0], fr)

	packetOut(t, b, flow.ControllerPort, "mod_dl_dst:02:00:00:00:00:08,output:1", fr)
	rewritten := append([]byte{}, fr...)
	copy(rewritten, mac(8))
	wantFrames(t, ports[0], rewritten)
	if fr[5] != 9 {
		t.Error("PacketOut changed the caller's frame")
	}

	b.SetFlows(rules(t,
		"in_port=2,actions=load:1->reg0[],goto_table:1",
		"table=1,reg0=1,actions=mod_dl_src:02:00:00:00:00:07,output:3",
		"priority=0,actions=drop"))
	packetOut(t, b, 2, "TABLE", fr)
	rewritten = append([]byte{}, fr...)
	copy(rewritten[6:], mac(7))
	wantFrames(t, ports[2], rewritten)
	packetOut(t, b, flow.ControllerPort, "TABLE", fr) // in_port=CONTROLLER: the drop rule
	for _, p := range ports {
		wantFrames(t, p)
	}
	for _, e := range b.Flows().Entries() {
		if packets, _, _ := e.Stats(); packets != 1 {
			t.Errorf("%s counted %d packets; want 1", flow.FormatRule(e.Rule), packets)
		}
	}
}

// NORMAL from the controller floods what it has not learned and sends
// what it has to one port; from a port, it learns the source there.
func TestPacketOutNormal(t *testing.T) {
	b, ports := packetOutBridge(t)
	packetOut(t, b, 2, "NORMAL", frame(broadcast, mac(2), "from 2"))
	wantFrames(t, ports[1])
	if len(ports[0].Transmitted()) != 1 || len(ports[2].Transmitted()) != 1 {
		t.Fatal("a broadcast from port 2 was not flooded to 1 and 3")
	}
	if port, ok := b.LookupMAC([6]byte(mac(2)), 0); !ok || port != 2 {
		t.Fatalf("mac(2) learned on %d, %v; want port 2", port, ok)
	}
	toTwo := frame(mac(2), mac(1), "to 2")
	packetOut(t, b, flow.ControllerPort, "NORMAL", toTwo)
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], toTwo)
	wantFrames(t, ports[2])
	if _, ok := b.LookupMAC([6]byte(mac(1)), 0); ok {
		t.Error("NORMAL learned a source from the controller")
	}
	packetOut(t, b, flow.ControllerPort, "NORMAL", frame(broadcast, mac(1), "flood"))
	for _, p := range ports {
		if len(p.Transmitted()) != 1 {
			t.Errorf("%s did not get the controller's broadcast", p.Name())
		}
	}
}

// A packet-out's CONTROLLER action makes a packet-in of no rule.
func TestPacketOutToController(t *testing.T) {
	b, _ := packetOutBridge(t)
	fr := frame(mac(9), mac(1), "round trip")
	packetOut(t, b, flow.LocalPort, "CONTROLLER:14", fr)
	select {
	case <-b.PacketInReady():
	case <-time.After(5 * time.Second):
		t.Fatal("no packet-in was signalled")
	}
	dst := make([]PacketIn, 2)
	if n := b.TakePacketIns(dst); n != 1 || dst[0].Cookie != ^uint64(0) || dst[0].Key.InPort != flow.LocalPort || len(dst[0].Data) != 14 {
		t.Fatalf("TakePacketIns = %d: %+v; want one of 14 bytes, in_port LOCAL, cookie all ones", n, dst[:n])
	}
}

func TestPacketOutRefuses(t *testing.T) {
	b, ports := packetOutBridge(t)
	fr := frame(mac(9), mac(1), "refused")
	for _, tt := range []struct {
		in      uint16
		actions []flow.Action
		want    string
	}{
		{9, parseActions(t, "output:1"), "bridge br0 has no port 9"},
		{flow.ControllerPort, parseActions(t, "output:9"), "output to port 9, which bridge br0 does not have"},
		{flow.ControllerPort, parseActions(t, "output:1,goto_table:1"), "goto_table is an instruction"},
		{flow.ControllerPort, parseActions(t, "write_actions(output:1)"), "write_actions is an instruction"},
		{flow.ControllerPort, []flow.Action{{Type: actNormalTo}}, "unknown action type"},
		{flow.ControllerPort, []flow.Action{{Type: flow.ActLoad}}, "without its field"},
		{flow.ControllerPort, parseActions(t, "output:1,group:3"), "group 3 on bridge br0: no such group"},
	} {
		if err := b.PacketOut(tt.in, tt.actions, fr); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("PacketOut(%d, %s) = %v; want an error saying %q", tt.in, flow.FormatActions(tt.actions), err, tt.want)
		}
	}
	if err := b.PacketOut(flow.ControllerPort, parseActions(t, "output:1"), fr[:10]); err == nil {
		t.Error("PacketOut took a frame shorter than an Ethernet header")
	}
	for _, p := range ports {
		wantFrames(t, p)
	}
}

// Fail-open forwards as NORMAL whatever the tables say; the decisions
// made before a change do not survive it, either way.
func TestFailOpen(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "actions=drop"))
	bcast := frame(broadcast, mac(1), "hello")
	send := func() { ports[0].Inject(bcast); forwardAll(f) }
	send()
	wantFrames(t, ports[1])

	f.setFailOpen(true)
	send()
	wantFrames(t, ports[1], bcast)
	wantFrames(t, ports[2], bcast)

	f.setFailOpen(false)
	send()
	wantFrames(t, ports[1])
	wantFrames(t, ports[2])

	f.setFailOpen(true)
	send()
	wantFrames(t, ports[1], bcast)
}

// The fast path's entries do not survive fail-open's changes either.
func TestFailOpenRetiresFastPathEntries(t *testing.T) {
	for _, on := range []bool{true, false} {
		r := newSweepRig(t)
		f := testForwarder(t, 64)
		f.fp, f.failOpen = r.fp, !on
		f.setFailOpen(on)
		r.sweep(t, time.Second)
		if r.installed() {
			t.Errorf("a fast path entry survived fail-open turning %v", map[bool]string{true: "on", false: "off"}[on])
		}
	}
}

// Through the bridge: SetFailOpen takes effect at once.
func TestBridgeSetFailOpen(t *testing.T) {
	b, ports := packetOutBridge(t)
	b.SetFlows(rules(t, "actions=drop"))
	b.SetFailOpen(true)
	ports[0].Inject(frame(broadcast, mac(1), "fail open"))
	waitTransmitted(t, ports[1], 1)
	b.SetFailOpen(false)
	ports[0].Inject(frame(broadcast, mac(1), "closed again"))
	deadline := time.Now().Add(5 * time.Second)
	for b.Ports()[0].Stats.RxPackets < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // the batch's transmit follows its counts
	if n := ports[1].Counts().Transmitted; n != 1 {
		t.Errorf("port 2 sent %d frames; want only the one from while the bridge failed open", n)
	}
}
