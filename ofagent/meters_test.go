package ofagent

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

func addMeter(id uint32, flags uint16, bands ...openflow.MeterBand) openflow.MeterMod {
	return openflow.MeterMod{Command: openflow.MeterCommandAdd, Flags: flags, MeterID: id, Bands: bands}
}

var (
	dropBand   = openflow.MeterBand{Type: openflow.MeterBandDrop, Rate: 1000, BurstSize: 100}
	remarkBand = openflow.MeterBand{Type: openflow.MeterBandDSCPRemark, Rate: 500, BurstSize: 50, PrecLevel: 2}
)

// meteredFlow is a flow to dst through meter id, which tells the
// controller when it goes.
func meteredFlow(id uint32, dst [4]byte) openflow.FlowMod {
	fm := addFlow(10, dst, openflow.PortNormal)
	fm.Flags = openflow.FlowFlagSendFlowRem
	fm.Instructions = append([]openflow.Instruction{openflow.InstructionMeter{MeterID: id}}, fm.Instructions...)
	return fm
}

// TestAgentMeters: meters over OpenFlow against the daemon (a bridge
// without ports): added, configured, counted and described as they were
// sent, used by a flow, refused with the specification's and Open
// vSwitch's errors without a change, modified, and deleted with the flow
// that uses them, which the controller is told of.
func TestAgentMeters(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	c.reply(deleteAll)
	kbps := addMeter(1, openflow.MeterFlagKbps|openflow.MeterFlagBurst|openflow.MeterFlagStats, dropBand, remarkBand)
	pktps := addMeter(2, openflow.MeterFlagPktps, openflow.MeterBand{Type: openflow.MeterBandDrop, Rate: 100})
	for _, m := range []openflow.MeterMod{kbps, pktps} {
		if got := c.reply(m); len(got) != 0 {
			t.Fatalf("meter %d: %#v", m.MeterID, got)
		}
	}
	configs := func(id uint32) []openflow.MeterConfig {
		t.Helper()
		got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartMeterConfig, Body: openflow.MeterRequest{MeterID: id}})
		return got[0].(openflow.MultipartReply).Body.([]openflow.MeterConfig)
	}
	want := []openflow.MeterConfig{
		{Flags: kbps.Flags, MeterID: 1, Bands: kbps.Bands},
		{Flags: pktps.Flags, MeterID: 2, Bands: pktps.Bands},
	}
	if got := configs(openflow.MeterAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("meter config:\n%#v\nnot\n%#v", got, want)
	}
	if got := configs(2); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("meter 2's config: %#v", got)
	}
	if got := configs(99); len(got) != 0 {
		t.Errorf("a missing meter's config: %#v", got)
	}

	for _, m := range []openflow.FlowMod{meteredFlow(1, [4]byte{10, 0, 0, 1}), addFlow(10, [4]byte{10, 0, 0, 2}, openflow.PortFlood)} {
		if got := c.reply(m); len(got) != 0 {
			t.Fatalf("a flow: %#v", got)
		}
	}
	stats := func(id uint32) []openflow.MeterStats {
		t.Helper()
		got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartMeter, Body: openflow.MeterRequest{MeterID: id}})
		return got[0].(openflow.MultipartReply).Body.([]openflow.MeterStats)
	}
	ms := stats(openflow.MeterAll)
	if len(ms) != 2 || ms[0].MeterID != 1 || ms[0].FlowCount != 1 || len(ms[0].Bands) != 2 || ms[0].DurationSec > 60 ||
		ms[1].MeterID != 2 || ms[1].FlowCount != 0 || len(ms[1].Bands) != 1 {
		t.Errorf("meter stats: %+v", ms)
	}
	if ms := stats(2); len(ms) != 1 || ms[0].MeterID != 2 {
		t.Errorf("meter 2's stats: %+v", ms)
	}
	if ms := stats(99); len(ms) != 0 {
		t.Errorf("a missing meter's stats: %+v", ms)
	}

	got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartMeterFeatures})
	wantFeatures := openflow.MeterFeatures{MaxMeter: flow.MaxMeters, BandTypes: 1<<1 | 1<<2, Capabilities: 0xf, MaxBands: flow.MaxMeterBands}
	if f := got[0].(openflow.MultipartReply).Body.(openflow.MeterFeatures); f != wantFeatures {
		t.Errorf("meter features: %+v, want %+v", f, wantFeatures)
	}
	got = c.reply(openflow.MultipartRequest{MType: openflow.MultipartTableFeatures})
	if tf := got[0].(openflow.MultipartReply).Body.([]openflow.TableFeatures)[0]; !hasInstruction(tf, openflow.InstructionTypeMeter) {
		t.Errorf("table features do not have the meter instruction: %+v", tf.Properties[0])
	}

	band := func(b openflow.MeterBand, edit func(*openflow.MeterBand)) openflow.MeterBand {
		edit(&b)
		return b
	}
	nineBands := make([]openflow.MeterBand, flow.MaxMeterBands+1)
	for i := range nineBands {
		nineBands[i] = openflow.MeterBand{Type: openflow.MeterBandDrop, Rate: uint32(100 * (i + 1))}
	}
	for _, r := range []struct {
		what string
		m    openflow.Message
		typ  openflow.ErrorType
		code uint16
	}{
		{"a meter with no bands", addMeter(7, openflow.MeterFlagKbps), openflow.ErrMeterModFailed, openflow.MeterModFailedOutOfBands},
		{"a meter of more bands than it may have", addMeter(7, openflow.MeterFlagPktps, nineBands...), openflow.ErrMeterModFailed, openflow.MeterModFailedOutOfBands},
		{"a band of rate 0", addMeter(7, openflow.MeterFlagKbps, band(dropBand, func(b *openflow.MeterBand) { b.Rate = 0 })),
			openflow.ErrMeterModFailed, openflow.MeterModFailedBadRate},
		{"both kbps and pktps", addMeter(7, openflow.MeterFlagKbps|openflow.MeterFlagPktps, dropBand), openflow.ErrMeterModFailed, openflow.MeterModFailedBadFlags},
		{"neither kbps nor pktps", addMeter(7, openflow.MeterFlagStats, dropBand), openflow.ErrMeterModFailed, openflow.MeterModFailedBadFlags},
		{"an unknown flag", addMeter(7, openflow.MeterFlagKbps|0x10, dropBand), openflow.ErrMeterModFailed, openflow.MeterModFailedBadFlags},
		{"burst without a burst size", addMeter(7, openflow.MeterFlagKbps|openflow.MeterFlagBurst, band(dropBand, func(b *openflow.MeterBand) { b.BurstSize = 0 })),
			openflow.ErrMeterModFailed, openflow.MeterModFailedBadBurst},
		{"a remark of no level", addMeter(7, openflow.MeterFlagKbps, band(remarkBand, func(b *openflow.MeterBand) { b.PrecLevel = 0 })),
			openflow.ErrMeterModFailed, openflow.MeterModFailedBadBandValue},
		{"an id in use", kbps, openflow.ErrMeterModFailed, openflow.MeterModFailedMeterExists},
		{"meter 0", addMeter(0, openflow.MeterFlagKbps, dropBand), openflow.ErrMeterModFailed, openflow.MeterModFailedInvalidMeter},
		{"the controller's meter", addMeter(openflow.MeterController, openflow.MeterFlagKbps, dropBand), openflow.ErrMeterModFailed, openflow.MeterModFailedInvalidMeter},
		{"a modify of every meter", openflow.MeterMod{Command: openflow.MeterCommandModify, Flags: openflow.MeterFlagKbps, MeterID: openflow.MeterAll, Bands: []openflow.MeterBand{dropBand}},
			openflow.ErrMeterModFailed, openflow.MeterModFailedInvalidMeter},
		{"a modify of a missing meter", openflow.MeterMod{Command: openflow.MeterCommandModify, Flags: openflow.MeterFlagKbps, MeterID: 9, Bands: []openflow.MeterBand{dropBand}},
			openflow.ErrMeterModFailed, openflow.MeterModFailedUnknownMeter},
		{"an unknown command", openflow.MeterMod{Command: 3, Flags: openflow.MeterFlagKbps, MeterID: 7, Bands: []openflow.MeterBand{dropBand}},
			openflow.ErrMeterModFailed, openflow.MeterModFailedBadCommand},
		// Open vSwitch refuses a flow through a meter it lacks so
		// (ofproto_check_ofpacts).
		{"a flow through a missing meter", meteredFlow(9, [4]byte{10, 0, 0, 9}), openflow.ErrMeterModFailed, openflow.MeterModFailedInvalidMeter},
	} {
		c.wantError(r.what, r.m, r.typ, r.code)
	}
	// An experimenter's band is the codec's refusal.
	raw := openflow.Append(nil, 77, addMeter(7, openflow.MeterFlagKbps, dropBand))
	binary.BigEndian.PutUint16(raw[16:], openflow.MeterBandExperimenter)
	if _, err := c.nc.Write(raw); err != nil {
		t.Fatal(err)
	}
	if got := c.barrier(); len(got) != 1 || got[0].(openflow.Error).ErrType != openflow.ErrMeterModFailed ||
		got[0].(openflow.Error).Code != openflow.MeterModFailedBadBand {
		t.Errorf("an experimenter's band: %#v", got)
	}
	if got := configs(openflow.MeterAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the refusals, meter config:\n%#v\nnot\n%#v", got, want)
	}
	if got := s.flows(t); len(got) != 2 {
		t.Fatalf("after the refusals, flows %v", got)
	}

	// A modify replaces the meter, and its flow stays; without the burst
	// flag a band's burst size is not kept.
	mod := openflow.MeterMod{Command: openflow.MeterCommandModify, Flags: openflow.MeterFlagPktps, MeterID: 1, Bands: []openflow.MeterBand{dropBand}}
	if got := c.reply(mod); len(got) != 0 {
		t.Fatalf("modify meter 1: %#v", got)
	}
	want[0] = openflow.MeterConfig{Flags: openflow.MeterFlagPktps, MeterID: 1, Bands: []openflow.MeterBand{{Type: openflow.MeterBandDrop, Rate: 1000}}}
	if got := configs(1); !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("meter 1 modified: %#v", got)
	}

	// Deleting meter 1 deletes the flow that uses it, and tells the
	// controller; deleting a meter that is not there is no error.
	c.send(openflow.MeterMod{Command: openflow.MeterCommandDelete, MeterID: 1})
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, err := c.rd.Next()
		if err != nil {
			t.Fatalf("no flow removed after deleting the meter of a flow with send_flow_rem: %v", err)
		}
		_, m, err := openflow.Decode(raw)
		if fr, ok := m.(openflow.FlowRemoved); err == nil && ok {
			if fr.Reason != openflow.RemovedDelete || fr.Priority != 10 {
				t.Errorf("flow removed: %+v, want reason %d", fr, openflow.RemovedDelete)
			}
			break
		}
	}
	if got := s.flows(t); len(got) != 1 {
		t.Errorf("after deleting meter 1, flows %v", got)
	}
	if got := c.reply(openflow.MeterMod{Command: openflow.MeterCommandDelete, MeterID: 1}); len(got) != 0 {
		t.Errorf("delete a meter that is not there: %#v", got)
	}
	if got := c.reply(openflow.MeterMod{Command: openflow.MeterCommandDelete, MeterID: openflow.MeterAll}); len(got) != 0 {
		t.Fatalf("delete every meter: %#v", got)
	}
	if got := configs(openflow.MeterAll); len(got) != 0 {
		t.Errorf("after deleting every meter: %#v", got)
	}
}

