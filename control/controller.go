package control

// OpenFlow controllers: the targets each bridge connects to or listens on,
// what it does while no controller is connected (its fail mode), and its
// datapath id, as Open vSwitch's Bridge columns controller, fail_mode and
// datapath_id (and other_config:datapath-id) hold them. The daemon keeps
// them with the rest of the configuration; the OpenFlow agent (package
// ofagent) follows them through OnControllers and reports each
// connection back with SetControllerStatus, for show and Controller:status.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

// DefaultControllerPort is OpenFlow's port (IANA), that of a target
// without one.
const DefaultControllerPort = 6653

// ControllerTarget is one controller target: a controller to connect to
// (tcp:IP[:PORT]) or an address to accept controllers and ovs-ofctl on
// (ptcp:[PORT][:IP]).
type ControllerTarget struct {
	Listen  bool   // ptcp: accept connections rather than make one
	Address string // host:port, for net.Dial or net.Listen
}

// ParseControllerTarget parses a target as ovs-vsctl set-controller takes
// it: tcp:IP[:PORT] or ptcp:[PORT][:IP], the port 6653 unless given, a
// listener on every IPv4 address unless given one; an IPv6 address goes in
// brackets (tcp:[::1]:6653, ptcp:6653:[::1]).
func ParseControllerTarget(s string) (ControllerTarget, error) {
	t, err := parseControllerTarget(s)
	if err != nil {
		return ControllerTarget{}, fmt.Errorf("controller target %q: %w", s, err)
	}
	return t, nil
}

func parseControllerTarget(s string) (ControllerTarget, error) {
	method, rest, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return ControllerTarget{}, errors.New("want tcp:IP[:PORT] or ptcp:[PORT][:IP]")
	case method == "tcp":
		ipText, portText, err := splitTCPAddress(rest)
		if err != nil {
			return ControllerTarget{}, err
		}
		if ipText == "" {
			return ControllerTarget{}, errors.New("no IP address: want tcp:IP[:PORT]")
		}
		return newTarget(false, ipText, portText)
	case method == "ptcp":
		portText, ipText, _ := strings.Cut(rest, ":")
		if ipText == "" {
			ipText = "0.0.0.0"
		}
		return newTarget(true, ipText, portText)
	case slices.Contains([]string{"ssl", "pssl", "unix", "punix"}, method):
		return ControllerTarget{}, fmt.Errorf("connection method %q is not supported: xswitch has tcp and ptcp", method)
	default:
		return ControllerTarget{}, fmt.Errorf("unknown connection method %q: want tcp or ptcp", method)
	}
}

// splitTCPAddress splits tcp's IP[:PORT], the IP of IPv6 in brackets.
func splitTCPAddress(s string) (ipText, portText string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", "", errors.New("no closing bracket after the IPv6 address")
		}
		ipText, rest := s[:end+1], s[end+1:]
		if rest != "" && rest[0] != ':' {
			return "", "", fmt.Errorf("%q after the IPv6 address: want [IP]:PORT", rest)
		}
		return ipText, strings.TrimPrefix(rest, ":"), nil
	}
	if strings.Count(s, ":") > 1 {
		return "", "", fmt.Errorf("an IPv6 address goes in brackets, as tcp:[::1]:%d", DefaultControllerPort)
	}
	ipText, portText, _ = strings.Cut(s, ":")
	return ipText, portText, nil
}

func newTarget(listen bool, ipText, portText string) (ControllerTarget, error) {
	ip, err := parseTargetIP(ipText)
	if err != nil {
		return ControllerTarget{}, err
	}
	port := uint64(DefaultControllerPort)
	if portText != "" {
		if port, err = strconv.ParseUint(portText, 10, 16); err != nil || port == 0 {
			return ControllerTarget{}, fmt.Errorf("bad port %q: want 1-65535", portText)
		}
	}
	return ControllerTarget{Listen: listen, Address: net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10))}, nil
}

