//go:build linux

package commands

import (
	"bytes"
	"os"
	"strconv"
)

// cpuTimes returns the time all cores spent busy and in all, in clock
// ticks since boot: the first line of /proc/stat, "cpu  user nice system
// idle iowait irq softirq steal ..." (guest time is counted in user
// already); idle and iowait are the time not busy.
func cpuTimes() (busy, total uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	var buf [512]byte
	n, _ := f.Read(buf[:])
	_ = f.Close()
	line, _, _ := bytes.Cut(buf[:n], []byte{'\n'})
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0, 0, false
	}
	var idle uint64
	for i := 1; i <= 8; i++ {
		v, err := strconv.ParseUint(string(fields[i]), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 4 || i == 5 {
			idle += v
		}
	}
	return total - idle, total, true
}
