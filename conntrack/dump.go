package conntrack

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/xswitch/xswitch/header"
)

// Entry is one connection as the tracker's verbs show it
// (dump-conntrack), and what a fast path needs to carry it: both tuples
// (the reply tuple translated, if NAT applies), mark, label, expiry and
// TCP state.
type Entry struct {
	Handle      Handle
	Orig, Reply Tuple
	Mark        uint32
	Label       Label
	// Expires is when the connection times out, on Execute's clock;
	// Timeout is the whole seconds left then at the time of the dump.
	Expires int64
	Timeout uint32
	// TCP is the TCP state of the original and reply ends.
	TCP [2]TCPEnd
	// Status is the kernel's conntrack status bits that apply (Status*).
	Status uint32
}

// TCPEnd is one end of a TCP connection as dumps show it.
type TCPEnd struct {
	State  TCPState
	WScale uint8
	Flags  uint8 // TCPFlagWindowScale, TCPFlagBeLiberal
}

// TCP protoinfo flags, as the kernel and OVS name them.
const (
	TCPFlagWindowScale = 1 << 0 // the end sent a window scale option
	TCPFlagBeLiberal   = 1 << 3 // the connection was picked up midway
)

// Status bits, in the kernel's (and ct_dpif's) numbering.
const (
	StatusSeenReply  = 1 << 1
	StatusConfirmed  = 1 << 3
	StatusSrcNAT     = 1 << 4
	StatusDstNAT     = 1 << 5
	StatusSrcNATDone = 1 << 7
	StatusDstNATDone = 1 << 8
)

var statusNames = [...]string{"EXPECTED", "SEEN_REPLY", "ASSURED", "CONFIRMED", "SRC_NAT", "DST_NAT",
	"SEQ_ADJUST", "SRC_NAT_DONE", "DST_NAT_DONE"}

var tcpFlagNames = [...]string{"WINDOW_SCALE", "SACK_PERM", "CLOSE_INIT", "BE_LIBERAL",
	"DATA_UNACKNOWLEDGED", "MAXACK_SET"}

// entry reads locked connection c in slot.
func (t *Tracker) entry(c *conn, slot uint32, now int64) Entry {
	e := Entry{Handle: makeHandle(slot, c.gen), Orig: c.key[0], Reply: c.key[1], Mark: c.mark, Label: c.label,
		Expires: c.expires.Load(), Status: StatusConfirmed}
	if left := e.Expires - now; left > 0 {
		e.Timeout = uint32(left / 1e9)
	}
	if c.seenReply {
		e.Status |= StatusSeenReply
	}
	switch c.nat {
	case natSrc:
		e.Status |= StatusSrcNAT | StatusSrcNATDone
	case natDst:
		e.Status |= StatusDstNAT | StatusDstNATDone
	}
	if c.key[0].Proto == header.ProtoTCP {
		for i, p := range c.tcp {
			e.TCP[i] = TCPEnd{State: p.state, WScale: p.wscale & wscaleMask}
			if p.wscale&wscaleSeen != 0 {
				e.TCP[i].Flags |= TCPFlagWindowScale
			}
			if p.wscale&wscaleUnknown != 0 {
				e.TCP[i].Flags |= TCPFlagBeLiberal
			}
		}
	}
	return e
}

// TupleMatch is a partial tuple to flush or dump by: zero fields match
// anything. The ICMP fields count only with ICMP set, and then exactly
// (OVS's limitation). Src and Dst are in the filter's family.
type TupleMatch struct {
	Src, Dst           Addr
	SrcPort, DstPort   uint16
	ICMP               bool
	ICMPID             uint16
	ICMPType, ICMPCode uint8
}

func (m *TupleMatch) isZero() bool { return *m == TupleMatch{} }