// parseTargetIP parses an IPv4 address, or an IPv6 one in brackets.
func parseTargetIP(text string) (netip.Addr, error) {
	inner, bracketed := strings.CutPrefix(text, "[")
	if bracketed {
		inner, bracketed = strings.CutSuffix(inner, "]")
		if !bracketed {
			return netip.Addr{}, errors.New("no closing bracket after the IPv6 address")
		}
	}
	ip, err := netip.ParseAddr(inner)
	switch {
	case err != nil || strings.ContainsAny(ip.Zone(), "[]"):
		return netip.Addr{}, fmt.Errorf("bad IP address %q (xswitch takes an IP address, not a host name)", inner)
	case bracketed && !ip.Is6():
		return netip.Addr{}, fmt.Errorf("brackets are for an IPv6 address, not %s", inner)
	case !bracketed && ip.Is6():
		return netip.Addr{}, fmt.Errorf("an IPv6 address goes in brackets: [%s]", inner)
	}
	return ip, nil
}

// String is the target's canonical form, which the configuration holds and
// get-controller prints: the port always given, a listener's address only
// when it is not every IPv4 address.
func (t ControllerTarget) String() string {
	if !t.Listen {
		return "tcp:" + t.Address
	}
	host, port, _ := net.SplitHostPort(t.Address)
	if host == "0.0.0.0" {
		return "ptcp:" + port
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "ptcp:" + port + ":" + host
}

// parseControllerTargets parses a bridge's targets, refusing one given
// twice (in any spelling).
func parseControllerTargets(texts []string) ([]ControllerTarget, error) {
	var out []ControllerTarget
	for _, s := range texts {
		t, err := ParseControllerTarget(s)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, t) {
			return nil, fmt.Errorf("controller target %q is given twice (as %s)", s, t)
		}
		out = append(out, t)
	}
	return out, nil
}

// FailMode is what a bridge does while no controller is connected.
type FailMode uint8

const (
	// FailStandalone, the default, forwards as NORMAL does (learning)
	// while no controller is connected.
	FailStandalone FailMode = iota
	// FailSecure never adds flows by itself: the bridge forwards on the
	// flows it has.
	FailSecure
)

func (m FailMode) String() string {
	if m == FailSecure {
		return "secure"
	}
	return "standalone"
}

// ParseFailMode parses "standalone" or "secure", as ovs-vsctl
// set-fail-mode takes them.
func ParseFailMode(s string) (FailMode, error) {
	switch s {
	case "standalone":
		return FailStandalone, nil
	case "secure":
		return FailSecure, nil
	}
	return 0, fmt.Errorf("fail mode %q: want standalone or secure", s)
}

// ControllerSettings are what the OpenFlow agent does for one bridge.
type ControllerSettings struct {
	Targets    []ControllerTarget
	FailMode   FailMode // FailStandalone (the default) or FailSecure
	DatapathID uint64
}

func (s ControllerSettings) equal(o ControllerSettings) bool {
	return s.FailMode == o.FailMode && s.DatapathID == o.DatapathID && slices.Equal(s.Targets, o.Targets)
}

// controllerSettingsOf parses bc's controller columns, or says what is
// wrong with them. other_config:datapath-id, when set, is the datapath id,
// as in OVS; removing it brings back the one chosen with the bridge.
func controllerSettingsOf(bc *store.BridgeConfig) (ControllerSettings, error) {
	var s ControllerSettings
	var err error
	if s.Targets, err = parseControllerTargets(bc.Controllers); err != nil {
		return s, err
	}
	if bc.FailMode != "" {
		if s.FailMode, err = ParseFailMode(bc.FailMode); err != nil {
			return s, err
		}
	}
	if bc.DatapathID != "" {
		if s.DatapathID, err = parseDatapathID(bc.DatapathID); err != nil {
			return s, fmt.Errorf("datapath_id: %w", err)
		}
	}
	if v, ok := bc.OtherConfig["datapath-id"]; ok {
		if s.DatapathID, err = parseDatapathID(v); err != nil {
			return s, fmt.Errorf("other_config:datapath-id: %w", err)
		}
	}
	return s, nil
}

// parseDatapathID parses a datapath id as OVS's other_config:datapath-id
// takes it: exactly 16 hex digits, not all zero.
func parseDatapathID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if len(s) != 16 || err != nil || id == 0 {
		return 0, fmt.Errorf("%q is not a datapath id: want 16 hex digits, not all zero", s)
	}
	return id, nil
}

func checkDatapathID(s string) error {
	_, err := parseDatapathID(s)
	return err
}

func formatDatapathID(id uint64) string { return fmt.Sprintf("%016x", id) }

