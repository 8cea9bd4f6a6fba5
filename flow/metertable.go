package flow

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// How many meters a bridge has room for, and bands a meter: the fast
// path's meters map (bpf/lib/structs.h's FP_MAX_METERS and FP_MAX_BANDS)
// has this room, whether the fast path is on or off.
const (
	MaxMeters     = 1024
	MaxMeterBands = 8
)

// MeterTable is a bridge's meters at one moment: immutable, so that
// forwarders read it without locks while a change makes the next one,
// as with Table and GroupTable.
type MeterTable struct {
	meters map[uint32]*Meter
}

// NewMeterTable returns an empty meter table.
func NewMeterTable() *MeterTable { return &MeterTable{meters: map[uint32]*Meter{}} }

// Len is how many meters there are.
func (t *MeterTable) Len() int { return len(t.meters) }

// Get returns meter id, if there is one.
func (t *MeterTable) Get(id uint32) (*Meter, bool) {
	m, ok := t.meters[id]
	return m, ok
}

// Meters lists the meters by id.
func (t *MeterTable) Meters() []*Meter {
	out := slices.Collect(maps.Values(t.meters))
	slices.SortFunc(out, func(a, b *Meter) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// MeterModCode is why a change of the meter table, or a rule's meter,
// was refused, as OpenFlow's OFPMMFC_* codes say it.
type MeterModCode uint16

// The codes of OpenFlow 1.3.5's ofp_meter_mod_failed_code this table
// uses.
const (
	MeterExists       MeterModCode = 1  // OFPMMFC_METER_EXISTS
	MeterInvalid      MeterModCode = 2  // OFPMMFC_INVALID_METER: a reserved id
	MeterUnknown      MeterModCode = 3  // OFPMMFC_UNKNOWN_METER
	MeterBadFlags     MeterModCode = 5  // OFPMMFC_BAD_FLAGS
	MeterBadRate      MeterModCode = 6  // OFPMMFC_BAD_RATE
	MeterBadBurst     MeterModCode = 7  // OFPMMFC_BAD_BURST
	MeterBadBand      MeterModCode = 8  // OFPMMFC_BAD_BAND
	MeterBadBandValue MeterModCode = 9  // OFPMMFC_BAD_BAND_VALUE
	MeterOutOfMeters  MeterModCode = 10 // OFPMMFC_OUT_OF_METERS
	MeterOutOfBands   MeterModCode = 11 // OFPMMFC_OUT_OF_BANDS
)

// MeterModError is a refused change of the meter table: its code and
// what it says to a person.
type MeterModError struct {
	Code MeterModCode
	Msg  string
}

func (e *MeterModError) Error() string { return e.Msg }

func meterModError(code MeterModCode, format string, args ...any) error {
	return &MeterModError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Add returns the table with m added, or why not: its id is taken or
// reserved, the table is full, or m is not a meter the switch can run
// (CheckMeter).
func (t *MeterTable) Add(m Meter) (*MeterTable, error) {
	if err := checkMeterID(m.ID); err != nil {
		return nil, err
	}
	if _, ok := t.meters[m.ID]; ok {
		return nil, meterModError(MeterExists, "meter %d exists", m.ID)
	}
	if len(t.meters) >= MaxMeters {
		return nil, meterModError(MeterOutOfMeters, "the bridge has %d meters, as many as it has room for", len(t.meters))
	}
	return t.with(m)
}

// Modify returns the table with m in place of the meter of its id, which
// must be there.
func (t *MeterTable) Modify(m Meter) (*MeterTable, error) {
	if err := checkMeterID(m.ID); err != nil {
		return nil, err
	}
	if _, ok := t.meters[m.ID]; !ok {
		return nil, meterModError(MeterUnknown, "meter %d does not exist", m.ID)
	}
	return t.with(m)
}

// Delete returns the table without meter id (MeterAll: without any), and
// the ids it removed; a meter that is not there is no error, as in
// OpenFlow. The rules that use a removed meter go with it: that is the
// caller's to do (MeterOf).
func (t *MeterTable) Delete(id uint32) (*MeterTable, []uint32) {
	if id == MeterAll {
		return &MeterTable{meters: map[uint32]*Meter{}}, slices.Sorted(maps.Keys(t.meters))
	}
	if _, ok := t.meters[id]; !ok {
		return t, nil
	}
	next := &MeterTable{meters: maps.Clone(t.meters)}
	delete(next.meters, id)
	return next, []uint32{id}
}

func (t *MeterTable) with(m Meter) (*MeterTable, error) {
	if err := CheckMeter(&m); err != nil {
		return nil, err
	}
	m.Bands = slices.Clone(m.Bands)
	next := &MeterTable{meters: maps.Clone(t.meters)}
	next.meters[m.ID] = &m
	return next, nil
}

func checkMeterID(id uint32) error {
	if id == 0 || id > MeterMax {
		return meterModError(MeterInvalid, "meter %s is reserved: a meter's id is from 1 to %d", FormatMeterID(id), MeterMax)
	}
	return nil
}

// CheckMeter refuses a meter the switch cannot run, with OpenFlow's code:
// flags that are not one unit (kbps or pktps) and maybe burst and stats;
// no bands, or more than MaxMeterBands (as Open vSwitch refuses a meter
// without bands: OUT_OF_BANDS); a band of another type than drop and
// dscp_remark, of rate 0, without the burst size its meter's burst flag
// asks for, or a dscp_remark band that would remark nothing.
func CheckMeter(m *Meter) error {
	const known = MeterFlagKbps | MeterFlagPktps | MeterFlagBurst | MeterFlagStats
	switch units := m.Flags & (MeterFlagKbps | MeterFlagPktps); {
	case m.Flags&^known != 0:
		return meterModError(MeterBadFlags, "meter %d: unknown flags %#x", m.ID, uint16(m.Flags&^known))
	case units == 0:
		return meterModError(MeterBadFlags, "meter %d: neither kbps nor pktps", m.ID)
	case units == MeterFlagKbps|MeterFlagPktps:
		return meterModError(MeterBadFlags, "meter %d: both kbps and pktps", m.ID)
	case len(m.Bands) == 0:
		return meterModError(MeterOutOfBands, "meter %d has no bands", m.ID)
	case len(m.Bands) > MaxMeterBands:
		return meterModError(MeterOutOfBands, "meter %d has %d bands: at most %d", m.ID, len(m.Bands), MaxMeterBands)
	}
	for i, b := range m.Bands {
		switch {
		case b.Type != BandDrop && b.Type != BandDSCPRemark:
			return meterModError(MeterBadBand, "meter %d: band %d of type %s (drop and dscp_remark are)", m.ID, i, b.Type)
		case b.Rate == 0:
			return meterModError(MeterBadRate, "meter %d: band %d of rate 0", m.ID, i)
		case m.Flags&MeterFlagBurst != 0 && b.BurstSize == 0:
			return meterModError(MeterBadBurst, "meter %d: band %d has no burst_size, and the meter's burst flag is set", m.ID, i)
		case b.Type == BandDSCPRemark && b.PrecLevel == 0:
			return meterModError(MeterBadBandValue, "meter %d: band %d is a dscp_remark of prec_level 0", m.ID, i)
		}
	}
	return nil
}

// MeterOf returns the meter a rule's actions send its frames through, if
// any: a rule has one meter instruction at most.
func MeterOf(actions []Action) (id uint32, ok bool) {
	for _, a := range actions {
		if a.Type == ActMeter {
			return a.Meter, true
		}
	}
	return 0, false
}
