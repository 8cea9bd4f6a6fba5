package conntrack

import (
	"testing"
	"time"

	"github.com/xswitch/xswitch/header"
)

// onlyHandle is the handle of the one connection in tr.
func onlyHandle(t *testing.T, tr *Tracker, now int64) Handle {
	t.Helper()
	entries := tr.Dump(nil, now)
	if len(entries) != 1 {
		t.Fatalf("%d connections, want 1", len(entries))
	}
	return entries[0].Handle
}

// A connection is handed to a fast path once established, with its ends'
// windows as tcpStep holds them and the shifts it applies to each: each
// end's own when both offered a scale, 14 when picked up midway, none
// when only one end offered one (the offered shift 15 is RFC 7323's 14).
func TestKernelStateOfTCP(t *testing.T) {
	for _, c := range []struct {
		name           string
		client, server int // the SYNs' window scale options + 1 (0: none); -1: picked up midway
		want           [2]uint8
	}{
		{"both scale", 3, 8, [2]uint8{2, 7}},
		{"both scale, one by 15", 16, 1, [2]uint8{14, 0}},
		{"only the client scales", 5, 0, [2]uint8{0, 0}},
		{"only the server scales", 0, 5, [2]uint8{0, 0}},
		{"neither scales", 0, 0, [2]uint8{0, 0}},
		{"picked up midway", -1, -1, [2]uint8{14, 14}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(t)
			s := newSession(tr)
			if c.client < 0 {
				s.play(t, []seg{
					{desc: "data, no connection", flags: TCPAck, payload: 10, want: "+trk+new"},
					{desc: "ACK back", fromServer: true, flags: TCPAck, want: "+trk+est+rpl"},
				})
				h := onlyHandle(t, tr, s.now)
				if _, ok := tr.KernelState(h); ok {
					t.Fatal("handed over with the client's end not yet established")
				}
				s.play(t, []seg{{desc: "ACK", flags: TCPAck, want: "+trk+est"}})
			} else {
				s.play(t, []seg{
					{desc: "SYN", flags: TCPSyn, wscale: c.client, want: "+trk+new"},
					{desc: "SYN-ACK", fromServer: true, flags: TCPSyn | TCPAck, wscale: c.server, want: "+trk+est+rpl"},
				})
				h := onlyHandle(t, tr, s.now)
				if _, ok := tr.KernelState(h); ok {
					t.Fatal("handed over before the handshake's last ACK")
				}
				s.play(t, []seg{{desc: "ACK", flags: TCPAck, want: "+trk+est"}})
			}
			h := onlyHandle(t, tr, s.now)
			k, ok := tr.KernelState(h)
			if !ok {
				t.Fatal("an established connection is not handed over")
			}
			conn := tr.byHandle(h)
			want := KernelConn{Proto: header.ProtoTCP, SeqCheck: true, Expires: conn.expires.Load(), Timeout: int64(24 * time.Hour)}
			for i, p := range conn.tcp {
				want.TCP[i] = KernelTCPEnd{SeqLo: p.seqLo, SeqHi: p.seqHi, MaxWin: p.maxWin, WScale: c.want[i]}
			}
			conn.mu.Unlock()
			if k != want {
				t.Errorf("KernelState %+v\nwant %+v", k, want)
			}
			if want.Expires != s.now+int64(24*time.Hour) {
				t.Errorf("expires %d after the last segment, want 24h", want.Expires-s.now)
			}
		})
	}
}

