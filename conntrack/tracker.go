package conntrack

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// Config is how a Tracker starts.
type Config struct {
	// MaxConns is the most connections the tracker holds
	// (ct-set-maxconns); 0 takes DefaultMaxConns.
	MaxConns uint32
	// Timeouts are the idle timeouts; zero fields take OVS's defaults.
	Timeouts Timeouts
	// Seed keys the tracker's hashes (shards and NAT choices); 0 takes a
	// random one, as OVS's hash_basis. Tests set it to be repeatable.
	Seed uint64
}

// DefaultMaxConns is OVS's userspace default limit (DEFAULT_N_CONN_LIMIT).
const DefaultMaxConns = 3000000

// Tracker is a connection tracker: the table of connections, the ct()
// action that looks packets up in it, and the verbs of ovs-appctl's
// dpctl/*-conntrack family. Its methods may be called from any number of
// goroutines at once.
type Tracker struct {
	seed     uint64
	timeouts [numTimeouts]int64
	// zoneTimeouts are the zones' own (SetZoneTimeouts); nil when none
	// has any.
	zoneTimeouts atomic.Pointer[zonePolicies]
	tcpSeqCheck  atomic.Bool
	maxConns     atomic.Uint32
	count        atomic.Int64 // connections in the table, expired ones not yet swept included
	limits       atomic.Pointer[zoneLimits]
	limitsMu     sync.Mutex // serializes changes to limits
	stats        counters
	zoneCount    [numZones]atomic.Int32
	carriers     carriers
	fragments    fragments

	sweepMu sync.Mutex // one scan at a time, for victims
	victims []victim
	shards  [numShards]shard
	slab    slab
}

// counters are the tracker's event counts, for ct-stats-show and
// Prometheus.
type counters struct {
	created  atomic.Uint64
	expired  atomic.Uint64
	flushed  atomic.Uint64
	replaced atomic.Uint64
	refused  [numRefusals]atomic.Uint64
}

const numZones = 1 << 16

// New makes a tracker.
func New(cfg Config) *Tracker {
	t := &Tracker{seed: cfg.Seed, timeouts: cfg.Timeouts.table()}
	t.slab.chunks = new(chunkTable)
	runtime.AddCleanup(t, freeChunks, t.slab.chunks)
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	t.maxConns.Store(cfg.MaxConns)
	t.tcpSeqCheck.Store(true)
	t.limits.Store(&zoneLimits{})
	return t
}

// Action is one ct() action: ct(commit, force, zone=N, nat(...),
// exec(set_field:V/M->ct_mark, set_field:V/M->ct_label)).
type Action struct {
	Zone uint16
	// Commit remembers a new connection; without it the packet is +new
	// and nothing is kept.
	Commit bool
	// Force (which implies Commit) ends a connection met in its reply
	// direction and commits the packet's as a new one, the other way.
	Force bool
	NAT   NAT
	// SetMark and SetLabel set the connection's mark and label to
	// V | old&^M when it is in the table (committed now or before);
	// OVS's syntax allows them only with commit.
	SetMark          bool
	Mark, MarkMask   uint32
	SetLabel         bool
	Label, LabelMask Label
}

// maxAttempts bounds how often a packet is looked up again when another
// thread commits its connection at the same time.
const maxAttempts = 3

// Execute runs ct() action a on packet p at time now: it looks the packet
// up in a's zone, runs its connection's state machine, commits a new
// connection if a says so, and applies NAT. It writes the outcome into
// p.CT (ct_state and the rest, as OVS writes a packet's metadata), applies
// any translation to p.Header, and returns which header fields changed,
// for the caller to write into the frame.
//
// now is a monotonic clock in nanoseconds; a connection times out when now
// reaches its expiry, whether or not Sweep has removed it yet. (Using the
// clock of bpf_ktime_get_ns, CLOCK_MONOTONIC, lets a fast path refresh the
// same times.)
//
// A packet of an established connection costs a hash, two uncontended
// locks, one index probe and its protocol's checks: no allocation and no
// system call.
func (t *Tracker) Execute(p *Packet, a *Action, now int64) Rewrite {
	md := &p.CT
	if md.State != 0 && md.Zone != a.Zone {
		// A ct() in another zone sees the packet as untracked.
		md.State = 0
	}
	k, related, ok := t.key(&p.Header, a.Zone, now)
	if !ok {
		*md = CT{State: StateInvalid | StateTracked, Zone: a.Zone}
		return 0
	}
	if md.cached && !a.Force {
		// The packet's connection is known, unless its headers changed
		// since (OVS forgets it whenever an action sets an address or
		// port) or this is another zone.
		if c := t.byHandle(md.Conn); c != nil {
			if k == c.key[b2u(md.reply)] {
				return t.executeCached(c, p, a)
			}
			c.mu.Unlock()
		}
	}
	md.cached = false
	entry := *md
	for attempt := 1; ; attempt++ {
		rw, again := t.process(p, a, k, related, now, attempt < maxAttempts)
		if !again {
			return rw
		}
		*md = entry
	}
}

