package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// buildSamsa compiles ./cmd/samsa of the module at root into dir.
func buildSamsa(ctx context.Context, root, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(root, "cmd", "samsa")); err != nil {
		return "", fmt.Errorf("no cmd/samsa in %s: %w", root, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "samsa")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/samsa")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/samsa: %w\n%s", err, tail(out, 30))
	}
	return bin, nil
}

// startSamsa runs `samsa serve` with a fresh log dir under dir, a free
// loopback listener, and the given extra properties (key=value).
func startSamsa(bin, dir string, extra ...string) (*brokerProc, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"serve",
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + logDir,
	}
	for _, kv := range extra {
		args = append(args, "--override", kv)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	return startProc("samsa", addr, filepath.Join(dir, "samsa.log"), cmd)
}