func hasInstruction(tf openflow.TableFeatures, it openflow.InstructionType) bool {
	for _, p := range tf.Properties {
		if p.Type == openflow.TableFeatureInstructions {
			for _, id := range p.InstructionIDs {
				if id == uint16(it) {
					return true
				}
			}
		}
	}
	return false
}

// TestAgentMeterModFromSlave: a slave may not change the meters.
func TestAgentMeterModFromSlave(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	c.reply(openflow.RoleRequest{Role: openflow.RoleSlave, GenerationID: 1})
	c.wantError("a meter mod from a slave", addMeter(1, openflow.MeterFlagKbps, dropBand), openflow.ErrBadRequest, openflow.BadRequestIsSlave)
}

// TestMeterBandsRoundTrip: a meter, sent as OpenFlow and read back,
// prints as it did.
func TestMeterBandsRoundTrip(t *testing.T) {
	for _, text := range []string{
		"meter=1 kbps burst stats bands=type=drop rate=1000 burst_size=100 type=dscp_remark rate=500 burst_size=50 prec_level=2",
		"meter=2 pktps bands=type=drop rate=10",
		"meter=4294901760 kbps stats bands=type=dscp_remark rate=7 prec_level=1 type=drop rate=9",
	} {
		m, err := flow.ParseMeter(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		_, back, err := openflow.Decode(openflow.Append(nil, 1, openflow.MeterMod{Command: openflow.MeterCommandAdd,
			Flags: uint16(m.Flags), MeterID: m.ID, Bands: meterBandsToOF(&m)}))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		mm := back.(openflow.MeterMod)
		mod, err := meterModFromOF(&mm)
		if err != nil || flow.FormatMeter(mod.Meter) != flow.FormatMeter(m) {
			t.Errorf("%s reads back as %s, %v", text, flow.FormatMeter(mod.Meter), err)
		}
	}
}

// FuzzMeterModFromOF: whatever a controller sends as a METER_MOD, the
// translation and the meter table refuse with an OpenFlow error or
// accept, never panic; and an accepted meter, sent back as OpenFlow,
// reads as the same meter.
func FuzzMeterModFromOF(f *testing.F) {
	for i, m := range []openflow.MeterMod{
		addMeter(1, openflow.MeterFlagKbps|openflow.MeterFlagBurst|openflow.MeterFlagStats, dropBand, remarkBand),
		addMeter(2, openflow.MeterFlagPktps, remarkBand),
		{Command: openflow.MeterCommandModify, Flags: openflow.MeterFlagKbps, MeterID: 3, Bands: []openflow.MeterBand{dropBand}},
		{Command: openflow.MeterCommandDelete, MeterID: openflow.MeterAll},
	} {
		f.Add(openflow.Append(nil, uint32(i), m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, m, err := openflow.Decode(b)
		if err != nil {
			return
		}
		mm, ok := m.(openflow.MeterMod)
		if !ok {
			return
		}
		mod, err := meterModFromOF(&mm)
		if err == nil && mm.Command != openflow.MeterCommandDelete {
			_, err = flow.NewMeterTable().Add(mod.Meter)
			err = meterModError(err)
		}
		if err != nil {
			var de *openflow.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("refused with %T %v, not an OpenFlow error", err, err)
			}
			return
		}
		g := mod.Meter
		again := openflow.MeterMod{Command: mm.Command, Flags: uint16(g.Flags), MeterID: g.ID, Bands: meterBandsToOF(&g)}
		back, err := meterModFromOF(&again)
		if err != nil || !reflect.DeepEqual(back, mod) {
			t.Fatalf("%+v reads back as %+v, %v", mod, back, err)
		}
	})
}
