package control

import (
	"fmt"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/ifname"
	"github.com/xswitch/xswitch/port/afxdp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// deviceOf is the interface the port's AF_XDP socket is bound to.
func deviceOf(pc api.PortConfig) string {
	if pc.Device != "" {
		return pc.Device
	}
	return pc.Name
}

// configRules are what the store holds a configuration it loads to: the
// rules the verbs hold their input to, so that a file edited by hand, or
// written by a daemon with a bug since fixed, cannot bring up what no
// verb would have; and a datapath id for a bridge saved without one.
var configRules = store.Rules{Validate: validateConfig, Upgrade: assignDatapathIDs}

// LoadConfig reads the configuration at path as a restart would find it,
// the journal's changes included, with every bridge's rules in Flows. It
// changes nothing on disk. A missing configuration is an empty one; one
// that cannot be read is an error naming the file, which is left alone.
func LoadConfig(path string) (*store.Config, error) {
	return store.Load(path, configRules)
}

// validateConfig checks a configuration read from disk as the verbs
// check their input.
func validateConfig(c *store.Config) error {
	if err := validateConntrackConfig(c.Conntrack); err != nil {
		return err
	}
	bridges := map[string]bool{}
	owners := map[string]string{} // port and device names: their bridge
	for _, bc := range c.Bridges {
		if err := ifname.Validate("bridge", bc.Name); err != nil {
			return err
		}
		if bridges[bc.Name] {
			return fmt.Errorf("bridge %q appears twice", bc.Name)
		}
		bridges[bc.Name] = true
		if _, err := bridgeSettingsOf(&bc); err != nil {
			return err
		}
		if _, err := controllerSettingsOf(&bc); err != nil {
			return fmt.Errorf("bridge %s: %w", bc.Name, err)
		}
		ofports := map[uint16]string{}
		for _, pc := range bc.Ports {
			if err := validatePort(pc, bc.Name); err != nil {
				return fmt.Errorf("bridge %s: %w", bc.Name, err)
			}
			names := []string{pc.Name}
			if deviceOf(pc) != pc.Name {
				names = append(names, deviceOf(pc))
			}
			for _, name := range names {
				if owner, ok := owners[name]; ok {
					return fmt.Errorf("interface %q belongs to two ports (on bridges %s and %s)", name, owner, bc.Name)
				}
				owners[name] = bc.Name
			}
			if other, ok := ofports[pc.OFPort]; ok {
				return fmt.Errorf("bridge %s: ports %q and %q both have ofport %d", bc.Name, other, pc.Name, pc.OFPort)
			}
			ofports[pc.OFPort] = pc.Name
		}
		for _, r := range bc.Released {
			if r.OFPort < 1 || r.OFPort > vswitch.MaxOFPort {
				return fmt.Errorf("bridge %s: released ofport %d out of range 1-%d", bc.Name, r.OFPort, vswitch.MaxOFPort)
			}
		}
	}
	return nil
}

// validatePort checks one saved port of bridge as add-port checks its
// arguments.
func validatePort(pc api.PortConfig, bridge string) error {
	if err := ifname.Validate("port", pc.Name); err != nil {
		return err
	}
	if pc.OFPort == flow.LocalPort && pc.Name != bridge {
		return fmt.Errorf("port %q: ofport %d is LOCAL, the port named like its bridge %s", pc.Name, pc.OFPort, bridge)
	}
	if pc.OFPort < 1 || pc.OFPort > vswitch.MaxOFPort && pc.OFPort != flow.LocalPort {
		return fmt.Errorf("port %q: ofport %d out of range 1-%d", pc.Name, pc.OFPort, vswitch.MaxOFPort)
	}
	if pc.Queues < 0 {
		return fmt.Errorf("port %q: negative queue count %d", pc.Name, pc.Queues)
	}
	if _, err := afxdp.ParseMode(pc.Mode); err != nil {
		return fmt.Errorf("port %q: %w", pc.Name, err)
	}
	if _, err := portOptions(pc); err != nil {
		return err
	}
	completed := pc
	if err := completePortType(&completed); err != nil {
		return fmt.Errorf("port %q: %w", pc.Name, err)
	}
	if completed.Device != pc.Device || completed.Peer != pc.Peer {
		return fmt.Errorf("port %q: device %q and peer %q are not what its type makes (%q, %q)",
			pc.Name, pc.Device, pc.Peer, completed.Device, completed.Peer)
	}
	return checkMTURequest(pc)
}
