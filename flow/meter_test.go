package flow

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/ofctltest"
)

// meterCases are meters as users write them: each flag, both band types,
// the reserved ids, ovs-ofctl's separators, and what OVS refuses.
var meterCases = []string{
	"meter=1 kbps bands=type=drop rate=1000",
	"meter=1 kbps burst stats bands=type=drop rate=1000 burst_size=100",
	"meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=100",
	"meter=2 pktps bands=type=drop rate=10 type=dscp_remark rate=5 prec_level=1",
	"meter=2 pktps burst bands=type=dscp_remark rate=5 burst_size=7 prec_level=2 type=drop rate=10 burst_size=3",
	"meter=3 stats bands=type=drop rate=1",
	"meter=3 kbps pktps bands=type=drop rate=1",
	"meter=0x10 kbps bands=type=drop rate=0x20",
	"meter=4294901760 kbps bands=type=drop rate=4294967295",
	"meter=all kbps bands=type=drop rate=1",
	"meter=controller pktps bands=type=drop rate=1",
	"meter=slowpath pktps bands=type=drop rate=1",
	"meter 5 kbps band=type drop rate 100",
	"kbps meter=5 bands=type=drop rate=100",
	"meter=6 kbps bands=type=drop rate=1 type=drop rate=2 type=drop rate=3",
	"meter=7 kbps stats bands=\ntype=drop rate=1000\ntype=dscp_remark rate=100 prec_level=255",
	// Refused by both.
	"meter=1 kbps",
	"meter=1 kbps bands=",
	"meter=1 kbps bands=rate=10",
	"meter=1 kbps bands=type=drop",
	"meter=1 kbps bands=type=drop rate=0",
	"meter=1 kbps bands=type=foo rate=10",
	"meter=1 kbps bands=type=drop rate=10 burst_size=10",
	"meter=1 kbps burst bands=type=drop rate=10",
	"meter=1 kbps bands=type=dscp_remark rate=10",
	"meter=1 kbps bands=type=drop rate=10 prec_level=1",
	"meter=1 kbps bands=type=drop rate=10 color=red",
	"meter=1 kbps bands=type=drop rate=4294967296",
	"meter=1 kbps bands=type=dscp_remark rate=1 prec_level=256",
	"meter=0 kbps bands=type=drop rate=1",
	"meter=4294901761 kbps bands=type=drop rate=1",
	"meter=foo kbps bands=type=drop rate=1",
	"kbps bands=type=drop rate=1",
	"meter=1 bands=type=drop rate=1",
	"meter=1 mbps bands=type=drop rate=1",
	"meter=1 kbps bands=type",
	"meter",
}

// ParseMeter agrees with ovs-ofctl on every case: it refuses what OVS
// refuses, and reads what OVS takes as OVS reads it, which is what OVS
// prints of the METER_MOD it sends for the case; and FormatMeter's text
// parses back to the meter.
func TestMetersAsOVSReadsThem(t *testing.T) {
	ofctltest.Require(t)
	for _, text := range meterCases {
		msg, refusal := ofctltest.AddMeter(t, text)
		m, parseErr := ParseMeter(text)
		if msg == nil {
			if parseErr == nil {
				t.Errorf("%q: OVS refuses it (%s), ParseMeter takes it as %q", text, strings.TrimSpace(string(refusal)), FormatMeter(m))
			}
			continue
		}
		out, err := ofctltest.Run(t, "ofp-print", fmt.Sprintf("%x", msg))
		if _, code, refused := strings.Cut(string(out), "***decode error: "); refused {
			// What the text allows but OpenFlow does not: OVS's
			// switch refuses the message, as the meter table does.
			code, _, _ = strings.Cut(code, "***")
			if parseErr != nil {
				t.Errorf("%q: %v; OVS reads it, and its switch refuses it with %s", text, parseErr, code)
				continue
			}
			_, err := NewMeterTable().Add(m)
			var mm *MeterModError
			if !errors.As(err, &mm) || meterModCodeNames[mm.Code] != code {
				t.Errorf("%q: the meter table says %v; OVS's switch refuses it with %s", text, err, code)
			}
			continue
		}
		_, ovs, found := strings.Cut(string(out), "): ADD ")
		if err != nil || !found {
			t.Fatalf("%q: ovs-ofctl ofp-print of the METER_MOD %x: %v: %s", text, msg, err, out)
		}
		ovs = strings.TrimSpace(ovs)
		if parseErr != nil {
			t.Errorf("%q: %v; OVS reads %q", text, parseErr, ovs)
			continue
		}
		if got := FormatMeter(m); got != ovs {
			t.Errorf("%q:\n read as %q\n OVS's   %q", text, got, ovs)
		}
		again, err := ParseMeter(FormatMeter(m))
		if err != nil || FormatMeter(again) != FormatMeter(m) {
			t.Errorf("%q: FormatMeter's %q does not parse back: %v", text, FormatMeter(m), err)
		}
	}
}

var meterModCodeNames = map[MeterModCode]string{MeterBadFlags: "OFPMMFC_BAD_FLAGS"}

