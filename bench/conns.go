package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The conns workload measures what a tracked connection costs a switch in
// memory. The generator sends one flow for a while, so that the switch
// has touched its rings and buffers, then a frame of each of N UDP
// connections in turn, again and again, until the receiver has had a
// frame of every one: each passed the switch's ct(commit) on its way
// (StatefulFirewallRules), so the switch holds N connections. The
// switch's resident memory after, less before, over the connections
// made, is its cost per connection: the tracker's and whatever else
// grows with new flows (xswitch's decision cache fills up to its size in
// the first of them). The connections are counted as the switch counts
// them where it can say (SwitchProcess.Connections), else as the flows
// the receiver saw. A UDP connection that sees no reply stays in the
// tracker for 60 s after its last frame, with OVS's default timeouts,
// which xswitch's tracker has too: every flow gets a frame again in each
// pass.

// connsWarmup is how long the one flow runs before the memory before.
const connsWarmup = 2 * time.Second

// connsDeadline bounds how long a conns round sends: a switch that has
// not carried a frame of every connection by then is measured with those
// it has.
const connsDeadline = 3 * time.Minute

// connsSettle is how long a round waits after the generator stops before
// it reads the switch's memory, for the frames in flight.
const connsSettle = time.Second

// connsRound is what one round of a conns workload found. Connections are
// as the switch counts them if it can say, else as the receiver counts
// the flows it had a frame of.
type connsRound struct {
	before, after       int // connections
	seen                int // flows the receiver had a frame of, after
	countedBySwitch     bool
	rssBefore, rssAfter uint64
	fill                time.Duration // until the receiver had seen every flow, or the deadline
}

// bytesPerConn is the round's resident memory over the connections it
// made; 0 if it made none.
func (r connsRound) bytesPerConn() float64 {
	made := r.after - r.before
	if made <= 0 {
		return 0
	}
	return (float64(r.rssAfter) - float64(r.rssBefore)) / float64(made)
}

// SwitchProcess is a switch that runs as a process of its own, as the
// conns workload measures it.
type SwitchProcess struct {
	PID int
	// Connections asks the switch how many connections it tracks; nil
	// when the switch has no way to say.
	Connections func(ctx context.Context) (int, error)
}

// measureConns runs a round of conns workload w through the switch proc
// with generator gen, saying in progress when the receiver has not seen
// every flow by connsDeadline.
func measureConns(ctx context.Context, hosts Hosts, w Workload, gen Generator, proc SwitchProcess, progress io.Writer) (s samples, err error) {
	frame, err := udpFrameOf(hosts, w)
	if err != nil {
		return samples{}, err
	}
	cnt, err := attachCounter(hosts.RcvNetns, PeerName, w.Flows)
	if err != nil {
		return samples{}, err
	}
	defer func() { err = errors.Join(err, cnt.close()) }()

	var round connsRound
	// The warm-up's one flow is the first of the N.
	if err := generateFor(ctx, gen, hosts.GenNetns, flowTemplate(frame, w.Flows), 1, connsWarmup); err != nil {
		return samples{}, err
	}
	if err := sleep(ctx, connsSettle); err != nil {
		return samples{}, err
	}
	if round.before, round.rssBefore, err = connsNow(ctx, cnt, proc); err != nil {
		return samples{}, err
	}
	round.countedBySwitch = proc.Connections != nil

	g, err := startGenerator(ctx, gen, hosts.GenNetns, frame, w.Flows)
	if err != nil {
		return samples{}, err
	}
	start := time.Now()
	for {
		if round.seen, err = cnt.flowsSeen(); err != nil {
			return samples{}, errors.Join(err, g.stop())
		}
		round.fill = time.Since(start)
		if round.seen == w.Flows {
			break
		}
		if round.fill > connsDeadline {
			fmt.Fprintf(progress, "%-8s the receiver saw %d of the %d flows in %v\n", w.Name, round.seen, w.Flows, connsDeadline)
			break
		}
		select {
		case <-ctx.Done():
			return samples{}, errors.Join(ctx.Err(), g.stop())
		case <-g.stopped:
			return samples{}, errors.Join(errors.New("the generator stopped early"), g.stop())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := g.stop(); err != nil {
		return samples{}, err
	}
	if err := sleep(ctx, connsSettle); err != nil {
		return samples{}, err
	}
	if round.after, round.rssAfter, err = connsNow(ctx, cnt, proc); err != nil {
		return samples{}, err
	}
	return samples{conns: []connsRound{round}}, nil
}

// generateFor sends frame over flows flows with gen for d.
func generateFor(ctx context.Context, gen Generator, ns string, frame []byte, flows int, d time.Duration) error {
	g, err := startGenerator(ctx, gen, ns, frame, flows)
	if err != nil {
		return err
	}
	select {
	case <-time.After(d):
	case <-g.stopped:
	}
	return errors.Join(ctx.Err(), g.stop())
}

// connsNow reads the connections (as the switch counts them, if it can
// say, else the flows the receiver saw) and the switch's resident memory.
func connsNow(ctx context.Context, cnt *counter, proc SwitchProcess) (conns int, rss uint64, err error) {
	if proc.Connections != nil {
		conns, err = proc.Connections(ctx)
	} else {
		conns, err = cnt.flowsSeen()
	}
	if err != nil {
		return 0, 0, err
	}
	rss, err = residentBytes(proc.PID)
	return conns, rss, err
}

// residentBytes is process pid's resident memory (VmRSS).
func residentBytes(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("the switch's memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %q: %w", pid, sc.Text(), err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS: not a process of its own", pid)
}
