package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/wire"
)

// The proxy floor is the least any router process can do: it accepts
// client connections, opens one connection to the server behind it (a
// shard) for each, and forwards every message from the client to the
// server and every reply back, reading only the 16-byte message header —
// the length, to frame the message, and the flags of an OP_MSG, to know
// whether a reply follows (moreToCome). It rewrites requestID and
// responseTo as a router must (its requests to the server are its own; the
// client's reply answers the client's request), and nothing else: no BSON
// is parsed, nothing is validated, copied or re-encoded. A router that
// routes by the command's contents can only cost more.
//
// Measured with the server behind it, its CPU is what a separate process
// adds to a targeted operation on this machine: two more sockets' reads
// and writes and a goroutine woken on each (target floor-proxy: the
// proxy's and the server's CPU together, against the server's alone,
// target cairn).
//
// It forwards exhaust replies (a reply with moreToCome is followed by
// more replies without a request, each answering the one before): a
// driver's streaming hello works through it. A message with any other
// opcode (OP_QUERY's handshake, OP_REPLY, OP_COMPRESSED) is forwarded the
// same way, one reply per request. TLS is not forwarded: the proxy reads
// headers, so both of its sides are plain TCP.
//
// Invariant "The proxy changes only ids" (TestProxyFloorForwards): every
// message arrives at the other side byte for byte but bytes 4–11 (the
// requestID and responseTo), each reply answers the request the client
// sent, and exhaust replies chain.

// ProxyFloorServerArg, as the first argument of `cairn bench`, runs the
// proxy floor in that process: --port, --bind_ip, and --to, the server
// to forward to.
const ProxyFloorServerArg = "--proxy-floor-server"

// RunProxyFloorServer runs the proxy floor until SIGINT or SIGTERM. It
// prints the listening address on stdout.
func RunProxyFloorServer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("proxy-floor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "TCP port (0: any free port)")
	bind := fs.String("bind_ip", "127.0.0.1", "address to listen on")
	to := fs.String("to", "", "host:port of the server every connection is forwarded to")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *to == "" {
		fmt.Fprintln(stderr, "proxy floor: --to host:port is required")
		return 2
	}
	p, err := startProxyFloor(net.JoinHostPort(*bind, strconv.Itoa(*port)), *to)
	if err != nil {
		fmt.Fprintln(stderr, "proxy floor:", err)
		return 1
	}
	fmt.Fprintln(stdout, "proxy floor listening on", p.addr(), "forwarding to", *to)
	untilSignal()
	p.close()
	return 0
}

type proxyFloor struct {
	floorListener // its connections: both sides of every forwarded one
	to            string
}

func startProxyFloor(addr, to string) (*proxyFloor, error) {
	p := &proxyFloor{to: to}
	if err := p.listen(addr); err != nil {
		return nil, err
	}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *proxyFloor) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(client, true)
		p.wg.Go(func() {
			defer func() {
				p.track(client, false)
				_ = client.Close()
			}()
			server, err := net.Dial("tcp", p.to)
			if err != nil {
				return // the client sees its connection close
			}
			p.track(server, true)
			defer func() {
				p.track(server, false)
				_ = server.Close()
			}()
			for _, c := range []net.Conn{client, server} {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetNoDelay(true) // as Cairn's server and router do
				}
			}
			_ = forward(client, server)
		})
	}
}

// Bytes of a message header: length, requestID, responseTo, opCode; an
// OP_MSG's flags follow it.
const (
	hdrLen        = 16
	offRequestID  = 4
	offResponseTo = 8
	offOpCode     = 12
)

// forward runs one client connection through server until either side
// closes or sends what is not a message: each request goes to the server
// under the proxy's own requestID, and the server's replies go back
// answering the client's request (an exhaust reply's successors answering
// the reply before them, as the client numbered it).
func forward(client, server net.Conn) error {
	cr := bufio.NewReaderSize(client, 16<<10)
	sr := bufio.NewReaderSize(server, 16<<10)
	var buf []byte
	var toServer, toClient int32 // the proxy's own request ids on each side
	for {
		var err error
		if buf, err = readFrame(cr, buf[:0]); err != nil {
			return err
		}
		answer := int32(binary.LittleEndian.Uint32(buf[offRequestID:]))
		toServer++
		binary.LittleEndian.PutUint32(buf[offRequestID:], uint32(toServer))
		binary.LittleEndian.PutUint32(buf[offResponseTo:], 0)
		if _, err := server.Write(buf); err != nil {
			return err
		}
		if moreToCome(buf) {
			continue // the client expects no reply
		}
		for {
			if buf, err = readFrame(sr, buf[:0]); err != nil {
				return err
			}
			toClient++
			binary.LittleEndian.PutUint32(buf[offRequestID:], uint32(toClient))
			binary.LittleEndian.PutUint32(buf[offResponseTo:], uint32(answer))
			if _, err := client.Write(buf); err != nil {
				return err
			}
			if !moreToCome(buf) {
				break
			}
			answer = toClient // the next exhaust reply answers this one
		}
	}
}

// moreToCome reports whether msg is an OP_MSG with the moreToCome flag.
func moreToCome(msg []byte) bool {
	return len(msg) >= hdrLen+4 &&
		wire.OpCode(binary.LittleEndian.Uint32(msg[offOpCode:])) == wire.OpMsg &&
		binary.LittleEndian.Uint32(msg[hdrLen:])&uint32(wire.FlagMoreToCome) != 0
}

var errBadFrame = errors.New("proxy floor: a message length out of range")

// readFrame appends the next whole message from r to dst.
func readFrame(r *bufio.Reader, dst []byte) ([]byte, error) {
	dst = append(dst, make([]byte, hdrLen)...)
	if _, err := io.ReadFull(r, dst[len(dst)-hdrLen:]); err != nil {
		return dst, err
	}
	n := int(int32(binary.LittleEndian.Uint32(dst[len(dst)-hdrLen:])))
	if n < hdrLen || n > commands.MaxMessageSize {
		return dst, errBadFrame
	}
	start := len(dst) - hdrLen
	dst = append(dst, make([]byte, n-hdrLen)...)
	_, err := io.ReadFull(r, dst[start+hdrLen:])
	return dst, err
}
