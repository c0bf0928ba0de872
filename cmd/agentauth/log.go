package main

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns a JSON logger writing to w through a buffer flushed
// every second (one write per request would cost a system call each). The
// access log may lose its last second on a crash; the audit log, which is
// the record that matters, never does. flush writes out what is buffered.
func newLogger(level string, w io.Writer) (*zap.Logger, func(), error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, fmt.Errorf("log.level / SERVICE_LOG_LEVEL: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeDuration = zapcore.StringDurationEncoder // "in":"2s", not "in":2
	ws := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(w), Size: 256 << 10, FlushInterval: time.Second}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), ws, lvl)
	log := zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.AddSync(w)))
	return log, func() { _ = ws.Stop() }, nil
}
