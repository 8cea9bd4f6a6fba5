package ofagent

import (
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// Meters over OpenFlow 1.3: METER_MOD into the daemon's meter table, and
// the METER, METER_CONFIG and METER_FEATURES multiparts out of it. The
// flags and band types are OpenFlow's numbers in package flow too.

func meterError(code uint16, format string, args ...any) error {
	return &openflow.DecodeError{Type: openflow.ErrMeterModFailed, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// meterMod applies a METER_MOD, or refuses it with its error.
func (c *conn) meterMod(raw []byte, m *openflow.MeterMod) {
	if c.isSlave() {
		c.sendError(raw, slaveError())
		return
	}
	mod, err := meterModFromOF(m)
	if err == nil {
		err = meterModError(c.ba.a.sw.ApplyMeterMod(c.ba.name, mod))
	}
	if err != nil {
		c.sendError(raw, err)
	}
}

// meterModFromOF translates m into the daemon's terms, refusing an
// unknown command; what a meter may be is the meter table's to say. A
// delete's flags and bands mean nothing, as in Open vSwitch. A band's
// burst size counts only with OFPMF_BURST, and is kept only then, as the
// saved configuration and dump-meters keep it.
func meterModFromOF(m *openflow.MeterMod) (control.MeterMod, error) {
	var mod control.MeterMod
	switch m.Command {
	case openflow.MeterCommandAdd:
		mod.Command = control.MeterAdd
	case openflow.MeterCommandModify:
		mod.Command = control.MeterModify
	case openflow.MeterCommandDelete:
		return control.MeterMod{Command: control.MeterDelete, Meter: flow.Meter{ID: m.MeterID}}, nil
	default:
		return mod, meterError(openflow.MeterModFailedBadCommand, "unknown meter command %d", m.Command)
	}
	mod.Meter = flow.Meter{ID: m.MeterID, Flags: flow.MeterFlags(m.Flags)}
	for _, b := range m.Bands {
		band := flow.MeterBand{Type: flow.BandType(b.Type), Rate: b.Rate, PrecLevel: b.PrecLevel}
		if mod.Meter.Flags&flow.MeterFlagBurst != 0 {
			band.BurstSize = b.BurstSize
		}
		mod.Meter.Bands = append(mod.Meter.Bands, band)
	}
	return mod, nil
}

// meterModError gives a refusal of the daemon's its OpenFlow error: the
// meter table's code, or OFPMMFC_UNKNOWN for what is not the meter's
// fault.
func meterModError(err error) error {
	var mme *flow.MeterModError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &mme):
		return meterError(uint16(mme.Code), "%s", mme.Msg)
	}
	return meterError(openflow.MeterModFailedUnknown, "%v", err)
}

// meterBandsToOF gives a meter's bands their OpenFlow form.
func meterBandsToOF(m *flow.Meter) []openflow.MeterBand {
	out := make([]openflow.MeterBand, 0, len(m.Bands))
	for _, b := range m.Bands {
		out = append(out, openflow.MeterBand{Type: uint16(b.Type), Rate: b.Rate, BurstSize: b.BurstSize, PrecLevel: b.PrecLevel})
	}
	return out
}

// meterConfigs describes meter id (openflow.MeterAll: every meter), as
// METER_CONFIG asks; none for a meter the bridge does not have.
func (ba *bridgeAgent) meterConfigs(id uint32) []openflow.MeterConfig {
	mt := ba.br.Meters()
	meters := mt.Meters()
	if id != openflow.MeterAll {
		meters = nil
		if m, ok := mt.Get(id); ok {
			meters = []*flow.Meter{m}
		}
	}
	var out []openflow.MeterConfig
	for _, m := range meters {
		out = append(out, openflow.MeterConfig{Flags: uint16(m.Flags), MeterID: m.ID, Bands: meterBandsToOF(m)})
	}
	return out
}

// meterStats gives the counters of meter id (openflow.MeterAll: of every
// meter); none for a meter the bridge does not have, as Open vSwitch
// answers.
func (ba *bridgeAgent) meterStats(id uint32) ([]openflow.MeterStats, error) {
	meters, err := ba.a.sw.Meters(ba.name, id)
	if err != nil {
		return nil, err
	}
	var out []openflow.MeterStats
	for _, m := range meters {
		s := openflow.MeterStats{MeterID: m.ID, FlowCount: m.FlowCount, PacketInCount: m.Packets, ByteInCount: m.Bytes}
		s.DurationSec, s.DurationNsec = durationToOF(m.DurationSec)
		for _, b := range m.Bands {
			s.Bands = append(s.Bands, openflow.MeterBandStats{PacketCount: b.Packets, ByteCount: b.Bytes})
		}
		out = append(out, s)
	}
	return out, nil
}

// meterFeatures is what METER_FEATURES says: as many meters and bands a
// meter as the bridge has room for, drop and dscp_remark bands, either
// unit, burst sizes and counters, and no color.
func meterFeatures() openflow.MeterFeatures {
	return openflow.MeterFeatures{
		MaxMeter:     flow.MaxMeters,
		BandTypes:    1<<openflow.MeterBandDrop | 1<<openflow.MeterBandDSCPRemark,
		Capabilities: uint32(openflow.MeterFlagKbps | openflow.MeterFlagPktps | openflow.MeterFlagBurst | openflow.MeterFlagStats),
		MaxBands:     flow.MaxMeterBands,
	}
}
