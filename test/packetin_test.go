package test

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/afxdp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// TestPacketInAndOut runs a bridge in the test's own process, as the
// OpenFlow agent will drive it, on the switch ends of two namespaces' veth
// pairs: a frame sent by the first namespace to a CONTROLLER rule comes
// out of TakePacketIns, cut to max_len, and a packet-out to the second
// port reaches the second namespace.
func TestPacketInAndOut(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	a, b := foreignPort(t, n, 1), foreignPort(t, n, 2)
	br, err := vswitch.New(n.name("br"), nil, vswitch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	for _, p := range []nsPort{a, b} {
		xp, err := afxdp.Open(afxdp.Config{Interface: p.name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := br.AddPort(xp, vswitch.PortOptions{}); err != nil {
			xp.Close()
			t.Fatal(err)
		}
	}
	r, err := flow.ParseRule("in_port=1,actions=controller(max_len=64)", nil)
	if err != nil {
		t.Fatal(err)
	}
	br.SetFlows(flow.NewTable(nil, 1).Add(r, time.Now()))

	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	from := openRaw(t, a.ns, net.HardwareAddr{0x02, 0x00, 0x5e, 0x50, 0x1e, 0x01})
	sent := ethFrame(bcast, from.mac, 0x88b5, bytes.Repeat([]byte("to the controller "), 8))
	from.send(t, sent)
	var got *vswitch.PacketIn
	ins := make([]vswitch.PacketIn, 16)
	for deadline := time.After(5 * time.Second); got == nil; {
		select {
		case <-br.PacketInReady():
		case <-deadline:
			t.Fatal("the frame sent to the CONTROLLER rule never came out of TakePacketIns")
		}
		for i := range br.TakePacketIns(ins) {
			// The namespace's own traffic goes to the controller too.
			if bytes.Equal(ins[i].Data[6:12], from.mac) {
				got = &ins[i]
			}
		}
	}
	if !bytes.Equal(got.Data, sent[:64]) || got.TotalLen != len(sent) || got.Key.InPort != 1 || got.Reason != flow.ReasonAction {
		t.Errorf("packet-in: %d of %d bytes, in_port %d, reason %d; want the frame's first 64 of %d, in_port 1, action (1)",
			len(got.Data), got.TotalLen, got.Key.InPort, got.Reason, len(sent))
	}

	to := openRaw(t, b.ns, nil)
	station := net.HardwareAddr{0x02, 0x00, 0x5e, 0x50, 0x1e, 0x02}
	out := ethFrame(bcast, station, 0x88b5, []byte("from the controller"))
	if err := br.PacketOut(flow.ControllerPort, []flow.Action{{Type: flow.ActOutput, Port: 2}}, out); err != nil {
		t.Fatal(err)
	}
	if arrived := to.arrivals(t, station, 5*time.Second, func(c map[string]int) bool { return c[bcast.String()] > 0 }); arrived[bcast.String()] != 1 {
		t.Fatalf("the packet-out reached the second namespace %d times; want once", arrived[bcast.String()])
	}
}

// TestTraceShowsControllerAndTable: trace says that CONTROLLER sends a
// packet-in, and follows output:TABLE back through the tables.
func TestTraceShowsControllerAndTable(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	addNSPort(t, d, n, br, 1, false)
	d.x(t, "add-flow", br, "priority=10,in_port=1,reg0=0,actions=load:1->reg0[],TABLE")
	d.x(t, "add-flow", br, "priority=5,reg0=1,actions=controller(reason=no_match,max_len=80)")
	out := d.x(t, "trace", br, "in_port=1,ip")
	for _, want := range []string{"output:TABLE", "through the tables again, from table 0", "controller(reason=no_match,max_len=80)",
		"a packet-in of the frame's first 80 bytes", "Datapath actions: controller\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
}
