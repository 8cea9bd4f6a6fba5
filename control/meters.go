package control

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

// The meter table's API: what add-meter, mod-meter and del-meters do, and
// OpenFlow's METER_MOD. A bridge's meters are part of its configuration
// (store.BridgeConfig.Meters); deleting a meter deletes the rules that
// use it, in the same saved change.

// MeterCommand says what a MeterMod does.
type MeterCommand int

const (
	MeterAdd    MeterCommand = iota + 1 // install Meter, whose id is free
	MeterModify                         // replace the meter of Meter's id
	MeterDelete                         // remove meter Meter.ID (flow.MeterAll: every meter) and the rules that use it
)

// MeterMod is one change of a bridge's meters.
type MeterMod struct {
	Command MeterCommand
	Meter   flow.Meter
}

// ApplyMeterMod makes m, saved before it is in use. Nothing is changed if
// it fails: a flow.MeterModError says why with OpenFlow's code.
func (d *Daemon) ApplyMeterMod(bridge string, m MeterMod) error {
	d.mu.Lock()
	defer d.unlock()
	return d.applyMeterMods(bridge, []MeterMod{m})
}

// applyMeterMods makes mods, in order, as one change: all or none.
func (d *Daemon) applyMeterMods(bridge string, mods []MeterMod) error {
	b, err := d.bridge(bridge)
	if err != nil {
		return err
	}
	mt := b.Meters()
	var removedMeters []uint32
	for _, m := range mods {
		switch m.Command {
		case MeterAdd:
			mt, err = mt.Add(m.Meter)
		case MeterModify:
			mt, err = mt.Modify(m.Meter)
		case MeterDelete:
			var removed []uint32
			mt, removed = mt.Delete(m.Meter.ID)
			removedMeters = append(removedMeters, removed...)
		default:
			err = fmt.Errorf("unknown meter command %d", m.Command)
		}
		if err != nil {
			return err
		}
	}
	now := time.Now()
	next := d.cfg.Clone()
	next.Bridge(bridge).Meters = store.FormatMeters(mt)
	rec := store.Record{Time: now, Config: next}
	// The rules that use a deleted meter go with it, as OpenFlow says.
	t := b.Flows()
	var gone []*flow.Entry
	for _, e := range t.Entries() {
		if id, ok := flow.MeterOf(e.Actions); ok && slices.Contains(removedMeters, id) {
			gone = append(gone, e)
		}
	}
	if len(gone) > 0 {
		t = t.Without(gone)
		if texts := store.FormatEntries(gone); len(texts) > 0 {
			rec.Flows = []store.TableEdit{{Bridge: bridge, Remove: texts}}
		}
	}
	if err := d.save(rec); err != nil {
		return err
	}
	// The rules first, so that none runs through a meter that is gone.
	if len(gone) > 0 {
		b.SetFlows(t)
		removed := make([]RemovedFlow, len(gone))
		for i, e := range gone {
			removed[i] = RemovedFlow{Entry: e, Reason: RemovedDelete, At: now}
		}
		d.removed.add(b, removed)
	}
	if err := b.SetMeters(mt); err != nil {
		d.log.Warn("meters set, but their fast path counters may not start at zero", "bridge", bridge, "err", err)
	}
	return nil
}

// Meters returns bridge's meters (id, flow.MeterAll: all of them) with
// their counters, which include what the fast path carried. It holds the
// verb lock while it reads the kernel's counts, so that the bridge is not
// closed under it.
func (d *Daemon) Meters(bridge string, id uint32) ([]api.MeterStatus, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	t := b.Flows()
	flowCount := map[uint32]uint32{}
	for _, e := range t.Entries() {
		if m, ok := flow.MeterOf(e.Actions); ok {
			flowCount[m]++
		}
	}
	out := []api.MeterStatus{}
	for _, m := range b.Meters().Meters() {
		if id != flow.MeterAll && m.ID != id {
			continue
		}
		s, ok, err := b.MeterStats(m.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deleted since
		}
		s.FlowCount = flowCount[m.ID]
		st := api.MeterStatus{ID: m.ID, Text: flow.FormatMeter(*m), StatsText: flow.FormatMeterStats(s), FlowCount: s.FlowCount,
			Packets: s.PacketIn, Bytes: s.ByteIn, DurationSec: s.Duration.Seconds(), Bands: make([]api.BandCounts, len(s.Bands))}
		for i, band := range s.Bands {
			st.Bands[i] = api.BandCounts{Packets: band.Packets, Bytes: band.Bytes}
		}
		out = append(out, st)
	}
	return out, nil
}

// meterVerb runs add-meter, mod-meter and del-meters under the verb lock.
func (d *Daemon) meterVerb(req api.Request) error {
	if _, err := d.bridge(req.Bridge); err != nil {
		return err
	}
	var mods []MeterMod
	switch req.Verb {
	case api.VerbDelMeters:
		id, err := flow.ParseMeterID(req.Match)
		if err != nil {
			return err
		}
		mods = []MeterMod{{Command: MeterDelete, Meter: flow.Meter{ID: id}}}
	default:
		if len(req.Meters) == 0 {
			return errors.New("no meter given")
		}
		command := MeterAdd
		if req.Verb == api.VerbModMeter {
			command = MeterModify
		}
		for _, text := range req.Meters {
			m, err := flow.ParseMeter(text)
			if err != nil {
				return fmt.Errorf("meter %q: %w", text, err)
			}
			mods = append(mods, MeterMod{Command: command, Meter: m})
		}
	}
	if err := d.applyMeterMods(req.Bridge, mods); err != nil {
		return err
	}
	d.log.Info("meters changed", "bridge", req.Bridge, "verb", req.Verb, "count", len(mods))
	return nil
}
