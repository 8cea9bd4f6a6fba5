package control

import (
	"errors"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// errVanished is why a port whose interface was deleted is down.
var errVanished = errors.New("interface vanished")

// watchLinks follows the kernel's link events until stop is closed: a port
// whose interface is deleted is closed and shown as down; when an
// interface of that name appears again the port is reopened, once per
// event, so a port that cannot be opened never retries in a loop.
func (d *Daemon) watchLinks(stop <-chan struct{}) error {
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{
		ErrorCallback: func(err error) {
			select {
			case <-stop: // closing the subscription fails its receive: expected
			default:
				d.log.Error("watching link events", "err", err)
			}
		},
	})
	if err != nil {
		return err
	}
	go func() {
		<-stop
		close(done)
	}()
	go func() {
		defer close(d.linksDone)
		for u := range updates { // closed once done is
			d.linkEvent(u)
		}
	}()
	return nil
}

func (d *Daemon) linkEvent(u netlink.LinkUpdate) {
	name := u.Attrs().Name
	d.mu.Lock()
	defer d.mu.Unlock()
	bridge, pc, ok := d.findPort(name)
	// Only the interface the socket is on counts: an internal port's name
	// here may be an unrelated interface, its own being in another namespace.
	if !ok || pc.device() != name {
		return
	}
	name = pc.Name
	b := d.bridges[bridge]
	_, isDown := d.down[name]
	switch u.Header.Type {
	case unix.RTM_DELLINK:
		if isDown {
			return
		}
		if err := b.RemovePort(name); err != nil {
			d.log.Error("closing a vanished port", "bridge", bridge, "port", name, "err", err)
		}
		d.down[name] = errVanished
		d.log.Warn("port down: its interface vanished", "bridge", bridge, "port", name)
	case unix.RTM_NEWLINK:
		if !isDown {
			return
		}
		p, err := d.openPort(pc)
		if err == nil {
			if _, err = addToBridge(b, p, pc); err != nil {
				p.Close()
			}
		}
		if err != nil {
			d.down[name] = err
			d.log.Error("port stays down: its interface returned but cannot be opened", "bridge", bridge, "port", name, "err", err)
			return
		}
		delete(d.down, name)
		d.log.Info("port up: its interface returned", "bridge", bridge, "port", name)
	}
}

// findPort returns the bridge and configuration of the port named name,
// or whose AF_XDP socket is on the interface name.
func (d *Daemon) findPort(name string) (string, PortConfig, bool) {
	for _, bc := range d.cfg.Bridges {
		for _, pc := range bc.Ports {
			if pc.Name == name || pc.device() == name {
				return bc.Name, pc, true
			}
		}
	}
	return "", PortConfig{}, false
}
