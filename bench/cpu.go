package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes are one CPU's jiffies from /proc/stat: all of them, those in
// softirq, and those idle (idle and iowait).
type cpuTimes struct {
	total, softirq, idle uint64
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
		// user nice system idle iowait irq softirq steal ...
		for i, s := range fields[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return gen, sw, fmt.Errorf("/proc/stat: %q: %w", sc.Text(), err)
			}
			into.total += v
			switch i {
			case 3, 4:
				into.idle += v
			case 6:
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
// softirq; busyShare the share it was not idle.
func softirqShare(a, b cpuTimes) float64 { return share(b.softirq-a.softirq, b.total-a.total) }
func busyShare(a, b cpuTimes) float64 {
	return share((b.total-a.total)-(b.idle-a.idle), b.total-a.total)
}

func share(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}
