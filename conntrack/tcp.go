package conntrack

// TCP tracking follows OVS's userspace tracker (lib/conntrack-tcp.c),
// which follows OpenBSD pf: each end has a state and a window of
// sequence numbers it may send in (Guido van Rooij's "Real stateful TCP
// packet filtering in IP Filter"), learned from what the other end
// acknowledges and advertises. A segment outside that window, acking
// data not sent or too far back, or a reset whose sequence number is not
// exactly where the sender is, is +inv and changes nothing.

// TCPState is one end's state, numbered as OVS's ct_dpif_tcp_state (the
// kernel's TCP states), so dumps read the same. OVS's tracker, and this
// one, use CLOSED, SYN_SENT, ESTABLISHED, CLOSING, FIN_WAIT_2 and
// TIME_WAIT.
type TCPState uint8

const (
	TCPClosed TCPState = iota
	TCPListen
	TCPSynSent
	TCPSynRecv
	TCPEstablished
	TCPCloseWait
	TCPFinWait1
	TCPClosing
	TCPLastAck
	TCPFinWait2
	TCPTimeWait
)

var tcpStateNames = [...]string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "CLOSE_WAIT",
	"FIN_WAIT_1", "CLOSING", "LAST_ACK", "FIN_WAIT_2", "TIME_WAIT"}

func (s TCPState) String() string {
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "[" + itoa(uint64(s)) + "]"
}

// tcpPeer is one end of a TCP connection.
type tcpPeer struct {
	seqLo  uint32 // the end of what this end has sent
	seqHi  uint32 // the most it may send: the other end's ack plus window
	maxWin uint16 // the largest window it advertised, unscaled
	wscale uint8  // wscaleSeen and its shift, or wscaleUnknown
	state  TCPState
}

const (
	wscaleSeen    = 0x80 // the end sent the window scale option in its SYN
	wscaleUnknown = 0x40 // the connection was picked up midway: scale unknown
	wscaleMask    = 0x0f
	maxWScale     = 14 // RFC 7323's largest shift
	// maxAckWindow is how far an ack may lag or lead the data it acks:
	// a window's worth and a fudge of 1500, as pf has it.
	maxAckWindow = 0xffff + 1500
)

// Sequence numbers compare modulo 2^32.
func seqGEQ(a, b uint32) bool { return int32(a-b) >= 0 }
func seqGT(a, b uint32) bool  { return int32(a-b) > 0 }

// tcpInvalidFlags reports flag combinations no TCP sends: SYN with RST or
// FIN, a segment with none of SYN, ACK and RST, or FIN, PSH or URG
// without ACK. (pf checks these when it scrubs; OVS always does.)
func tcpInvalidFlags(f uint8) bool {
	if f&TCPSyn != 0 {
		if f&(TCPRst|TCPFin) != 0 {
			return true
		}
	} else if f&(TCPAck|TCPRst) == 0 {
		return true
	}
	return f&TCPAck == 0 && f&(TCPFin|TCPPsh|TCPUrg) != 0
}

// wscaleOf is the window scale a SYN offers, marked as seen, or 0 if it
// has none.
func wscaleOf(h *Header) uint8 {
	if !h.HasWScale {
		return 0
	}
	return min(h.WScale, maxWScale) | wscaleSeen
}

// seqEnd is the sequence number after a segment: its data, and one each
// for SYN and FIN.
func seqEnd(h *Header) uint32 {
	end := h.Seq + h.Payload
	if h.TCPFlags&TCPSyn != 0 {
		end++
	}
	if h.TCPFlags&TCPFin != 0 {
		end++
	}
	return end
}

