package openflow

import "encoding/binary"

// Meters: OFPT_METER_MOD and the bands it shares with the METER_CONFIG
// multipart reply, the METER multipart's counters, and METER_FEATURES.

// MeterMod is OFPT_METER_MOD. The codec takes any command and flags:
// which of them a switch has is the switch's to say. Bands are decoded
// whatever the command, a delete's too.
type MeterMod struct {
	Command uint16
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

func (MeterMod) Type() Type { return TypeMeterMod }

// The values of MeterMod.Command (OFPMC_*).
const (
	MeterCommandAdd    uint16 = 0
	MeterCommandModify uint16 = 1
	MeterCommandDelete uint16 = 2
)

// The bits of MeterMod.Flags and MeterConfig.Flags, and of
// MeterFeatures.Capabilities (OFPMF_*).
const (
	MeterFlagKbps  uint16 = 1 << 0
	MeterFlagPktps uint16 = 1 << 1
	MeterFlagBurst uint16 = 1 << 2
	MeterFlagStats uint16 = 1 << 3
)

// The band types (OFPMBT_*) of MeterBand.Type; MeterFeatures.BandTypes
// has bit 1<<type for each.
const (
	MeterBandDrop         uint16 = 1
	MeterBandDSCPRemark   uint16 = 2
	MeterBandExperimenter uint16 = 0xffff
)

// Meter numbers (OFPM_*): a meter is numbered from 1 to MeterMax; the
// others are the switch's own meters and, in a delete or a request,
// every meter.
const (
	MeterMax        uint32 = 0xffff0000
	MeterSlowpath   uint32 = 0xfffffffd
	MeterController uint32 = 0xfffffffe
	MeterAll        uint32 = 0xffffffff
)

// MeterBand is one band of a meter: ofp_meter_band_drop or
// ofp_meter_band_dscp_remark, the types the codec decodes. PrecLevel is a
// dscp_remark band's; a drop band has none on the wire.
type MeterBand struct {
	Type            uint16
	Rate, BurstSize uint32
	PrecLevel       uint8
}

// MeterRequest is the body of a MultipartMeter or MultipartMeterConfig
// request (ofp_meter_multipart_request).
type MeterRequest struct {
	MeterID uint32 // MeterAll: every meter
}

// MeterStats is one meter of a MultipartMeter reply, with a counter for
// each of its bands, in their order.
type MeterStats struct {
	MeterID, FlowCount         uint32
	PacketInCount, ByteInCount uint64
	DurationSec, DurationNsec  uint32
	Bands                      []MeterBandStats
}

// MeterBandStats is ofp_meter_band_stats.
type MeterBandStats struct{ PacketCount, ByteCount uint64 }

// MeterConfig is one meter of a MultipartMeterConfig reply.
type MeterConfig struct {
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

// MeterFeatures is the body of a MultipartMeterFeatures reply.
type MeterFeatures struct {
	MaxMeter, BandTypes, Capabilities uint32
	MaxBands, MaxColor                uint8
}

const (
	meterModLen        = 8
	meterBandLen       = 16 // every type the codec decodes
	meterStatsLen      = 40
	meterBandStatsLen  = 16
	meterConfigLen     = 8
	meterFeaturesLen   = 16
	meterRequestLen    = 8
	meterBandHeaderLen = 4
)

func appendMeterMod(b []byte, m MeterMod) []byte {
	b = binary.BigEndian.AppendUint16(b, m.Command)
	b = binary.BigEndian.AppendUint16(b, m.Flags)
	b = binary.BigEndian.AppendUint32(b, m.MeterID)
	return appendMeterBands(b, m.Bands)
}

func appendMeterBands(b []byte, bands []MeterBand) []byte {
	be := binary.BigEndian
	for _, band := range bands {
		b = be.AppendUint16(b, band.Type)
		b = be.AppendUint16(b, meterBandLen)
		b = be.AppendUint32(b, band.Rate)
		b = be.AppendUint32(b, band.BurstSize)
		if band.Type == MeterBandDSCPRemark {
			b = append(b, band.PrecLevel, 0, 0, 0)
		} else {
			b = append(b, 0, 0, 0, 0)
		}
	}
	return b
}

func decodeMeterMod(p []byte) (Message, error) {
	if err := atLeast(TypeMeterMod, p, meterModLen); err != nil {
		return nil, err
	}
	be := binary.BigEndian
	m := MeterMod{Command: be.Uint16(p), Flags: be.Uint16(p[2:]), MeterID: be.Uint32(p[4:])}
	var err error
	if m.Bands, err = decodeMeterBands(p[meterModLen:]); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeMeterBands decodes p, a list of bands and nothing else. A band of
// a type other than drop and dscp_remark (an experimenter's above all) is
// OFPMMFC_BAD_BAND; a band whose length is not its type's, or does not
// fit, is OFPBRC_BAD_LEN, as Open vSwitch has them.
func decodeMeterBands(p []byte) ([]MeterBand, error) {
	be := binary.BigEndian
	var out []MeterBand
	for len(p) > 0 {
		if len(p) < meterBandHeaderLen {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "meter bands end with %d bytes", len(p))
		}
		t, n := be.Uint16(p), int(be.Uint16(p[2:]))
		if n < meterBandHeaderLen || n > len(p) {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "meter band of %d bytes in %d", n, len(p))
		}
		if t != MeterBandDrop && t != MeterBandDSCPRemark {
			return nil, errorf(ErrMeterModFailed, MeterModFailedBadBand, "meter band type %#x (drop and dscp_remark are)", t)
		}
		if n != meterBandLen {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "meter band of %d bytes, not %d", n, meterBandLen)
		}
		band := MeterBand{Type: t, Rate: be.Uint32(p[4:]), BurstSize: be.Uint32(p[8:])}
		if t == MeterBandDSCPRemark {
			band.PrecLevel = p[12]
		}
		out = append(out, band)
		p = p[n:]
	}
	return out, nil
}