func (m *TupleMatch) matches(t *Tuple) bool {
	switch {
	case !m.Src.IsZero() && m.Src != t.Src.Addr, !m.Dst.IsZero() && m.Dst != t.Dst.Addr:
		return false
	case isICMP(t.IPv6, t.Proto):
		return !m.ICMP || m.ICMPID == t.Src.Port && m.ICMPType == t.Src.ICMPType && m.ICMPCode == t.Src.ICMPCode
	}
	return (m.SrcPort == 0 || m.SrcPort == t.Src.Port) && (m.DstPort == 0 || m.DstPort == t.Dst.Port)
}

// Filter selects connections to dump or flush, as flush-conntrack's
// arguments do: [zone=N] [mark=V[/M]] [labels=V[/M]] [orig-tuple
// [reply-tuple]]. The zero Filter selects every connection.
type Filter struct {
	// Zone, if set, selects one zone.
	Zone *uint16
	// Family is 4 or 6 to select one, 0 for both; Proto 0 is any.
	Family uint8
	Proto  uint8
	// Orig and Reply match the original and reply tuples.
	Orig, Reply        TupleMatch
	Mark, MarkMask     uint32
	Labels, LabelsMask Label
}

func (f *Filter) matches(e *Entry) bool {
	if f.Zone != nil && *f.Zone != e.Orig.Zone {
		return false
	}
	if f.Family != 0 && (f.Family == 6) != e.Orig.IPv6 {
		return false
	}
	return (f.Proto == 0 || f.Proto == e.Orig.Proto) &&
		f.Orig.matches(&e.Orig) && f.Reply.matches(&e.Reply) &&
		e.Mark&f.MarkMask == f.Mark&f.MarkMask &&
		e.Label.and(f.LabelsMask) == f.Labels.and(f.LabelsMask)
}

// exactTuple is the tuple a filter names whole (OVS's
// ofp_ct_match_is_five_tuple: addresses, protocol and ports or ICMP
// fields of the original direction, nothing else), to be flushed by
// lookup in its zone (0 if none is given) in either direction.
func (f *Filter) exactTuple() (Tuple, bool) {
	o := &f.Orig
	if f.Family == 0 || f.Proto == 0 || o.Src.IsZero() || o.Dst.IsZero() || !f.Reply.isZero() ||
		f.MarkMask != 0 || !f.LabelsMask.IsZero() {
		return Tuple{}, false
	}
	k := Tuple{IPv6: f.Family == 6, Proto: f.Proto}
	if f.Zone != nil {
		k.Zone = *f.Zone
	}
	k.Src.Addr, k.Dst.Addr = o.Src, o.Dst
	switch {
	case isICMP(k.IPv6, k.Proto):
		rev, ok := icmpQuery(k.IPv6, o.ICMPType)
		if !o.ICMP || !ok {
			return Tuple{}, false
		}
		k.Src = Endpoint{Addr: o.Src, Port: o.ICMPID, ICMPType: o.ICMPType, ICMPCode: o.ICMPCode}
		k.Dst = Endpoint{Addr: o.Dst, Port: o.ICMPID, ICMPType: rev, ICMPCode: o.ICMPCode}
	case o.SrcPort == 0 || o.DstPort == 0:
		return Tuple{}, false
	default:
		k.Src.Port, k.Dst.Port = o.SrcPort, o.DstPort
	}
	return k, true
}

// Dump returns the live connections f selects (nil: all), ordered by
// zone and original tuple, at time now (dump-conntrack). Connections past
// their time are left out, as OVS leaves them.
func (t *Tracker) Dump(f *Filter, now int64) []Entry {
	var out []Entry
	t.scan(nil, func(slot uint32, c *conn) bool {
		if c.carrier != 0 {
			t.refresh(c, makeHandle(slot, c.gen))
		}
		if now < c.expires.Load() {
			if e := t.entry(c, slot, now); f == nil || f.matches(&e) {
				out = append(out, e)
			}
		}
		return false
	}, nil, false, now)
	slices.SortFunc(out, func(a, b Entry) int { return compareTuples(&a.Orig, &b.Orig) })
	return out
}

