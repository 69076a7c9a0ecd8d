// Command heldrt measures what a held request/reply round trip costs the
// CPU of both processes over loopback TCP, when the replies of ten
// connections are held and released together or one by one (BENCHMARKS.md,
// session 11's change-stream section: the getMores of ten paced change
// streams). It starts itself as the server process, runs ten client
// connections for a while, and prints the round trips and the CPU time
// per round trip of the client and of the server:
//
//	go run ./test/heldrt -mode aligned -port 35101
//	go run ./test/heldrt -mode staggered -port 35102
//
// Each connection sends a 100-byte request; the server holds it until the
// next multiple of -hold (aligned), or of -hold offset by the connection's
// index times a tenth of -hold (staggered), and answers 4,000 bytes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	mode := flag.String("mode", "aligned", "aligned or staggered")
	port := flag.Int("port", 35101, "the server's loopback port")
	hold := flag.Duration("hold", 9*time.Millisecond, "the replies' period")
	dur := flag.Duration("for", 3*time.Second, "how long the clients run")
	serve := flag.Bool("serve", false, "run as the server (internal)")
	flag.Parse()
	addr := "127.0.0.1:" + strconv.Itoa(*port)
	if *serve {
		server(addr, *mode == "aligned", *hold)
		return
	}
	cmd := exec.Command(os.Args[0], "-serve", "-mode", *mode, "-port", strconv.Itoa(*port), "-hold", hold.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer cmd.Process.Kill()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // "ready"
		panic(err)
	}
	s0, c0 := procCPU(cmd.Process.Pid), selfCPU()
	n := client(addr, *dur)
	s1, c1 := procCPU(cmd.Process.Pid), selfCPU()
	fmt.Printf("%s: %d round trips; CPU per round trip: client %v, server %v\n", *mode, n, (c1-c0)/time.Duration(n), (s1-s0)/time.Duration(n))
}

func server(addr string, aligned bool, period time.Duration) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		off := int64(0)
		if !aligned {
			off = int64(i%10) * int64(period) / 10
		}
		go func() {
			r := bufio.NewReader(c)
			req, reply := make([]byte, 100), make([]byte, 4000)
			for {
				if _, err := io.ReadFull(r, req); err != nil {
					return
				}
				now := time.Now().UnixNano()
				next := (now-off)/int64(period)*int64(period) + int64(period) + off
				time.Sleep(time.Duration(next - now))
				if _, err := c.Write(reply); err != nil {
					return
				}
			}
		}()
	}
}

func client(addr string, dur time.Duration) int64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(dur)
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			panic(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			req, reply := make([]byte, 100), make([]byte, 4000)
			for time.Now().Before(stop) {
				if _, err := c.Write(req); err != nil {
					return
				}
				if _, err := io.ReadFull(c, reply); err != nil {
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return n.Load()
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's CPU time (user and system), from /proc (Linux).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		panic(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
