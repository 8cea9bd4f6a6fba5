package control

// The Rapid Spanning Tree Protocol's settings, as OVS names them: the
// Bridge's rstp_enable column and rstp-* keys of other_config, and the
// Port's rstp-* keys; and rstp-show, after ovs-appctl rstp/show.

import (
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/rstp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// checkUint returns a check of whole numbers from lo to hi in steps of
// step.
func checkUint(lo, hi, step uint64) func(string) error {
	return func(v string) error {
		_, err := parseUint(v, lo, hi, step)
		return err
	}
}

func parseUint(v string, lo, hi, step uint64) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi || n%step != 0 {
		if step > 1 {
			return 0, fmt.Errorf("%q is not a multiple of %d from %d to %d", v, step, lo, hi)
		}
		return 0, fmt.Errorf("%q is not a whole number from %d to %d", v, lo, hi)
	}
	return n, nil
}

func checkAddress(v string) error {
	_, err := parseAddress(v)
	return err
}

func parseAddress(v string) ([6]byte, error) {
	m, err := net.ParseMAC(v)
	if err != nil || len(m) != 6 || m[0]&1 != 0 {
		return [6]byte{}, fmt.Errorf("%q is not a unicast MAC address", v)
	}
	return [6]byte(m), nil
}

func checkOneOf(v string, values ...string) error {
	if !slices.Contains(values, v) {
		return fmt.Errorf("%q is not one of %s", v, strings.Join(values, ", "))
	}
	return nil
}

// bridgeAddress is the address in a bridge's identifier when
// other_config:rstp-address gives none: made from its name, so that it is
// the same after every restart, and locally administered.
func bridgeAddress(name string) [6]byte {
	h := sha256.Sum256([]byte("xswitch bridge " + name))
	a := [6]byte(h[:6])
	a[0] = a[0]&^0x01 | 0x02
	return a
}

// rstpBridgeConfig is the spanning tree configuration bc's columns give,
// whether or not rstp_enable turns it on.
func rstpBridgeConfig(bc *store.BridgeConfig) (rstp.BridgeConfig, error) {
	oc := bc.OtherConfig
	cfg := rstp.DefaultBridgeConfig(bridgeAddress(bc.Name))
	if v, ok := oc["rstp-address"]; ok {
		cfg.Address, _ = parseAddress(v) // checked with the keys
	}
	for key, field := range map[string]*uint16{
		"rstp-priority": &cfg.Priority, "rstp-max-age": &cfg.MaxAge,
		"rstp-forward-delay": &cfg.ForwardDelay, "rstp-transmit-hold-count": &cfg.TransmitHoldCount,
	} {
		if v, ok := oc[key]; ok {
			n, _ := strconv.ParseUint(v, 10, 16)
			*field = uint16(n)
		}
	}
	if oc["rstp-force-protocol-version"] == "0" {
		cfg.ForceVersion = rstp.VersionSTP
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("other_config rstp-*: %w", err)
	}
	return cfg, nil
}

// rstpPortConfig is pc's part in its bridge's spanning tree: nil for a
// port that takes none, by other_config:rstp-enable=false or being an
// internal port, which OVS leaves out too, or a tunnel, whose loops split
// horizon prevents (switch/tunnel.go). Its path cost is the default
// here; runningOptions sets the one for the link's speed unless
// rstp-path-cost says otherwise.
func rstpPortConfig(pc api.PortConfig) *rstp.PortConfig {
	oc := pc.OtherConfig
	if oc["rstp-enable"] == "false" || pc.Type == api.PortTypeInternal || pc.IsTunnel() {
		return nil
	}
	cfg := rstp.DefaultPortConfig()
	if v, ok := oc["rstp-port-priority"]; ok {
		n, _ := strconv.ParseUint(v, 10, 8)
		cfg.Priority = uint8(n)
	}
	if v, ok := oc["rstp-path-cost"]; ok {
		n, _ := strconv.ParseUint(v, 10, 32)
		cfg.PathCost = uint32(n)
	}
	cfg.AdminEdge = oc["rstp-port-admin-edge"] == "true"
	cfg.AutoEdge = oc["rstp-port-auto-edge"] != "false"
	return &cfg
}