// tcpStart sets up the ends of a connection from its first segment, a
// SYN or one picked up midway (whose window scales are then unknown).
func (c *conn) tcpStart(h *Header) {
	src, dst := &c.tcp[0], &c.tcp[1]
	*src, *dst = tcpPeer{}, tcpPeer{}
	src.seqLo = h.Seq
	src.seqHi = seqEnd(h) + 1
	if h.TCPFlags&TCPSyn != 0 {
		src.wscale = wscaleOf(h)
	} else {
		src.wscale, dst.wscale = wscaleUnknown, wscaleUnknown
	}
	src.maxWin = max(h.Window, 1)
	if shift := src.wscale & wscaleMask; shift != 0 {
		// Keep max_win in the units the end's later, scaled windows
		// will be in.
		src.maxWin = divRoundUp(src.maxWin, shift)
	}
	dst.seqHi, dst.maxWin = 1, 1
	src.state, dst.state = TCPSynSent, TCPClosed
}

func divRoundUp(w uint16, shift uint8) uint16 {
	return uint16((uint32(w) + 1<<shift - 1) >> shift)
}

// tcpStep is OVS's tcp_conn_update: the segment's effect on the ends'
// states and windows.
func (c *conn) tcpStep(t *Tracker, h *Header, reply bool, now int64) update {
	src, dst := &c.tcp[0], &c.tcp[1] // the sender and the receiver
	if reply {
		src, dst = dst, src
	}
	flags := h.TCPFlags
	if tcpInvalidFlags(flags) {
		return updInvalid
	}

	if flags&(TCPSyn|TCPAck) == TCPSyn {
		if dst.state >= TCPFinWait2 && src.state >= TCPFinWait2 {
			// A new connection on the tuple of one that has closed.
			src.state, dst.state = TCPClosed, TCPClosed
			return updReopen
		}
		if src.state <= TCPSynSent {
			// The opening SYN again, or the other end opening too.
			src.state = TCPSynSent
			c.arm(t, tmTCPFirst, now)
			return updValidNew
		}
	}

	var sws, dws uint8 // the shifts of the sender's and receiver's windows
	if flags&TCPSyn == 0 {
		sws, dws = windowShifts(src, dst)
	}

	win := h.Window
	seq, ack, end := h.Seq, h.Ack, seqEnd(h)
	checkAckSkew := true
	if src.state < TCPSynSent {
		// The first segment from this end.
		if flags&TCPSyn != 0 && dst.wscale&wscaleSeen != 0 {
			src.wscale = wscaleOf(h)
			if src.wscale&wscaleSeen != 0 {
				sws, dws = src.wscale&wscaleMask, dst.wscale&wscaleMask
				win = divRoundUp(win, sws)
			} else {
				// The answer has no scale option, so neither end
				// scales: the opener's window was in bytes after all.
				dst.maxWin <<= dst.wscale & wscaleMask
				dst.wscale = 0
			}
		}
		src.seqLo = seq
		src.state = TCPSynSent
		// Slide the window if it is set from nothing, or was guessed
		// from a connection picked up midway.
		if lim := end + max(1, uint32(dst.maxWin)<<dws); src.seqHi == 1 || seqGEQ(lim, src.seqHi) {
			src.seqHi = lim
			// Be lenient with the acks of a connection being opened or
			// picked up.
			checkAckSkew = false
		}
		src.maxWin = max(src.maxWin, win)
	}

	if flags&TCPAck == 0 || (ack == 0 && flags&(TCPAck|TCPRst) == TCPAck|TCPRst) {
		// Nothing acked (or a stack's reset to a SYN, acking 0): let the
		// ack check pass.
		ack = dst.seqLo
	}
	if seq == end {
		// No data: place the segment at the sender's edge.
		seq, end = src.seqLo, src.seqLo
	}
	var ackSkew int64
	if checkAckSkew {
		ackSkew = int64(int32(dst.seqLo - ack))
	}

	inWindow := seqGEQ(src.seqHi, end) && // ends within what the receiver allows
		seqGEQ(seq, src.seqLo-uint32(dst.maxWin)<<dws) && // not more than a window back
		ackSkew >= -maxAckWindow && // acks not too far back
		ackSkew <= int64(maxAckWindow)<<sws && // nor too far ahead
		(flags&TCPRst == 0 || h.Seq == src.seqLo || h.Seq == src.seqLo+1 || h.Seq+1 == src.seqLo) // a reset right at the edge
	if inWindow || !t.tcpSeqCheck.Load() {
		c.tcpAdvance(src, dst, win, sws, ack, end)
		if flags&TCPSyn != 0 && src.state < TCPSynSent {
			src.state = TCPSynSent
		}
		if flags&TCPFin != 0 && src.state < TCPClosing {
			src.state = TCPClosing
		}
		if flags&TCPAck != 0 {
			switch dst.state {
			case TCPSynSent:
				dst.state = TCPEstablished
			case TCPClosing:
				dst.state = TCPFinWait2
			}
		}
		if flags&TCPRst != 0 {
			src.state, dst.state = TCPTimeWait, TCPTimeWait
		}
		c.arm(t, tcpTimeout(src.state, dst.state), now)
		return updValid
	}

	// pf's leniency, for stacks that send several SYNs before an
	// answer, for a connection picked up after the tracker lost it, and
	// for stray segments just after a close: accept a segment within a
	// window of the edges, without re-arming the timer, so that a flood
	// of them does not keep a connection alive.
	if (dst.state < TCPSynSent || dst.state >= TCPFinWait2 || src.state >= TCPFinWait2) &&
		seqGEQ(src.seqHi+maxAckWindow, end) && seqGEQ(seq, src.seqLo-maxAckWindow) {
		c.tcpAdvance(src, dst, win, sws, ack, end)
		if flags&TCPFin != 0 && src.state < TCPClosing {
			src.state = TCPClosing
		}
		if flags&TCPRst != 0 {
			src.state, dst.state = TCPTimeWait, TCPTimeWait
		}
		return updValid
	}
	return updInvalid
}

