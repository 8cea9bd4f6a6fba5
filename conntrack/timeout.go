package conntrack

import (
	"maps"
	"time"
)

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

// attributes are t's fields by OVS's names of timeout policy attributes
// (CT_Timeout_Policy:timeouts, ovs-vsctl add-zone-tp), those OVS's
// userspace datapath has, in OVS's order, with the timer state each
// times, as OVS's tm_to_ct_dpif_tp maps them (TCP's "closing" is the
// fin_wait attribute, its "fin wait" the time_wait one).
func (t *Timeouts) attributes() []struct {
	key   string
	tm    timeout
	field *time.Duration
} {
	return []struct {
		key   string
		tm    timeout
		field *time.Duration
	}{
		{"tcp_syn_sent", tmTCPFirst, &t.TCPSynSent}, {"tcp_syn_recv", tmTCPOpening, &t.TCPSynRecv},
		{"tcp_established", tmTCPEstablished, &t.TCPEstablished}, {"tcp_fin_wait", tmTCPClosing, &t.TCPFinWait},
		{"tcp_time_wait", tmTCPFinWait, &t.TCPTimeWait}, {"tcp_close", tmTCPClosed, &t.TCPClose},
		{"udp_first", tmOtherFirst, &t.UDPFirst}, {"udp_single", tmOtherMultiple, &t.UDPSingle},
		{"udp_multiple", tmOtherBidir, &t.UDPMultiple},
		{"icmp_first", tmICMPFirst, &t.ICMPFirst}, {"icmp_reply", tmICMPReply, &t.ICMPReply},
	}
}

// Set sets the field that OVS's timeout policy attribute key names,
// reporting false for a key OVS's userspace datapath has not (the kernel
// datapath's tcp_close_wait and the like).
func (t *Timeouts) Set(key string, d time.Duration) bool {
	for _, a := range t.attributes() {
		if a.key == key {
			*a.field = d
			return true
		}
	}
	return false
}

// Attributes are t's fields that are set, by OVS's names, in OVS's order.
func (t Timeouts) Attributes() []TimeoutAttribute {
	var out []TimeoutAttribute
	for _, a := range t.attributes() {
		if *a.field > 0 {
			out = append(out, TimeoutAttribute{Key: a.key, Timeout: *a.field})
		}
	}
	return out
}

// TimeoutAttribute is one attribute of a timeout policy.
type TimeoutAttribute struct {
	Key     string
	Timeout time.Duration
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

// table maps each timer state to its duration (attributes); zero fields
// take OVS's defaults.
func (t Timeouts) table() [numTimeouts]int64 {
	return t.over(DefaultTimeouts.over([numTimeouts]int64{}))
}

// over is table with base's durations where t's fields are zero.
func (t Timeouts) over(base [numTimeouts]int64) [numTimeouts]int64 {
	out := base
	for _, a := range t.attributes() {
		if *a.field > 0 {
			out[a.tm] = int64(*a.field)
		}
	}
	return out
}

// zonePolicies are the zones' own timeouts, by zone, as given and as
// tables.
type zonePolicies struct {
	given  map[uint16]Timeouts
	tables map[uint16]*[numTimeouts]int64
}

// SetZoneTimeouts gives zones timeout policies of their own (OVS's
// CT_Zone:timeout_policy, which ovs-vsctl add-zone-tp writes): a
// connection of a zone in policies is timed by its Timeouts, whose zero
// fields take the tracker's own; one of another zone, by the tracker's.
// It replaces the policies set before. A connection takes its zone's
// policy as it is when its timer is next armed (its next packet), as in
// OVS.
func (t *Tracker) SetZoneTimeouts(policies map[uint16]Timeouts) {
	if len(policies) == 0 {
		t.zoneTimeouts.Store(nil)
		return
	}
	zones := zonePolicies{given: maps.Clone(policies), tables: make(map[uint16]*[numTimeouts]int64, len(policies))}
	for z, p := range policies {
		table := p.over(t.timeouts)
		zones.tables[z] = &table
	}
	t.zoneTimeouts.Store(&zones)
}

// ZoneTimeouts are the zones' timeout policies SetZoneTimeouts set.
func (t *Tracker) ZoneTimeouts() map[uint16]Timeouts {
	if zones := t.zoneTimeouts.Load(); zones != nil {
		return maps.Clone(zones.given)
	}
	return nil
}

// timeout is how long a connection of zone lives in timer state tm.
func (t *Tracker) timeout(zone uint16, tm timeout) int64 {
	if zones := t.zoneTimeouts.Load(); zones != nil {
		if table := zones.tables[zone]; table != nil {
			return table[tm]
		}
	}
	return t.timeouts[tm]
}
