package engine

import "github.com/dolthub/vitess/go/mysql"

// passOn is embedded by dpsql's wrappers of go-mysql-server's connection
// handler (disconnectHandler, prepareHandler, errorRecorder): it passes on
// every call the wrapper does not override, including the binlog
// replication calls that mysql.Handler does not declare.
type passOn struct{ mysql.Handler }

// ComRegisterReplica implements mysql.BinlogReplicaHandler by passing the
// call on.
func (h passOn) ComRegisterReplica(c *mysql.Conn, replicaHost string, replicaPort uint16, replicaUser string, replicaPassword string) error {
	r, ok := h.Handler.(mysql.BinlogReplicaHandler)
	if !ok {
		return SQLError(ErrUnsupported.New("binlog replication is not supported"))
	}
	return r.ComRegisterReplica(c, replicaHost, replicaPort, replicaUser, replicaPassword)
}

// ComBinlogDumpGTID implements mysql.BinlogReplicaHandler by passing the
// call on.
func (h passOn) ComBinlogDumpGTID(c *mysql.Conn, logFile string, logPos uint64, gtidSet mysql.GTIDSet) error {
	r, ok := h.Handler.(mysql.BinlogReplicaHandler)
	if !ok {
		return SQLError(ErrUnsupported.New("binlog replication is not supported"))
	}
	return r.ComBinlogDumpGTID(c, logFile, logPos, gtidSet)
}
