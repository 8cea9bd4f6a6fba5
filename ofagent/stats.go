package ofagent

import (
	"fmt"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// multipart answers a multipart request, in as many replies as its
// answer needs.
func (c *conn) multipart(raw []byte, xid uint32, m *openflow.MultipartRequest) {
	ba := c.ba
	var body any
	switch m.MType {
	case openflow.MultipartDesc:
		body = openflow.Desc{
			MfrDesc: "xswitch", HWDesc: "xswitch (AF_XDP)", SWDesc: ba.a.opts.Version,
			SerialNum: "None", DPDesc: ba.name,
		}
	case openflow.MultipartFlow, openflow.MultipartAggregate:
		req, _ := m.Body.(openflow.FlowStatsRequest)
		entries, err := ba.selectFlows(&req)
		if err != nil {
			c.sendError(raw, err)
			return
		}
		if m.MType == openflow.MultipartAggregate {
			body = aggregate(entries)
		} else {
			body = flowStats(entries, time.Now())
		}
	case openflow.MultipartTable:
		ba.br.SyncFastPath()
		var stats []openflow.TableStats
		for _, t := range ba.br.TableStats() {
			stats = append(stats, openflow.TableStats{TableID: t.Table, ActiveCount: uint32(t.Active),
				LookupCount: t.Lookups, MatchedCount: t.Matched})
		}
		body = stats
	case openflow.MultipartPortStats:
		req, _ := m.Body.(openflow.PortStatsRequest)
		stats, err := ba.portStats(req.PortNo)
		if err != nil {
			c.sendError(raw, err)
			return
		}
		body = stats
	case openflow.MultipartPortDesc:
		ports, err := ba.ports()
		if err != nil {
			c.sendError(raw, err)
			return
		}
		body = ports
	case openflow.MultipartTableFeatures:
		if req, _ := m.Body.([]openflow.TableFeatures); len(req) > 0 {
			c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrTableFeaturesFailed, Code: openflow.TableFeaturesFailedEPERM,
				Reason: "xswitch's tables cannot be reconfigured"})
			return
		}
		body = tableFeatures()
	case openflow.MultipartGroupFeatures:
		body = groupFeatures()
	case openflow.MultipartGroup:
		req, _ := m.Body.(openflow.GroupStatsRequest)
		stats, err := ba.groupStats(req.GroupID)
		if err != nil {
			c.sendError(raw, err)
			return
		}
		body = stats
	case openflow.MultipartGroupDesc:
		body = ba.groupDescs()
	case openflow.MultipartMeter:
		req, _ := m.Body.(openflow.MeterRequest)
		stats, err := ba.meterStats(req.MeterID)
		if err != nil {
			c.sendError(raw, err)
			return
		}
		body = stats
	case openflow.MultipartMeterConfig:
		req, _ := m.Body.(openflow.MeterRequest)
		body = ba.meterConfigs(req.MeterID)
	case openflow.MultipartMeterFeatures:
		body = meterFeatures()
	case openflow.MultipartQueue:
		body = []byte{} // xswitch has no queues
	default:
		c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadMultipart,
			Reason: fmt.Sprintf("multipart type %d is not supported", m.MType)})
		return
	}
	c.write(openflow.AppendMultipartReplies(nil, xid, openflow.MultipartReply{MType: m.MType, Body: body}), false)
}

// selectFlows gives the rules a flow or aggregate stats request selects,
// their counters brought up to date with what the fast path carried.
func (ba *bridgeAgent) selectFlows(req *openflow.FlowStatsRequest) ([]*flow.Entry, error) {
	match, err := matchFromOF(req.Match, req.TableID)
	if err != nil {
		return nil, err
	}
	f, ok := outFilter(flow.Filter{Match: match, Cookie: req.Cookie, CookieMask: req.CookieMask}, req.OutPort, req.OutGroup)
	if !ok {
		return nil, nil
	}
	ba.br.SyncFastPath()
	return ba.br.Flows().Select(f, false), nil
}

// durationToOF splits a duration in seconds as OpenFlow's counters
// carry it: whole seconds, and the nanoseconds beyond them.
func durationToOF(sec float64) (s, ns uint32) {
	d := time.Duration(sec * float64(time.Second))
	return uint32(d / time.Second), uint32(d % time.Second)
}

