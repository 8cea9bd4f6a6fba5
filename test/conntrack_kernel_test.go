package test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
)

// TestConntrackEstablishedInTheKernel: through the stateful firewall of
// the bench (commit on the way out, only +est back), a TCP connection
// carries 32 MiB; with the fast path on, once established its data and
// its acks go through the kernel, each direction by an entry that
// judges the connection's frames (dump-fastpath's ct(est,...)), while
// user space saw the handshake; the firewall still keeps out what
// nobody asked for. With the fast path off, the same in user space.
func TestConntrackEstablishedInTheKernel(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, fastPath bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,ip,action=ct(commit),2
priority=100,in_port=2,ip,action=ct(table=1)
table=1,priority=100,in_port=2,ct_state=+trk+est,ip,action=1
table=1,priority=1,action=drop
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		const size = 32 << 20
		received := sinkTCP(t, ns1.ns, ns1.addr, 5001)
		c, err := dialTCP(ns0.ns, 0, net.JoinHostPort(ns1.addr, "5001"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(make([]byte, size)); err != nil {
			t.Fatalf("sending %d bytes: %v", size, err)
		}
		c.(*net.TCPConn).CloseWrite()
		select {
		case n := <-received:
			if n != size {
				t.Fatalf("the server received %d bytes of %d", n, size)
			}
		case <-time.After(time.Minute):
			t.Fatal("the server did not receive the data in a minute")
		}
		wantNoAnswer(t, ns1.ns, ns0.addr, 80)
		var dump jsonFastPath
		r.d.xJSON(t, &dump, "dump-fastpath", r.br)
		carried := map[string]uint64{}
		for _, e := range dump.Entries {
			if i := strings.Index(e.Actions, "ct(est,"); i >= 0 {
				dir := "orig"
				if strings.Contains(e.Actions, ",reply)") {
					dir = "reply"
				}
				carried[dir] += e.Packets
			}
		}
		if !fastPath {
			if len(carried) > 0 {
				t.Errorf("with the fast path off, dump-fastpath has connections: %+v", dump.Entries)
			}
			return
		}
		// 32 MiB is some 23000 segments of 1448 bytes, acked by some
		// hundreds (the receiver acks several at once). User space sees
		// the handshake, a connection's first frames each way, and what
		// comes up while an entry is being installed; the kernel carries
		// the rest (here, 99% out and 95% back). (Before a connection went back into ct_conns as soon
		// as the tracker had judged the frame that took it out, a CI run
		// under load saw the kernel carry 1651 of 24108 frames out and
		// 110 of 10477 back: every batch took it out, and it stayed out
		// the whole batch, in which the program handed over enough of its
		// frames for the next batch to take it out again.)
		out := flowPackets(t, r.d, r.br, "ip,in_port=1 actions=ct(commit)")
		back := flowPackets(t, r.d, r.br, "ct_state=+est+trk,in_port=2 actions")
		t.Logf("the kernel carried %d of %d frames out and %d of %d back", carried["orig"], out, carried["reply"], back)
		if carried["orig"]*2 < uint64(out) || carried["reply"]*2 < uint64(back) {
			t.Errorf("the kernel carried %d of %d frames of the connection going out and %d of %d coming back, want most each way\ndump-fastpath:\n%s",
				carried["orig"], out, carried["reply"], back, r.d.x(t, "dump-fastpath", r.br))
		}
	})
}

// sinkTCP serves one TCP connection in namespace ns on addr:port, reads
// it to its end and sends how many bytes came.
func sinkTCP(t *testing.T, ns, addr string, port int) <-chan int {
	t.Helper()
	var l net.Listener
	if err := netns.Do(ns, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", ns, err)
	}
	t.Cleanup(func() { l.Close() })
	received := make(chan int, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			received <- 0
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		n, _ := io.Copy(io.Discard, c)
		received <- int(n)
	}()
	return received
}
