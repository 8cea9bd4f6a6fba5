package ofagent

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
	vswitch "github.com/xswitch/xswitch/switch"
)

// maxPendingFlowMods bounds a batch of flow mods applied as one change.
const maxPendingFlowMods = 4096

// handle answers one message. An error ends the connection; a message
// refused is answered with an OFPT_ERROR and is no error.
func (c *conn) handle(raw []byte) error {
	xid, m, err := openflow.Decode(raw)
	if err != nil {
		c.applyFlowMods()
		c.sendError(raw, err)
		return nil
	}
	if fm, ok := m.(openflow.FlowMod); ok {
		c.queueFlowMod(raw, &fm)
		return nil
	}
	// Everything else sees the flow mods before it applied (a barrier
	// above all, but a flow stats request too).
	c.applyFlowMods()
	switch m := m.(type) {
	case openflow.Hello:
		// A second hello changes nothing.
	case openflow.EchoRequest:
		c.send(xid, openflow.EchoReply(m))
	case openflow.EchoReply:
		// What it answers is that the controller is there: heard.
	case openflow.FeaturesRequest:
		c.send(xid, openflow.FeaturesReply{
			DatapathID:   c.ba.datapathID(),
			NTables:      flow.NumTables,
			Capabilities: openflow.CapFlowStats | openflow.CapTableStats | openflow.CapPortStats | openflow.CapGroupStats,
		})
	case openflow.GetConfigRequest:
		c.mu.Lock()
		msl := c.missSendLen
		c.mu.Unlock()
		c.send(xid, openflow.GetConfigReply{MissSendLen: msl})
	case openflow.SetConfig:
		c.mu.Lock()
		c.missSendLen = m.MissSendLen
		c.mu.Unlock()
	case openflow.BarrierRequest:
		c.send(xid, openflow.BarrierReply{})
	case openflow.RoleRequest:
		c.handleRole(raw, xid, m)
	case openflow.GetAsyncRequest:
		c.mu.Lock()
		a := c.async
		c.mu.Unlock()
		c.send(xid, openflow.GetAsyncReply(a))
	case openflow.SetAsync:
		c.mu.Lock()
		c.async = m
		c.mu.Unlock()
	case openflow.GroupMod:
		c.groupMod(raw, &m)
	case openflow.MeterMod:
		c.meterMod(raw, &m)
	case openflow.PacketOut:
		if c.isSlave() {
			c.sendError(raw, slaveError())
			break
		}
		if err := c.packetOut(&m); err != nil {
			c.sendError(raw, err)
		}
	case openflow.MultipartRequest:
		c.multipart(raw, xid, &m)
	case openflow.Experimenter:
		c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadExperimenter,
			Reason: fmt.Sprintf("experimenter %#x's messages are not supported", m.Experimenter)})
	case openflow.Unsupported:
		c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadType,
			Reason: fmt.Sprintf("%v is not supported", m.MsgType)})
	default:
		// A message a switch only sends (a reply, a packet-in, ...).
		c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadType,
			Reason: fmt.Sprintf("%v is not a message a controller sends", m.Type())})
	}
	return nil
}

func slaveError() error {
	return &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestIsSlave,
		Reason: "the connection is in the slave role"}
}

func (c *conn) isSlave() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.role == openflow.RoleSlave
}

func (c *conn) roleName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.role {
	case openflow.RoleMaster:
		return "master"
	case openflow.RoleSlave:
		return "slave"
	}
	return "equal"
}

// handleRole arbitrates roles as OpenFlow 1.3 §6.3.6 asks: a master or
// slave request with a generation id older than the last one seen is
// stale, and a new master makes the other masters slaves.
func (c *conn) handleRole(raw []byte, xid uint32, m openflow.RoleRequest) {
	ba := c.ba
	switch m.Role {
	case openflow.RoleNoChange, openflow.RoleEqual, openflow.RoleMaster, openflow.RoleSlave:
	default:
		c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrRoleRequestFailed, Code: openflow.RoleRequestFailedBadRole,
			Reason: fmt.Sprintf("unknown role %d", m.Role)})
		return
	}
	if m.Role == openflow.RoleMaster || m.Role == openflow.RoleSlave {
		ba.mu.Lock()
		if ba.hasGeneration && int64(m.GenerationID-ba.generation) < 0 {
			ba.mu.Unlock()
			c.sendError(raw, &openflow.DecodeError{Type: openflow.ErrRoleRequestFailed, Code: openflow.RoleRequestFailedStale,
				Reason: fmt.Sprintf("generation id %d is older than %d", m.GenerationID, ba.generation)})
			return
		}
		ba.generation, ba.hasGeneration = m.GenerationID, true
		ba.mu.Unlock()
	}
	if m.Role == openflow.RoleMaster {
		ba.each(func(o *conn) {
			if o == c {
				return
			}
			o.mu.Lock()
			if o.role == openflow.RoleMaster {
				o.role = openflow.RoleSlave
			}
			o.mu.Unlock()
		})
	}
	c.mu.Lock()
	if m.Role != openflow.RoleNoChange {
		c.role = m.Role
	}
	role := c.role
	c.mu.Unlock()
	ba.mu.Lock()
	gen := ba.generation
	ba.mu.Unlock()
	c.send(xid, openflow.RoleReply{Role: role, GenerationID: gen})
	c.t.reportStatus()
}