// newDatapathID picks the datapath id of bc as Open vSwitch does: the MAC
// address of the bridge's own (LOCAL) port when it has one in the daemon's
// namespace, else a random locally administered unicast address; either
// way 48 bits, the top 16 of the id zero. It is chosen once and kept, so
// that a controller recognises the switch after a restart.
func newDatapathID(bc *store.BridgeConfig) uint64 {
	for _, pc := range bc.Ports {
		if pc.OFPort != flow.LocalPort || pc.Netns != "" {
			continue
		}
		link, err := netlink.LinkByName(pc.Name)
		if err != nil {
			continue
		}
		if mac := link.Attrs().HardwareAddr; len(mac) == 6 {
			var id uint64
			for _, b := range mac {
				id = id<<8 | uint64(b)
			}
			if id != 0 {
				return id
			}
		}
	}
	const multicast, local = 1 << 40, 1 << 41 // the first octet's low bits
	return rand.Uint64()&(1<<48-1)&^multicast | local
}

// assignDatapathIDs gives every bridge without a datapath id (saved before
// they were kept) one, and reports whether it gave any.
func assignDatapathIDs(c *store.Config) bool {
	assigned := false
	for i := range c.Bridges {
		if bc := &c.Bridges[i]; bc.DatapathID == "" {
			bc.DatapathID = formatDatapathID(newDatapathID(bc))
			assigned = true
		}
	}
	return assigned
}

// controllerEvent is one call an OnControllers function is owed.
type controllerEvent struct {
	bridge   string
	settings ControllerSettings
}

// controllerWatcher is one OnControllers function, with the calls it is
// owed, in order. Its own goroutine makes them, so that verbs never wait
// for the agent and the agent may call the daemon.
type controllerWatcher struct {
	fn    func(bridge string, s ControllerSettings)
	mu    sync.Mutex
	queue []controllerEvent
	wake  chan struct{} // one token: the queue may hold calls
}

func (w *controllerWatcher) push(events []controllerEvent) {
	w.mu.Lock()
	w.queue = append(w.queue, events...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run makes the calls owed until stop is closed.
func (w *controllerWatcher) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		events := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, e := range events {
			w.fn(e.bridge, e.settings)
		}
	}
}

// controllerHub is the daemon's side of the OpenFlow agent's hooks: the
// functions OnControllers added, each owed the calls for the changes in
// order, and what the agent last said of each configured target, for
// show. The watchers are added and told under the daemon's lock, which
// orders the calls as the changes; the status has a lock of its own, so
// that the agent never waits for a verb.
type controllerHub struct {
	watchers []*controllerWatcher
	running  sync.WaitGroup // the watchers' goroutines

	mu     sync.Mutex
	status map[string]map[string]ControllerConn // by bridge and target
}

// ControllerConn is what the OpenFlow agent knows of the connection on
// one of a bridge's targets: whether a controller is connected, in which
// role, and, of an active (tcp:) target, what OVS's rconn keeps of it,
// which ovs-vswitchd writes to Controller:status.
type ControllerConn struct {
	Connected bool
	Role      string // the controller's role, as the agent names it
	// State is BACKOFF, CONNECTING, ACTIVE or IDLE (waiting for the
	// answer to an echo request), as OVS names them; "" for a passive
	// (ptcp:) target.
	State string
	// LastError is why the last connection, or attempt at one, ended, in
	// OVS's words ("Connection refused", "End of file"); "" for none.
	LastError string
	// ConnectedAt and DisconnectedAt are when the last connection was
	// made, and when the last one (or attempt) ended: zero for never.
	ConnectedAt, DisconnectedAt time.Time
}

// OnControllers has fn called with every bridge's settings now, before it
// returns, then whenever a bridge's targets, fail mode or datapath id
// change (a new bridge included), and with zero settings when a bridge is
// deleted. Calls are in the order of the changes, one at a time, and made
// without the daemon's lock held: fn may call the daemon. The settings are
// shared with the other functions: fn reads them, never changes them. The
// calls stop with Close, which waits for the one in progress;
// OnControllers must not be called concurrently with Close, or after it.
func (d *Daemon) OnControllers(fn func(bridge string, s ControllerSettings)) {
	w := &controllerWatcher{fn: fn, wake: make(chan struct{}, 1)}
	d.mu.Lock()
	initial := controllerChanges(&store.Config{}, d.cfg)
	d.controllers.watchers = append(d.controllers.watchers, w)
	d.mu.Unlock()
	for _, e := range initial {
		fn(e.bridge, e.settings)
	}
	d.controllers.running.Add(1)
	stop := d.stop
	go func() {
		defer d.controllers.running.Done()
		w.run(stop)
	}()
}

