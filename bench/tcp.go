package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// serverStartTimeout bounds how long the iperf3 client retries while the
// server is not listening yet.
const serverStartTimeout = 3 * time.Second

// pinnedCommand runs args in namespace ns on the generator's CPU, so that
// the path under test has the other CPU to itself as it does under UDP.
func pinnedCommand(ctx context.Context, ns string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, "taskset", "-c", strconv.Itoa(generatorCPU)}, args...)...)
}

// measureTCP runs one iperf3 stream from the generator's namespace to the
// receiver's for duration, the first second omitted, and returns the
// server's per-second receive rates.
func measureTCP(ctx context.Context, hosts Hosts, duration time.Duration) (s samples, err error) {
	server := pinnedCommand(ctx, hosts.RcvNetns, "iperf3", "--server", "--one-off", "--json")
	var serverOut strings.Builder
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		return samples{}, fmt.Errorf("start the iperf3 server in namespace %q: %w", hosts.RcvNetns, err)
	}
	defer func() {
		// A one-off server has exited once the client has its report;
		// after a failure it may still wait for one.
		server.Process.Kill()
		server.Wait()
	}()

	args := []string{"iperf3", "--client", rcvIP.String(),
		"--time", strconv.Itoa(int(duration/time.Second) - 1), "--omit", "1",
		"--json", "--get-server-output"}
	giveUp := time.Now().Add(serverStartTimeout)
	for {
		out, runErr := pinnedCommand(ctx, hosts.GenNetns, args...).Output()
		s, err := parseIperf(out)
		if err == nil && runErr != nil {
			err = runErr
		}
		if err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "Connection refused") || time.Now().After(giveUp) {
			var exit *exec.ExitError
			if errors.As(runErr, &exit) && len(exit.Stderr) > 0 {
				err = fmt.Errorf("%w: %s", err, exit.Stderr)
			}
			return samples{}, fmt.Errorf("iperf3 from namespace %q to %s in %q: %w (server said: %s)",
				hosts.GenNetns, rcvIP, hosts.RcvNetns, err, strings.TrimSpace(serverOut.String()))
		}
		select {
		case <-ctx.Done():
			return samples{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// iperfReport is the part of iperf3's JSON report (client side, with
// --get-server-output) that measureTCP reads.
type iperfReport struct {
	Error  string `json:"error"`
	Server *struct {
		Error     string `json:"error"`
		Intervals []struct {
			Sum struct {
				Seconds       float64 `json:"seconds"`
				BitsPerSecond float64 `json:"bits_per_second"`
				Omitted       bool    `json:"omitted"`
			} `json:"sum"`
		} `json:"intervals"`
	} `json:"server_output_json"`
}

// minIntervalSeconds drops the server's last interval, the few
// milliseconds between the client's last second and the connection's end.
const minIntervalSeconds = 0.5

// parseIperf returns the receive rate of each second of an iperf3 client
// report that was not omitted.
func parseIperf(report []byte) (samples, error) {
	var r iperfReport
	if err := json.Unmarshal(report, &r); err != nil {
		return samples{}, fmt.Errorf("read iperf3's JSON report: %w", err)
	}
	if r.Error != "" {
		return samples{}, fmt.Errorf("iperf3: %s", r.Error)
	}
	if r.Server == nil {
		return samples{}, errors.New("iperf3's report has no server output")
	}
	if r.Server.Error != "" {
		return samples{}, fmt.Errorf("iperf3 server: %s", r.Server.Error)
	}
	var s samples
	for _, in := range r.Server.Intervals {
		if in.Sum.Omitted || in.Sum.Seconds < minIntervalSeconds {
			continue
		}
		s.rates = append(s.rates, rate{bytesPerSec: in.Sum.BitsPerSecond / 8})
	}
	if len(s.rates) == 0 {
		return samples{}, errors.New("iperf3's report has no whole second that was not omitted")
	}
	return s, nil
}