func TestParseMeterID(t *testing.T) {
	for _, c := range []struct {
		text string
		want uint32
		err  bool
	}{
		{"", MeterAll, false}, {"meter=all", MeterAll, false}, {"meter=7", 7, false}, {"meter=controller", MeterController, false},
		{"meter=0", 0, true}, {"meter=7 kbps", 0, true}, {"bands=type=drop", 0, true}, {"meter=", 0, true},
	} {
		id, err := ParseMeterID(c.text)
		if (err != nil) != c.err || err == nil && id != c.want {
			t.Errorf("ParseMeterID(%q) = %d, %v; want %d (error: %v)", c.text, id, err, c.want, c.err)
		}
	}
}

// The stats print as ovs-ofctl's meter-stats does (OVS's own test of
// ofp-print gives these lines).
func TestFormatMeterStats(t *testing.T) {
	s := MeterStats{ID: 1, FlowCount: 5, PacketIn: 4096, ByteIn: 143360, Duration: 394*time.Second + 174990148,
		Bands: []BandStats{{126, 13363}, {231, 37934}}}
	want := "meter:1 flow_count:5 packet_in_count:4096 byte_in_count:143360 duration:394.174990148s bands:\n" +
		"0: packet_count:126 byte_count:13363\n1: packet_count:231 byte_count:37934"
	if got := FormatMeterStats(s); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for d, want := range map[time.Duration]string{0: "0s", 1500 * time.Millisecond: "1.500s", 2*time.Second + 1000: "2.000001s"} {
		if got := durationText(d); got != want {
			t.Errorf("durationText(%v) = %q, want %q", d, got, want)
		}
	}
}

func meter(t *testing.T, text string) Meter {
	t.Helper()
	m, err := ParseMeter(text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wantMeterModError(t *testing.T, what string, err error, code MeterModCode) {
	t.Helper()
	var mm *MeterModError
	if !errors.As(err, &mm) || mm.Code != code {
		t.Errorf("%s: %v; want a meter mod error of code %d", what, err, code)
	}
}

// The table refuses what OpenFlow says a meter table refuses, with its
// codes, and leaves the table it was asked to change as it was.
func TestMeterTableRefusals(t *testing.T) {
	t0 := NewMeterTable()
	t1, err := t0.Add(meter(t, "meter=1 kbps bands=type=drop rate=1000"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = t1.Add(meter(t, "meter=1 pktps bands=type=drop rate=10"))
	wantMeterModError(t, "an id taken", err, MeterExists)
	for _, id := range []string{"all", "controller", "slowpath"} {
		_, err = t1.Add(meter(t, "meter="+id+" kbps bands=type=drop rate=10"))
		wantMeterModError(t, "reserved meter "+id, err, MeterInvalid)
	}
	_, err = t1.Add(Meter{ID: 0, Flags: MeterFlagKbps, Bands: []MeterBand{{Type: BandDrop, Rate: 1}}})
	wantMeterModError(t, "meter 0", err, MeterInvalid)
	_, err = t1.Modify(meter(t, "meter=2 kbps bands=type=drop rate=10"))
	wantMeterModError(t, "modifying a meter that is not there", err, MeterUnknown)
	_, err = t1.Add(meter(t, "meter=2 kbps pktps bands=type=drop rate=10"))
	wantMeterModError(t, "kbps and pktps", err, MeterBadFlags)
	_, err = t1.Add(meter(t, "meter=2 stats bands=type=drop rate=10"))
	wantMeterModError(t, "neither kbps nor pktps", err, MeterBadFlags)
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps | 0x10, Bands: []MeterBand{{Type: BandDrop, Rate: 1}}})
	wantMeterModError(t, "an unknown flag", err, MeterBadFlags)
	// What ovs-ofctl cannot write but OpenFlow can carry.
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps})
	wantMeterModError(t, "no bands", err, MeterOutOfBands)
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps, Bands: make([]MeterBand, MaxMeterBands+1)})
	wantMeterModError(t, "too many bands", err, MeterOutOfBands)
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps, Bands: []MeterBand{{Type: BandDrop}}})
	wantMeterModError(t, "rate 0", err, MeterBadRate)
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps, Bands: []MeterBand{{Type: 0xffff, Rate: 1}}})
	wantMeterModError(t, "an experimenter band", err, MeterBadBand)
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps | MeterFlagBurst, Bands: []MeterBand{{Type: BandDrop, Rate: 1}}})
	wantMeterModError(t, "burst without a burst size", err, MeterBadBurst)
	_, err = t1.Add(Meter{ID: 2, Flags: MeterFlagKbps, Bands: []MeterBand{{Type: BandDSCPRemark, Rate: 1}}})
	wantMeterModError(t, "a remark of 0 levels", err, MeterBadBandValue)

	if t1.Len() != 1 || t0.Len() != 0 {
		t.Errorf("refused changes changed the tables: %d and %d meters", t0.Len(), t1.Len())
	}
	t2, err := t1.Modify(meter(t, "meter=1 pktps bands=type=drop rate=10"))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := t2.Get(1); m.Flags != MeterFlagPktps {
		t.Errorf("modified meter %s", FormatMeter(*m))
	}
	if m, _ := t1.Get(1); m.Flags != MeterFlagKbps {
		t.Errorf("the table modified from changed: %s", FormatMeter(*m))
	}
}

