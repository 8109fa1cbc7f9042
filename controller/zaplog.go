package controller

import (
	"context"
	"fmt"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToSlog returns a zap logger (the kind etcd's server and client take)
// that forwards entries at min level and above to l. Entries below min are
// dropped before any field is encoded, so etcd's chatty info logs cost
// nothing.
func zapToSlog(l *slog.Logger, min zapcore.Level) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{l: l, min: min})
}

// slogCore is a zapcore.Core writing to a *slog.Logger.
type slogCore struct {
	l      *slog.Logger
	min    zapcore.Level
	fields []zapcore.Field // from With; immutable once the core is built
}

func (c *slogCore) Enabled(lvl zapcore.Level) bool { return lvl >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	nf := make([]zapcore.Field, 0, len(c.fields)+len(fields))
	nf = append(nf, c.fields...)
	nf = append(nf, fields...)
	return &slogCore{l: c.l, min: c.min, fields: nf}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	for k, v := range enc.Fields {
		// etcd's slow-request warnings quote whole requests: a big
		// transaction would fill the log.
		if str, ok := v.(string); ok && len(str) > maxLogValue {
			v = fmt.Sprintf("%s…(%d bytes)", str[:maxLogValue], len(str))
		}
		attrs = append(attrs, slog.Any(k, v))
	}
	c.l.LogAttrs(context.Background(), slogLevel(e.Level), "etcd: "+e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

const maxLogValue = 512

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}
