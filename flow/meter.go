package flow

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Meters, as OpenFlow 1.3 has them (OFPT_METER_MOD) and ovs-ofctl writes
// them (add-meter, dump-meters):
//
//	meter=1 kbps burst stats bands=type=drop rate=1000 burst_size=100
//
// A meter measures the rate of the frames a rule's meter instruction
// sends through it. Each band has a rate: when the frames come faster
// than some bands' rates, the band of the highest of those rates applies
// to the frame, which it drops (drop) or marks as more droppable
// (dscp_remark); below every band's rate the frame goes on untouched.

// MeterFlags are a meter's OFPMF_* flags.
type MeterFlags uint16

const (
	MeterFlagKbps  MeterFlags = 1 << 0 // OFPMF_KBPS: the bands' rates are kilobits a second, their bursts kilobits
	MeterFlagPktps MeterFlags = 1 << 1 // OFPMF_PKTPS: packets a second, and packets
	MeterFlagBurst MeterFlags = 1 << 2 // OFPMF_BURST: the bands' burst sizes hold, not the switch's own
	MeterFlagStats MeterFlags = 1 << 3 // OFPMF_STATS: the meter counts
)

// meterFlagNames are the flags as ovs-ofctl writes them, in its order.
var meterFlagNames = []struct {
	flag MeterFlags
	name string
}{{MeterFlagKbps, "kbps"}, {MeterFlagPktps, "pktps"}, {MeterFlagBurst, "burst"}, {MeterFlagStats, "stats"}}

// BandType is a meter band's OFPMBT_* type.
type BandType uint16

const (
	BandDrop       BandType = 1 // OFPMBT_DROP
	BandDSCPRemark BandType = 2 // OFPMBT_DSCP_REMARK
)

func (t BandType) String() string {
	switch t {
	case BandDrop:
		return "drop"
	case BandDSCPRemark:
		return "dscp_remark"
	}
	return strconv.Itoa(int(t))
}

// Meter numbers OpenFlow reserves: a meter has a number from 1 to
// MeterMax; the others name the switch's own meters (which xswitch has
// not) and, in requests, every meter.
const (
	MeterMax        = 0xffff0000
	MeterSlowpath   = 0xfffffffd
	MeterController = 0xfffffffe
	MeterAll        = 0xffffffff
)

// Meter is one meter: its number, flags and bands.
type Meter struct {
	ID    uint32
	Flags MeterFlags
	Bands []MeterBand
}

// MeterBand is one of a meter's bands.
type MeterBand struct {
	Type BandType
	// Rate is in kilobits or packets a second, as the meter's flags say;
	// BurstSize in kilobits or packets, and only with MeterFlagBurst.
	Rate, BurstSize uint32
	// PrecLevel is how many levels a dscp_remark band raises the drop
	// precedence of the frame's DSCP by.
	PrecLevel uint8
}

// meterIDNames are the reserved meters ovs-ofctl names by word.
var meterIDNames = map[string]uint32{"all": MeterAll, "controller": MeterController, "slowpath": MeterSlowpath}

// ParseMeter parses a meter as add-meter and mod-meter take it, as OVS
// reads it: "meter=ID" (a number from 1 to MeterMax, or all, controller,
// slowpath), the flags, then "bands=" and the bands, each from its
// "type=" on, with rate=, burst_size= and prec_level=. Words are separated
// by commas or whitespace, names from values by "=" or whitespace. It
// refuses what ovs-ofctl refuses; what the text does not forbid but
// OpenFlow does (both kbps and pktps, neither, a reserved id) is the meter
// table's to refuse, with OpenFlow's code.
func ParseMeter(s string) (Meter, error) {
	head, bands, ok := strings.Cut(s, "band")
	if ok {
		_, bands, ok = strings.Cut(bands, "=")
	}
	if !ok {
		return Meter{}, errors.New("must specify bands")
	}
	m, err := parseMeterHead(head, true)
	if err != nil {
		return Meter{}, err
	}
	if m.Flags == 0 {
		return Meter{}, errors.New("meter must specify either 'kbps' or 'pktps'")
	}
	if m.Bands, err = parseMeterBands(bands); err != nil {
		return Meter{}, err
	}
	for _, b := range m.Bands {
		switch {
		case b.Type == BandDSCPRemark && b.PrecLevel == 0:
			return Meter{}, errors.New("a dscp_remark band must have a prec_level")
		case b.Type != BandDSCPRemark && b.PrecLevel != 0:
			return Meter{}, errors.New("only a dscp_remark band may have a prec_level")
		case b.Rate == 0:
			return Meter{}, errors.New("a band must have a rate")
		case m.Flags&MeterFlagBurst != 0 && b.BurstSize == 0:
			return Meter{}, errors.New("a band must have a burst_size when the meter's 'burst' flag is set")
		case m.Flags&MeterFlagBurst == 0 && b.BurstSize != 0:
			return Meter{}, errors.New("a band may have a burst_size only when the meter's 'burst' flag is set")
		}
	}
	return m, nil
}