// key is h's tuple in zone (Header.key), a fragment's its datagram's.
func (t *Tracker) key(h *Header, zone uint16, now int64) (k Tuple, related, ok bool) {
	if h.Fragment && !h.Malformed && !t.fragments.key(h, zone, t.seed, now) {
		return k, false, false
	}
	return h.key(zone)
}

// executeCached is OVS's process_one_fast: the packet went through a ct()
// of this zone already, without nat, and found locked connection c; its
// state stands, its mark and label are read again, and nat (if asked now)
// applies.
func (t *Tracker) executeCached(c *conn, p *Packet, a *Action) Rewrite {
	md := &p.CT
	var rw Rewrite
	if a.NAT.Kind != NoNAT {
		rw = t.handleNAT(c, p, a.Zone, md.reply, md.related)
		md.cached = false
	}
	md.Zone = a.Zone
	t.setMarkLabel(c, a)
	md.Mark, md.Label = c.mark, c.label
	c.mu.Unlock()
	return rw
}

// process is OVS's process_one for a packet keyed k. With mayRetry, it
// reports again when another thread committed the packet's connection
// under it, for Execute to start over; without, the packet stays +new and
// uncommitted.
func (t *Tracker) process(p *Packet, a *Action, k Tuple, related bool, now int64, mayRetry bool) (Rewrite, bool) {
	md := &p.CT
	c, slot, reply := t.find(&k, md.State&(StateSrcNAT|StateDstNAT) != 0, now)
	if c != nil && a.Force && reply {
		gen := c.gen
		c.mu.Unlock()
		t.remove(slot, gen, &t.stats.replaced)
		c = nil
	}
	if c == nil {
		c, slot = t.origTupleConn(p, a, &k, now)
	}

	var rw Rewrite
	createNew := false
	switch {
	case c != nil:
		carried := c.carrier != 0 && !related && t.judgeCarried(c, makeHandle(slot, c.gen), &p.Header, reply)
		if createNew = t.track(c, p, reply, related, now); createNew {
			gen := c.gen
			c.mu.Unlock()
			t.remove(slot, gen, &t.stats.replaced)
			c = nil
			break
		}
		if carried {
			t.mergeCarried(c, makeHandle(slot, c.gen))
		}
		if a.NAT.Kind != NoNAT {
			rw = t.handleNAT(c, p, a.Zone, reply, related)
		}
	case related:
		// No connection for the packet an error quotes.
		md.State = StateInvalid
	default:
		createNew = true
	}

	if createNew {
		var raced bool
		c, slot, rw, raced = t.create(p, a, &k, now, mayRetry)
		if raced {
			return 0, true
		}
		reply, related = false, false
	}
	t.record(p, a, c, slot, &k, reply, related)
	return rw, false
}

// find looks up key k, returning its connection locked and the
// packet's direction in it. A packet an earlier ct() of this zone
// translated carries its translated addresses: it is found by the
// reverse of its tuple, which is then the connection's tuple of the
// other direction (OVS's initial_conn_lookup); k becomes the
// connection's tuple for the packet's direction.
func (t *Tracker) find(k *Tuple, natted bool, now int64) (*conn, uint32, bool) {
	if !natted {
		return t.lookup(k, now)
	}
	rk := k.Reverse()
	c, slot, reply := t.lookup(&rk, now)
	if c == nil {
		return nil, 0, false
	}
	reply = !reply
	*k = c.key[b2u(reply)]
	return c, slot, reply
}

// origTupleConn is OVS's check_orig_tuple: a packet translated earlier
// that its own tuple no longer finds (its headers changed outside the
// tracker) is looked up by the original tuple it was tracked with, and
// treated as going the original direction.
func (t *Tracker) origTupleConn(p *Packet, a *Action, k *Tuple, now int64) (*conn, uint32) {
	md := &p.CT
	if md.State&(StateSrcNAT|StateDstNAT) == 0 || md.Orig.Proto == 0 || a.NAT.Kind != NoNAT {
		return nil, 0
	}
	o := Tuple{Zone: md.Zone, IPv6: k.IPv6, Proto: md.Orig.Proto}
	o.Src.Addr, o.Dst.Addr = md.Orig.Src, md.Orig.Dst
	if isICMP(k.IPv6, k.Proto) {
		typ := uint8(md.Orig.SrcPort)
		rev, ok := icmpQuery(k.IPv6, typ)
		if !ok {
			return nil, 0
		}
		o.Src = Endpoint{Addr: md.Orig.Src, Port: k.Src.Port, ICMPType: typ}
		o.Dst = Endpoint{Addr: md.Orig.Dst, Port: k.Dst.Port, ICMPType: rev}
	} else {
		o.Src.Port, o.Dst.Port = md.Orig.SrcPort, md.Orig.DstPort
	}
	c, slot, _ := t.lookup(&o, now)
	return c, slot
}

