package vswitch

import (
	"net"
	"testing"

	"github.com/xswitch/xswitch/conntrack"
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

	for port, n := range sameAsOVS(t, flows, 5, frames)[1:] {
		if n == 0 {
			t.Errorf("port %d: OVS sent nothing: the test hardly tests its state", port+2)
		}
	}
}