// controllerChanges are the calls owed for the change from before to
// after: bridges deleted first, then those whose settings differ, in the
// configuration's order.
func controllerChanges(before, after *store.Config) []controllerEvent {
	var events []controllerEvent
	for _, bc := range before.Bridges {
		if after.Bridge(bc.Name) == nil {
			events = append(events, controllerEvent{bridge: bc.Name})
		}
	}
	for i := range after.Bridges {
		bc := &after.Bridges[i]
		s, _ := controllerSettingsOf(bc) // validated
		if old := before.Bridge(bc.Name); old != nil {
			if was, _ := controllerSettingsOf(old); was.equal(s) {
				continue
			}
		}
		events = append(events, controllerEvent{bridge: bc.Name, settings: s})
	}
	return events
}

// changed follows a change of the configuration from before to after:
// it forgets the status of targets no longer configured and owes the
// watchers the calls for it. The caller holds the daemon's lock, which
// orders the calls as the changes.
func (h *controllerHub) changed(before, after *store.Config) {
	events := controllerChanges(before, after)
	if len(events) == 0 {
		return
	}
	h.syncStatus(after)
	for _, w := range h.watchers {
		w.push(events)
	}
}

// syncStatus makes the status kept one entry per target of cfg: new ones
// not connected, gone ones forgotten.
func (h *controllerHub) syncStatus(cfg *store.Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := make(map[string]map[string]ControllerConn, len(cfg.Bridges))
	for _, bc := range cfg.Bridges {
		m := make(map[string]ControllerConn, len(bc.Controllers))
		for _, t := range bc.Controllers {
			m[t] = h.status[bc.Name][t]
		}
		next[bc.Name] = m
	}
	h.status = next
}

// SetControllerStatus records what the OpenFlow agent knows of one of a
// bridge's targets, for show and the OVSDB server. It is kept in memory
// only, and ignored for a target the bridge no longer has.
func (d *Daemon) SetControllerStatus(bridge, target string, c ControllerConn) {
	if t, err := ParseControllerTarget(target); err == nil {
		target = t.String() // as the configuration spells it
	}
	h := &d.controllers
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.status[bridge][target]; ok {
		h.status[bridge][target] = c
	}
}

// statusOf is bc's targets with their status, in bc's order.
func (h *controllerHub) statusOf(bc *store.BridgeConfig) []api.ControllerStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]api.ControllerStatus, 0, len(bc.Controllers))
	for _, t := range bc.Controllers {
		c := h.status[bc.Name][t]
		out = append(out, api.ControllerStatus{Target: t, Connected: c.Connected, Role: c.Role})
	}
	return out
}

// conn is what the agent said last of bridge's target.
func (h *controllerHub) conn(bridge, target string) ControllerConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status[bridge][target]
}

// setControllers is set-controller, and with no targets del-controller:
// the bridge's targets become these, as ovs-vsctl replaces them.
func (d *Daemon) setControllers(bridge string, targets []string) error {
	if _, err := d.bridge(bridge); err != nil {
		return err
	}
	parsed, err := parseControllerTargets(targets)
	if err != nil {
		return err
	}
	var canonical []string
	for _, t := range parsed {
		canonical = append(canonical, t.String())
	}
	next := d.cfg.Clone()
	next.Bridge(bridge).Controllers = canonical
	if err := d.commit(next); err != nil {
		return err
	}
	d.log.Info("controllers set", "bridge", bridge, "controllers", canonical)
	return nil
}

// setFailMode is set-fail-mode, and with "" del-fail-mode.
func (d *Daemon) setFailMode(bridge, mode string) error {
	if _, err := d.bridge(bridge); err != nil {
		return err
	}
	if mode != "" {
		m, err := ParseFailMode(mode)
		if err != nil {
			return err
		}
		mode = m.String()
	}
	next := d.cfg.Clone()
	next.Bridge(bridge).FailMode = mode
	if err := d.commit(next); err != nil {
		return err
	}
	d.log.Info("fail mode set", "bridge", bridge, "fail_mode", mode)
	return nil
}
