package control

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/tap"
	"github.com/xswitch/xswitch/port/veth"
)

// The interfaces add-port creates and owns: veth pairs into namespaces,
// taps for VMs, and internal ports. Restore recreates them when they are
// gone; del-port and del-br delete them.

func vethConfig(pc api.PortConfig) veth.Config {
	if pc.Type == api.PortTypeInternal {
		// One in the host without an address starts down, as OVS's do:
		// a thousand of them up would each send IPv6's router
		// solicitations and listener reports, which the bridge floods to
		// all the others.
		here := pc.Netns == ""
		return veth.Config{Name: pc.Device, Namespace: pc.Netns, PeerHere: here, PeerDown: here && pc.Address == "", Peer: pc.Name, Address: pc.Address, MTU: pc.MTU}
	}
	return veth.Config{Name: pc.Name, Namespace: pc.Netns, Peer: pc.Peer, Address: pc.Address, MTU: pc.MTU}
}

// ownsDevice reports whether add-port created the port's interface, and
// so restore recreates it and del-port deletes it.
func ownsDevice(pc api.PortConfig) bool {
	return pc.Netns != "" || pc.Type == api.PortTypeTap || pc.Type == api.PortTypeInternal
}

func createOwnedDevice(pc api.PortConfig) error {
	if pc.Type == api.PortTypeTap {
		return tap.Create(tap.Config{Name: pc.Name, Owner: pc.Owner, MTU: pc.MTU})
	}
	return veth.Create(vethConfig(pc))
}

// missingOwnedDevice reports whether the port's interface is one that
// add-port created and it is gone (after a reboot, say).
func missingOwnedDevice(pc api.PortConfig) bool {
	switch {
	case !ownsDevice(pc):
		return false
	case pc.Type == api.PortTypeTap:
		return !tap.Exists(pc.Name)
	default:
		return !veth.Exists(deviceOf(pc))
	}
}

// internalDevice derives the hidden name of an internal port's switch end
// from the port's name, so that it is the same after every restart.
func internalDevice(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("xi%08x", h.Sum32())
}

// renamedPort is a port the bridge knows by another name than its
// interface's: an internal port, whose socket is on its veth's switch end.
type renamedPort struct {
	port.Port
	name string
}

func (p renamedPort) Name() string { return p.name }

func (p renamedPort) Unwrap() port.Port { return p.Port }

// completePortType checks the options that depend on the port's type and
// fills in what add-port derives from them.
func completePortType(pc *api.PortConfig) error {
	pc.Device = ""
	if pc.IsTunnel() {
		return completeTunnel(pc)
	}
	if err := checkTunnelOptions(*pc); err != nil {
		return err
	}
	switch pc.Type {
	case "":
		if pc.Netns == "" && (pc.Peer != "" || pc.Address != "") {
			return errors.New("--peer and --address need --netns: they describe a veth pair that add-port creates")
		}
		if pc.Netns != "" && pc.Peer == "" {
			pc.Peer = veth.DefaultPeer
		}
	case api.PortTypeTap:
		if pc.Netns != "" || pc.Peer != "" || pc.Address != "" {
			return errors.New("--netns, --peer and --address do not apply to a tap port: the VM behind it configures its own interface")
		}
		if err := (tap.Config{Name: pc.Name, Owner: pc.Owner}).Validate(); err != nil {
			return err
		}
	case api.PortTypeInternal:
		if pc.Peer != "" {
			return fmt.Errorf("--peer does not apply to an internal port: the interface is %q itself", pc.Name)
		}
		pc.Device = internalDevice(pc.Name)
	default:
		return fmt.Errorf("unknown port type %q (want tap, internal, vxlan or geneve)", pc.Type)
	}
	if pc.Owner != 0 && pc.Type != api.PortTypeTap {
		return errors.New("--owner needs --type tap: it says who may open the tap device")
	}
	return nil
}

// deleteOwnedDevice deletes the veth pair or tap of a port if xswitch
// created it.
func (d *Daemon) deleteOwnedDevice(pc api.PortConfig) {
	var err error
	switch {
	case !ownsDevice(pc):
		return
	case pc.Type == api.PortTypeTap:
		err = tap.Delete(pc.Name)
	default:
		err = veth.Delete(deviceOf(pc))
	}
	// A veth is gone already when its namespace was deleted.
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Error("deleting the port's interface", "port", pc.Name, "err", err)
	}
}