// windowShifts are the shifts of the windows ends a and b send, but in a
// SYN: each end's scale when both sent the option, the largest when the
// connection was picked up midway (the most permissive window), else
// none.
func windowShifts(a, b *tcpPeer) (uint8, uint8) {
	switch {
	case a.wscale&wscaleSeen != 0 && b.wscale&wscaleSeen != 0:
		return a.wscale & wscaleMask, b.wscale & wscaleMask
	case a.wscale&wscaleUnknown != 0 && b.wscale&wscaleUnknown != 0:
		return maxWScale, maxWScale
	}
	return 0, 0
}

// tcpAdvance moves the windows on by an accepted segment: the sender's
// largest window and edge, and how far the receiver may now send.
func (c *conn) tcpAdvance(src, dst *tcpPeer, win uint16, sws uint8, ack, end uint32) {
	src.maxWin = max(src.maxWin, win)
	if seqGT(end, src.seqLo) {
		src.seqLo = end
	}
	if scaled := uint32(win) << sws; seqGEQ(ack+scaled, dst.seqHi) {
		dst.seqHi = ack + max(scaled, 1)
	}
}

// tcpTimeout is the timer for the ends' states, the most closed first.
func tcpTimeout(a, b TCPState) timeout {
	switch {
	case a >= TCPFinWait2 && b >= TCPFinWait2:
		return tmTCPClosed
	case a >= TCPClosing && b >= TCPClosing:
		return tmTCPFinWait
	case a < TCPEstablished || b < TCPEstablished:
		return tmTCPOpening
	case a >= TCPClosing || b >= TCPClosing:
		return tmTCPClosing
	}
	return tmTCPEstablished
}

// tcpDumpState is the one state a dump shows for a connection: the
// further on of its ends', with FIN_WAIT_2 shown as TIME_WAIT and
// SYN_RECV as ESTABLISHED, as OVS coalesces them to read like the
// kernel's single state.
func tcpDumpState(a, b TCPState) TCPState {
	s := max(a, b)
	switch s {
	case TCPFinWait2:
		return TCPTimeWait
	case TCPSynRecv:
		return TCPEstablished
	}
	return s
}
