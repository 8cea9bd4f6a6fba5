package control

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/afxdp"
	"github.com/xswitch/xswitch/tunnel"
)

// Tunnel ports (add-port --type vxlan|geneve): the daemon resolves how
// each remote is reached from the kernel's routing and neighbour tables,
// opens one underlay per interface the routes leave by (an AF_XDP port
// that takes only the tunnels' datagrams), and follows the tables'
// changes: a new next hop, a neighbour resolved at last, a route that
// went away. The tunnels over an underlay belong to one bridge.

// tunnelRetry is how often the daemon looks again at tunnels whose remote
// it cannot reach, besides whenever the kernel's tables change: a
// neighbour the kernel failed to resolve is asked for again.
const tunnelRetry = 5 * time.Second

// completeTunnel checks a tunnel port's options, as completePortType does
// the others'.
func completeTunnel(pc *api.PortConfig) error {
	switch {
	case pc.Netns != "" || pc.Peer != "" || pc.Address != "" || pc.Owner != 0:
		return fmt.Errorf("--netns, --peer, --address and --owner do not apply to a %s port: it has no interface", pc.Type)
	case pc.Queues != 0 || pc.Mode != "" && pc.Mode != string(afxdp.ModeAuto):
		return fmt.Errorf("--mode and --queues do not apply to a %s port: its frames travel through the underlay's AF_XDP port, opened in auto mode on all its queues", pc.Type)
	case pc.MTU != 0:
		return fmt.Errorf("--mtu does not apply to a %s port: its MTU is the underlay interface's less %d bytes of encapsulation", pc.Type, tunnel.Overhead-14)
	}
	_, err := tunnelConfig(*pc)
	return err
}

// checkTunnelOptions refuses the tunnel options on a port of another type.
func checkTunnelOptions(pc api.PortConfig) error {
	if pc.RemoteIP != "" || pc.LocalIP != "" || pc.Key != "" || pc.DstPort != 0 {
		return errors.New("--remote-ip, --local-ip, --key and --dst-port need --type vxlan or geneve")
	}
	return nil
}

// tunnelConfig is the tunnel package's description of a tunnel port.
func tunnelConfig(pc api.PortConfig) (tunnel.Config, error) {
	kind, err := tunnel.ParseKind(pc.Type)
	if err != nil {
		return tunnel.Config{}, err
	}
	c := tunnel.Config{Name: pc.Name, Kind: kind, DstPort: pc.DstPort}
	if pc.RemoteIP == "" {
		return c, fmt.Errorf("a %s port needs --remote-ip: the address of the tunnel's other end", pc.Type)
	}
	if pc.RemoteIP == api.KeyFlow {
		return c, errors.New("--remote-ip flow is not supported yet: give the remote's address")
	}
	if c.Remote, err = netip.ParseAddr(pc.RemoteIP); err != nil {
		return c, fmt.Errorf("--remote-ip %q is not an IP address", pc.RemoteIP)
	}
	if pc.LocalIP != "" {
		if c.Local, err = netip.ParseAddr(pc.LocalIP); err != nil {
			return c, fmt.Errorf("--local-ip %q is not an IP address", pc.LocalIP)
		}
	}
	switch pc.Key {
	case "":
	case api.KeyFlow:
		c.KeyFlow = true
	default:
		key, err := strconv.ParseUint(pc.Key, 0, 32)
		if err != nil {
			return c, fmt.Errorf("--key %q is neither a VNI nor flow", pc.Key)
		}
		c.Key = uint32(key)
	}
	return c, c.Validate()
}

// openTunnel opens a tunnel port of bridge: resolves the way to its
// remote, and opens that way's underlay or takes the one open already.
func (d *Daemon) openTunnel(bridge string, pc api.PortConfig) (port.Port, error) {
	cfg, err := tunnelConfig(pc)
	if err != nil {
		return nil, err
	}
	route, err := tunnel.ResolveRoute(cfg.Remote, cfg.Local)
	if err != nil {
		return nil, err
	}
	if owner, ok := d.underlayBridge(route.Ifname); ok && owner != bridge {
		return nil, fmt.Errorf("the route to the remote leaves by %s, whose tunnels belong to bridge %s: the tunnels over one interface belong to one bridge",
			route.Ifname, owner)
	}
	p, err := d.underlays.NewPort(cfg, route.Ifname, func() (*tunnel.Underlay, error) {
		if owner, _, ok := d.findPort(route.Ifname); ok {
			return nil, fmt.Errorf("the route to the remote leaves by %s, a port of bridge %s: a port's interface cannot also carry tunnels", route.Ifname, owner)
		}
		p, err := afxdp.Open(afxdp.Config{Interface: route.Ifname, Underlay: true})
		if err != nil {
			return nil, fmt.Errorf("tunnel underlay: %w", err)
		}
		d.enablePeerGRO(p.Info().Ifindex, "underlay", route.Ifname)
		d.log.Info("tunnel underlay opened", "interface", route.Ifname, "bridge", bridge, "xdp", p.Info().XDPMode, "bind", p.Info().BindMode)
		return tunnel.NewUnderlay(p, route.MTU), nil
	})
	if err != nil {
		return nil, err
	}
	if err := p.SetRoute(route); err != nil {
		p.Close()
		return nil, err
	}
	d.tunnels[pc.Name] = p
	return p, nil
}

