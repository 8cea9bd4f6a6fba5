package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// RedirectCounter counts the frames redirected through a DEVMAP that
// never left (redirect.c).
type RedirectCounter struct {
	objs  RedirectObjects
	links []link.Link
}

// AttachRedirectCounter loads redirect.c and attaches it to the kernel's
// xdp_redirect_err and xdp_devmap_xmit tracepoints.
func AttachRedirectCounter() (*RedirectCounter, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, err
	}
	c := &RedirectCounter{}
	if err := LoadRedirectObjects(&c.objs, nil); err != nil {
		return nil, fmt.Errorf("load the redirect drop counter: %w", err)
	}
	for _, prog := range []*ebpf.Program{c.objs.CountRefused, c.objs.CountDropped} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("attach the redirect drop counter: %w", err)
		}
		c.links = append(c.links, l)
	}
	return c, nil
}

// Drops returns how many frames redirected to slot slot of the DEVMAP
// with id devmap, the device with index ifindex, never left since the
// counter was attached.
func (c *RedirectCounter) Drops(devmap ebpf.MapID, slot uint32, ifindex int) uint64 {
	return sum(c.objs.Refused, uint64(devmap)<<32|uint64(slot)) + sum(c.objs.Dropped, uint32(ifindex))
}

// sum adds up the per-CPU counts of key in m; a key never counted has no
// entry.
func sum(m *ebpf.Map, key any) uint64 {
	var perCPU []uint64
	if err := m.Lookup(key, &perCPU); err != nil {
		return 0
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n
}

// Close detaches the counter.
func (c *RedirectCounter) Close() error {
	var errs []error
	for _, l := range c.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(append(errs, c.objs.Close())...)
}
