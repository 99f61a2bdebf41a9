package engine

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerProbe checks, without reading, whether the peer of a socket has
// closed or reset it.
type peerProbe struct {
	rc   syscall.RawConn
	fds  [1]unix.PollFd
	gone bool
	poll func(fd uintptr) // p.pollFD, bound once so probing does not allocate
}

// newPeerProbe returns a probe of c's socket as a func reporting whether
// the peer is gone, or nil when c has no socket.
func newPeerProbe(c net.Conn) func() bool {
	rc, ok := rawConn(c)
	if !ok {
		return nil
	}
	p := &peerProbe{rc: rc}
	p.poll = p.pollFD
	return p.peerGone
}

// peerGone polls the socket once without waiting. POLLRDHUP reports the
// peer's FIN even when data it sent before is still unread (a pipelined
// command), POLLHUP and POLLERR a reset or a socket error. A connection
// already closed on this side counts as gone too.
func (p *peerProbe) peerGone() bool {
	p.gone = false
	if err := p.rc.Control(p.poll); err != nil {
		return true
	}
	return p.gone
}

func (p *peerProbe) pollFD(fd uintptr) {
	p.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLRDHUP}
	for {
		n, err := unix.Poll(p.fds[:], 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		p.gone = err == nil && n > 0 && p.fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		return
	}
}