func compareTuples(a, b *Tuple) int {
	return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(b2u(a.IPv6), b2u(b.IPv6)), cmp.Compare(a.Proto, b.Proto),
		slices.Compare(a.Src.Addr[:], b.Src.Addr[:]), slices.Compare(a.Dst.Addr[:], b.Dst.Addr[:]),
		cmp.Compare(a.Src.Port, b.Src.Port), cmp.Compare(a.Dst.Port, b.Dst.Port),
		cmp.Compare(a.Src.ICMPType, b.Src.ICMPType), cmp.Compare(a.Src.ICMPCode, b.Src.ICMPCode))
}

// Flush removes the connections f selects (nil: all) and returns how
// many (flush-conntrack). A filter that names one whole original tuple
// removes the connection found by it in either direction, in its zone or
// zone 0, as OVS does.
func (t *Tracker) Flush(f *Filter, now int64) int {
	if f != nil {
		if k, ok := f.exactTuple(); ok {
			c, slot, _ := t.lookup(&k, now)
			if c == nil {
				return 0
			}
			gen := c.gen
			c.mu.Unlock()
			return int(b2u(t.remove(slot, gen, &t.stats.flushed)))
		}
	}
	return t.scan(nil, func(slot uint32, c *conn) bool {
		if f == nil {
			return true
		}
		e := t.entry(c, slot, now)
		return f.matches(&e)
	}, &t.stats.flushed, false, now)
}

// Sweep removes the connections past their time at now and returns how
// many. The caller runs it from time to time (OVS's clean thread sweeps
// every 20 s by default): a connection's time is exact whenever the
// sweep runs, since lookups ignore expired connections; the sweep only
// frees their room. It reads each slot's expiry without a lock, and locks
// only the connections past their time.
func (t *Tracker) Sweep(now int64) int {
	return t.scan(func(c *conn) bool { return now < c.expires.Load() },
		func(_ uint32, c *conn) bool { return now >= c.expires.Load() }, &t.stats.expired, true, now)
}

// Format writes e as dpctl/dump-conntrack does: verbose adds the id, the
// status bits and the TCP details of -m, stats the timeout of -s.
func (e *Entry) Format(verbose, stats bool) string {
	var b strings.Builder
	b.WriteString(protoName(e.Orig.Proto))
	b.WriteString(",orig=(")
	formatTuple(&b, &e.Orig)
	b.WriteString("),reply=(")
	formatTuple(&b, &e.Reply)
	b.WriteByte(')')
	if verbose {
		b.WriteString(",id=" + itoa(uint64(e.Handle.slot())))
	}
	if e.Orig.Zone != 0 {
		b.WriteString(",zone=" + itoa(uint64(e.Orig.Zone)))
	}
	if verbose {
		b.WriteString(",status=")
		formatFlags(&b, e.Status, statusNames[:])
	}
	if stats {
		b.WriteString(",timeout=" + itoa(uint64(e.Timeout)))
	}
	if e.Mark != 0 {
		b.WriteString(",mark=" + itoa(uint64(e.Mark)))
	}
	if !e.Label.IsZero() {
		b.WriteString(",labels=" + e.Label.String())
	}
	if e.Orig.Proto == header.ProtoTCP {
		b.WriteString(",protoinfo=(")
		if verbose {
			b.WriteString("state_orig=" + e.TCP[0].State.String() + ",state_reply=" + e.TCP[1].State.String())
			if e.TCP[0].WScale != 0 || e.TCP[1].WScale != 0 {
				b.WriteString(",wscale_orig=" + itoa(uint64(e.TCP[0].WScale)) + ",wscale_reply=" + itoa(uint64(e.TCP[1].WScale)))
			}
			b.WriteString(",flags_orig=")
			formatFlags(&b, uint32(e.TCP[0].Flags), tcpFlagNames[:])
			b.WriteString(",flags_reply=")
			formatFlags(&b, uint32(e.TCP[1].Flags), tcpFlagNames[:])
		} else {
			b.WriteString("state=" + e.State().String())
		}
		b.WriteByte(')')
	}
	return b.String()
}

