package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// topOptions are what `xswitch top` watches and how often.
type topOptions struct {
	bridge   string // empty: every bridge
	interval time.Duration
	count    int // refreshes before exiting; 0: until interrupted
}

func (c *cli) topCommand() *cobra.Command {
	opts := topOptions{}
	cmd := &cobra.Command{
		Use:   "top [BRIDGE]",
		Short: "Watch per-port packet, bit, drop and error rates, refreshed every --interval",
		Long: `Watch per-port rates: packets and megabits per second each way, drops and
errors per second, computed from the port counters between two refreshes.
Drops count as in dump-ports: rx drops are frames the kernel could not hand
to the switch, tx drops frames a full transmit ring refused.

On a terminal the table is redrawn in place; otherwise (a pipe, a file) one
block is printed per refresh. With --format json, each refresh is one JSON
object on a line of its own.`,
		Example: `  xswitch top
  xswitch top br0 --interval 5s
  xswitch top br0 --count 10 --format json | jq .ports`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.interval <= 0 {
				return fmt.Errorf("--interval %v: must be positive", opts.interval)
			}
			if opts.count < 0 {
				return fmt.Errorf("--count %d: must not be negative", opts.count)
			}
			if len(args) == 1 {
				opts.bridge = args[0]
			}
			return c.runTop(cmd, opts)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.interval, "interval", time.Second, "time between refreshes")
	f.IntVar(&opts.count, "count", 0, "exit after this many refreshes (default: run until interrupted)")
	return cmd
}

// counterSample is every watched port's counters at one moment.
type counterSample struct {
	at    time.Time
	ports []sampledPort // in the daemon's order
}

type sampledPort struct {
	portKey
	ofport   uint16
	counters portCounters
}

type portKey struct{ bridge, name string }

func (c *cli) sampleCounters(bridge string) (counterSample, error) {
	bridges, err := c.show(bridge)
	if err != nil {
		return counterSample{}, err
	}
	s := counterSample{at: time.Now()}
	for _, b := range bridges {
		for _, p := range b.Ports {
			s.ports = append(s.ports, sampledPort{portKey{b.Name, p.Name}, p.OFPort, countersOf(p)})
		}
	}
	return s, nil
}

func (c *cli) runTop(cmd *cobra.Command, opts topOptions) error {
	w := cmd.OutOrStdout()
	redraw := isTerminal(w) && c.format == formatText
	prev, err := c.sampleCounters(opts.bridge)
	if err != nil {
		return err
	}
	ticker := time.NewTicker(opts.interval)
	defer ticker.Stop()
	for n := 0; opts.count == 0 || n < opts.count; n++ {
		select {
		case <-cmd.Context().Done():
			return nil
		case <-ticker.C:
		}
		cur, err := c.sampleCounters(opts.bridge)
		if err != nil {
			return err
		}
		r := rates(prev, cur)
		prev = cur
		if c.format == formatJSON {
			if err := json.NewEncoder(w).Encode(r); err != nil {
				return err
			}
			continue
		}
		if redraw {
			fmt.Fprint(w, "\x1b[H\x1b[2J") // cursor home, clear screen
		} else if n > 0 {
			fmt.Fprintln(w)
		}
		printRates(w, r)
	}
	return nil
}

// isTerminal reports whether w is a terminal, which can be redrawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// topJSON is one refresh of top; with --format json, each is a line.
type topJSON struct {
	Time        time.Time      `json:"time"`
	IntervalSec float64        `json:"interval"` // the time the rates were measured over
	Ports       []portRateJSON `json:"ports"`
}

type portRateJSON struct {
	Bridge       string  `json:"bridge"`
	Name         string  `json:"name"`
	OFPort       uint16  `json:"ofport"`
	RxPackets    float64 `json:"rx_packets_per_sec"`
	RxBits       float64 `json:"rx_bits_per_sec"`
	TxPackets    float64 `json:"tx_packets_per_sec"`
	TxBits       float64 `json:"tx_bits_per_sec"`
	RxDropped    float64 `json:"rx_dropped_per_sec"`
	TxDropped    float64 `json:"tx_dropped_per_sec"`
	ErrorsPerSec float64 `json:"errors_per_sec"` // rx and tx errors
}

// rates are the per-second rates between two samples, for the ports in
// both: a port added since has no baseline yet and shows up next time.
func rates(prev, cur counterSample) topJSON {
	elapsed := cur.at.Sub(prev.at).Seconds()
	out := topJSON{Time: cur.at, IntervalSec: elapsed, Ports: []portRateJSON{}}
	if elapsed <= 0 {
		return out
	}
	baseline := make(map[portKey]portCounters, len(prev.ports))
	for _, p := range prev.ports {
		baseline[p.portKey] = p.counters
	}
	for _, p := range cur.ports {
		before, ok := baseline[p.portKey]
		if !ok {
			continue
		}
		now := p.counters
		perSec := func(now, before uint64) float64 { return float64(counterDelta(now, before)) / elapsed }
		out.Ports = append(out.Ports, portRateJSON{
			Bridge: p.bridge, Name: p.name, OFPort: p.ofport,
			RxPackets:    perSec(now.RxPackets, before.RxPackets),
			RxBits:       8 * perSec(now.RxBytes, before.RxBytes),
			TxPackets:    perSec(now.TxPackets, before.TxPackets),
			TxBits:       8 * perSec(now.TxBytes, before.TxBytes),
			RxDropped:    perSec(now.RxDropped, before.RxDropped),
			TxDropped:    perSec(now.TxDropped, before.TxDropped),
			ErrorsPerSec: perSec(now.RxErrors+now.TxErrors, before.RxErrors+before.TxErrors),
		})
	}
	return out
}

// counterDelta is how much a counter grew. A counter that went down was
// reset (the port was re-added, or the daemon restarted) and has counted
// now since.
func counterDelta(now, before uint64) uint64 {
	if now < before {
		return now
	}
	return now - before
}

var topHeader = []string{"BRIDGE", "PORT", "OFPORT", "RX PPS", "RX MBIT/S", "TX PPS", "TX MBIT/S", "RX DROP/S", "TX DROP/S", "ERR/S"}

// printRates prints one refresh as a table, after the time and interval
// it covers.
func printRates(w io.Writer, r topJSON) {
	fmt.Fprintf(w, "%s  rates over %.2fs\n", r.Time.Format(time.TimeOnly), r.IntervalSec)
	rows := [][]string{topHeader}
	for _, p := range r.Ports {
		rows = append(rows, []string{
			p.Bridge, p.Name, fmt.Sprint(p.OFPort),
			fmt.Sprintf("%.0f", p.RxPackets), fmt.Sprintf("%.2f", p.RxBits/1e6),
			fmt.Sprintf("%.0f", p.TxPackets), fmt.Sprintf("%.2f", p.TxBits/1e6),
			fmt.Sprintf("%.0f", p.RxDropped), fmt.Sprintf("%.0f", p.TxDropped),
			fmt.Sprintf("%.0f", p.ErrorsPerSec),
		})
	}
	widths := make([]int, len(topHeader))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len(cell))
			if i < 2 { // names read left-aligned, numbers right-aligned
				cells[i] = cell + pad
			} else {
				cells[i] = pad + cell
			}
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(cells, "  "), " "))
	}
	if len(r.Ports) == 0 {
		fmt.Fprintln(w, "(no ports)")
	}
}