// Only what the tracker calls +est on every further packet is handed
// over: not a connection seen one way, an ICMP exchange (its echo
// identifier is in no fast path key), a closing TCP connection, a
// connection gone; with sequence checking off, the state says so.
func TestKernelStateRefuses(t *testing.T) {
	tr := newTracker(t)
	now := t0
	u := udp("10.0.0.1", "10.0.0.2", 1000, 53)
	run(tr, u, commit, now)
	h := onlyHandle(t, tr, now)
	if _, ok := tr.KernelState(h); ok {
		t.Error("UDP seen once is handed over")
	}
	// Seen twice one way, it stays so for each further packet that way
	// (+new), until one comes back.
	if got := run(tr, u, commit, now); got.State != state(t, "+trk+new") {
		t.Fatalf("UDP seen twice one way: %s", got.State)
	}
	k, ok := tr.KernelState(h)
	if want := (KernelConn{Proto: header.ProtoUDP, SeqCheck: true, OrigOnly: true, Expires: now + int64(60*time.Second), Timeout: int64(60 * time.Second)}); !ok || k != want {
		t.Errorf("UDP seen twice one way: %+v, %v; want %+v", k, ok, want)
	}
	run(tr, udp("10.0.0.2", "10.0.0.1", 53, 1000), commit, now)
	if tr.SyncFromKernel(h, k) {
		t.Error("took the state of the connection seen one way after it was seen both ways")
	}
	k, ok = tr.KernelState(h)
	if want := (KernelConn{Proto: header.ProtoUDP, SeqCheck: true, Expires: now + int64(30*time.Second), Timeout: int64(30 * time.Second)}); !ok || k != want {
		t.Errorf("UDP seen both ways: %+v, %v; want %+v", k, ok, want)
	}
	tr.SetTCPSeqCheck(false)
	if k, _ := tr.KernelState(h); k.SeqCheck {
		t.Error("sequence checking off, the state says on")
	}
	tr.Flush(nil, now)
	if _, ok := tr.KernelState(h); ok {
		t.Error("a flushed connection is handed over")
	}

	tr = newTracker(t)
	run(tr, icmpMsg("10.0.0.1", "10.0.0.2", 8, 0, 7), commit, now)
	run(tr, icmpMsg("10.0.0.2", "10.0.0.1", 0, 0, 7), commit, now)
	if _, ok := tr.KernelState(onlyHandle(t, tr, now)); ok {
		t.Error("an answered ICMP echo is handed over")
	}

	tr = newTracker(t)
	s := newSession(tr)
	s.play(t, append(append([]seg{}, handshake...), seg{desc: "FIN", flags: TCPFin | TCPAck, want: "+trk+est"}))
	if _, ok := tr.KernelState(onlyHandle(t, tr, s.now)); ok {
		t.Error("a closing connection is handed over")
	}
}

// What a fast path moved on comes back: the windows replace the
// tracker's, and the next packet is judged by them; the expiry moves
// later, never earlier; a connection past its time on the tracker's
// clock, but not in the state taken back, lives on. State not the
// connection's, or a connection no longer established, is refused and
// changes nothing.
func TestSyncFromKernel(t *testing.T) {
	tr := newTracker(t)
	s := newSession(tr)
	s.play(t, handshake)
	h := onlyHandle(t, tr, s.now)
	k, _ := tr.KernelState(h)

	// The fast path carried 100000 bytes from the client, and the
	// server's acks of them with a window of 60000 bytes.
	moved := k
	moved.TCP[0].SeqLo += 100000
	moved.TCP[0].SeqHi = moved.TCP[0].SeqLo + 60000
	moved.TCP[1].MaxWin = 60000
	moved.Expires = k.Expires + int64(time.Hour)
	if !tr.SyncFromKernel(h, moved) {
		t.Fatal("refused")
	}
	if got, _ := tr.KernelState(h); got != moved {
		t.Errorf("after the sync %+v\nwant %+v", got, moved)
	}
	older := moved
	older.Expires = k.Expires
	if !tr.SyncFromKernel(h, older) {
		t.Fatal("refused")
	}
	if got, _ := tr.KernelState(h); got.Expires != moved.Expires {
		t.Errorf("an earlier expiry moved the connection's back by %v", time.Duration(moved.Expires-got.Expires))
	}

	for _, bad := range []func(k *KernelConn){
		func(k *KernelConn) { k.Proto = header.ProtoUDP },
		func(k *KernelConn) { k.TCP[1].WScale = 3 },
	} {
		wrong := moved
		bad(&wrong)
		wrong.TCP[0].SeqLo++
		if tr.SyncFromKernel(h, wrong) {
			t.Errorf("took %+v", wrong)
		}
	}
	if got, _ := tr.KernelState(h); got != moved {
		t.Errorf("a refused sync changed the state to %+v", got)
	}

	// Past the tracker's own time (a day after the handshake), but not
	// the fast path's, which carried a packet an hour later.
	late := k.Expires + int64(time.Minute)
	p := tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPAck|TCPPsh, moved.TCP[0].SeqLo, moved.TCP[1].SeqLo, 65535, 100)
	if got := run(tr, p, commit, late); got.State != state(t, "+trk+est") {
		t.Errorf("data at the synced edge, after the sync: %s, want +trk+est", got.State)
	}
	if got := run(tr, p, commit, late+int64(25*time.Hour)); got.State&StateEstablished != 0 {
		t.Errorf("data a day after the last packet: %s", got.State)
	}
	if tr.SyncFromKernel(h, moved) {
		t.Error("took the state of a connection since replaced")
	}

	tr = newTracker(t)
	s = newSession(tr)
	s.play(t, append(append([]seg{}, handshake...), seg{desc: "FIN", flags: TCPFin | TCPAck, want: "+trk+est"}))
	if tr.SyncFromKernel(onlyHandle(t, tr, s.now), k) {
		t.Error("took the state of a closing connection")
	}
}
