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

// userHZ is the unit of the CPU times /proc gives (USER_HZ).
const userHZ = 100

// otherLoad follows the CPU time that other users of a shared machine take
// on the generator's and the switch's CPUs: every process that is neither
// the bench nor one it started (a switch daemon, iperf3) nor a kernel
// thread (which may be doing the measurement's work), and that last ran
// on one of the two CPUs. A process's time counts where it last ran, so
// that on a machine of more CPUs the count is near, on one of two exact.
type otherLoad struct {
	ours  map[int]bool
	last  map[int]uint64 // each other process's ticks at the last scan
	total uint64         // ticks since the first scan
}

// newOtherLoad takes the bench and the processes it has started as they
// are now, and other processes' times to count from.
func newOtherLoad() (*otherLoad, error) {
	procs, err := readProcesses()
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	o := &otherLoad{ours: map[int]bool{}, last: map[int]uint64{}}
	for next := []int{os.Getpid()}; len(next) > 0; {
		pid := next[len(next)-1]
		next = append(next[:len(next)-1], children[pid]...)
		o.ours[pid] = true
	}
	o.count(procs)
	o.total = 0
	return o, nil
}

// ticks is the other processes' time on the two CPUs since newOtherLoad,
// in ticks of 1/userHZ s.
func (o *otherLoad) ticks() (uint64, error) {
	procs, err := readProcesses()
	if err != nil {
		return 0, err
	}
	o.count(procs)
	return o.total, nil
}

// count adds what other processes took since the last scan; one seen for
// the first time counts from now.
func (o *otherLoad) count(procs map[int]procStat) {
	for pid, p := range procs {
		if o.ours[pid] || p.kernelThread {
			continue
		}
		if last, ok := o.last[pid]; ok && p.ticks >= last && (p.cpu == generatorCPU || p.cpu == SwitchCPU) {
			o.total += p.ticks - last
		}
		o.last[pid] = p.ticks
	}
}

// procStat is what the bench reads of a process's /proc/PID/stat.
type procStat struct {
	ppid         int
	kernelThread bool
	ticks        uint64 // user and system time
	cpu          int    // where it last ran
}

// pfKthread is the kernel's PF_KTHREAD task flag.
const pfKthread = 0x00200000

// readProcesses reads every process's stat; one that vanishes meanwhile
// is left out.
func readProcesses() (map[int]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make(map[int]procStat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		p, err := parseProcStat(string(b))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		procs[pid] = p
	}
	return procs, nil
}

// parseProcStat reads the fields of a /proc/PID/stat line the bench uses.
// The command, in parentheses, may hold spaces and parentheses itself.
func parseProcStat(line string) (procStat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("no command in %q", line)
	}
	// From the state, field 3 of proc(5).
	f := strings.Fields(line[i+1:])
	field := func(n int) (uint64, error) {
		if n-3 >= len(f) {
			return 0, fmt.Errorf("%q has no field %d", line, n)
		}
		return strconv.ParseUint(f[n-3], 10, 64)
	}
	var p procStat
	var v [5]uint64
	for i, n := range []int{4, 9, 14, 15, 39} { // ppid flags utime stime processor
		var err error
		if v[i], err = field(n); err != nil {
			return procStat{}, err
		}
	}
	p.ppid, p.kernelThread, p.ticks, p.cpu = int(v[0]), v[1]&pfKthread != 0, v[2]+v[3], int(v[4])
	return p, nil
}
