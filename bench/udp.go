package bench

import (
	"context"
	"errors"
	"sync"
	"time"
)

// measureUDP sends w's frames from hosts' generator for duration and
// returns the receiver's per-second rates after the first.
func measureUDP(ctx context.Context, hosts Hosts, w Workload, duration time.Duration) (s samples, err error) {
	genMAC, err := peerMAC(hosts.GenNetns)
	if err != nil {
		return samples{}, err
	}
	rcvMAC, err := peerMAC(hosts.RcvNetns)
	if err != nil {
		return samples{}, err
	}
	frame, err := BuildFrame(FrameConfig{SrcMAC: genMAC, DstMAC: rcvMAC, SrcIP: genIP, DstIP: rcvIP, Size: w.Size})
	if err != nil {
		return samples{}, err
	}
	// A learning switch then knows where the receiver is and forwards
	// rather than floods.
	if err := announce(hosts.RcvNetns, rcvMAC, genMAC); err != nil {
		return samples{}, err
	}
	cnt, err := attachCounter(hosts.RcvNetns, PeerName)
	if err != nil {
		return samples{}, err
	}
	defer func() { err = errors.Join(err, cnt.close()) }()

	genCtx, stopGen := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var genErr error
	wg.Go(func() {
		defer stopGen()
		genErr = generate(genCtx, hosts.GenNetns, PeerName, frame, w.Flows)
	})
	defer func() {
		stopGen()
		wg.Wait()
		err = errors.Join(err, genErr)
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPackets, lastBytes, err := cnt.read()
	if err != nil {
		return samples{}, err
	}
	lastGen, lastSwitch, err := readCPUTimes()
	if err != nil {
		return samples{}, err
	}
	last := time.Now()
	for second := 0; second < int(duration/time.Second); second++ {
		select {
		case <-ctx.Done():
			return samples{}, ctx.Err()
		case <-genCtx.Done():
			return samples{}, errors.New("the generator stopped early")
		case now := <-tick.C:
			packets, bytes, err := cnt.read()
			if err != nil {
				return samples{}, err
			}
			gen, sw, err := readCPUTimes()
			if err != nil {
				return samples{}, err
			}
			elapsed := now.Sub(last).Seconds()
			if second > 0 { // the first second includes the ramp-up
				s.rates = append(s.rates, rate{
					pps:         float64(packets-lastPackets) / elapsed,
					bytesPerSec: float64(bytes-lastBytes) / elapsed,
					genSoftirq:  softirqShare(lastGen, gen),
					switchBusy:  busyShare(lastSwitch, sw),
				})
			}
			lastPackets, lastBytes, last = packets, bytes, now
			lastGen, lastSwitch = gen, sw
		}
	}
	return s, nil
}
