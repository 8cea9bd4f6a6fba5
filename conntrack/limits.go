package conntrack

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Refusal is why a commit was refused. The packet goes on as +new,
// uncommitted, as in OVS; connections in the table are not disturbed,
// which is what keeps a flood of new connections that fills the table
// from harming established ones.
type Refusal uint8

const (
	refusedNone Refusal = iota
	// RefusedFull: the table holds maxconns connections.
	RefusedFull
	// RefusedZoneLimit: the zone holds its limit.
	RefusedZoneLimit
	// RefusedNATExhausted: no free address and port in the NAT range.
	RefusedNATExhausted
	// RefusedClash: another connection has the reply tuple (one
	// translated onto it).
	RefusedClash
	numRefusals
)

var refusalNames = [numRefusals]string{"", "full", "zone_limit", "nat_exhausted", "clash"}

// String is the reason's name, for metrics labels.
func (r Refusal) String() string {
	if r < numRefusals {
		return refusalNames[r]
	}
	return strconv.Itoa(int(r))
}

// Refusals lists the reasons, for exporting each one's count.
func Refusals() []Refusal {
	return []Refusal{RefusedFull, RefusedZoneLimit, RefusedNATExhausted, RefusedClash}
}

// zoneLimits is an immutable snapshot of the limits: commits read it
// without a lock, changes replace it.
type zoneLimits struct {
	// def is the default limit of zones without their own; 0 is none.
	def   uint32
	zones map[uint16]uint32
}

// limit is zone's limit, if it has one: its own (0 allows none), or the
// default if that is set.
func (l *zoneLimits) limit(zone uint16) (uint32, bool) {
	if v, ok := l.zones[zone]; ok {
		return v, true
	}
	return l.def, l.def != 0
}

// admit counts a connection about to be committed in zone, or says why
// it may not be: the zone's limit first, then the table's, as OVS checks
// them.
func (t *Tracker) admit(zone uint16) Refusal {
	zc := &t.zoneCount[zone]
	if limit, ok := t.limits.Load().limit(zone); ok {
		for {
			n := zc.Load()
			if uint32(n) >= limit {
				return RefusedZoneLimit
			}
			if zc.CompareAndSwap(n, n+1) {
				break
			}
		}
	} else {
		zc.Add(1)
	}
	limit := int64(t.maxConns.Load())
	for {
		n := t.count.Load()
		if n >= limit {
			zc.Add(-1)
			return RefusedFull
		}
		if t.count.CompareAndSwap(n, n+1) {
			return refusedNone
		}
	}
}

// release uncounts a connection of zone that is gone or was not made.
func (t *Tracker) release(zone uint16) {
	t.zoneCount[zone].Add(-1)
	t.count.Add(-1)
}

// SetMaxConns sets the most connections the table holds
// (ct-set-maxconns). Lowering it below the count removes nothing: new
// commits are refused until connections end.
func (t *Tracker) SetMaxConns(n uint32) { t.maxConns.Store(n) }

// MaxConns is the most connections the table holds (ct-get-maxconns).
func (t *Tracker) MaxConns() uint32 { return t.maxConns.Load() }

// Count is how many connections the table holds (ct-get-nconns),
// counting those past their time that the sweep has not removed yet, as
// OVS does.
func (t *Tracker) Count() int { return int(t.count.Load()) }

// ZoneLimit is one zone's limit and count, as ct-get-limits shows them.
type ZoneLimit struct {
	Zone  uint16
	Limit uint32 // 0: unlimited (when the zone has no limit and no default is set)
	Count uint32
}

// SetDefaultZoneLimit sets the limit of zones without their own
// (ct-set-limits default=N); 0 removes it (ct-del-limits default).
func (t *Tracker) SetDefaultZoneLimit(limit uint32) {
	t.changeLimits(func(l *zoneLimits) { l.def = limit })
}

// SetZoneLimit sets zone's own limit (ct-set-limits zone=Z,limit=N). A
// limit of 0 admits no connection, as in OVS's userspace tracker today.
func (t *Tracker) SetZoneLimit(zone uint16, limit uint32) {
	t.changeLimits(func(l *zoneLimits) { l.zones[zone] = limit })
}

// DeleteZoneLimit removes zone's own limit (ct-del-limits zone=Z): the
// default applies to it again.
func (t *Tracker) DeleteZoneLimit(zone uint16) {
	t.changeLimits(func(l *zoneLimits) { delete(l.zones, zone) })
}

func (t *Tracker) changeLimits(change func(*zoneLimits)) {
	t.limitsMu.Lock()
	defer t.limitsMu.Unlock()
	old := t.limits.Load()
	l := &zoneLimits{def: old.def, zones: maps.Clone(old.zones)}
	if l.zones == nil {
		l.zones = make(map[uint16]uint32)
	}
	change(l)
	t.limits.Store(l)
}

// ZoneLimits returns the default limit and, for the zones asked (all
// zones with their own limit if none are), each zone's limit and count
// (ct-get-limits). A zone asked for without a limit of its own shows the
// default.
//
// The count is the zone's connections in the table, as the kernel
// datapath counts them; OVS's userspace tracker counts only those
// committed while the zone had a limit.
func (t *Tracker) ZoneLimits(zones ...uint16) (def uint32, out []ZoneLimit) {
	l := t.limits.Load()
	if len(zones) == 0 {
		zones = slices.Sorted(maps.Keys(l.zones))
	}
	for _, z := range zones {
		limit, _ := l.limit(z)
		out = append(out, ZoneLimit{Zone: z, Limit: limit, Count: uint32(t.zoneCount[z].Load())})
	}
	return l.def, out
}

// FormatZoneLimits writes ct-get-limits' output as OVS does.
func FormatZoneLimits(def uint32, limits []ZoneLimit) string {
	var b strings.Builder
	b.WriteString("default limit=")
	b.WriteString(strconv.FormatUint(uint64(def), 10))
	for _, z := range limits {
		b.WriteString("\nzone=" + strconv.Itoa(int(z.Zone)) + ",limit=" + strconv.FormatUint(uint64(z.Limit), 10) +
			",count=" + strconv.FormatUint(uint64(z.Count), 10))
	}
	return b.String()
}
