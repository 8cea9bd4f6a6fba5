package conntrack

import "time"

// Timeouts is how long a connection lives without a packet, by the state
// it is in: OVS's timeout policy attributes, with its userspace defaults
// (DefaultTimeouts). Protocols other than TCP, ICMP and ICMPv6 use UDP's,
// as in OVS. A zero field takes the default.
type Timeouts struct {
	TCPSynSent     time.Duration // one end has sent a SYN
	TCPSynRecv     time.Duration // opening, not yet established both ways
	TCPEstablished time.Duration
	TCPFinWait     time.Duration // one end has closed (sent a FIN)
	TCPTimeWait    time.Duration // both ends have closed
	TCPClose       time.Duration // both FINs acknowledged, or a reset
	UDPFirst       time.Duration // one packet seen
	UDPSingle      time.Duration // several packets, one direction
	UDPMultiple    time.Duration // both directions
	ICMPFirst      time.Duration // a request seen
	ICMPReply      time.Duration // a reply seen
}

// DefaultTimeouts are OVS's userspace datapath defaults
// (ct_dpif_netdev_tp_def in lib/conntrack-tp.c).
var DefaultTimeouts = Timeouts{
	TCPSynSent:     30 * time.Second,
	TCPSynRecv:     30 * time.Second,
	TCPEstablished: 24 * time.Hour,
	TCPFinWait:     15 * time.Minute,
	TCPTimeWait:    45 * time.Second,
	TCPClose:       30 * time.Second,
	UDPFirst:       60 * time.Second,
	UDPSingle:      60 * time.Second,
	UDPMultiple:    30 * time.Second,
	ICMPFirst:      60 * time.Second,
	ICMPReply:      30 * time.Second,
}

// timeout is the state a connection's timer was last armed for (OVS's
// enum ct_timeout), kept so that a refresh from the fast path re-arms the
// same one.
type timeout uint8

const (
	tmTCPFirst timeout = iota
	tmTCPOpening
	tmTCPEstablished
	tmTCPClosing
	tmTCPFinWait
	tmTCPClosed
	tmOtherFirst
	tmOtherMultiple
	tmOtherBidir
	tmICMPFirst
	tmICMPReply
	numTimeouts
)

// table maps each timer state to its duration, as OVS's
// tm_to_ct_dpif_tp does (TCP's "closing" is the fin_wait attribute, its
// "fin wait" the time_wait one).
func (t Timeouts) table() [numTimeouts]int64 {
	d := DefaultTimeouts
	pick := func(v, def time.Duration) int64 {
		if v > 0 {
			return int64(v)
		}
		return int64(def)
	}
	return [numTimeouts]int64{
		tmTCPFirst:       pick(t.TCPSynSent, d.TCPSynSent),
		tmTCPOpening:     pick(t.TCPSynRecv, d.TCPSynRecv),
		tmTCPEstablished: pick(t.TCPEstablished, d.TCPEstablished),
		tmTCPClosing:     pick(t.TCPFinWait, d.TCPFinWait),
		tmTCPFinWait:     pick(t.TCPTimeWait, d.TCPTimeWait),
		tmTCPClosed:      pick(t.TCPClose, d.TCPClose),
		tmOtherFirst:     pick(t.UDPFirst, d.UDPFirst),
		tmOtherMultiple:  pick(t.UDPSingle, d.UDPSingle),
		tmOtherBidir:     pick(t.UDPMultiple, d.UDPMultiple),
		tmICMPFirst:      pick(t.ICMPFirst, d.ICMPFirst),
		tmICMPReply:      pick(t.ICMPReply, d.ICMPReply),
	}
}