// ParseMeterID parses the meter del-meters and dump-meters take:
// "meter=ID", ID a number or all, controller or slowpath; "" is all.
func ParseMeterID(s string) (uint32, error) {
	if strings.Trim(s, meterSeparators) == "" {
		return MeterAll, nil
	}
	m, err := parseMeterHead(s, false)
	return m.ID, err
}

// The separators of ovs-ofctl's meter syntax: between words, and also
// between a name and its value.
const (
	meterSeparators     = ", \t\r\n"
	meterNameSeparators = "=" + meterSeparators
)

// meterWords reads text a word at a time as OVS does (strtok): a name
// ends at "=" or a separator, a value at a separator, and separators
// before a word are skipped.
type meterWords struct{ text string }

func (w *meterWords) next(separators string) (string, bool) {
	w.text = strings.TrimLeft(w.text, separators)
	if w.text == "" {
		return "", false
	}
	word := w.text
	if i := strings.IndexAny(word, separators); i >= 0 {
		word, w.text = word[:i], word[i+1:]
	} else {
		w.text = ""
	}
	return word, true
}

// parseMeterHead parses what comes before a meter's bands: its id and,
// if withFlags, its flags.
func parseMeterHead(text string, withFlags bool) (Meter, error) {
	var m Meter
	words := meterWords{text}
	for {
		name, ok := words.next(meterNameSeparators)
		if !ok {
			break
		}
		if flag, isFlag := meterFlag(name); withFlags && isFlag {
			m.Flags |= flag
			continue
		}
		value, ok := words.next(meterSeparators)
		if !ok {
			return Meter{}, fmt.Errorf("field %s missing value", name)
		}
		if name != "meter" {
			return Meter{}, fmt.Errorf("unknown keyword %s", name)
		}
		id, err := meterIDFromText(value)
		if err != nil {
			return Meter{}, err
		}
		m.ID = id
	}
	if m.ID == 0 {
		return Meter{}, errors.New("must specify 'meter'")
	}
	return m, nil
}

func meterFlag(name string) (MeterFlags, bool) {
	for _, f := range meterFlagNames {
		if f.name == name {
			return f.flag, true
		}
	}
	return 0, false
}

// meterIDFromText reads a meter id: a number from 1 to MeterMax, or a
// reserved meter's name.
func meterIDFromText(text string) (uint32, error) {
	if id, ok := meterIDNames[text]; ok {
		return id, nil
	}
	id, err := numberFromText("meter", text, math.MaxUint32)
	if err == nil && (id == 0 || id > MeterMax) {
		err = fmt.Errorf("invalid meter %s (1 to %d, all, controller or slowpath)", text, MeterMax)
	}
	return uint32(id), err
}

