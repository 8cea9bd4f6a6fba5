package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes are one CPU's ticks from /proc/stat: all of them but those
// counted twice (guest time is user time too), those busy (user, nice,
// system, irq, softirq) and those in softirq. Idle, iowait and steal (time
// the hypervisor gave another guest) are not busy.
type cpuTimes struct {
	total, busy, softirq uint64
}

// readCPUTimes reads the generator's CPU and the switch's from /proc/stat.
func readCPUTimes() (gen, sw cpuTimes, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return gen, sw, err
	}
	defer f.Close()
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var into *cpuTimes
		switch fields[0] {
		case "cpu" + strconv.Itoa(generatorCPU):
			into = &gen
		case "cpu" + strconv.Itoa(SwitchCPU):
			into = &sw
		default:
			continue
		}
		// user nice system idle iowait irq softirq steal guest guest_nice
		for i, s := range fields[1:min(len(fields), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return gen, sw, fmt.Errorf("/proc/stat: %q: %w", sc.Text(), err)
			}
			into.total += v
			switch i {
			case 0, 1, 2, 5:
				into.busy += v
			case 6:
				into.busy += v
				into.softirq += v
			}
		}
		found++
	}
	if found != 2 {
		return gen, sw, fmt.Errorf("/proc/stat lacks cpu%d or cpu%d", generatorCPU, SwitchCPU)
	}
	return gen, sw, sc.Err()
}

// softirqShare is the share of the time from a to b that the CPU spent in
// softirq; busyShare the share it was busy.
func softirqShare(a, b cpuTimes) float64 { return share(b.softirq-a.softirq, b.total-a.total) }
func busyShare(a, b cpuTimes) float64    { return share(b.busy-a.busy, b.total-a.total) }

func share(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}
