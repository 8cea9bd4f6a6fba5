package test

import (
	"testing"
	"time"
)

// rig is where most integration tests start: a daemon, a bridge, and
// namespaces with a port each on it.
type rig struct {
	d     *daemon
	n     *testNet
	br    string
	hosts []nsPort
}

// newRig starts a daemon with daemonArgs, creates a bridge and hosts
// IPv4 namespace ports on it, and waits until the first host reaches each
// of the others, so that ARP is resolved before the test measures anything.
func newRig(t *testing.T, hosts int, daemonArgs ...string) *rig {
	t.Helper()
	r := &rig{d: startDaemonWith(t, daemonArgs...), n: newTestNet()}
	r.br = r.n.name("br")
	r.d.x(t, "add-br", r.br)
	for i := 1; i <= hosts; i++ {
		r.hosts = append(r.hosts, addNSPort(t, r.d, r.n, r.br, i, false))
	}
	for _, h := range r.hosts[1:] {
		waitPing(t, r.hosts[0].ns, h.addr, 5*time.Second)
	}
	return r
}