// parseMeterBands parses a meter's bands, the text after "bands=".
func parseMeterBands(text string) ([]MeterBand, error) {
	var bands []MeterBand
	words := meterWords{text}
	for {
		name, ok := words.next(meterNameSeparators)
		if !ok {
			break
		}
		value, ok := words.next(meterSeparators)
		if !ok {
			return nil, fmt.Errorf("field %s missing value", name)
		}
		if name == "type" {
			var b MeterBand
			switch value {
			case "drop":
				b.Type = BandDrop
			case "dscp_remark":
				b.Type = BandDSCPRemark
			default:
				return nil, fmt.Errorf("unknown band type %s (drop or dscp_remark)", value)
			}
			bands = append(bands, b)
			continue
		}
		if len(bands) == 0 {
			return nil, errors.New("a band must start with the 'type' keyword")
		}
		b := &bands[len(bands)-1]
		var err error
		var n uint64
		switch name {
		case "rate":
			n, err = numberFromText(name, value, math.MaxUint32)
			b.Rate = uint32(n)
		case "burst_size":
			n, err = numberFromText(name, value, math.MaxUint32)
			b.BurstSize = uint32(n)
		case "prec_level":
			n, err = numberFromText(name, value, math.MaxUint8)
			b.PrecLevel = uint8(n)
		default:
			err = fmt.Errorf("unknown keyword %s", name)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(bands) == 0 {
		return nil, errors.New("meter must have bands")
	}
	return bands, nil
}

// FormatMeterID writes a meter's id as ovs-ofctl does: its number, or
// the reserved meter's name.
func FormatMeterID(id uint32) string {
	if id <= MeterMax {
		return strconv.FormatUint(uint64(id), 10)
	}
	for name, reserved := range meterIDNames {
		if reserved == id {
			return name
		}
	}
	return "unknown"
}

// FormatMeter writes m as ovs-ofctl's dump-meters prints it, each band on
// a line of its own:
//
//	meter=1 kbps burst stats bands=
//	type=drop rate=1000 burst_size=100
//
// ParseMeter reads it back.
func FormatMeter(m Meter) string {
	var b strings.Builder
	b.WriteString("meter=")
	b.WriteString(FormatMeterID(m.ID))
	b.WriteByte(' ')
	flags := m.Flags
	for _, f := range meterFlagNames {
		if flags&f.flag != 0 {
			b.WriteString(f.name)
			b.WriteByte(' ')
			flags &^= f.flag
		}
	}
	if flags != 0 {
		fmt.Fprintf(&b, "flags:%#x ", uint16(flags))
	}
	b.WriteString("bands=")
	for _, band := range m.Bands {
		fmt.Fprintf(&b, "\ntype=%s rate=%d", band.Type, band.Rate)
		if m.Flags&MeterFlagBurst != 0 {
			fmt.Fprintf(&b, " burst_size=%d", band.BurstSize)
		}
		if band.Type == BandDSCPRemark {
			fmt.Fprintf(&b, " prec_level=%d", band.PrecLevel)
		}
	}
	return b.String()
}

// MeterStats are a meter's counters (OpenFlow's ofp_meter_stats): the
// flows that use it, the frames and bytes sent through it, how long it
// has been there, and what each band applied to, in the meter's order.
type MeterStats struct {
	ID               uint32
	FlowCount        uint32
	PacketIn, ByteIn uint64
	Duration         time.Duration
	Bands            []BandStats
}

// BandStats are the frames and bytes a band applied to.
type BandStats struct {
	Packets, Bytes uint64
}

// FormatMeterStats writes s as ovs-ofctl's meter-stats prints it:
//
//	meter:1 flow_count:5 packet_in_count:4096 byte_in_count:143360 duration:394.174s bands:
//	0: packet_count:126 byte_count:13363
func FormatMeterStats(s MeterStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "meter:%s flow_count:%d packet_in_count:%d byte_in_count:%d duration:%s bands:",
		FormatMeterID(s.ID), s.FlowCount, s.PacketIn, s.ByteIn, durationText(s.Duration))
	for i, band := range s.Bands {
		fmt.Fprintf(&b, "\n%d: packet_count:%d byte_count:%d", i, band.Packets, band.Bytes)
	}
	return b.String()
}

// durationText writes d as OVS's ofp_print_duration does: whole seconds
// bare, milliseconds with three decimals, finer with as many as it takes.
func durationText(d time.Duration) string {
	sec, nsec := int64(d/time.Second), int64(d%time.Second)
	switch {
	case nsec == 0:
		return fmt.Sprintf("%ds", sec)
	case nsec%int64(time.Millisecond) == 0:
		return fmt.Sprintf("%d.%03ds", sec, nsec/int64(time.Millisecond))
	}
	return strings.TrimRight(fmt.Sprintf("%d.%09d", sec, nsec), "0") + "s"
}
