package vswitch

import (
	"time"

	"github.com/xswitch/xswitch/port"
)

// Ports and the fast path: its program put on a port, and whether the
// fast path may redirect frames to a port.

// attach replaces p's XDP program with the fast path's, if p has one, and
// has the fast path's redirects to p's slot go to its interface. It
// returns "" or why the port does not take part.
func (fp *fastPath) attach(p *bridgePort) (why string) {
	host, ok := port.Underlying(p.Port).(port.XDPHost)
	if !ok {
		return "the port has no XDP program"
	}
	detach, err := fp.dp.AttachPort(p.slot, p.ofport, p.Info().Ifindex, host, p.underlay != nil)
	if err != nil {
		return err.Error()
	}
	p.fastPath = detach
	p.fastPathIn.Store(true)
	fp.mu.Lock()
	fp.ports[p] = &fpPortDrops{counted: fp.redirectDrops(p)}
	fp.mu.Unlock()
	return ""
}

// detach puts p's own XDP program back and forgets its interface, or
// for a tunnel, has the underlays no longer take its frames.
func (fp *fastPath) detach(p *bridgePort) {
	if p.tunnel != nil {
		fp.removeTunnel(p)
		return
	}
	if p.fastPath == nil {
		return
	}
	p.fastPath()
	p.fastPath = nil
	p.fastPathIn.Store(false)
	fp.mu.Lock()
	delete(fp.ports, p)
	fp.mu.Unlock()
}

// attachFastPath gives p the fast path's program, if the bridge has a
// fast path, and says whether the fast path may send to it. A tunnel has
// no program: its underlay's takes its frames apart, and what the fast
// path sends to it goes out of the underlay.
func (b *Bridge) attachFastPath(p *bridgePort) {
	if b.fp == nil {
		p.fastPathOff = "the daemon runs with --fast-path off"
		return
	}
	if p.tunnel != nil {
		if err := b.fp.addTunnel(p); err != nil {
			p.fastPathOff = err.Error()
		}
	} else {
		p.fastPathOff = b.fp.attach(p)
	}
	b.checkRedirects(p)
	// Decisions made before the port could take redirects may have been
	// refused the fast path.
	b.fp.entriesChanged()
}

// checkRedirects finds out whether p takes redirects, and reports whether
// that changed. It runs under b.mu.
func (b *Bridge) checkRedirects(p *bridgePort) bool {
	ok, why := false, p.fastPathOff
	switch {
	case p.tunnel != nil:
		ul := b.underlayOf(p)
		if p.fastPathOff == "" {
			ok, why = ul.takesRedirects.Load(), ul.redirectsOff
			if ul.fastPath == nil {
				why = "its underlay " + ul.Name() + " runs without it: " + ul.fastPathOff
			}
		}
		p.fastPathIn.Store(p.fastPathOff == "" && ul.fastPathIn.Load())
	case p.fastPath != nil:
		ok, why = port.Underlying(p.Port).(port.XDPHost).RedirectTarget()
	}
	changed := ok != p.takesRedirects.Load() || why != p.redirectsOff
	p.takesRedirects.Store(ok)
	p.redirectsOff = why
	return changed
}

// watchRedirects checks every fastPathWatch that the ports still take
// redirects (a veth peer may lose GRO, or its XDP program), and moves the
// flows to them back to user space when one no longer does.
func (b *Bridge) watchRedirects() {
	defer close(b.watchDone)
	tick := time.NewTicker(fastPathWatch)
	defer tick.Stop()
	for {
		select {
		case <-b.stopWatch:
			return
		case <-tick.C:
		}
		b.mu.Lock()
		changed := false
		for _, p := range append(b.underlays[:len(b.underlays):len(b.underlays)], b.ports...) { // a tunnel follows its underlay
			if b.checkRedirects(p) {
				changed = true
			}
		}
		if changed {
			b.fp.entriesChanged()
		}
		b.mu.Unlock()
	}
}

// fastPathStatus says whether the fast path carries frames from and to
// p, and if not, why. It runs under Bridge.mu.
func (p *bridgePort) fastPathStatus() string {
	switch {
	case p.fastPath == nil && p.tunnel == nil:
		return "off (" + p.fastPathOff + ")"
	case !p.takesRedirects.Load():
		return "off (frames to it stay in user space: " + p.redirectsOff + ")"
	case !p.fastPathIn.Load():
		return "off (frames from it stay in user space: " + p.fastPathOff + ")"
	}
	return "on"
}
