package test

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

// TestFragmentedUDPCrosses sends UDP datagrams larger than the MTU, which
// IP splits into fragments: the first fragment's UDP header gives the
// whole datagram's length, longer than the fragment, and must not make the
// switch take the frame for a malformed one.
func TestFragmentedUDPCrosses(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	sender, receiver := r.hosts[0], r.hosts[1]

	var listener *net.UDPConn
	if err := netns.Do(receiver.ns, func() error {
		var err error
		listener, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(receiver.addr)})
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", receiver.ns, err)
	}
	defer listener.Close()
	var conn *net.UDPConn
	if err := netns.Do(sender.ns, func() error {
		var err error
		conn, err = net.DialUDP("udp4", nil, listener.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatalf("dial from %s: %v", sender.ns, err)
	}
	defer conn.Close()

	const datagrams, size = 10, 4000 // three fragments each on a 1500-byte MTU
	buf := make([]byte, 2*size)
	for i := range datagrams {
		want := bytes.Repeat([]byte{byte(i)}, size)
		if _, err := conn.Write(want); err != nil {
			t.Fatalf("send datagram %d: %v", i, err)
		}
		if err := listener.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := listener.Read(buf)
		if err != nil {
			t.Fatalf("datagram %d of %d bytes did not arrive: %v\n%s", i, size, err, rxErrors(t, r))
		}
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("datagram %d arrived as %d bytes, not the %d sent", i, n, size)
		}
	}
}

// rxErrors describes the bridge's ports' receive errors, for a failure.
func rxErrors(t *testing.T, r *rig) string {
	var out string
	for ofport, c := range rxCountersOf(t, r.d, r.br) {
		out += fmt.Sprintf("port %d: rx errs %d\n", ofport, c.errs)
	}
	return out
}