// pendingFlowMod is a flow mod read and translated, waiting to be applied
// with the others of its batch.
type pendingFlowMod struct {
	raw []byte // its first bytes (header and xid included), for an error
	mod control.FlowMod
}

// queueFlowMod translates a flow mod and adds it to the batch, or refuses
// it at once.
func (c *conn) queueFlowMod(raw []byte, fm *openflow.FlowMod) {
	if c.isSlave() {
		c.applyFlowMods()
		c.sendError(raw, slaveError())
		return
	}
	mod, err := flowModFromOF(raw, fm)
	if err != nil {
		c.applyFlowMods()
		c.sendError(raw, err)
		return
	}
	if mod == nil {
		return // selects no rule: out_port names a port xswitch cannot have
	}
	c.pending = append(c.pending, pendingFlowMod{raw: append([]byte(nil), raw[:min(len(raw), openflow.ErrorData)]...), mod: *mod})
	if len(c.pending) >= maxPendingFlowMods {
		c.applyFlowMods()
	}
}

// applyFlowMods applies the batch as one change of the bridge's tables. If
// the batch fails, its mods are applied one by one, so that each one
// refused is answered with its own error and the others still apply, as
// if they had come alone.
func (c *conn) applyFlowMods() {
	if len(c.pending) == 0 {
		return
	}
	batch := c.pending
	c.pending = c.pending[:0]
	mods := make([]control.FlowMod, len(batch))
	for i, p := range batch {
		mods[i] = p.mod
	}
	began := time.Now()
	_, err := c.ba.a.sw.ApplyFlowMods(c.ba.name, mods)
	c.log.Debug("openflow: flow mods applied", "count", len(mods), "took", time.Since(began), "err", err)
	if err == nil {
		return
	}
	for _, p := range batch {
		if _, err := c.ba.a.sw.ApplyFlowMods(c.ba.name, []control.FlowMod{p.mod}); err != nil {
			c.sendError(p.raw, flowModError(err))
		}
	}
}

// flowModError gives a refusal of the daemon's its OpenFlow error.
func flowModError(err error) error {
	switch {
	case errors.Is(err, control.ErrOverlap):
		return &openflow.DecodeError{Type: openflow.ErrFlowModFailed, Code: openflow.FlowModFailedOverlap, Reason: err.Error()}
	case errors.Is(err, vswitch.ErrNoGroup):
		return &openflow.DecodeError{Type: openflow.ErrBadAction, Code: openflow.BadActionBadOutGroup, Reason: err.Error()}
	case errors.Is(err, vswitch.ErrNoMeter):
		// Open vSwitch's answer (ofproto_check_ofpacts), though the
		// specification's text for UNKNOWN_METER would fit too.
		return &openflow.DecodeError{Type: openflow.ErrMeterModFailed, Code: openflow.MeterModFailedInvalidMeter, Reason: err.Error()}
	}
	return &openflow.DecodeError{Type: openflow.ErrFlowModFailed, Code: openflow.FlowModFailedUnknown, Reason: err.Error()}
}