func appendMeterStats(b []byte, s MeterStats) []byte {
	be := binary.BigEndian
	start := len(b)
	b = be.AppendUint32(b, s.MeterID)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // len, then padding
	b = be.AppendUint32(b, s.FlowCount)
	b = be.AppendUint64(b, s.PacketInCount)
	b = be.AppendUint64(b, s.ByteInCount)
	b = be.AppendUint32(b, s.DurationSec)
	b = be.AppendUint32(b, s.DurationNsec)
	for _, c := range s.Bands {
		b = be.AppendUint64(b, c.PacketCount)
		b = be.AppendUint64(b, c.ByteCount)
	}
	be.PutUint16(b[start+4:], uint16(len(b)-start))
	return b
}

func appendMeterConfig(b []byte, c MeterConfig) []byte {
	be := binary.BigEndian
	start := len(b)
	b = append(b, 0, 0)
	b = be.AppendUint16(b, c.Flags)
	b = be.AppendUint32(b, c.MeterID)
	b = appendMeterBands(b, c.Bands)
	be.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

func appendMeterFeatures(b []byte, f MeterFeatures) []byte {
	b = binary.BigEndian.AppendUint32(b, f.MaxMeter)
	b = binary.BigEndian.AppendUint32(b, f.BandTypes)
	b = binary.BigEndian.AppendUint32(b, f.Capabilities)
	return append(b, f.MaxBands, f.MaxColor, 0, 0)
}

func decodeMeterFeatures(p []byte) (MeterFeatures, error) {
	if err := exactly(TypeMultipartReply, p, meterFeaturesLen); err != nil {
		return MeterFeatures{}, err
	}
	be := binary.BigEndian
	return MeterFeatures{MaxMeter: be.Uint32(p), BandTypes: be.Uint32(p[4:]), Capabilities: be.Uint32(p[8:]),
		MaxBands: p[12], MaxColor: p[13]}, nil
}

// decodeMeterStatsList decodes a MultipartMeter reply's body. An
// ofp_meter_stats has its length after its meter id, not first as the
// other items have.
func decodeMeterStatsList(p []byte) ([]MeterStats, error) {
	be := binary.BigEndian
	var list []MeterStats
	for len(p) > 0 {
		if len(p) < meterStatsLen {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "meter stats: %d bytes left", len(p))
		}
		n := int(be.Uint16(p[4:]))
		if n < meterStatsLen || n > len(p) {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "meter stats of %d bytes in %d", n, len(p))
		}
		s := MeterStats{MeterID: be.Uint32(p), FlowCount: be.Uint32(p[12:]), PacketInCount: be.Uint64(p[16:]),
			ByteInCount: be.Uint64(p[24:]), DurationSec: be.Uint32(p[32:]), DurationNsec: be.Uint32(p[36:])}
		var err error
		if s.Bands, err = decodeFixedList(p[meterStatsLen:n], meterBandStatsLen, func(c []byte) MeterBandStats {
			return MeterBandStats{PacketCount: be.Uint64(c), ByteCount: be.Uint64(c[8:])}
		}); err != nil {
			return nil, err
		}
		list = append(list, s)
		p = p[n:]
	}
	return list, nil
}

func decodeMeterConfigList(p []byte) ([]MeterConfig, error) {
	be := binary.BigEndian
	var list []MeterConfig
	for len(p) > 0 {
		q, rest, err := nextItem(p, meterConfigLen, "meter config")
		if err != nil {
			return nil, err
		}
		c := MeterConfig{Flags: be.Uint16(q[2:]), MeterID: be.Uint32(q[4:])}
		if c.Bands, err = decodeMeterBands(q[meterConfigLen:]); err != nil {
			return nil, err
		}
		list = append(list, c)
		p = rest
	}
	return list, nil
}
