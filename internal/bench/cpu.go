package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU accounting. On a 2-core machine the client and the server share the
// CPU, so throughput alone cannot say which side is slow; CPU time per
// operation can. Three sources:
//
//   - A server in another process on this machine (the embedded `cairn
//     serve`, the protocol floor, a --uri or --compare server listening on
//     loopback): user+system time from /proc/<pid>/stat, which counts every
//     thread of the process, live or exited. Resolution: one clock tick
//     (10 ms); a run is thousands of ticks.
//   - This process (the client: driver, workers, histograms): getrusage,
//     microsecond resolution.
//   - An in-process target (the Pebble floor) has no process of its own:
//     its CPU is this process's CPU minus what the harness alone costs per
//     operation, measured by running the same workload against a target
//     that does nothing (nullDB).

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// processCPU returns the user+system CPU time process pid has used.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is parenthesised and may hold spaces;
	// fields are counted after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	const utime, stime = 11, 12 // fields 14 and 15, counted from field 3
	if len(f) <= stime {
		return 0, fmt.Errorf("bench: short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[utime], 10, 64)
	s, err2 := strconv.ParseInt(f[stime], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: unreadable CPU times in /proc/%d/stat", pid)
	}
	return time.Duration(u+s) * clockTick, nil
}

// selfCPU returns the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// listeningPID finds the process listening on TCP port on this machine,
// through /proc/net/tcp{,6} (the socket's inode) and /proc/*/fd (who holds
// it). It works for processes of the same user; 0 when not found.
func listeningPID(port int) int {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			// sl local_address rem_address st ... inode (field 9)
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
		_ = f.Close()
	}
	if len(inodes) == 0 {
		return 0
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && inodes[link] {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			return pid
		}
	}
	return 0
}

// Machine describes where the figures were measured.
type Machine struct {
	Cores      int     `json:"cores"`
	MemoryGiB  float64 `json:"memoryGiB"`
	LoadBefore string  `json:"loadAverageBefore"`
	LoadAfter  string  `json:"loadAverageAfter"`
	GoVersion  string  `json:"goVersion"`
	Date       string  `json:"date"`
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// memoryGiB is MemTotal from /proc/meminfo.
func memoryGiB() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				return float64(int(kb/(1<<20)*10+0.5)) / 10
			}
		}
	}
	return 0
}