// underlayBridge is the bridge whose tunnels are over the underlay on
// iface, if one is open there.
func (d *Daemon) underlayBridge(iface string) (string, bool) {
	for name, p := range d.tunnels {
		if p.Underlay().Name() == iface {
			bridge, _, _ := d.findPort(name)
			return bridge, true
		}
	}
	return "", false
}

// refreshTunnels resolves every tunnel's way to its remote again after
// the kernel's tables changed, and opens the tunnel ports that were down
// for want of a route. It takes the verb lock.
func (d *Daemon) refreshTunnels() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, bc := range d.cfg.Bridges {
		for _, pc := range bc.Ports {
			if !pc.IsTunnel() {
				continue
			}
			if p, ok := d.tunnels[pc.Name]; ok {
				d.refreshTunnel(p)
				continue
			}
			if err := d.attach(d.bridges[bc.Name], pc); err != nil {
				if was := d.down[pc.Name]; was == nil || was.Error() != err.Error() {
					d.log.Warn("tunnel port stays down", "bridge", bc.Name, "port", pc.Name, "err", err)
				}
				d.down[pc.Name] = err
				continue
			}
			delete(d.down, pc.Name)
			d.log.Info("tunnel port up: its remote is reachable", "bridge", bc.Name, "port", pc.Name)
		}
	}
}

// refreshTunnel gives an open tunnel the way to its remote the kernel's
// tables say now.
func (d *Daemon) refreshTunnel(p *tunnel.Port) {
	cfg := p.Config()
	route, err := tunnel.ResolveRoute(cfg.Remote, cfg.Local)
	if err == nil {
		if route == p.Route() {
			return
		}
		err = p.SetRoute(route)
	} else {
		p.Unreachable(err)
	}
	if err != nil {
		d.log.Warn("tunnel port cannot reach its remote; frames to it are dropped and counted", "port", cfg.Name, "err", err)
		return
	}
	d.log.Info("tunnel port's way to its remote", "port", cfg.Name, "route", route.String())
}

// watchTunnels follows the kernel's routing and neighbour tables until
// stop is closed.
func (d *Daemon) watchTunnels(stop <-chan struct{}) error {
	return tunnel.WatchUnderlay(stop, d.refreshTunnels, func(format string, args ...any) {
		d.log.Warn(fmt.Sprintf(format, args...))
	})
}

// tunnelsWaiting reports whether a tunnel is down, or open without a
// resolved way to its remote.
func (d *Daemon) tunnelsWaiting() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, bc := range d.cfg.Bridges {
		for _, pc := range bc.Ports {
			if !pc.IsTunnel() {
				continue
			}
			if p, ok := d.tunnels[pc.Name]; !ok || !p.Route().Resolved {
				return true
			}
		}
	}
	return false
}

// closeUnderlayTunnels takes down every tunnel over the underlay on iface,
// which vanished: they come up again when a route to their remote does.
// The last to close closes the underlay. It runs under the verb lock.
func (d *Daemon) closeUnderlayTunnels(iface string) {
	u := d.underlays.On(iface)
	for name, p := range d.tunnels {
		if p.Underlay() != u {
			continue
		}
		bridge, _, _ := d.findPort(name)
		if err := d.closeKeepingCounters(d.bridges[bridge], name); err != nil {
			d.log.Error("closing a tunnel whose underlay vanished", "port", name, "err", err)
		}
		delete(d.tunnels, name)
		delete(d.opened, name)
		d.down[name] = fmt.Errorf("its underlay %s vanished", iface)
		d.log.Warn("tunnel port down: its underlay vanished", "bridge", bridge, "port", name, "underlay", iface)
	}
}

// tunnelStatus describes the open tunnel port name, if it is one.
func (d *Daemon) tunnelStatus(name string) *api.TunnelStatus {
	p, ok := d.tunnels[name]
	if !ok {
		return nil
	}
	u := p.Underlay().(*tunnel.Underlay)
	r := p.Route()
	drops, ud := p.TunnelStats(), u.DropStats()
	ts := &api.TunnelStatus{
		Underlay: u.Name(), UnderlayInfo: portInfo(u.Info()),
		Drops: api.TunnelDrops{TxOversize: drops.TxOversize, TxNoRoute: drops.TxNoRoute},
		UnderlayDrops: api.UnderlayDrops{
			NotTunnel: ud.NotTunnel, BadOuter: ud.BadOuter, Fragment: ud.Fragment, BadHeader: ud.BadHeader,
			CriticalOpt: ud.CriticalOpt, ShortInner: ud.ShortInner, UnknownRemote: ud.UnknownRemote, WrongKey: ud.WrongKey,
		},
	}
	if r.Local.IsValid() {
		ts.Local = r.Local.String()
	}
	if r.NextHop.IsValid() {
		ts.NextHop = r.NextHop.String()
	}
	if r.Resolved {
		ts.NextHopMAC = formatMAC(r.NextHopMAC)
	}
	if err := p.WhyUnreachable(); err != nil {
		ts.Unreachable = err.Error()
	}
	return ts
}