// runningOptions are pc's options with what only its interface tells: its
// MAC address, the source of its BPDUs, and its speed, from which its
// path cost comes unless other_config:rstp-path-cost sets it.
func runningOptions(pc api.PortConfig) (vswitch.PortOptions, error) {
	opts, err := portOptions(pc)
	if err != nil {
		return opts, err
	}
	// One link asked for by name: net.InterfaceByName reads every link
	// the kernel has, which made each of a thousand ports' add-port
	// read two thousand.
	if link, err := netlink.LinkByName(deviceOf(pc)); err == nil && len(link.Attrs().HardwareAddr) == 6 {
		opts.Address = [6]byte(link.Attrs().HardwareAddr)
	}
	if _, set := pc.OtherConfig["rstp-path-cost"]; opts.RSTP != nil && !set {
		opts.RSTP.PathCost = rstp.PathCostForSpeed(linkSpeed(deviceOf(pc)))
	}
	return opts, nil
}

// linkSpeed is an interface's speed in Mbit/s, 0 when it does not say.
func linkSpeed(dev string) uint64 {
	data, err := os.ReadFile("/sys/class/net/" + dev + "/speed")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return uint64(n)
}

func rstpID(id rstp.BridgeID, t rstp.Times) api.RSTPID {
	a := id.Address()
	return api.RSTPID{
		ID: id.String(), Priority: id.Priority(), Address: net.HardwareAddr(a[:]).String(),
		HelloTime: t.HelloTime, MaxAge: t.MaxAge, ForwardDelay: t.ForwardDelay,
	}
}

func portIDString(id rstp.PortID) string { return fmt.Sprintf("%d.%d", id.Priority(), id.Number()) }

// rstpStatus describes bridge name's spanning tree, false when it runs
// none.
func (d *Daemon) rstpStatus(name string) (api.RSTPStatus, bool) {
	st, ok := d.bridges[name].RSTPStatus()
	if !ok {
		return api.RSTPStatus{}, false
	}
	bc := d.cfg.Bridge(name)
	own := rstp.Times{HelloTime: rstp.HelloTime, MaxAge: st.Config.MaxAge, ForwardDelay: st.Config.ForwardDelay}
	out := api.RSTPStatus{
		Bridge: name, BridgeID: rstpID(st.BridgeID, own), RootID: rstpID(st.Root, st.RootTimes),
		IsRoot: st.IsRoot(), RootPathCost: st.RootPathCost, TopologyChanges: st.TopologyChanges,
		BPDUsDropped: st.QueueDropped, Unsettled: st.Unsettled, Ports: []api.RSTPPort{},
		ForceVersion: st.Config.ForceVersion, TransmitHold: st.Config.TransmitHoldCount,
	}
	for _, p := range st.Ports {
		name := st.Names[p.Number]
		if p.Number == st.RootPort {
			out.RootPort = name
		}
		protocol := "rstp"
		if !p.SendRSTP {
			protocol = "stp"
		}
		var ofport uint16
		for _, pc := range bc.Ports {
			if pc.Name == name {
				ofport = pc.OFPort
			}
		}
		out.Ports = append(out.Ports, api.RSTPPort{
			Name: name, OFPort: ofport, Number: p.Number, Priority: p.Config.Priority, PathCost: p.Config.PathCost,
			Role: p.Role.String(), State: p.State.String(), Edge: p.Edge, Protocol: protocol,
			DesignatedBridge: p.DesignatedBridge.String(), DesignatedPort: portIDString(p.DesignatedPort),
			RxBPDUs: p.RxBPDUs, TxBPDUs: p.TxBPDUs, RxDropped: p.RxDropped,
		})
	}
	slices.SortFunc(out.Ports, func(a, b api.RSTPPort) int { return int(a.OFPort) - int(b.OFPort) })
	return out, true
}

// rstpShow is the rstp-show verb: every bridge that runs RSTP, or the
// named one, which must.
func (d *Daemon) rstpShow(only string) ([]api.RSTPStatus, error) {
	if only != "" {
		if _, err := d.bridge(only); err != nil {
			return nil, err
		}
		s, ok := d.rstpStatus(only)
		if !ok {
			return nil, fmt.Errorf("bridge %s does not run RSTP (xswitch set Bridge %s rstp_enable=true)", only, only)
		}
		return []api.RSTPStatus{s}, nil
	}
	out := []api.RSTPStatus{}
	for _, bc := range d.cfg.Bridges {
		if s, ok := d.rstpStatus(bc.Name); ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b api.RSTPStatus) int { return strings.Compare(a.Bridge, b.Bridge) })
	return out, nil
}

// portStates are the spanning tree states of a bridge's ports, by name;
// empty when the bridge runs none, and then every port forwards.
func portStates(st api.RSTPStatus) map[string]api.RSTPPort {
	out := map[string]api.RSTPPort{}
	for _, p := range st.Ports {
		out[p.Name] = p
	}
	return out
}
