//go:build !linux

package engine

import "net"

// newPeerProbe returns nil: only Linux reports a peer's FIN without a
// read (POLLRDHUP), so elsewhere a disconnected client's statement runs
// to its end, as in go-mysql-server.
func newPeerProbe(net.Conn) func() bool { return nil }
