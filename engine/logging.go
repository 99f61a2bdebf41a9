package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

// go-mysql-server and vitess log through logrus's standard logger, in a
// format of their own. dpsql has one log, the Config's slog.Logger, so
// their entries are forwarded there (logrusBridge) with levels that fit a
// server operator: a client's own SQL mistake, already returned to the
// client as an error, is not a server warning but a debug line, and a
// write to a connection that shutdown or the client closed is expected.

// bridge is the process-wide hook; logrus is global, so the engine opened
// last receives the entries.
var (
	bridge     = &logrusBridge{}
	bridgeOnce sync.Once
)

// installLogBridge sends logrus's entries to log from now on.
func installLogBridge(log *slog.Logger) {
	bridgeOnce.Do(func() {
		logrus.SetOutput(io.Discard)
		logrus.SetLevel(logrus.WarnLevel)
		logrus.AddHook(bridge)
	})
	bridge.log.Store(log)
}

// logrusBridge is a logrus hook that re-logs entries with slog.
type logrusBridge struct {
	log atomic.Pointer[slog.Logger]
}

// Levels implements logrus.Hook.
func (*logrusBridge) Levels() []logrus.Level { return logrus.AllLevels }

// Fire implements logrus.Hook.
func (b *logrusBridge) Fire(e *logrus.Entry) error {
	log := b.log.Load()
	if log == nil {
		return nil
	}
	level := bridgeLevel(e)
	ctx := context.Background()
	if !log.Enabled(ctx, level) {
		return nil
	}
	args := make([]any, 0, 2*len(e.Data))
	for k, v := range e.Data {
		switch k {
		case "connectTime": // noise: the connection's start, with a monotonic clock reading
			continue
		case "connectionID":
			k = "conn"
		}
		if err, ok := v.(error); ok {
			v = err.Error()
		}
		// A statement's text may hold a FEDERATED table's connection.
		args = append(args, k, maskStatement(fmt.Sprint(v)))
	}
	msg, extra := bridgeMessage(e)
	msg = maskStatement(msg)
	log.Log(ctx, level, msg, append(extra, args...)...)
	return nil
}

// bridgeLevel maps an entry to the level an operator should see it at.
func bridgeLevel(e *logrus.Entry) slog.Level {
	msg := e.Message
	if err, ok := e.Data[logrus.ErrorKey].(error); ok {
		msg += " " + err.Error()
	} else if s, ok := e.Data[logrus.ErrorKey].(string); ok {
		msg += " " + s
	}
	switch {
	case e.Message == "error running query":
		// The client got the error; it is the client's to act on.
		return slog.LevelDebug
	case strings.Contains(msg, "use of closed network connection"),
		strings.Contains(msg, "broken pipe"),
		strings.Contains(msg, "connection reset by peer"):
		// A connection closed by its client or by shutdown.
		return slog.LevelDebug
	}
	switch e.Level {
	case logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel:
		return slog.LevelError
	case logrus.WarnLevel:
		return slog.LevelWarn
	case logrus.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// bridgeMessage rewords the entries an operator sees often, returning the
// message and extra attributes.
func bridgeMessage(e *logrus.Entry) (string, []any) {
	if rest, ok := strings.CutPrefix(e.Message, "Error authenticating user "); ok {
		user, method, _ := strings.Cut(rest, " using: ")
		return "authentication failed", []any{"user", user, "method", method}
	}
	return e.Message, nil
}
