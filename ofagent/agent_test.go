package ofagent

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// The agent against a daemon with a bridge and no ports, driven over a
// real TCP connection by a client made of the codec: what needs no root.

type testSwitch struct {
	d      *control.Daemon
	bridge string
	addr   string
}

func newTestSwitch(t *testing.T) *testSwitch {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := control.NewDaemon(control.Options{DBPath: filepath.Join(t.TempDir(), "conf.json"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a := New(d, Options{Log: log, Version: "test"})
	t.Cleanup(a.Close)
	s := &testSwitch{d: d, bridge: "ofbr"}
	s.handle(t, api.Request{Verb: api.VerbAddBridge, Bridge: s.bridge})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.handle(t, api.Request{Verb: api.VerbSetController, Bridge: s.bridge, Targets: []string{fmt.Sprintf("ptcp:%d:127.0.0.1", port)}})
	return s
}

func (s *testSwitch) handle(t *testing.T, req api.Request) api.Response {
	t.Helper()
	resp := s.d.Handle(req)
	if resp.Error != "" {
		t.Fatalf("%s: %s", req.Verb, resp.Error)
	}
	return resp
}

func (s *testSwitch) flows(t *testing.T) []string {
	t.Helper()
	resp := s.handle(t, api.Request{Verb: api.VerbDumpFlows, Bridge: s.bridge})
	var out []string
	for _, f := range resp.Flows {
		out = append(out, f.Match+" "+f.Actions)
	}
	return out
}

// client is an OpenFlow controller's end of a connection.
type client struct {
	t   *testing.T
	nc  net.Conn
	rd  *openflow.Reader
	xid uint32
}

func (s *testSwitch) connect(t *testing.T) *client {
	t.Helper()
	var nc net.Conn
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if nc, err = net.Dial("tcp", s.addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent does not listen on %s: %v", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { nc.Close() })
	c := &client{t: t, nc: nc, rd: openflow.NewReader(nc, 1<<16)}
	c.send(openflow.Hello{Versions: []uint8{openflow.Version}})
	if _, ok := c.read().(openflow.Hello); !ok {
		t.Fatal("the switch's first message is not a hello")
	}
	return c
}

func (c *client) send(m openflow.Message) uint32 {
	c.t.Helper()
	c.xid++
	if _, err := c.nc.Write(openflow.Append(nil, c.xid, m)); err != nil {
		c.t.Fatal(err)
	}
	return c.xid
}

func (c *client) read() openflow.Message {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	raw, err := c.rd.Next()
	if err != nil {
		c.t.Fatalf("reading from the switch: %v", err)
	}
	_, m, err := openflow.Decode(raw)
	if err != nil {
		c.t.Fatalf("the switch sent what does not decode: %v", err)
	}
	return m
}

// reply sends m and a barrier, and returns what came before the barrier's
// reply.
func (c *client) reply(m openflow.Message) []openflow.Message {
	c.t.Helper()
	c.send(m)
	return c.barrier()
}

// barrier sends a barrier request and returns what came before its reply.
func (c *client) barrier() []openflow.Message {
	c.t.Helper()
	barrier := c.send(openflow.BarrierRequest{})
	var got []openflow.Message
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, err := c.rd.Next()
		if err != nil {
			c.t.Fatalf("reading from the switch: %v", err)
		}
		h, _ := openflow.ParseHeader(raw)
		_, msg, err := openflow.Decode(raw)
		if err != nil {
			c.t.Fatal(err)
		}
		if _, ok := msg.(openflow.BarrierReply); ok && h.Xid == barrier {
			return got
		}
		if _, ok := msg.(openflow.EchoRequest); ok {
			continue
		}
		got = append(got, msg)
	}
}

func (c *client) wantError(what string, m openflow.Message, typ openflow.ErrorType, code uint16) {
	c.t.Helper()
	got := c.reply(m)
	if len(got) != 1 {
		c.t.Fatalf("%s: %d replies (%v), want one error", what, len(got), got)
	}
	e, ok := got[0].(openflow.Error)
	if !ok || e.ErrType != typ || e.Code != code {
		c.t.Errorf("%s: got %#v, want error %d/%d", what, got[0], typ, code)
	}
}

func addFlow(priority uint16, dst [4]byte, port uint32) openflow.FlowMod {
	return openflow.FlowMod{
		Command: openflow.FlowAdd, Priority: priority, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny,
		Match: openflow.Match{Fields: []openflow.OXM{
			{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMEthType, Value: []byte{0x08, 0x00}},
			{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMIPv4Dst, Value: dst[:]},
		}},
		Instructions: []openflow.Instruction{openflow.InstructionApplyActions{Actions: []openflow.Action{openflow.ActionOutput{Port: port}}}},
	}
}

func TestAgentAnswersTheSwitchMessages(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	got := c.reply(openflow.FeaturesRequest{})
	fr, ok := got[0].(openflow.FeaturesReply)
	if len(got) != 1 || !ok || fr.NTables != flow.NumTables || fr.DatapathID == 0 {
		t.Fatalf("features: %#v", got)
	}
	if got := c.reply(openflow.EchoRequest{Data: []byte("hi")}); len(got) != 1 || string(got[0].(openflow.EchoReply).Data) != "hi" {
		t.Errorf("echo: %#v", got)
	}
	c.send(openflow.SetConfig{MissSendLen: 256})
	if got := c.reply(openflow.GetConfigRequest{}); len(got) != 1 || got[0].(openflow.GetConfigReply).MissSendLen != 256 {
		t.Errorf("get config after set config 256: %#v", got)
	}
	got = c.reply(openflow.MultipartRequest{MType: openflow.MultipartDesc})
	if d := got[0].(openflow.MultipartReply).Body.(openflow.Desc); d.MfrDesc != "xswitch" || d.DPDesc != s.bridge {
		t.Errorf("desc: %#v", d)
	}
	got = c.reply(openflow.MultipartRequest{MType: openflow.MultipartTableFeatures})
	var tables int
	for _, m := range got {
		tables += len(m.(openflow.MultipartReply).Body.([]openflow.TableFeatures))
	}
	if tables != flow.NumTables || len(got) < 2 {
		t.Errorf("table features: %d tables in %d replies, want %d in several", tables, len(got), flow.NumTables)
	}
	c.wantError("a port mod", openflow.Unsupported{MsgType: openflow.TypePortMod, Body: make([]byte, 32)}, openflow.ErrBadRequest, openflow.BadRequestBadType)
}

func TestAgentFlowMods(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	delAll := openflow.FlowMod{Command: openflow.FlowDelete, TableID: openflow.TableAll, BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny}
	if got := c.reply(delAll); len(got) != 0 {
		t.Fatalf("delete all: %v", got)
	}
	if got := s.flows(t); len(got) != 0 {
		t.Fatalf("after deleting every flow: %v", got)
	}
	// A burst of adds, applied in batches, all there by the barrier.
	const n = 5000
	for i := range n {
		c.send(addFlow(100, [4]byte{10, 1, byte(i >> 8), byte(i)}, uint32(1+i%3)))
	}
	if got := c.barrier(); len(got) != 0 {
		t.Fatalf("the adds were answered: %v", got[:min(3, len(got))])
	}
	if got := s.flows(t); len(got) != n {
		t.Fatalf("%d flows after %d adds", len(got), n)
	}
	got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartAggregate, Body: openflow.FlowStatsRequest{
		TableID: openflow.TableAll, OutPort: 2, OutGroup: openflow.GroupAny}})
	toPort2 := 0
	for i := range n {
		if 1+i%3 == 2 {
			toPort2++
		}
	}
	if agg := got[0].(openflow.MultipartReply).Body.(openflow.AggregateStats); agg.FlowCount != uint32(toPort2) {
		t.Errorf("aggregate of the flows to port 2: %d, want %d", agg.FlowCount, toPort2)
	}
	got = c.reply(openflow.MultipartRequest{MType: openflow.MultipartFlow, Body: openflow.FlowStatsRequest{
		TableID: openflow.TableAll, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny}})
	var stats int
	for _, m := range got {
		stats += len(m.(openflow.MultipartReply).Body.([]openflow.FlowStats))
	}
	if stats != n {
		t.Errorf("flow stats: %d flows, want %d", stats, n)
	}
	// A strict delete removes exactly one.
	del := addFlow(100, [4]byte{10, 1, 0, 7}, 0)
	del.Command, del.Instructions = openflow.FlowDeleteStrict, nil
	del.OutPort = openflow.PortAny
	if got := c.reply(del); len(got) != 0 {
		t.Fatalf("strict delete: %v", got)
	}
	if got := s.flows(t); len(got) != n-1 || strings.Contains(strings.Join(got, "\n"), "nw_dst=10.1.0.7 ") {
		t.Errorf("after a strict delete: %d flows", len(got))
	}
	// Refusals, each with its error; the flows around them apply.
	overlap := addFlow(100, [4]byte{10, 1, 0, 8}, 1)
	overlap.Flags = openflow.FlowFlagCheckOverlap
	c.wantError("an overlapping add with check_overlap", overlap, openflow.ErrFlowModFailed, openflow.FlowModFailedOverlap)
	all := addFlow(1, [4]byte{10, 9, 9, 9}, 1)
	all.TableID = openflow.TableAll
	c.wantError("an add to every table", all, openflow.ErrFlowModFailed, openflow.FlowModFailedBadTableID)
	buffered := addFlow(1, [4]byte{10, 9, 9, 9}, 1)
	buffered.BufferID = 7
	c.wantError("an add with a buffer", buffered, openflow.ErrBadRequest, openflow.BadRequestBufferUnknown)
	toGroup := addFlow(1, [4]byte{10, 9, 9, 9}, 1)
	toGroup.Instructions = []openflow.Instruction{openflow.InstructionApplyActions{Actions: []openflow.Action{openflow.ActionGroup{GroupID: 7}}}}
	c.wantError("an add to a group the bridge does not have", toGroup, openflow.ErrBadAction, openflow.BadActionBadOutGroup)
	noPrereq := addFlow(1, [4]byte{10, 9, 9, 9}, 1)
	noPrereq.Match.Fields = noPrereq.Match.Fields[1:] // ipv4_dst without eth_type
	c.wantError("a match without its prerequisite", noPrereq, openflow.ErrBadMatch, openflow.BadMatchBadPrereq)
	if got := s.flows(t); len(got) != n-1 {
		t.Errorf("refused adds changed the table: %d flows", len(got))
	}
}

func TestAgentRoles(t *testing.T) {
	s := newTestSwitch(t)
	a, b := s.connect(t), s.connect(t)
	if got := a.reply(openflow.RoleRequest{Role: openflow.RoleMaster, GenerationID: 5}); got[0].(openflow.RoleReply).Role != openflow.RoleMaster {
		t.Fatalf("a's master request: %#v", got)
	}
	b.wantError("a stale generation id", openflow.RoleRequest{Role: openflow.RoleMaster, GenerationID: 4},
		openflow.ErrRoleRequestFailed, openflow.RoleRequestFailedStale)
	if got := b.reply(openflow.RoleRequest{Role: openflow.RoleMaster, GenerationID: 6}); got[0].(openflow.RoleReply).Role != openflow.RoleMaster {
		t.Fatalf("b's master request: %#v", got)
	}
	// b's taking over made a a slave, which may not change the table.
	if got := a.reply(openflow.RoleRequest{Role: openflow.RoleNoChange}); got[0].(openflow.RoleReply).Role != openflow.RoleSlave {
		t.Errorf("a after b became master: %#v", got)
	}
	a.wantError("a flow mod from a slave", addFlow(1, [4]byte{10, 0, 0, 1}, 1), openflow.ErrBadRequest, openflow.BadRequestIsSlave)
	a.wantError("an unknown role", openflow.RoleRequest{Role: 9}, openflow.ErrRoleRequestFailed, openflow.RoleRequestFailedBadRole)
}

func TestAgentRefusesOtherVersions(t *testing.T) {
	s := newTestSwitch(t)
	var nc net.Conn
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if nc, err = net.Dial("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte{0x01, 0x00, 0x00, 0x08, 0, 0, 0, 1}) // an OpenFlow 1.0 hello
	rd := openflow.NewReader(nc, 1<<16)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var sawError bool
	for {
		raw, err := rd.Next()
		if err != nil {
			break
		}
		if _, m, _ := openflow.Decode(raw); m != nil {
			if e, ok := m.(openflow.Error); ok {
				sawError = e.ErrType == openflow.ErrHelloFailed && e.Code == openflow.HelloFailedIncompatible &&
					strings.Contains(string(e.Data), "1.3")
			}
		}
	}
	if !sawError {
		t.Error("an OpenFlow 1.0 hello was not answered with HELLO_FAILED INCOMPATIBLE and a text")
	}
}