// The table holds MaxMeters meters and no more; deleting frees room, and
// says what it deleted.
func TestMeterTableFillsAndDeletes(t *testing.T) {
	mt := NewMeterTable()
	for id := range uint32(MaxMeters) {
		var err error
		if mt, err = mt.Add(Meter{ID: 1000 + id, Flags: MeterFlagPktps, Bands: []MeterBand{{Type: BandDrop, Rate: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := mt.Add(Meter{ID: 1, Flags: MeterFlagPktps, Bands: []MeterBand{{Type: BandDrop, Rate: 1}}})
	wantMeterModError(t, "a full table", err, MeterOutOfMeters)
	less, deleted := mt.Delete(1000)
	if !slices.Equal(deleted, []uint32{1000}) || less.Len() != MaxMeters-1 || mt.Len() != MaxMeters {
		t.Fatalf("Delete(1000): deleted %v, %d meters left, %d in the table it started from", deleted, less.Len(), mt.Len())
	}
	if _, err := less.Add(Meter{ID: 1, Flags: MeterFlagPktps, Bands: []MeterBand{{Type: BandDrop, Rate: 1}}}); err != nil {
		t.Errorf("after a delete: %v", err)
	}
	if same, deleted := less.Delete(1000); same != less || deleted != nil {
		t.Errorf("deleting a meter that is not there: %v, a new table %v", deleted, same != less)
	}
	none, deleted := less.Delete(MeterAll)
	if none.Len() != 0 || len(deleted) != MaxMeters-1 || !slices.IsSorted(deleted) {
		t.Errorf("Delete(all): %d left, %d deleted", none.Len(), len(deleted))
	}
}

// The meter instruction comes first, once, with a meter's id; OVS reads
// the same rules the same way (ovs-ofctl parse-flow), and refuses the
// same ones.
func TestMeterInstruction(t *testing.T) {
	for _, c := range []struct{ text, err string }{
		{"actions=meter:1,output:1", ""},
		{"actions=meter:1", ""},
		{"actions=meter:0x10,clear_actions,goto_table:1", ""},
		{"actions=meter:1,write_actions(output:1),goto_table:2", ""},
		{"actions=meter:4294901760", ""},
		{"actions=output:1,meter:1", "must come first"},
		{"actions=meter:1,meter:2,output:1", "one meter instruction at most"},
		{"actions=write_actions(output:1),meter:1", "must come first"},
		{"actions=meter:0,output:1", "from 1 to 4294901760"},
		{"actions=meter:4294901761", "from 1 to 4294901760"},
		{"actions=meter:1,drop", `"drop" must be the only action`},
		{"actions=write_actions(meter:1)", "cannot go into an action set"},
		{"actions=meter", "needs the meter's id"},
		{"actions=meter:all", "invalid meter"},
	} {
		r, err := ParseRule(c.text, nil)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.text, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v; want an error saying %q", c.text, err, c.err)
		case c.err == "":
			if got := "actions=" + FormatActions(r.Actions); got != c.text && c.text != "actions=meter:0x10,clear_actions,goto_table:1" {
				t.Errorf("%q formats as %q", c.text, got)
			}
		}
		ofctltest.Require(t)
		out, ovsErr := ofctltest.Run(t, "parse-flow", "-O", "OpenFlow13", c.text)
		if (ovsErr == nil) != (err == nil) {
			t.Errorf("%q: OVS says %s; ParseRule %v", c.text, strings.TrimSpace(string(out)), err)
		}
		if ovsErr == nil && err == nil && !strings.HasSuffix(strings.TrimSpace(string(out)), "ADD actions="+FormatActions(r.Actions)) {
			t.Errorf("%q: OVS reads %s; ParseFlow actions=%s", c.text, strings.TrimSpace(string(out)), FormatActions(r.Actions))
		}
	}
	if id, ok := MeterOf(mustActions(t, "meter:7,output:1")); !ok || id != 7 {
		t.Errorf("MeterOf = %d, %v; want 7", id, ok)
	}
	if _, ok := MeterOf(mustActions(t, "output:1")); ok {
		t.Error("MeterOf finds a meter in output:1")
	}
}

func mustActions(t *testing.T, text string) []Action {
	t.Helper()
	r, err := ParseRule("actions="+text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Actions
}

// FuzzParseMeter checks that ParseMeter never panics and that every meter
// it accepts survives FormatMeter unchanged.
func FuzzParseMeter(f *testing.F) {
	for _, s := range meterCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMeter(s)
		if err != nil {
			return
		}
		text := FormatMeter(m)
		again, err := ParseMeter(text)
		if err != nil {
			t.Fatalf("ParseMeter(%q) = %q, which does not parse: %v", s, text, err)
		}
		if FormatMeter(again) != text {
			t.Fatalf("ParseMeter(%q) = %q, which parses to %q", s, text, FormatMeter(again))
		}
	})
}
