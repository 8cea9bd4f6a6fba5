package bench

import (
	"context"
	"errors"
	"sync"
	"time"
)

// udpFrameOf is the frame of w's UDP traffic from hosts' generator to
// their receiver, whose address it announces: a learning switch then
// knows where the receiver is and forwards rather than floods.
func udpFrameOf(hosts Hosts, w Workload) ([]byte, error) {
	genMAC, err := peerMAC(hosts.GenNetns)
	if err != nil {
		return nil, err
	}
	rcvMAC, err := peerMAC(hosts.RcvNetns)
	if err != nil {
		return nil, err
	}
	frame, err := BuildFrame(FrameConfig{SrcMAC: genMAC, DstMAC: rcvMAC, SrcIP: genIP, DstIP: rcvIP, Size: w.Size})
	if err != nil {
		return nil, err
	}
	return frame, announce(hosts.RcvNetns, rcvMAC, genMAC)
}

// measureUDP sends w's frames from hosts' generator with gen for duration
// and returns, for each second after the first, what the receiver
// counted, what the generator sent and how busy the CPUs were.
func measureUDP(ctx context.Context, hosts Hosts, w Workload, gen Generator, duration time.Duration) (s samples, err error) {
	frame, err := udpFrameOf(hosts, w)
	if err != nil {
		return samples{}, err
	}
	cnt, err := attachCounter(hosts.RcvNetns, PeerName, 0)
	if err != nil {
		return samples{}, err
	}
	defer func() { err = errors.Join(err, cnt.close()) }()
	g, err := startGenerator(ctx, gen, hosts.GenNetns, frame, w.Flows)
	if err != nil {
		return samples{}, err
	}
	defer func() { err = errors.Join(err, g.stop()) }()

	others, err := newOtherLoad()
	if err != nil {
		return samples{}, err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, err := readUDPCounts(cnt, g, others)
	if err != nil {
		return samples{}, err
	}
	for second := 0; second < int(duration/time.Second); second++ {
		select {
		case <-ctx.Done():
			return samples{}, ctx.Err()
		case <-g.stopped:
			return samples{}, errors.New("the generator stopped early")
		case <-tick.C:
			now, err := readUDPCounts(cnt, g, others)
			if err != nil {
				return samples{}, err
			}
			if second > 0 { // the first second includes the ramp-up
				s.rates = append(s.rates, now.since(last))
			}
			last = now
		}
	}
	if last.sent == 0 {
		return samples{}, errors.New("the generator sent nothing")
	}
	return s, nil
}

// generating is a generator sending in a goroutine of its own.
type generating struct {
	sender
	stopped <-chan struct{} // closed once it stops, by itself or by stop
	stop    func() error    // ends it, and returns why it failed if it did
}

// startGenerator starts gen sending frame, spread over flows flows, out of
// the PeerName end in namespace ns, and returns once it sends. The
// sender's counts may be read until stop.
func startGenerator(ctx context.Context, gen Generator, ns string, frame []byte, flows int) (*generating, error) {
	genCtx, cancel := context.WithCancel(ctx)
	started := make(chan sender, 1)
	var wg sync.WaitGroup
	var genErr error
	wg.Go(func() {
		defer cancel()
		genErr = generate(genCtx, gen, ns, PeerName, frame, flows, started)
	})
	stop := func() error {
		cancel()
		wg.Wait()
		return genErr
	}
	select {
	case s := <-started:
		return &generating{sender: s, stopped: genCtx.Done(), stop: stop}, nil
	case <-genCtx.Done():
		return nil, errors.Join(errors.New("the generator stopped before it sent anything"), stop())
	}
}

// udpCounts are the running counts a UDP measurement samples.
type udpCounts struct {
	at             time.Time
	packets, bytes uint64 // into the receiver
	sent           uint64 // by the generator
	genCPU, swCPU  cpuTimes
	others         uint64 // ticks of other users' processes on the two CPUs
}

func readUDPCounts(cnt *counter, snd sender, others *otherLoad) (c udpCounts, err error) {
	c.at = time.Now()
	if c.packets, c.bytes, err = cnt.read(); err != nil {
		return c, err
	}
	if c.sent, err = snd.sent(); err != nil {
		return c, err
	}
	if c.genCPU, c.swCPU, err = readCPUTimes(); err != nil {
		return c, err
	}
	c.others, err = others.ticks()
	return c, err
}

// since is the rate from last to c. The busy time of both CPUs leaves out
// what other users' processes took of it.
func (c udpCounts) since(last udpCounts) rate {
	elapsed := c.at.Sub(last.at).Seconds()
	busy := 1e9 * (busyShare(last.genCPU, c.genCPU) + busyShare(last.swCPU, c.swCPU))
	others := float64(c.others-last.others) * 1e9 / userHZ / elapsed
	return rate{
		pps:         float64(c.packets-last.packets) / elapsed,
		bytesPerSec: float64(c.bytes-last.bytes) / elapsed,
		sentPPS:     float64(c.sent-last.sent) / elapsed,
		genSoftirq:  softirqShare(last.genCPU, c.genCPU),
		switchBusy:  busyShare(last.swCPU, c.swCPU),
		busyNs:      max(busy-others, 0),
	}
}