// flowModFromOF translates fm, the OFPT_FLOW_MOD msg, into the daemon's
// terms; nil for one that can select no rule. The rule it adds or
// modifies keeps msg's match and instructions as they came (flow.WireForm).
func flowModFromOF(msg []byte, fm *openflow.FlowMod) (*control.FlowMod, error) {
	if fm.BufferID != openflow.NoBuffer {
		return nil, &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBufferUnknown,
			Reason: "xswitch buffers no packets (buffer_id must be OFP_NO_BUFFER)"}
	}
	deleting := fm.Command == openflow.FlowDelete || fm.Command == openflow.FlowDeleteStrict
	if fm.TableID == openflow.TableAll && !deleting {
		return nil, &openflow.DecodeError{Type: openflow.ErrFlowModFailed, Code: openflow.FlowModFailedBadTableID,
			Reason: "only a delete may name every table"}
	}
	match, err := matchFromOF(fm.Match, fm.TableID)
	if err != nil {
		return nil, err
	}
	wireMatch, wireInstructions := openflow.FlowModEncoded(msg)
	switch fm.Command {
	case openflow.FlowAdd:
		actions, err := instructionsFromOF(fm.Instructions, match)
		if err != nil {
			return nil, err
		}
		return &control.FlowMod{
			Command: control.FlowAdd, Ephemeral: true, CheckOverlap: fm.Flags&openflow.FlowFlagCheckOverlap != 0,
			Rule: flow.Rule{
				Priority: fm.Priority, Cookie: fm.Cookie, IdleTimeout: fm.IdleTimeout, HardTimeout: fm.HardTimeout,
				Match: match, Actions: actions, Flags: flow.RuleFlags(fm.Flags) & ruleFlags,
				Wire: flow.WireForm{Match: bytes.Clone(wireMatch), Instructions: bytes.Clone(wireInstructions)},
			},
		}, nil
	case openflow.FlowModify, openflow.FlowModifyStrict:
		actions, err := instructionsFromOF(fm.Instructions, match)
		if err != nil {
			return nil, err
		}
		return &control.FlowMod{
			Command: control.FlowModify, Ephemeral: true, Strict: fm.Command == openflow.FlowModifyStrict,
			Filter: flow.Filter{Match: match, Priority: fm.Priority, HasPriority: fm.Command == openflow.FlowModifyStrict,
				Cookie: fm.Cookie, CookieMask: fm.CookieMask},
			Actions: actions, Instructions: bytes.Clone(wireInstructions), ResetCounts: fm.Flags&openflow.FlowFlagResetCounts != 0,
		}, nil
	case openflow.FlowDelete, openflow.FlowDeleteStrict:
		f, ok := outFilter(flow.Filter{Match: match, Priority: fm.Priority, HasPriority: fm.Command == openflow.FlowDeleteStrict,
			Cookie: fm.Cookie, CookieMask: fm.CookieMask}, fm.OutPort, fm.OutGroup)
		if !ok {
			return nil, nil
		}
		return &control.FlowMod{Command: control.FlowDelete, Ephemeral: true, Strict: fm.Command == openflow.FlowDeleteStrict, Filter: f}, nil
	}
	return nil, &openflow.DecodeError{Type: openflow.ErrFlowModFailed, Code: openflow.FlowModFailedBadCommand,
		Reason: fmt.Sprintf("unknown flow mod command %d", fm.Command)}
}

// outFilter is f narrowed to the rules that output to port outPort and
// send to group outGroup (openflow.PortAny, openflow.GroupAny: whatever
// they do), as a flow delete or flow stats request asks; not ok when it
// can select no rule, naming a port xswitch cannot have.
func outFilter(f flow.Filter, outPort, outGroup uint32) (_ flow.Filter, ok bool) {
	if outPort != openflow.PortAny {
		if f.OutPort, ok = portFromOF(outPort); !ok {
			return f, false
		}
	}
	if outGroup != openflow.GroupAny {
		f.OutGroup, f.ByOutGroup = outGroup, true
	}
	return f, true
}

// ruleFlags are the flow mod flags that are the rule's, which xswitch
// keeps with OpenFlow's bits; CHECK_OVERLAP and RESET_COUNTS are the flow
// mod's own.
const ruleFlags = flow.FlagSendFlowRem | flow.FlagNoPacketCounts | flow.FlagNoByteCounts

// packetOut sends a controller's frame.
func (c *conn) packetOut(m *openflow.PacketOut) error {
	if m.BufferID != openflow.NoBuffer {
		return &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBufferUnknown,
			Reason: "xswitch buffers no packets (buffer_id must be OFP_NO_BUFFER)"}
	}
	inPort, ok := portFromOF(m.InPort)
	if !ok {
		return &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadPort,
			Reason: fmt.Sprintf("in_port %d is not a port xswitch can have", m.InPort)}
	}
	actions, err := actionsFromOF(m.Actions, flow.Match{})
	if err != nil {
		return err
	}
	if err := c.ba.br.PacketOut(inPort, actions, m.Data); err != nil {
		if errors.Is(err, vswitch.ErrNoGroup) {
			return &openflow.DecodeError{Type: openflow.ErrBadAction, Code: openflow.BadActionBadOutGroup, Reason: err.Error()}
		}
		return &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestBadPacket, Reason: err.Error()}
	}
	return nil
}