// State is the one TCP state dump-conntrack and ct-stats-show show for
// a TCP connection (see tcpDumpState).
func (e *Entry) State() TCPState { return tcpDumpState(e.TCP[0].State, e.TCP[1].State) }

func protoName(p uint8) string {
	switch p {
	case header.ProtoICMP:
		return "icmp"
	case header.ProtoICMPv6:
		return "icmpv6"
	case header.ProtoTCP:
		return "tcp"
	case header.ProtoUDP:
		return "udp"
	case header.ProtoSCTP:
		return "sctp"
	case protoUDPLite:
		return "udplite"
	case protoDCCP:
		return "dccp"
	case protoIGMP:
		return "igmp"
	}
	return itoa(uint64(p))
}

const (
	protoIGMP    = 2
	protoDCCP    = 33
	protoUDPLite = 136
)

func formatTuple(b *strings.Builder, t *Tuple) {
	b.WriteString("src=")
	b.WriteString(formatAddr(t.Src.Addr, t.IPv6))
	b.WriteString(",dst=")
	b.WriteString(formatAddr(t.Dst.Addr, t.IPv6))
	if t.Proto == header.ProtoICMP || t.Proto == header.ProtoICMPv6 {
		b.WriteString(",id=" + itoa(uint64(t.Src.Port)) + ",type=" + itoa(uint64(t.Src.ICMPType)) + ",code=" + itoa(uint64(t.Src.ICMPCode)))
		return
	}
	b.WriteString(",sport=" + itoa(uint64(t.Src.Port)) + ",dport=" + itoa(uint64(t.Dst.Port)))
}

// formatAddr writes an address as inet_ntop does, which differs from
// netip in one case: an IPv6 address whose first 96 bits are zero (but
// :: and ::1) ends in dotted IPv4.
func formatAddr(a Addr, ipv6 bool) string {
	if ipv6 && [12]byte(a[:12]) == [12]byte{} && (a[12] != 0 || a[13] != 0) {
		return "::" + netipString4(a[12:])
	}
	return a.IP(ipv6).String()
}

func netipString4(b []byte) string {
	return itoa(uint64(b[0])) + "." + itoa(uint64(b[1])) + "." + itoa(uint64(b[2])) + "." + itoa(uint64(b[3]))
}