func flowStats(entries []*flow.Entry, now time.Time) []openflow.FlowStats {
	out := make([]openflow.FlowStats, 0, len(entries))
	for _, e := range entries {
		packets, bytes, _ := e.Stats()
		d := now.Sub(e.Installed)
		fs := openflow.FlowStats{
			TableID: e.Table(), DurationSec: uint32(d / time.Second), DurationNsec: uint32(d % time.Second),
			Priority: e.Priority, IdleTimeout: e.IdleTimeout, HardTimeout: e.HardTimeout, Flags: uint16(e.Flags),
			Cookie: e.Cookie, PacketCount: packets, ByteCount: bytes, Match: ruleMatchToOF(&e.Rule),
		}
		if fs.EncodedInstructions = e.Wire.Instructions; fs.EncodedInstructions == nil {
			fs.Instructions = instructionsToOF(e.Actions, e.Match)
		}
		out = append(out, fs)
	}
	return out
}

// ruleMatchToOF is r's match as its controller sent it, or as ovs-ofctl
// sends it for a rule that came another way.
func ruleMatchToOF(r *flow.Rule) openflow.Match {
	if r.Wire.Match != nil {
		return openflow.Match{Encoded: r.Wire.Match}
	}
	return matchToOF(r.Match)
}

func aggregate(entries []*flow.Entry) openflow.AggregateStats {
	var a openflow.AggregateStats
	for _, e := range entries {
		packets, bytes, _ := e.Stats()
		a.PacketCount += packets
		a.ByteCount += bytes
		a.FlowCount++
	}
	return a
}

// ports describes the bridge's ports as OFPMP_PORT_DESC and PORT_STATUS
// tell them.
func (ba *bridgeAgent) ports() ([]openflow.Port, error) {
	ports, err := ba.a.sw.OpenFlowPorts(ba.name)
	if err != nil {
		return nil, err
	}
	out := make([]openflow.Port, 0, len(ports))
	for _, p := range ports {
		out = append(out, portToOFDesc(p))
	}
	return out, nil
}

func portToOFDesc(p control.OpenFlowPort) openflow.Port {
	d := openflow.Port{PortNo: portToOF(p.OFPort), Name: p.Name, State: openflow.PortStateLive}
	copy(d.HWAddr[:], p.MAC)
	if p.Down {
		d.Config, d.State = openflow.PortConfigPortDown, openflow.PortStateLinkDown
	}
	d.CurrSpeed, d.MaxSpeed = p.SpeedMbps*1000, p.SpeedMbps*1000 // kbps
	d.Curr = speedFeature(p.SpeedMbps)
	d.Supported = d.Curr
	return d
}

// speedFeature is the ofp_port_features bit of a full-duplex copper link
// of that speed, 0 when it has none.
func speedFeature(mbps uint32) uint32 {
	switch mbps {
	case 10:
		return openflow.PortFeature10MbFD | openflow.PortFeatureCopper
	case 100:
		return openflow.PortFeature100MbFD | openflow.PortFeatureCopper
	case 1000:
		return openflow.PortFeature1GbFD | openflow.PortFeatureCopper
	case 10000:
		return openflow.PortFeature10GbFD | openflow.PortFeatureCopper
	case 40000:
		return openflow.PortFeature40GbFD
	case 100000:
		return openflow.PortFeature100GbFD
	}
	return 0
}

// portStats gives the counters of one port (openflow.PortAny: of every port).
func (ba *bridgeAgent) portStats(portNo uint32) ([]openflow.PortStats, error) {
	ports, err := ba.a.sw.PortStats(ba.name)
	if err != nil {
		return nil, err
	}
	var out []openflow.PortStats
	found := false
	for _, p := range ports {
		no := portToOF(p.OFPort)
		if portNo != openflow.PortAny && no != portNo {
			continue
		}
		found = true
		// rx_dropped is what the port lost (the kernel's count), not
		// what the tables chose to drop.
		s := p.Stats
		out = append(out, openflow.PortStats{
			PortNo: no, RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes,
			RxDropped: s.Port.RxDropped,
			TxDropped: s.TxDropped, RxErrors: s.RxErrors,
		})
	}
	if !found && portNo != openflow.PortAny {
		return nil, &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadPort,
			Reason: fmt.Sprintf("no port %d", portNo)}
	}
	return out, nil
}