// track runs locked connection c's state machine on the packet and sets
// its state bits (OVS's conn_update_state); it reports that the packet
// ends c and starts a new connection on its tuple.
func (t *Tracker) track(c *conn, p *Packet, reply, related bool, now int64) bool {
	md := &p.CT
	if related {
		// An error about the connection changes nothing of it.
		md.State |= StateRelated
		if reply {
			md.State |= StateReply
		}
		return false
	}
	u := c.step(t, &p.Header, reply, now)
	if reply && u != updInvalid {
		c.seenReply = true
	}
	switch u {
	case updValid:
		md.State = md.State&^StateNew | StateEstablished
		if reply {
			md.State |= StateReply
		}
	case updInvalid:
		md.State = StateInvalid
	case updReopen:
		return true
	case updValidNew:
		md.State |= StateNew
	}
	return false
}

// create is OVS's conn_not_found: a packet with no connection is +new if
// it may start one (+inv if not), and with commit its connection goes
// into the table, within the limits, translated if a says so. It returns
// the new connection locked, or nil when it is not kept. raced says
// another thread committed the same connection first (reported only with
// mayRetry).
func (t *Tracker) create(p *Packet, a *Action, k *Tuple, now int64, mayRetry bool) (c *conn, slot uint32, rw Rewrite, raced bool) {
	md := &p.CT
	if !p.validNew() {
		md.State = StateInvalid
		return nil, 0, 0, false
	}
	md.State = StateNew
	if !a.Commit && !a.Force {
		return nil, 0, 0, false
	}
	if why := t.admit(k.Zone); why != refusedNone {
		t.stats.refused[why].Add(1)
		return nil, 0, 0, false
	}
	slot, ok := t.slab.take()
	if !ok {
		t.release(k.Zone)
		t.stats.refused[RefusedFull].Add(1)
		return nil, 0, 0, false
	}
	c = t.slab.conn(slot)
	c.mu.Lock()
	c.key[0], c.key[1] = *k, k.Reverse()
	c.nat, c.mark, c.label, c.seenReply = 0, 0, Label{}, false
	c.start(t, &p.Header, now)

	var res insertResult
	if a.NAT.Kind == SNAT || a.NAT.Kind == DNAT {
		res = t.natInsert(c, slot, &a.NAT, now)
	} else {
		res = t.insert(c, slot, now)
	}
	if res == inserted {
		t.stats.created.Add(1)
		if c.nat != 0 {
			rw = t.natPacket(c, p, false, false)
		}
		return c, slot, rw, false
	}
	c.mu.Unlock()
	t.slab.give(slot)
	t.release(k.Zone)
	switch {
	case res == origTaken && mayRetry:
		return nil, 0, 0, true
	case res == replyTaken && (a.NAT.Kind == SNAT || a.NAT.Kind == DNAT):
		t.stats.refused[RefusedNATExhausted].Add(1)
	case res == replyTaken:
		t.stats.refused[RefusedClash].Add(1)
	}
	return nil, 0, 0, false
}

// record writes the packet's metadata from its connection c (locked, or
// nil when the packet has none in the table), after setting c's mark
// and label as a asks (OVS's write_ct_md, set_mark and set_label), and
// unlocks c. Without a connection the original tuple is the packet's own
// key.
func (t *Tracker) record(p *Packet, a *Action, c *conn, slot uint32, k *Tuple, reply, related bool) {
	md := &p.CT
	md.State |= StateTracked
	md.Zone = a.Zone
	if c == nil {
		md.Mark, md.Label, md.Conn, md.cached = 0, Label{}, 0, false
		md.Orig = origOf(k)
		return
	}
	t.setMarkLabel(c, a)
	md.Mark, md.Label = c.mark, c.label
	md.Orig = origOf(&c.key[0])
	md.Conn = makeHandle(slot, c.gen)
	md.reply, md.related = reply, related
	md.cached = a.NAT.Kind == NoNAT
	c.mu.Unlock()
}

func (t *Tracker) setMarkLabel(c *conn, a *Action) {
	if a.SetMark {
		c.mark = setMasked(c.mark, a.Mark, a.MarkMask)
	}
	if a.SetLabel {
		c.label = a.Label.or(c.label.andNot(a.LabelMask))
	}
}

// SetTCPSeqCheck turns TCP sequence checking on or off
// (ct-enable-tcp-seq-chk, ct-disable-tcp-seq-chk); it is on by default.
// Off, every segment passes as in window, resets included.
// The connections fast paths carry are taken back, to be carried again
// with the new setting.
func (t *Tracker) SetTCPSeqCheck(on bool) {
	if t.tcpSeqCheck.Swap(on) != on {
		t.takeBackAll(func(*conn) bool { return true })
	}
}

// TCPSeqCheck reports whether TCP sequence checking is on.
func (t *Tracker) TCPSeqCheck() bool { return t.tcpSeqCheck.Load() }
