package conntrack

import "github.com/xswitch/xswitch/header"

// A fast path (the kernel's XDP program, bpf/lib/conntrack.h) may carry an
// established connection's packets without the tracker: the tracker
// hands it the state it needs to judge each packet as the tracker would
// (KernelState), the fast path gives the tracker every packet it cannot
// judge so, and the tracker takes back what the fast path moved on
// before it sees the connection's next packet (SyncFromKernel).

// KernelConn is an established connection's state as a fast path needs
// it to judge the connection's further packets as the tracker would, and
// to move it on as the tracker would.
type KernelConn struct {
	Proto uint8 // the connection's IP protocol
	// TCP are a TCP connection's ends: [0] the original direction's
	// sender, [1] the reply direction's.
	TCP [2]KernelTCPEnd
	// SeqCheck is the tracker's TCPSeqCheck: on, a segment outside its
	// window is +inv; off, every segment passes.
	SeqCheck bool
	// OrigOnly says the connection (UDP or another protocol's) has been
	// seen one way only: its packets that way leave it so (+new), one
	// the other way would make it one seen both ways.
	OrigOnly bool
	// Expires is when the connection times out, on Execute's clock,
	// unless a packet comes before; each packet moves it to Timeout
	// after the packet.
	Expires, Timeout int64
}

// Merge moves k on by what add, the same connection as another party
// moved it on since they both read it, says: the later of each edge and
// the larger of each window (a carried connection's state only moves
// forward), and the later expiry. A fast path's store merges what the
// tracker made of a frame that the fast path handed over while it
// carried the connection on (Carrier.MergeConn).
func (k *KernelConn) Merge(add *KernelConn) {
	k.Expires = max(k.Expires, add.Expires)
	for i := range k.TCP {
		e, a := &k.TCP[i], &add.TCP[i]
		e.SeqLo, e.SeqHi, e.MaxWin = seqMax(e.SeqLo, a.SeqLo), seqMax(e.SeqHi, a.SeqHi), max(e.MaxWin, a.MaxWin)
	}
}

// seqMax is the later of two sequence numbers, modulo 2^32.
func seqMax(a, b uint32) uint32 {
	if seqGEQ(a, b) {
		return a
	}
	return b
}

// KernelTCPEnd is one end of a TCP connection: the sequence number after
// what it has sent (SeqLo), the most it may send (SeqHi), its largest
// window as sent (MaxWin), and the shift tcpStep applies to its windows
// (WScale): its window scale option's when both ends sent one in their
// SYNs, 14 (the most permissive) when the connection was picked up
// midway, else 0.
type KernelTCPEnd struct {
	SeqLo, SeqHi uint32
	MaxWin       uint16
	WScale       uint8
}

// KernelState is h's connection as a fast path carries it, if it is
// established: a TCP connection whose ends are both ESTABLISHED, or a
// UDP (or other protocol's) connection that has had packets both ways;
// or a UDP (or other) connection of several packets one way, whose
// further packets that way the tracker calls +new and which stays so
// (OrigOnly). The tracker calls each further packet of an established
// connection +est (+rpl going the reply way) and re-arms its timer for
// the same state,
// but for TCP segments with SYN, FIN or RST or without ACK, which may
// change the state, and, with TCPSeqCheck on, segments outside their
// windows, which are +inv and change nothing. A segment within its
// window moves the windows on as tcpStep does (tcpAdvance). ok is false
// when the connection is gone, is not established, or is an ICMP
// exchange, whose tuple holds the echo's identifier, which no fast path
// key has.
func (t *Tracker) KernelState(h Handle) (KernelConn, bool) {
	c := t.byHandle(h)
	if c == nil {
		return KernelConn{}, false
	}
	defer c.mu.Unlock()
	return t.kernelState(c)
}

// kernelState is KernelState of locked connection c.
func (t *Tracker) kernelState(c *conn) (KernelConn, bool) {
	tm, origOnly, ok := c.carriedTimer()
	if !ok {
		return KernelConn{}, false
	}
	k := KernelConn{Proto: c.key[0].Proto, SeqCheck: t.tcpSeqCheck.Load(), OrigOnly: origOnly, Expires: c.expires.Load(), Timeout: t.timeout(c.key[0].Zone, tm)}
	if k.Proto == header.ProtoTCP {
		var shifts [2]uint8
		shifts[0], shifts[1] = windowShifts(&c.tcp[0], &c.tcp[1])
		for i, p := range c.tcp {
			k.TCP[i] = KernelTCPEnd{SeqLo: p.seqLo, SeqHi: p.seqHi, MaxWin: p.maxWin, WScale: shifts[i]}
		}
	}
	return k, true
}

// SyncFromKernel takes back k, what a fast path made of h's connection
// since KernelState gave it: the TCP ends' windows (SeqLo, SeqHi,
// MaxWin) replace the tracker's, and the connection expires at
// k.Expires if that is later than the tracker's time (so a packet the
// fast path carried re-arms the timer as one the tracker saw would, from
// the packet's time, even after the tracker's time for it passed, if the
// connection is still in the table). The fast path must have carried the
// connection alone since: call it with what the fast path held last,
// taken away from it, before the tracker sees the connection's next
// packet. It does nothing, and reports false, when the connection is
// gone or no longer established (KernelState), or k is not its state: of
// another protocol, or other window shifts.
func (t *Tracker) SyncFromKernel(h Handle, k KernelConn) bool {
	c := t.byHandle(h)
	if c == nil {
		return false
	}
	defer c.mu.Unlock()
	return c.syncFromKernel(&k)
}

// syncFromKernel is SyncFromKernel of locked connection c.
func (c *conn) syncFromKernel(k *KernelConn) bool {
	tm, origOnly, ok := c.carriedTimer()
	if !ok || k.Proto != c.key[0].Proto || k.OrigOnly != origOnly {
		return false
	}
	if k.Proto == header.ProtoTCP {
		sws, dws := windowShifts(&c.tcp[0], &c.tcp[1])
		if k.TCP[0].WScale != sws || k.TCP[1].WScale != dws {
			return false
		}
		for i := range c.tcp {
			p, e := &c.tcp[i], &k.TCP[i]
			p.seqLo, p.seqHi, p.maxWin = e.SeqLo, e.SeqHi, e.MaxWin
		}
	}
	if k.Expires > c.expires.Load() {
		c.tm = tm
		c.expires.Store(k.Expires)
	}
	return true
}

// carriedTimer reports whether locked connection c is one KernelState
// hands over, the timer each of its packets arms then, and whether it is
// carried one way only.
func (c *conn) carriedTimer() (tm timeout, origOnly, ok bool) {
	switch {
	case c.key[0].Proto == header.ProtoTCP:
		return tmTCPEstablished, false, c.tcp[0].state == TCPEstablished && c.tcp[1].state == TCPEstablished
	case isICMP(c.key[0].IPv6, c.key[0].Proto):
		return 0, false, false
	case c.other == otherMultiple:
		return tmOtherMultiple, true, true
	}
	return tmOtherBidir, false, c.other == otherBidir
}
