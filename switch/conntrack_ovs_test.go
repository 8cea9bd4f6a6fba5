package vswitch

import (
	"bytes"
	"net"
	"testing"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/internal/ovsdummy"
)

// TestConntrackStatesAsOVSDoesIt holds the tracker's ct_state against
// Open vSwitch's userspace tracker (its dummy datapath, run by the test):
// the same rules send a frame to a port by its state, the same frames go
// in (UDP seen once, several times one way, then both ways; a TCP
// connection's handshake, data, a segment out of its window, a reset at
// a wrong sequence number, its close), and each port sends the same
// frames, in the same order.
func TestConntrackStatesAsOVSDoesIt(t *testing.T) {
	flows := []string{
		"priority=10,ip,actions=ct(commit,table=1)",
		"table=1,priority=10,ct_state=+trk+new,actions=output:2",
		"table=1,priority=10,ct_state=+trk+est-rpl,actions=output:3",
		"table=1,priority=10,ct_state=+trk+est+rpl,actions=output:4",
		"table=1,priority=10,ct_state=+trk+inv,actions=output:5",
		"table=1,priority=1,actions=drop",
	}
	out := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1000, 53, []byte("out"))
	back := udpFrame(t, mac(1), mac(2), net.IPv4(10, 0, 0, 2), net.IPv4(10, 0, 0, 1), 53, 1000, []byte("back"))
	other := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 3), 1001, 53, []byte("other"))
	frames := [][]byte{out, out, out, out, other, other, back, out, back, other}
	c, s := uint32(1000), uint32(5000)
	seg := func(fromServer bool, flags uint8, payload int, seqOff uint32) []byte {
		g := tcpSegment{src: 1, dst: 2, sport: 40000, dport: 80, flags: flags, seq: c + seqOff, ack: s, payload: payload}
		if fromServer {
			g = tcpSegment{src: 2, dst: 1, sport: 80, dport: 40000, flags: flags, seq: s + seqOff, ack: c, payload: payload}
		}
		return g.frame(t)
	}
	frames = append(frames, seg(false, conntrack.TCPSyn, 0, 0))
	c++
	frames = append(frames, seg(true, conntrack.TCPSyn|conntrack.TCPAck, 0, 0))
	s++
	frames = append(frames, seg(false, conntrack.TCPAck, 0, 0), seg(false, conntrack.TCPAck, 100, 0))
	c += 100
	frames = append(frames, seg(true, conntrack.TCPAck, 0, 0), seg(false, conntrack.TCPAck, 100, 1<<30),
		seg(true, conntrack.TCPRst, 0, 1<<30), seg(false, conntrack.TCPFin|conntrack.TCPAck, 0, 0))
	c++
	frames = append(frames, seg(true, conntrack.TCPFin|conntrack.TCPAck, 0, 0))
	s++
	frames = append(frames, seg(false, conntrack.TCPAck, 0, 0))

	ovs := ovsdummy.Start(t, 5)
	ovs.AddFlows(t, flows...)
	ports := newPorts(5)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, flows...))
	for _, fr := range frames {
		ovs.Receive(t, 1, fr)
		ports[0].Inject(fr)
		forwardAll(f)
	}
	for i := 1; i < len(ports); i++ {
		theirs, ours := ovs.Sent(t, i+1), ports[i].Transmitted()
		if len(theirs) == 0 {
			t.Errorf("port %d: OVS sent nothing: the test hardly tests its state", i+1)
		}
		for j := range max(len(ours), len(theirs)) {
			switch {
			case j >= len(ours):
				t.Errorf("port %d: OVS sent %x, xswitch nothing", i+1, theirs[j])
			case j >= len(theirs):
				t.Errorf("port %d: xswitch sent %x, OVS nothing", i+1, ours[j])
			case !bytes.Equal(ours[j], theirs[j]):
				t.Errorf("port %d, frame %d: xswitch sent\n%x\nOVS\n%x", i+1, j, ours[j], theirs[j])
			}
		}
	}
}
