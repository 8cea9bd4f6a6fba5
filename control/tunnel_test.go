package control

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/tunnel"
)

// add-port's tunnel options are checked before anything is opened, each
// refusal naming what is wrong.
func TestTunnelPortOptions(t *testing.T) {
	vx := func(mod func(*api.PortConfig)) api.PortConfig {
		pc := api.PortConfig{Name: "vx1", Type: api.PortTypeVXLAN, RemoteIP: "192.0.2.2"}
		if mod != nil {
			mod(&pc)
		}
		return pc
	}
	for _, tc := range []struct {
		pc   api.PortConfig
		want string
	}{
		{vx(func(pc *api.PortConfig) { pc.RemoteIP = "" }), "needs --remote-ip"},
		{vx(func(pc *api.PortConfig) { pc.RemoteIP = "flow" }), "--remote-ip flow is not supported yet"},
		{vx(func(pc *api.PortConfig) { pc.RemoteIP = "192.0.2" }), `--remote-ip "192.0.2" is not an IP address`},
		{vx(func(pc *api.PortConfig) { pc.RemoteIP = "2001:db8::1" }), "only IPv4 underlays are supported"},
		{vx(func(pc *api.PortConfig) { pc.RemoteIP = "224.0.0.1" }), "is not a unicast address"},
		{vx(func(pc *api.PortConfig) { pc.LocalIP = "x" }), `--local-ip "x" is not an IP address`},
		{vx(func(pc *api.PortConfig) { pc.Key = "16777216" }), "beyond the 24 bits of a VNI"},
		{vx(func(pc *api.PortConfig) { pc.Key = "blue" }), `--key "blue" is neither a VNI nor flow`},
		{vx(func(pc *api.PortConfig) { pc.Netns = "ns" }), "do not apply to a vxlan port"},
		{vx(func(pc *api.PortConfig) { pc.Queues = 2 }), "--mode and --queues do not apply"},
		{vx(func(pc *api.PortConfig) { pc.Mode = "zerocopy" }), "--mode and --queues do not apply"},
		{vx(func(pc *api.PortConfig) { pc.MTU = 9000 }), "--mtu does not apply to a vxlan port"},
		{api.PortConfig{Name: "p", RemoteIP: "192.0.2.2"}, "need --type vxlan or geneve"},
		{api.PortConfig{Name: "p", Type: api.PortTypeTap, Key: "5"}, "need --type vxlan or geneve"},
	} {
		pc := tc.pc
		if err := completePortType(&pc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.pc, err, tc.want)
		}
	}
	for _, tc := range []struct {
		pc   api.PortConfig
		want tunnel.Config
	}{
		{vx(nil), tunnel.Config{Name: "vx1", Kind: tunnel.VXLAN, Remote: mustAddr("192.0.2.2")}},
		{vx(func(pc *api.PortConfig) { pc.Key, pc.LocalIP, pc.DstPort, pc.Mode = "0x2a", "192.0.2.1", 8472, "auto" }),
			tunnel.Config{Name: "vx1", Kind: tunnel.VXLAN, Remote: mustAddr("192.0.2.2"), Local: mustAddr("192.0.2.1"), Key: 42, DstPort: 8472}},
		{api.PortConfig{Name: "gn", Type: api.PortTypeGeneve, RemoteIP: "192.0.2.3", Key: "flow"},
			tunnel.Config{Name: "gn", Kind: tunnel.Geneve, Remote: mustAddr("192.0.2.3"), KeyFlow: true}},
	} {
		pc := tc.pc
		if err := completePortType(&pc); err != nil {
			t.Errorf("%+v: %v", tc.pc, err)
			continue
		}
		if got, err := tunnelConfig(pc); err != nil || got != tc.want {
			t.Errorf("%+v: tunnel %+v (%v), want %+v", tc.pc, got, err, tc.want)
		}
		if ownsDevice(pc) || deviceOf(pc) != pc.Name {
			t.Errorf("%+v: a tunnel port owns no device", tc.pc)
		}
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
