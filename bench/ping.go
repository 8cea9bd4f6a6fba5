package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// pingInterval is how often the ping workload sends an echo request: often
// enough for a few hundred samples in a few seconds, rarely enough that the
// path is idle between them.
const pingInterval = 10 * time.Millisecond

// measurePing pings the receiver from the generator's namespace every
// pingInterval for duration and returns the round-trip times of the
// requests sent after the first second, which also resolves addresses.
func measurePing(ctx context.Context, hosts Hosts, duration time.Duration) (samples, error) {
	count := int(duration / pingInterval)
	warmup := int(time.Second / pingInterval)
	// The replies of the last requests may take a while; ping waits up to
	// a second for them.
	ctx, cancel := context.WithTimeout(ctx, duration+5*time.Second)
	defer cancel()
	cmd := pinnedCommand(ctx, hosts.GenNetns, "ping", "-n", "-c", strconv.Itoa(count),
		"-i", strconv.FormatFloat(pingInterval.Seconds(), 'f', -1, 64), "-W", "1", rcvIP.String())
	out, err := cmd.Output()
	// Exit status 1 means some replies are missing, which parsePing counts.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		if exit != nil {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		return samples{}, fmt.Errorf("ping %s from namespace %q: %w", rcvIP, hosts.GenNetns, err)
	}
	s, err := parsePing(out, count, warmup)
	if err != nil {
		return samples{}, fmt.Errorf("ping %s from namespace %q: %w", rcvIP, hosts.GenNetns, err)
	}
	return s, nil
}

// pingReply matches a reply line of iputils ping -n, such as
// "64 bytes from 10.253.0.2: icmp_seq=7 ttl=64 time=0.045 ms"; duplicates
// end in "(DUP!)" and do not match.
var pingReply = regexp.MustCompile(`(?m)icmp_seq=(\d+) .*time=([0-9.]+) ms$`)

// parsePing returns the round-trip times of the replies to requests after
// the first warmup of sent, and counts the requests among those that got
// none.
func parsePing(out []byte, sent, warmup int) (samples, error) {
	var s samples
	for _, m := range pingReply.FindAllSubmatch(out, -1) {
		seq, err := strconv.Atoi(string(m[1]))
		if err != nil {
			return samples{}, fmt.Errorf("ping reply %q: %w", m[0], err)
		}
		if seq <= warmup {
			continue
		}
		ms, err := strconv.ParseFloat(string(m[2]), 64)
		if err != nil {
			return samples{}, fmt.Errorf("ping reply %q: %w", m[0], err)
		}
		s.rtts = append(s.rtts, time.Duration(ms*float64(time.Millisecond)))
	}
	if len(s.rtts) == 0 {
		return samples{}, fmt.Errorf("no reply to any of the %d requests after the first %d", sent-warmup, warmup)
	}
	s.lost = max(sent-warmup-len(s.rtts), 0)
	return s, nil
}