// formatFlags writes flags as OVS's format_flags: names joined by '|',
// unknown bits in hex, 0 for none.
func formatFlags(b *strings.Builder, flags uint32, names []string) {
	if flags == 0 {
		b.WriteByte('0')
		return
	}
	first, bad := true, uint32(0)
	for i := range 32 {
		bit := uint32(1) << i
		if flags&bit == 0 {
			continue
		}
		if i >= len(names) {
			bad |= bit
			continue
		}
		if !first {
			b.WriteByte('|')
		}
		b.WriteString(names[i])
		first = false
	}
	if bad != 0 {
		if !first {
			b.WriteByte('|')
		}
		b.WriteString("0x" + strconv.FormatUint(uint64(bad), 16))
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// ConnStats are ct-stats-show's figures of a dump.
type ConnStats struct {
	Total int
	// Protocols count the connections of each protocol that has any, in
	// ct-stats-show's order and with its names: TCP, UDP, UDPLITE,
	// SCTP, ICMP, ICMPv6, DCCP, IGMP, Other.
	Protocols []ProtoCount
	// TCPStates count the TCP connections in each state that has any,
	// the state a dump shows (Entry.State), in state order.
	TCPStates []TCPStateCount
}

// ProtoCount is how many connections of one protocol a dump holds.
type ProtoCount struct {
	Name  string
	Count int
}

// TCPStateCount is how many TCP connections of a dump are in one state.
type TCPStateCount struct {
	State TCPState
	Count int
}

type statsProto struct {
	proto uint8
	name  string
}

// statsProtos are ct-stats-show's protocols in its order; 0 stands for
// the others.
var statsProtos = [...]statsProto{{header.ProtoTCP, "TCP"}, {header.ProtoUDP, "UDP"}, {protoUDPLite, "UDPLITE"}, {header.ProtoSCTP, "SCTP"},
	{header.ProtoICMP, "ICMP"}, {header.ProtoICMPv6, "ICMPv6"}, {protoDCCP, "DCCP"}, {protoIGMP, "IGMP"}, {0, "Other"}}

// CountConns counts a dump's entries for ct-stats-show.
func CountConns(entries []Entry) ConnStats {
	var protos [len(statsProtos)]int
	var states [TCPTimeWait + 1]int
	for i := range entries {
		e := &entries[i]
		k := slices.IndexFunc(statsProtos[:], func(p statsProto) bool { return p.proto == e.Orig.Proto })
		if k < 0 {
			k = len(statsProtos) - 1
		}
		protos[k]++
		if e.Orig.Proto == header.ProtoTCP {
			states[e.State()]++
		}
	}
	s := ConnStats{Total: len(entries)}
	for k, n := range protos {
		if n != 0 {
			s.Protocols = append(s.Protocols, ProtoCount{Name: statsProtos[k].name, Count: n})
		}
	}
	for st, n := range states {
		if n != 0 {
			s.TCPStates = append(s.TCPStates, TCPStateCount{State: TCPState(st), Count: n})
		}
	}
	return s
}

// Format writes s as ct-stats-show does: the total, each protocol's
// count, and with verbose each TCP state's under the TCP line. (OVS counts
// ICMPv6 connections but prints no line for them; this prints one.)
func (s *ConnStats) Format(verbose bool) string {
	var b strings.Builder
	b.WriteString("Connections Stats:\n    Total: " + strconv.Itoa(s.Total) + "\n")
	for _, p := range s.Protocols {
		b.WriteString("  " + p.Name + ": " + strconv.Itoa(p.Count) + "\n")
		if verbose && p.Name == "TCP" {
			b.WriteString("    Conn per TCP states:\n")
			for _, st := range s.TCPStates {
				b.WriteString("\t  [" + st.State.String() + "]=" + strconv.Itoa(st.Count) + "\n")
			}
		}
	}
	return b.String()
}

// Stats are the tracker's counts, for ct-stats-show and metrics. Rates
// (new connections per second) are the caller's to derive from Created,
// as Prometheus' rate() does.
type Stats struct {
	Entries  int
	MaxConns uint32
	// Carried is how many connections fast paths carry (Carry).
	Carried int
	// Created counts committed connections; Expired, Flushed and
	// Replaced those removed by timing out, by Flush, and by a packet
	// that ended them (force, or a new SYN on a closed connection).
	Created, Expired, Flushed, Replaced uint64
	// Refused counts refused commits by reason, indexed by Refusal.
	Refused [numRefusals]uint64
	// Zones has the zones holding connections, in zone order.
	Zones []ZoneCount
}

// ZoneCount is how many connections one zone holds.
type ZoneCount struct {
	Zone  uint16
	Count uint32
}

// Stats reads the counts.
func (t *Tracker) Stats() Stats {
	s := Stats{Entries: t.Count(), MaxConns: t.MaxConns(), Carried: t.Carried(), Created: t.stats.created.Load(),
		Expired: t.stats.expired.Load(), Flushed: t.stats.flushed.Load(), Replaced: t.stats.replaced.Load()}
	for i := range s.Refused {
		s.Refused[i] = t.stats.refused[i].Load()
	}
	for z := range t.zoneCount {
		if n := t.zoneCount[z].Load(); n > 0 {
			s.Zones = append(s.Zones, ZoneCount{Zone: uint16(z), Count: uint32(n)})
		}
	}
	return s
}
